// Configuration: priority of the four sources, file format errors, value validation, unknown-key
// warnings, command-line parsing, and that docs/config.md documents every key.
#include "cannl/support/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cannl/support/error.h"
#include "support/config_test_fixture.h"

namespace cannl {
namespace {

using ConfigTest = testing::ConfigEnvironment;

/// Runs `body`, expects ConfigError, and returns its message.
template <typename Body>
std::string config_error_message(Body body) {
  try {
    body();
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected ConfigError";
  return "";
}

std::vector<std::string> parse(std::vector<const char*> args) {
  return config::parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST_F(ConfigTest, DefaultsComeFromTheKeyTable) {
  EXPECT_EQ(config::get("backend"), "cc");
  EXPECT_EQ(config::get_int("debug"), 0);
  EXPECT_EQ(config::get_int("seed"), 42);
  EXPECT_TRUE(config::get_bool("optimize"));
  EXPECT_FALSE(config::get_bool("cc_fast_math"));
  EXPECT_EQ(config::get("cc_compiler"), "");
  EXPECT_EQ(config::source_of("seed"), "default");
}

TEST_F(ConfigTest, KnownKeysAreTheDeclaredOnesInOrder) {
  std::vector<std::string> names;
  for (const auto& key : config::known_keys()) names.emplace_back(key.name);
  std::vector<std::string> expected = {
      "debug", "build_files_prefix", "backend", "cuda_device", "cuda_devices", "nccl_library", "gpu_all_reduce", "cuda_cpu_thread_order", "hip_device", "hip_printf_fifo_size", "opencl_platform",
      "opencl_device", "opencl_pocl_optimize", "opencl_pocl_work_group_method", "cc_compiler",
      "cc_optimization_level",
      "cc_arch_flags", "cc_fp_contract", "cc_fast_math", "cc_extra_flags", "cc_cache",
      "cc_parallel_grid", "cc_parallel_chunks", "cc_threads", "cc_vector_bytes", "default_prec", "seed", "default_prng_variant", "limit_constant_fill_size",
      "max_shape_error_origins", "progress_bar", "optimize"};
  ASSERT_GE(names.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + expected.size()), expected);
  for (const auto& key : config::known_keys()) EXPECT_FALSE(key.description.empty()) << key.name;
}

TEST_F(ConfigTest, PriorityDefaultFileEnvironmentFlagOverride) {
  write_file("cannl_config", "seed=1\ndebug=1\nbackend=interpreter\ncc_compiler=gcc\n");
  std::filesystem::create_directories(temp_dir_ / "a" / "b");
  std::filesystem::current_path(temp_dir_ / "a" / "b");  // the file is found in an ancestor
  ::setenv("CANNL_DEBUG", "2", 1);
  ::setenv("CANNL_BACKEND", "cc", 1);
  ::setenv("CANNL_CC_COMPILER", "clang", 1);
  config::reload();
  parse({"app", "--backend=interpreter", "--cc-compiler=tcc"});
  config::set_override("cc_compiler", "icx");

  EXPECT_EQ(config::get("optimize"), "true");  // default
  EXPECT_EQ(config::source_of("optimize"), "default");
  EXPECT_EQ(config::get_int("seed"), 1);  // file
  EXPECT_EQ(config::source_of("seed"),
            "file " + (temp_dir_ / "cannl_config").string() + ":1");
  EXPECT_EQ(config::get_int("debug"), 2);  // environment beats file
  EXPECT_EQ(config::source_of("debug"), "environment CANNL_DEBUG");
  EXPECT_EQ(config::get("backend"), "interpreter");  // flag beats environment
  EXPECT_EQ(config::source_of("backend"), "flag --backend");
  EXPECT_EQ(config::get("cc_compiler"), "icx");  // override beats flag
  EXPECT_EQ(config::source_of("cc_compiler"), "override");

  config::set_override("cc_compiler", "");  // removing the override falls back to the flag
  EXPECT_EQ(config::get("cc_compiler"), "tcc");
  config::clear_command_line();
  EXPECT_EQ(config::get("cc_compiler"), "clang");
  ::unsetenv("CANNL_CC_COMPILER");
  config::reload();
  EXPECT_EQ(config::get("cc_compiler"), "gcc");
}

TEST_F(ConfigTest, NearestFileWins) {
  write_file("cannl_config", "seed=1\n");
  write_file("inner/cannl_config", "seed=2\n");
  std::filesystem::current_path(temp_dir_ / "inner");
  config::reload();
  EXPECT_EQ(config::get_int("seed"), 2);
  std::filesystem::current_path(temp_dir_);
  EXPECT_EQ(config::get_int("seed"), 2) << "cached until reload()";
  config::reload();
  EXPECT_EQ(config::get_int("seed"), 1);
}

TEST_F(ConfigTest, EmptyValueMeansUnset) {
  write_file("cannl_config", "seed=7\n");
  ::setenv("CANNL_SEED", "", 1);
  config::reload();
  parse({"app", "--seed="});
  EXPECT_EQ(config::get_int("seed"), 7);
  EXPECT_EQ(config::source_of("seed"), "file " + (temp_dir_ / "cannl_config").string() + ":1");
}

TEST_F(ConfigTest, FileFormatCommentsBlanksPrefixAndCase) {
  write_file("cannl_config",
             "# a comment\n"
             "\n"
             "   CANNL_Seed = 9   \n"
             "cc-extra-flags = -DX=a#b   # trailing comment\n"
             "\tdefault_prec=bf16\n");
  config::reload();
  EXPECT_EQ(config::get_int("seed"), 9);
  EXPECT_EQ(config::get("cc_extra_flags"), "-DX=a#b");
  EXPECT_EQ(config::get("default_prec"), "bf16");
  EXPECT_EQ(config::source_of("default_prec"),
            "file " + (temp_dir_ / "cannl_config").string() + ":5");
}

TEST_F(ConfigTest, MalformedFileLineNamesFileAndLine) {
  write_file("cannl_config", "seed=1\n# ok\nthis line has no equals sign\n");
  config::reload();
  std::string message = config_error_message([] { config::get("seed"); });
  EXPECT_NE(message.find("cannl_config:3"), std::string::npos) << message;
  EXPECT_NE(message.find("this line has no equals sign"), std::string::npos) << message;
  EXPECT_NE(message.find("expected key=value"), std::string::npos) << message;
}

TEST_F(ConfigTest, BadKeySpellingInFileIsMalformed) {
  write_file("cannl_config", "=3\n");
  config::reload();
  std::string message = config_error_message([] { config::get("seed"); });
  EXPECT_NE(message.find("cannl_config:1"), std::string::npos) << message;
}

TEST_F(ConfigTest, DuplicateFileKeyNamesBothLines) {
  write_file("cannl_config", "seed=1\ndebug=0\nCANNL_SEED=2\n");
  config::reload();
  std::string message = config_error_message([] { config::get_int("debug"); });
  EXPECT_NE(message.find("cannl_config:3"), std::string::npos) << message;
  EXPECT_NE(message.find("duplicate key 'seed'"), std::string::npos) << message;
  EXPECT_NE(message.find("line 1"), std::string::npos) << message;
}

TEST_F(ConfigTest, BadBooleanNamesKeyValueAndSource) {
  ::setenv("CANNL_OPTIMIZE", "maybe", 1);
  config::reload();
  std::string message = config_error_message([] { config::get_bool("optimize"); });
  EXPECT_NE(message.find("config key 'optimize' = 'maybe'"), std::string::npos) << message;
  EXPECT_NE(message.find("environment CANNL_OPTIMIZE"), std::string::npos) << message;
  EXPECT_NE(message.find("expected a boolean (true/false)"), std::string::npos) << message;
}

TEST_F(ConfigTest, BooleanSpellings) {
  for (const char* yes : {"true", "1", "yes", "on", "TRUE", "Yes", "On"}) {
    config::set_override("cc_cache", yes);
    EXPECT_TRUE(config::get_bool("cc_cache")) << yes;
  }
  for (const char* no : {"false", "0", "no", "off", "False", "NO", "OFF"}) {
    config::set_override("cc_cache", no);
    EXPECT_FALSE(config::get_bool("cc_cache")) << no;
  }
}

TEST_F(ConfigTest, BadIntegerNamesKeyValueAndSource) {
  parse({"app", "--seed=12abc"});
  std::string message = config_error_message([] { config::get_int("seed"); });
  EXPECT_NE(message.find("config key 'seed' = '12abc'"), std::string::npos) << message;
  EXPECT_NE(message.find("flag --seed"), std::string::npos) << message;
  EXPECT_NE(message.find("expected an integer"), std::string::npos) << message;
  config::set_override("seed", "99999999999999999999999");
  message = config_error_message([] { config::get_int("seed"); });
  EXPECT_NE(message.find("64-bit range"), std::string::npos) << message;
  config::set_override("seed", "-5");
  EXPECT_EQ(config::get_int("seed"), -5);
}

TEST_F(ConfigTest, DoubleParsing) {
  config::set_override("seed", "2.5e1");
  EXPECT_DOUBLE_EQ(config::get_double("seed"), 25.0);
  config::set_override("seed", "2.5x");
  std::string message = config_error_message([] { config::get_double("seed"); });
  EXPECT_NE(message.find("config key 'seed' = '2.5x' (from override)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("expected a number"), std::string::npos) << message;
}

TEST_F(ConfigTest, UnknownKeyForGetThrows) {
  std::string message = config_error_message([] { config::get("cc_compilr"); });
  EXPECT_NE(message.find("unknown config key 'cc_compilr'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'cc_compiler'"), std::string::npos) << message;
  EXPECT_THROW(config::set_override("nonsense", "1"), ConfigError);
}

TEST_F(ConfigTest, UnknownEnvironmentKeyWarnsWithSuggestion) {
  ::setenv("CANNL_CC_COMPILR", "clang", 1);
  config::reload();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(config::get("cc_compiler"), "");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[cannl] warning: unknown config key 'cc_compilr' (from environment "
                     "CANNL_CC_COMPILR); did you mean 'cc_compiler'?"),
            std::string::npos)
      << err;
}

TEST_F(ConfigTest, TestSuiteVariablesAreNotConfigKeys) {
  ::setenv("CANNL_TEST_DIFF_PROGRAMS", "20000", 1);
  config::reload();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(config::get("debug"), "0");
  std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("CANNL_TEST_DIFF_PROGRAMS");
  EXPECT_EQ(err.find("unknown config key"), std::string::npos) << err;
}

TEST_F(ConfigTest, UnknownFileKeyWarnsWithFileAndLine) {
  write_file("cannl_config", "debug=0\nbakend=cc\n");
  config::reload();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(config::get("backend"), "cc");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unknown config key 'bakend' (from file "), std::string::npos) << err;
  EXPECT_NE(err.find("cannl_config:2); did you mean 'backend'?"), std::string::npos) << err;
}

TEST_F(ConfigTest, FlagsAcceptDashesAndUnderscores) {
  auto rest = parse({"app", "--cc-compiler=clang", "--cc_optimization_level=1",
                     "--CC-Fast-Math=yes", "--cannl-seed=5"});
  EXPECT_EQ(rest, std::vector<std::string>{"app"});
  EXPECT_EQ(config::get("cc_compiler"), "clang");
  EXPECT_EQ(config::source_of("cc_compiler"), "flag --cc-compiler");
  EXPECT_EQ(config::get_int("cc_optimization_level"), 1);
  EXPECT_TRUE(config::get_bool("cc_fast_math"));
  EXPECT_EQ(config::get_int("seed"), 5);
}

TEST_F(ConfigTest, ParseCommandLineLeavesOtherArgumentsInOrder) {
  ::testing::internal::CaptureStderr();
  auto rest = parse({"app", "input.txt", "--debug=1", "-v", "--cc-compilr=gcc", "--help",
                     "--seed", "3", "--", "--seed=4"});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rest, (std::vector<std::string>{"app", "input.txt", "-v", "--cc-compilr=gcc",
                                            "--help", "--seed", "3", "--", "--seed=4"}));
  EXPECT_EQ(config::get_int("debug"), 1);
  EXPECT_EQ(config::get_int("seed"), 42) << "`--seed 3` and flags after `--` are not consumed";
  EXPECT_NE(err.find("unknown config key 'cc_compilr' (from flag --cc-compilr); did you mean "
                     "'cc_compiler'?"),
            std::string::npos)
      << err;
}

TEST_F(ConfigTest, UnrelatedUnknownFlagWarnsWithoutSillySuggestion) {
  ::testing::internal::CaptureStderr();
  auto rest = parse({"app", "--output-directory=/tmp/x"});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rest.size(), 2u);
  EXPECT_NE(err.find("unknown config key 'output_directory'"), std::string::npos) << err;
  EXPECT_EQ(err.find("did you mean"), std::string::npos) << err;
}

TEST_F(ConfigTest, ConcurrentReadersSeeWholeValues) {
  // Readers race with overrides and reloads; under the mutex each read sees one whole value.
  std::atomic<bool> bad{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&bad] {
      for (int i = 0; i < 2000; ++i) {
        std::int64_t seed = config::get_int("seed");
        if (seed != 42 && seed != 1234567) bad = true;
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    config::set_override("seed", i % 2 == 0 ? "1234567" : "");
    if (i % 100 == 0) config::reload();
  }
  for (auto& reader : readers) reader.join();
  EXPECT_FALSE(bad);
}

TEST_F(ConfigTest, RangeCheckedIntegersNameKeyValueAndRange) {
  config::set_override("cc_threads", "4294967298");  // would truncate to 2 as an int
  try {
    config::get_int_in("cc_threads", 0, 4096);
    ADD_FAILURE() << "out of range accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'cc_threads' = '4294967298'"), std::string::npos) << message;
    EXPECT_NE(message.find("from 0 to 4096"), std::string::npos) << message;
  }
  config::set_override("cc_threads", "4096");
  EXPECT_EQ(config::get_int_in("cc_threads", 0, 4096), 4096);
  config::set_override("cc_threads", "-1");
  EXPECT_THROW(config::get_int_in("cc_threads", 0, 4096), ConfigError);
}

TEST_F(ConfigTest, EnumeratedValuesNameKeyValueSourceAndChoices) {
  config::set_override("gpu_graphs", "  OFF ");  // case and blanks do not matter
  EXPECT_EQ(config::get_one_of("gpu_graphs", {"auto", "off"}), "off");
  config::set_override("gpu_graphs", "sometimes");
  try {
    config::get_one_of("gpu_graphs", {"auto", "off"});
    ADD_FAILURE() << "an unlisted value accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("config key 'gpu_graphs' = 'sometimes' (from override): expected auto or off"),
              std::string::npos)
        << e.what();
  }
  enum class Order { Forward, Reverse };
  config::set_override("cuda_cpu_thread_order", "reverse");
  EXPECT_EQ(config::get_one_of<Order>("cuda_cpu_thread_order", {{"forward", Order::Forward}, {"reverse", Order::Reverse}}),
            Order::Reverse);
  config::set_override("cuda_cpu_thread_order", "");  // the default
  EXPECT_EQ(config::get_one_of<Order>("cuda_cpu_thread_order", {{"forward", Order::Forward}, {"reverse", Order::Reverse}}),
            Order::Forward);
  config::set_override("cuda_cpu_thread_order", "backward");
  try {
    config::get_one_of<Order>("cuda_cpu_thread_order", {{"forward", Order::Forward}, {"reverse", Order::Reverse}});
    ADD_FAILURE() << "an unlisted value accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected forward or reverse"), std::string::npos) << e.what();
  }
  EXPECT_THROW(config::get_one_of("no_such_key", {"a", "b"}), ConfigError);  // as for get()
}

