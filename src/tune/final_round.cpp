// The final round's plan within the budget (see final_round.h).
#include "tune/final_round.h"

#include <algorithm>

namespace cannl::tune {
namespace {

double cost_of(std::span<const FinalistCost> finalists, int rounds) {
  double seconds = 0;
  for (const FinalistCost& f : finalists) seconds += f.setup_s + rounds * f.round_s;
  return seconds;
}

}  // namespace

FinalRoundPlan plan_final_round(std::span<const FinalistCost> required, std::span<const FinalistCost> optional,
                                int max_rounds, double seconds) {
  auto plan = [&](int count, int rounds) {
    return FinalRoundPlan{count, rounds, cost_of(required, rounds) + cost_of(optional.first(count), rounds)};
  };
  // Finalists first, then rounds: a candidate left out cannot win at all, while a round less
  // leaves the comparison a little noisier.
  const int most = static_cast<int>(optional.size());
  for (int count = most; count >= std::min(most, 1); --count)
    if (FinalRoundPlan p = plan(count, max_rounds); p.cost_s <= seconds) return p;
  for (int rounds = max_rounds - 1; rounds >= 1; --rounds)
    if (FinalRoundPlan p = plan(std::min(most, 1), rounds); p.cost_s <= seconds) return p;
  return {};
}

}  // namespace cannl::tune
