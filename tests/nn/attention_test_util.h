#pragma once
// Fused attention against the unfused composition (scores, mask, softmax, weighted sum) on the
// same inputs: a run builds one of them over parameter-backed q, k, v, compiles the forward and
// the gradient of sum(out * w) for fixed weights w, and reads out and the three input gradients.
//
//   auto fused = attention_run(ctx, {.batch = 2, .seq = 5, .causal = true}, true);

#include <cmath>
#include <string>
#include <vector>

#include "block_test_util.h"
#include "cannl/cannl.h"
#include "cannl/nn/ops.h"
#include "tensor/compile_util.h"

namespace cannl::testing_util {

struct AttentionCase {
  std::int64_t batch = 1, seq = 4, heads = 1, d = 3, e = 3;
  bool causal = true;
};

inline std::string describe(const AttentionCase& c) {
  return "batch " + std::to_string(c.batch) + " seq " + std::to_string(c.seq) + " heads " +
         std::to_string(c.heads) + " d " + std::to_string(c.d) + " e " + std::to_string(c.e) +
         (c.causal ? " causal" : " full");
}

/// The unfused attention of MultiHeadAttention (the mask as where(mask, scores, -1e9)).
inline Tensor unfused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionCase& c) {
  Tensor scores = einsum("... s | -> h d; ... t | -> h d => ... s | t -> h", q, k);
  scores = pointmul(constant(1.0 / std::sqrt(static_cast<double>(c.d))), scores);
  if (c.causal) scores = where(nn::causal_mask(c.seq), scores, constant(-1e9));
  Tensor attn = nn::softmax(scores, "... | t -> ... => ... | -> ...");
  return einsum("... s | t -> h; ... t | -> h e => ... s | -> h e", attn, v);
}

struct AttentionGraph {
  std::vector<Tensor> inputs;  // the parameters behind q, k, v
  Tensor out, loss;
};

inline AttentionGraph attention_graph(const AttentionCase& c, bool fused) {
  AttentionGraph g;
  const Dims batch{c.batch, c.seq};
  Tensor q = batch_input(g.inputs, "q", batch, {c.heads, c.d});
  Tensor k = batch_input(g.inputs, "k", batch, {c.heads, c.d});
  Tensor v = batch_input(g.inputs, "v", batch, {c.heads, c.e});
  g.out = fused ? nn::fused_attention(q, k, v, {.causal = c.causal,
                                               .scale = 1.0 / std::sqrt(static_cast<double>(c.d))})
                : unfused_attention(q, k, v, c);
  const std::int64_t cells = c.batch * c.seq * c.heads * c.e;
  Tensor w = literal("w", lcg_values(cells, -1, 1, 7),
                     {.batch = batch, .input = Dims{}, .output = Dims{c.heads, c.e}});
  g.loss = sum(pointmul(g.out, w));
  return g;
}

struct AttentionResult {
  std::vector<double> out;
  std::vector<std::vector<double>> grads;  // of q, k, v's parameters
};

/// Builds, compiles and runs one attention (fresh tensor state) with inputs in [-2, 2).
inline AttentionResult attention_run(runtime::Context ctx, const AttentionCase& c, bool fused) {
  reset_tensor_state();
  AttentionGraph g = attention_graph(c, fused);
  auto forward = compile_forward(ctx, {g.out}, fused ? "fused_forward" : "unfused_forward");
  auto step = ctx.compile(grad_update_code(g.loss), fused ? "fused_grad" : "unfused_grad");
  upload_literals(ctx, {g.loss});
  for (std::size_t i = 0; i < g.inputs.size(); ++i)
    ctx.set_values(g.inputs[i].value(), lcg_values(g.inputs[i].value()->num_logical_elements(), -2, 2,
                                                   static_cast<unsigned>(i + 1)));
  ctx.run(forward);
  ctx.run(step);
  AttentionResult r{ctx.get_values(g.out.value()), {}};
  for (const auto& p : g.inputs) r.grads.push_back(ctx.get_values(p.grad()));
  return r;
}

/// max |a - b| / max(1, max |b|) over two vectors of one length.
inline double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return a.size() == b.size() ? diff / scale : INFINITY;
}

}  // namespace cannl::testing_util
