// Built against an installed cannl: infers a matmul's shape, compiles it with the C backend and
// checks the numbers. Prints "consumer: ok" on success.
#include <cannl/cannl.h>

#include <cstdio>

using namespace cannl;
using Dims = std::vector<std::int64_t>;

int main() {
  Tensor x = literal("x", {1, 2, 3, 4, 5, 6}, {.batch = Dims{2}, .output = Dims{3}});
  Tensor w = literal("w", {1, 0, 0, 1, 1, 1}, {.input = Dims{3}, .output = Dims{2}});
  Tensor y = w * x;  // y[b, o] = sum_i w[o, i] x[b, i]
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {y});
  auto routine = train::compile_forward(ctx, {y}, "consumer_matmul");
  ctx.run(routine);
  const std::vector<double> got = ctx.get_values(y.value());
  const std::vector<double> want{1, 6, 4, 15};  // w = [[1, 0, 0], [1, 1, 1]]
  if (y.dims() != Dims{2, 2} || got != want) {
    std::printf("consumer: wrong result\n");
    return 1;
  }
  std::printf("consumer: ok\n");
  return 0;
}
