// The headers nearly every test executable includes, precompiled once per build and shared by
// all of them (cannl_test_precompiled_headers in cmake/cannl_layers.cmake). Parsing them took about
// a third of a test file's compile time; a clean build compiles two hundred test files twice (the
// plain and the sanitized build). Only system headers belong here: a project header would make
// every test recompile when it changes. Each test still includes what it uses, as if this file
// did not exist (a build without precompiled headers must compile).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>
