// Golden printouts: for a catalogue of specs over fixed operand shapes, the inferred result shape
// and every block's product space and index expressions, printed and compared to a reviewed text.

#include <sstream>

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Golden : public ShapeTest {};

std::string join(const std::vector<ir::AxisIndex>& v, const std::map<int, std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string s;
    for (const auto& t : v[i].terms)
      s += (s.empty() ? "" : "+") + (t.coeff == 1 ? "" : std::to_string(t.coeff) + "*") + names.at(t.symbol.id);
    if (v[i].offset != 0 || s.empty())
      s += (s.empty() || v[i].offset < 0 ? "" : "+") + std::to_string(v[i].offset);
    out += (i ? "," : "") + s;
  }
  return "[" + out + "]";
}

std::string print(const std::string& spec, const std::vector<Dims>& operands) {
  reset();
  std::vector<ShapeRef> shapes;
  for (const auto& d : operands) shapes.push_back(leaf("x", {.batch = {{}}, .input = {{}}, .output = d}));
  int step = -1;
  auto r = einsum(spec, shapes, &step);
  finish_inference();
  std::ostringstream os;
  os << spec << " : " << to_string(*r) << "\n";
  for (const auto& b : block_projections(step)) {
    std::map<int, std::string> names;
    const auto& p = b.projections;
    for (std::size_t i = 0; i < p.product_iterators.size(); ++i)
      names[p.product_iterators[i].id] = std::string(1, static_cast<char>('p' + i));
    os << "  space";
    for (auto s : p.product_space) os << " " << s;
    os << " | lhs " << join(p.project_lhs, names);
    for (std::size_t i = 0; i < p.project_rhs.size(); ++i)
      if (b.live_rhs[i]) os << " rhs" << i << " " << join(p.project_rhs[i], names);
    os << "\n";
  }
  return os.str();
}

TEST_F(Golden, Catalogue) {
  std::string all;
  all += print("ij;jk=>ik", {{2, 3}, {3, 4}});
  all += print("ii=>i", {{3, 3}});
  all += print("i=>ii", {{3}});
  all += print("i2=>i", {{4, 3}});
  all += print("o<+k; k => o", {{6}, {3}});
  all += print("o=+k; k => o", {{6}, {3}});
  all += print("2*o<+2*k; k => o", {{9}, {2}});
  all += print("2*o=+2*k; k => o", {{8}, {3}});
  all += print("3*o+2 => o", {{9}});
  all += print("a; b => a^b", {{2}, {3}});
  all += print("1^i => i", {{4}});
  all += print("i => 2^i", {{3}});
  all += print("a^b; a => b^a", {{5}, {2}});
  all += print("i, a; i, b => i, a^b", {{2, 2}, {2, 1}});
  const std::string expected = R"(ij;jk=>ik : 2,4
  space 2 4 3 | lhs [p,q] rhs0 [p,r] rhs1 [r,q]
ii=>i : 3
  space 3 | lhs [p] rhs0 [p,p]
i=>ii : 3,3
  space 3 | lhs [p,p] rhs0 [p]
i2=>i : 4
  space 4 | lhs [p] rhs0 [p,2]
o<+k; k => o : 4
  space 4 3 | lhs [p] rhs0 [p+q] rhs1 [q]
o=+k; k => o : 6
  space 6 3 | lhs [p] rhs0 [p+q-1] rhs1 [q]
2*o<+2*k; k => o : 4
  space 4 2 | lhs [p] rhs0 [2*p+2*q] rhs1 [q]
2*o=+2*k; k => o : 4
  space 4 3 | lhs [p] rhs0 [2*p+2*q-2] rhs1 [q]
3*o+2 => o : 3
  space 3 | lhs [p] rhs0 [3*p+2]
a; b => a^b : 5
  space 2 | lhs [p] rhs0 [p]
  space 3 | lhs [p+2] rhs1 [p]
1^i => i : 3
  space 3 | lhs [p] rhs0 [p+1]
i => 2^i : 5
  space 3 | lhs [p+2] rhs0 [p]
a^b; a => b^a : 5
  space 3 | lhs [p] rhs0 [p+2]
  space 2 | lhs [p+3] rhs0 [p] rhs1 [p]
i, a; i, b => i, a^b : 2,3
  space 2 2 | lhs [p,q] rhs0 [p,q]
  space 2 | lhs [p,2] rhs1 [p,0]
)";
  EXPECT_EQ(all, expected);
}

}  // namespace
}  // namespace cannl::shape::testing
