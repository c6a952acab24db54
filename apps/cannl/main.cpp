// The `cannl` command-line program.
//
//   cannl demo [--epochs N] [--lr X]   train the moons MLP on the C backend (the main job)
//   cannl help
// Every config key can also be given as --<key>=<value> (see docs/config.md).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "bench_command.h"
#include "demo.h"
#include "einsum_command.h"
#include "gpt2_command.h"

namespace {

void print_usage() {
  std::cout << "usage: cannl <command> [options]\n\n"
               "commands:\n"
               "  demo [--epochs N] [--lr X]   train an MLP on half-moons with the C backend\n"
               "  einsum [--eval] [--accum sum|max|min] SPEC SHAPE...   infer (and evaluate) an einsum\n"
               "  gpt2 --weights FILE [--config FILE] [--prompt TEXT | --ids N,N,...] [--tokens N]\n"
               "       [--print-logits]   GPT-2 inference (--random-weights: timed 124M dry run)\n"
               "  bench matmul --n N [--threads T] | bench mlp [--threads T]   CPU throughput\n"
               "  help                         this text\n\n"
               "Any config key can be set with --<key>=<value>, CANNL_<KEY>=<value> or a\n"
               "cannl_config file; see docs/config.md.\n";
}

/// Value of `--name N` / `--name=N` in args, if present.
std::string option(const std::vector<std::string>& args, const std::string& name,
                   const std::string& fallback) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" + name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--" + name + "=", 0) == 0) return args[i].substr(name.size() + 3);
  }
  return fallback;
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help") {
    print_usage();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "demo") {
    cannl::app::DemoOptions options;
    options.epochs = std::stoi(option(args, "epochs", "40"));
    options.lr = std::stod(option(args, "lr", "0.1"));
    return cannl::app::run_demo(options);
  }
  if (args[0] == "einsum")
    return cannl::app::run_einsum_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (args[0] == "bench") return cannl::app::run_bench_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (args[0] == "gpt2")
    return cannl::app::run_gpt2_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  std::cerr << "cannl: unknown command '" << args[0] << "'\n\n";
  print_usage();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto args = cannl::config::parse_command_line(argc, argv);  // keeps argv[0]
    args.erase(args.begin());
    return run(args);
  } catch (const cannl::UserError& e) {
    std::cerr << "cannl: " << e.kind() << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "cannl: error: " << e.what() << "\n";
    return 1;
  }
}
