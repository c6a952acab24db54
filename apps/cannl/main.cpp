// The `cannl` command-line program: finds the command, parses its options with the one
// table-driven parser (options.h), sets the config keys given as flags and runs it.
//
//   cannl demo [--epochs N] [--lr X]      train the moons MLP on the C backend (the main job)
//   cannl <command> --help                every command's options
// Config keys can also be given as --<key>=<value> (see docs/config.md), before or after the
// command word.
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "bench_command.h"
#include "cannl/support/error.h"
#include "demo.h"
#include "einsum_command.h"
#include "gpt2_command.h"
#include "options.h"

namespace cannl::app {
namespace {

void print_usage(std::ostream& out) {
  out << "usage: cannl <command> [options]\n\n"
         "commands:\n"
         "  demo [--epochs N] [--lr X]   train an MLP on half-moons with the C backend\n"
         "       [--model makemore] [--devices N | --distributed] [--checkpoint FILE [--resume]]\n"
         "  einsum [--eval] [--accum sum|max|min] SPEC SHAPE...   infer (and evaluate) an einsum\n"
         "  gpt2 --weights FILE [--config FILE] [--prompt TEXT | --ids N,N,...] [--tokens N]\n"
         "       [--print-logits]   GPT-2 inference (--random-weights: timed 124M dry run)\n"
         "  bench matmul --n N [--threads T] [--tune] | bench mlp [--threads T] [--tune]   CPU throughput\n"
         "  tune matmul|mlp [bench options]   search schedules, print the winner, time it\n"
         "  help [COMMAND]               this text, or a command's options\n\n"
         "`cannl <command> --help` lists a command's options. Any config key can be set with\n"
         "--<key>=<value>, CANNL_<KEY>=<value> or a cannl_config file; see docs/config.md.\n";
}

/// The spec of the command named by `words` (one word, or "bench <kind>"); throws
/// RuntimeUsageError for an unknown one. `used` is how many words named it.
const CommandSpec& command_spec(const std::vector<std::string>& words, std::size_t& used) {
  used = 1;
  const std::string& name = words.at(0);
  if (name == "demo") return demo_command_spec();
  if (name == "einsum") return einsum_command_spec();
  if (name == "gpt2") return gpt2_command_spec();
  if (name == "bench" || name == "tune") {
    const std::string kind = words.size() > 1 ? words[1] : "";
    used = 2;
    if (name == "tune" && kind == "matmul") return tune_matmul_spec();
    if (name == "tune" && kind == "mlp") return tune_mlp_spec();
    if (kind == "matmul") return bench_matmul_spec();
    if (kind == "mlp") return bench_mlp_spec();
    throw RuntimeUsageError("cannl " + name + " needs a benchmark, matmul or mlp" +
                            (kind.empty() ? std::string() : ", got '" + kind + "'") + " (see cannl " + name +
                            " matmul --help)");
  }
  throw RuntimeUsageError("unknown command '" + name + "' (commands: demo, einsum, gpt2, bench, tune, help)");
}

int run_command(const CommandSpec& spec, const ParsedArgs& args) {
  if (spec.name == "demo") return run_demo(demo_options(args));
  if (spec.name == "einsum") return run_einsum_command(args, std::cout);
  if (spec.name == "gpt2") return run_gpt2_command(args, std::cout, std::cerr);
  if (spec.name.rfind("tune ", 0) == 0) {
    ParsedArgs tuned = args;
    tuned.set("tune", "");
    return run_bench_command(spec.name.substr(spec.name.find(' ') + 1), tuned, std::cout);
  }
  return run_bench_command(spec.name.substr(spec.name.find(' ') + 1), args, std::cout);
}

/// Config keys before the command word (`cannl --debug=2 demo`): only `--key=value` there, so a
/// value is never mistaken for the command.
std::size_t leading_config_flags(const std::vector<std::string>& args) {
  static const CommandSpec top{.name = "", .summary = ""};
  std::size_t at = 0;
  while (at < args.size() && args[at].rfind("--", 0) == 0 && args[at] != "--help") {
    if (args[at].find('=') == std::string::npos)
      throw RuntimeUsageError("'" + args[at] + "' before the command: give config keys as --key=value, "
                              "or options after the command (cannl <command> " + args[at] + " ...)");
    apply_config_flags(parse_command(top, {args[at]}));
    ++at;
  }
  return at;
}

int run(std::vector<std::string> args) {
  args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(leading_config_flags(args)));
  if (args.empty()) {
    print_usage(std::cerr);
    return 2;
  }
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    if (args.size() == 1) {
      print_usage(std::cout);
      return 0;
    }
    std::size_t used = 0;
    const std::vector<std::string> words(args.begin() + 1, args.end());
    if (words.size() == 1 && (words[0] == "bench" || words[0] == "tune")) {
      // Both benchmarks of the command, rather than an error asking for one.
      for (const char* kind : {"matmul", "mlp"}) std::cout << help_text(command_spec({words[0], kind}, used)) << "\n";
      return 0;
    }
    std::cout << help_text(command_spec(words, used));
    return 0;
  }
  std::size_t used = 0;
  const CommandSpec& spec = command_spec(args, used);
  const ParsedArgs parsed = parse_command(spec, {args.begin() + static_cast<std::ptrdiff_t>(used), args.end()});
  if (parsed.help) {
    std::cout << help_text(spec);
    return 0;
  }
  apply_config_flags(parsed);
  return run_command(spec, parsed);
}

}  // namespace
}  // namespace cannl::app

int main(int argc, char** argv) {
  try {
    return cannl::app::run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const cannl::RuntimeUsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const cannl::UserError& e) {
    std::cerr << "error: " << e.kind() << ": " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory (see the config key memory_budget_mb to refuse large sizes "
                 "before allocating)\n";
    return 1;
  } catch (const cannl::InternalError& e) {
    std::cerr << "cannl: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "cannl: error: " << e.what() << "\n";
    return 1;
  }
}
