#pragma once
// One transform's arguments in a schedule trace line (cannl/schedule/trace.h): the words after
// its name, loops named as printed in the routine the step applies to (i0, i1, ...), nodes by
// their position among the routine's nodes (n0, n1, ...). Each transform's own file writes and
// reads its arguments with these (transform_impls.h). Private to src/schedule.
//
//   out.loop(t.axis).integer(t.factor);            // "split i2 4"
//   Pad{in.loop(1), in.integer(2)}                 // from "pad i0 8"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// Builds a step line: the transform's name, then " <word>" per argument.
class StepWriter {
 public:
  StepWriter(const ir::LoweredRoutine& r, std::string_view name) : r_(r), line_(name) {}
  StepWriter& loop(ir::Symbol s);
  StepWriter& node(int node_id);
  StepWriter& integer(std::int64_t v);
  StepWriter& axis_type(ir::AxisType t);
  StepWriter& word(std::string_view w);
  const std::string& line() const { return line_; }

 private:
  const ir::LoweredRoutine& r_;
  std::string line_;
};

/// Reads a step line's words; word 0 is the transform's name, its arguments start at 1. Every
/// accessor throws ScheduleError (naming the line) for a missing or malformed word.
class StepReader {
 public:
  StepReader(const ir::LoweredRoutine& r, const std::string& line);
  std::size_t size() const { return words_.size(); }  // words, the name included
  std::string word(std::size_t k) const;
  ir::Symbol loop(std::size_t k) const;
  int node(std::size_t k) const;  // the node's id
  std::int64_t integer(std::size_t k) const;
  ir::AxisType axis_type(std::size_t k) const;
  [[noreturn]] void bad(const std::string& why) const;

 private:
  const ir::LoweredRoutine& r_;
  std::string line_;
  std::vector<std::string> words_;
};

}  // namespace cannl::schedule::detail
