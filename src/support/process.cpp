// Child processes via posix_spawn (see cannl/support/process.h): no shell is ever involved.
#include "cannl/support/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

extern char** environ;

namespace cannl::process {

namespace {

// Held while a spawn reads `environ` and while set_environment_default changes it.
std::mutex& environment_mutex() {
  static std::mutex m;
  return m;
}

struct SpawnActions {
  posix_spawn_file_actions_t actions;
  SpawnActions() { posix_spawn_file_actions_init(&actions); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
};

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/// argv as posix_spawn wants it: pointers into `argv`, null-terminated.
std::vector<char*> c_arguments(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

/// Spawns with `fa`; waits with `before_wait` run in between (to drain a pipe).
template <typename BeforeWait>
Result spawn_and_wait(const std::vector<std::string>& argv, SpawnActions& fa, BeforeWait before_wait) {
  Result result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::vector<char*> args = c_arguments(argv);
  pid_t pid = 0;
  int rc = 0;
  {
    // The child has exec'd (or failed to) when posix_spawnp returns: `environ` is read by then.
    const std::lock_guard<std::mutex> lock(environment_mutex());
    rc = posix_spawnp(&pid, args[0], &fa.actions, nullptr, args.data(), environ);
  }
  if (rc != 0) {
    result.error = std::strerror(rc);
    return result;
  }
  before_wait();
  result.exit_status = wait_for(pid);
  // posix_spawnp reports a failed exec, open or chdir of the child through its return value
  // (glibc since 2.24), so every status here is the program's own: a wrapper such as ccache
  // exiting with 127 ("command not found") started, and its log says why.
  result.started = true;
  return result;
}

}  // namespace

Result run(const std::vector<std::string>& argv, const std::filesystem::path& output,
           const std::filesystem::path& working_directory) {
  SpawnActions fa;
  // Opened before the chdir, so a relative `output` names a file in our working directory.
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa.actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa.actions, 1, 2);
  if (!working_directory.empty())
    posix_spawn_file_actions_addchdir_np(&fa.actions, working_directory.c_str());
  return spawn_and_wait(argv, fa, [] {});
}

Captured capture(const std::vector<std::string>& argv) {
  Captured out;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    out.result.error = std::strerror(errno);
    return out;
  }
  SpawnActions fa;
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa.actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&fa.actions, 2, "/dev/null", O_WRONLY, 0);
  out.result = spawn_and_wait(argv, fa, [&] {
    ::close(pipe_fds[1]);
    pipe_fds[1] = -1;
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.output.append(buffer, static_cast<std::size_t>(n));
    }
  });
  if (pipe_fds[1] >= 0) ::close(pipe_fds[1]);
  ::close(pipe_fds[0]);
  return out;
}

void set_environment_default(const std::string& name, const std::string& value) {
  const std::lock_guard<std::mutex> lock(environment_mutex());
  setenv(name.c_str(), value.c_str(), /*overwrite=*/0);
}

void set_environment(const std::string& name, const std::string& value) {
  const std::lock_guard<std::mutex> lock(environment_mutex());
  setenv(name.c_str(), value.c_str(), /*overwrite=*/1);
}

std::string shell_quoted(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_./=+,:@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string resolve_program(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) {
    return access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace cannl::process
