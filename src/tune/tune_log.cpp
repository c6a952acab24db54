// The tuner's log and its report text (see tune_log.h, tune.h).
#include "tune/tune_log.h"

#include <cstdio>
#include <fstream>

#include "cannl/support/files.h"
#include "cannl/support/log.h"

namespace cannl::tune {

namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string_view verdict_text(Verdict v) {
  switch (v) {
    case Verdict::Measured: return "measured";
    case Verdict::WrongResult: return "wrong result";
    case Verdict::Failed: return "failed";
  }
  return "?";
}

std::string indented(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    out += "    " + text.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string outcome_line(const TuneReport& r) {
  switch (r.outcome) {
    case TuneReport::Outcome::CacheReplay:
      return "routine " + r.routine + ": replayed from the schedule cache (nothing measured)\n";
    case TuneReport::Outcome::NotTunable:
      return "routine " + r.routine + ": the backend has no schedule search; compiled with its default\n";
    case TuneReport::Outcome::Searched: break;
  }
  int wrong = 0, failed = 0;
  for (const auto& c : r.candidates) {
    wrong += c.verdict == Verdict::WrongResult;
    failed += c.verdict == Verdict::Failed;
  }
  return "routine " + r.routine + ": " + std::to_string(r.candidates.size()) + " candidates in " +
         fixed(r.search_s, 1) + " s (" + std::to_string(wrong) + " with wrong results, " + std::to_string(failed) +
         " failed" + (r.out_of_budget ? ", stopped by autotune_budget_s" : "") + ")\n";
}

}  // namespace

void append_tune_log(const TuneReport& report) {
  const auto path = files::log_dir() / "autotune.log";
  std::ofstream out(path, std::ios::app);
  out << "== " << outcome_line(report) << "cache key " << report.cache_key << "\n";
  for (const auto& c : report.candidates) {
    out << c.label << " | " << c.target << " | " << verdict_text(c.verdict);
    if (c.verdict == Verdict::Measured) out << " | " << fixed(c.ms, 4) << " ms" << (c.final_round ? " (final round)" : "");
    if (!c.why.empty()) out << " | " << c.why;
    out << "\n" << indented(c.trace);
  }
  out << "winner: " << report.winner.label << "\n";
  if (!out) logging::warn("could not write the tuner's log " + path.string());
}

std::string format_report(const TuneReport& r) {
  std::string out = outcome_line(r);
  if (r.outcome == TuneReport::Outcome::NotTunable) return out;
  auto line = [&](const std::string& what, double ms) {
    if (ms > 0) out += "  " + what + fixed(ms, 3) + " ms\n";
  };
  line("serial baseline  ", r.baseline_ms);
  line("default schedule ", r.default_ms);
  line("tuned            ", r.tuned_ms);
  if (r.default_ms > 0 && r.tuned_ms > 0)
    out += "  speed-up over the default " + fixed(r.default_ms / r.tuned_ms, 2) + "x" +
           (r.baseline_ms > 0 ? ", over the serial baseline " + fixed(r.baseline_ms / r.tuned_ms, 2) + "x" : "") + "\n";
  out += "  winner: " + r.winner.label + " (" + r.winner.target + ")\n" + indented(r.winner.trace);
  return out;
}

}  // namespace cannl::tune
