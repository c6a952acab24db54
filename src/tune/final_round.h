#pragma once
// How much final round the tuner's budget has room for. The final round times the finalists
// again side by side, `rounds` rounds of each (Bench::confirm); its cost is planned from what
// judging each one cost during the search, so that the search stops early enough for it and the
// budget covers the whole tuning.
//
//   FinalRoundPlan plan = plan_final_round(required, optional, 5, budget_s - elapsed_s);
//   // finalists: every required one and the first plan.optional of the optional ones

#include <span>

namespace cannl::tune {

/// What timing one finalist again costs, in seconds on the tuner's clock: compiling it (a cache
/// hit by then) and its warm-up run, `setup_s`, and one round of its timed runs, `round_s`.
struct FinalistCost {
  double setup_s = 0;
  double round_s = 0;
};

struct FinalRoundPlan {
  int optional = 0;   // how many of the optional finalists, the first ones
  int rounds = 0;     // 0: no final round fits
  double cost_s = 0;  // what the plan is expected to take
};

/// The widest final round expected to take at most `seconds`: every `required` finalist (the
/// default schedule and the serial baseline, which the winner's times are compared with) and as
/// many `optional` ones (fastest first) as fit at `max_rounds` rounds; when not even the fastest
/// fits, fewer rounds (at least 1) with it alone; when that does not fit either, none (rounds 0):
/// the default schedule stays. Without optional finalists, the required ones alone.
///   plan_final_round({{0, 1}}, {{0, 1}, {0, 1}}, 5, 10) == {.optional = 1, .rounds = 5, .cost_s = 10}
FinalRoundPlan plan_final_round(std::span<const FinalistCost> required, std::span<const FinalistCost> optional,
                                int max_rounds, double seconds);

}  // namespace cannl::tune
