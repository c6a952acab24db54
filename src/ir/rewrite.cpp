// Loop-IR rewriting helpers (see cannl/ir/rewrite.h).
#include "cannl/ir/rewrite.h"

#include <type_traits>

#include "cannl/support/error.h"

namespace cannl::ir {


AxisIndex substitute(const AxisIndex& index, const std::map<Symbol, AxisIndex>& values) {
  AxisIndex out{{}, index.offset};
  auto add_term = [&out](std::int64_t coeff, Symbol s) {
    for (auto& t : out.terms)
      if (t.symbol == s) { t.coeff += coeff; return; }
    out.terms.push_back({coeff, s});
  };
  for (const auto& t : index.terms) {
    const auto it = values.find(t.symbol);
    if (it == values.end()) { add_term(t.coeff, t.symbol); continue; }
    out.offset += t.coeff * it->second.offset;
    for (const auto& u : it->second.terms) add_term(t.coeff * u.coeff, u.symbol);
  }
  std::erase_if(out.terms, [](const AffineTerm& t) { return t.coeff == 0; });
  return out;
}

namespace {

void index_symbols(const std::vector<AxisIndex>& idx, std::set<Symbol>& out) {
  for (const auto& i : idx)
    for (const auto& t : i.terms) out.insert(t.symbol);
}

// Collects used symbols, minus those bound by loops met on the way (symbols are globally unique).
struct FreeSymbols {
  std::set<Symbol> used, bound;
  void scalar(const ScalarRef& s) {
    std::visit([this](const auto& n) {
      using T = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<T, Get>) index_symbols(n.index, used);
      else if constexpr (std::is_same_v<T, GetDynamic>) { index_symbols(n.index, used); scalar(n.dyn_value); }
      else if constexpr (std::is_same_v<T, EmbedIndex>) index_symbols({n.index}, used);
      else if constexpr (std::is_same_v<T, LocalScope>) stmt(n.body);
      else if constexpr (std::is_same_v<T, Apply>) { for (const auto& a : n.args) scalar(a); }
    }, s->node);
  }
  void stmt(const StmtRef& s) {
    std::visit([this](const auto& n) {
      using T = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<T, Seq>) { for (const auto& c : n.stmts) stmt(c); }
      else if constexpr (std::is_same_v<T, For>) { bound.insert(n.index); stmt(n.body); }
      else if constexpr (std::is_same_v<T, Set>) { index_symbols(n.index, used); scalar(n.value); }
      else if constexpr (std::is_same_v<T, SetDynamic>) {
        index_symbols(n.index, used); scalar(n.dyn_value); scalar(n.value);
      } else if constexpr (std::is_same_v<T, SetLocal>) scalar(n.value);
      else if constexpr (std::is_same_v<T, If>) { scalar(n.condition); stmt(n.body); }
      else if constexpr (std::is_same_v<T, TileMma>) stmt(n.fallback);
    }, s->node);
  }
  std::set<Symbol> result() const {
    std::set<Symbol> out;
    for (const auto& s : used)
      if (!bound.contains(s)) out.insert(s);
    return out;
  }
};

}  // namespace

std::set<Symbol> free_symbols(const ScalarRef& scalar) {
  FreeSymbols f;
  f.scalar(scalar);
  return f.result();
}

std::set<Symbol> free_symbols(const StmtRef& stmt) {
  FreeSymbols f;
  f.stmt(stmt);
  return f.result();
}

ScalarRef map_gets(const ScalarRef& s, const GetRewrite& rewrite) {
  return std::visit([&](const auto& n) -> ScalarRef {
    using T = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<T, Get>) {
      auto r = rewrite(n);
      return r ? *r : s;
    } else if constexpr (std::is_same_v<T, GetDynamic>) {
      return get_dynamic(n.node, n.index, n.dyn_axis, map_gets(n.dyn_value, rewrite));
    } else if constexpr (std::is_same_v<T, LocalScope>) {
      return local_scope(n.scope_id, n.dtype, map_gets(n.body, rewrite));
    } else if constexpr (std::is_same_v<T, Apply>) {
      std::vector<ScalarRef> args;
      for (const auto& a : n.args) args.push_back(map_gets(a, rewrite));
      return apply(n.op, n.dtype, std::move(args));
    } else {
      return s;
    }
  }, s->node);
}