TEST_F(ConfigTest, EveryKeyIsDocumented) {
  std::ifstream in(std::string(CANNL_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md is missing";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // Descriptions may be typeset with backticks, &lt;/&gt; or \| (a '|' inside a table cell) in the
  // document; compare plain text.
  std::string plain;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 4, "&lt;") == 0) { plain += '<'; i += 3; continue; }
    if (text.compare(i, 4, "&gt;") == 0) { plain += '>'; i += 3; continue; }
    if (text.compare(i, 2, "\\|") == 0) { plain += '|'; ++i; continue; }
    if (text[i] != '`') plain += text[i];
  }
  for (const auto& key : config::known_keys()) {
    EXPECT_NE(text.find("`" + std::string(key.name) + "`"), std::string::npos)
        << "docs/config.md does not document `" << key.name << "`";
    EXPECT_NE(plain.find(std::string(key.description)), std::string::npos)
        << "docs/config.md has a stale description of `" << key.name << "`";
    const std::string default_cell = key.default_value.empty() ? "(empty)" : "`" + std::string(key.default_value) + "`";
    EXPECT_NE(text.find("| `" + std::string(key.name) + "` | " + default_cell + " |"), std::string::npos)
        << "docs/config.md gives `" << key.name << "` another default than " << default_cell;
  }
}

}  // namespace
}  // namespace cannl