StmtRef map_gets(const StmtRef& s, const GetRewrite& rewrite) {
  return std::visit([&](const auto& n) -> StmtRef {
    using T = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<T, Seq>) {
      std::vector<StmtRef> out;
      for (const auto& c : n.stmts) out.push_back(map_gets(c, rewrite));
      return seq(std::move(out));
    } else if constexpr (std::is_same_v<T, For>) {
      return for_loop(n.index, n.begin, n.end, map_gets(n.body, rewrite), n.axis);
    } else if constexpr (std::is_same_v<T, Set>) {
      return set(n.node, n.index, map_gets(n.value, rewrite), n.comment);
    } else if constexpr (std::is_same_v<T, SetDynamic>) {
      return set_dynamic(n.node, n.index, n.dyn_axis, map_gets(n.dyn_value, rewrite),
                         map_gets(n.value, rewrite), n.accum, n.comment);
    } else if constexpr (std::is_same_v<T, SetLocal>) {
      return set_local(n.scope_id, map_gets(n.value, rewrite));
    } else if constexpr (std::is_same_v<T, If>) {
      return if_then(map_gets(n.condition, rewrite), map_gets(n.body, rewrite));
    } else if constexpr (std::is_same_v<T, TileMma>) {
      return map_gets(n.fallback, rewrite);  // the rewritten reads may no longer fit the tile
    } else {
      return s;
    }
  }, s->node);
}

// ---- Replay ----

Symbol Replay::freshen(Symbol s) {
  const Symbol t = next_taken_ < taken_.size() ? taken_[next_taken_++] : fresh_symbol();
  ++given_;
  symbols_[s] = AxisIndex::iterator(t);
  return t;
}

int Replay::scope(int id) const {
  const auto it = scopes_.find(id);
  return it == scopes_.end() ? id : it->second;
}

std::vector<AxisIndex> Replay::index(const std::vector<AxisIndex>& idx) const {
  std::vector<AxisIndex> out;
  for (const auto& i : idx) out.push_back(substitute(i, symbols_));
  return out;
}

ScalarRef Replay::scalar(const ScalarRef& s) {
  return std::visit([&](const auto& n) -> ScalarRef {
    using T = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<T, Get>) {
      if (self_ && n.node == self_) return get_local(self_scope_, self_dtype_);
      return get(n.node, index(n.index));
    } else if constexpr (std::is_same_v<T, GetDynamic>) {
      return get_dynamic(n.node, index(n.index), n.dyn_axis, scalar(n.dyn_value));
    } else if constexpr (std::is_same_v<T, EmbedIndex>) {
      return embed_index(substitute(n.index, symbols_));
    } else if constexpr (std::is_same_v<T, LocalScope>) {
      const int id = fresh_scope_id();
      scopes_[n.scope_id] = id;
      return local_scope(id, n.dtype, stmt(n.body));
    } else if constexpr (std::is_same_v<T, GetLocal>) {
      return get_local(scope(n.scope_id), n.dtype);
    } else if constexpr (std::is_same_v<T, Apply>) {
      std::vector<ScalarRef> args;
      for (const auto& a : n.args) args.push_back(scalar(a));
      return apply(n.op, n.dtype, std::move(args));
    } else {
      return s;  // constants
    }
  }, s->node);
}

StmtRef Replay::stmt(const StmtRef& s) {
  return std::visit([&](const auto& n) -> StmtRef {
    using T = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<T, Seq>) {
      std::vector<StmtRef> out;
      for (const auto& c : n.stmts) out.push_back(stmt(c));
      return seq(std::move(out));
    } else if constexpr (std::is_same_v<T, For>) {
      const Symbol fresh = freshen(n.index);
      return for_loop(fresh, n.begin, n.end, stmt(n.body), n.axis);
    } else if constexpr (std::is_same_v<T, Set>) {
      internal_check(!self_ || n.node != self_, "replay: a store to the inlined node itself");
      return set(n.node, index(n.index), scalar(n.value), n.comment);
    } else if constexpr (std::is_same_v<T, SetDynamic>) {
      return set_dynamic(n.node, index(n.index), n.dyn_axis, scalar(n.dyn_value), scalar(n.value),
                         n.accum, n.comment);
    } else if constexpr (std::is_same_v<T, SetLocal>) {
      return set_local(scope(n.scope_id), scalar(n.value));
    } else if constexpr (std::is_same_v<T, DeclareLocal>) {
      const int id = fresh_scope_id();
      scopes_[n.scope_id] = id;
      return declare_local(id, n.dtype, n.needs_init);
    } else if constexpr (std::is_same_v<T, If>) {
      return if_then(scalar(n.condition), stmt(n.body));
    } else if constexpr (std::is_same_v<T, TileMma>) {
      return stmt(n.fallback);  // fresh symbols: the copy is the plain nest
    } else {
      return s;  // Comment, ZeroOut, Barrier
    }
  }, s->node);
}

}  // namespace cannl::ir
