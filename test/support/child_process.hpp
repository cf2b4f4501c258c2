// test/support/child_process.hpp — a child process of ours, for the test and
// benchmark harnesses that run programs (the chaos driver and with_server,
// the cluster benchmarks): started from argv (and extra environment), sent
// signals, waited for with a deadline, and killed and reaped when its owner
// goes, on every way out. It dies with us too (PR_SET_PDEATHSIG), even if we
// are killed -9, so no run leaves processes behind.
//
// Not installed, not lease::testing: a fork/exec wrapper for Linux is no law
// check of a user's policy, and example/cluster_demo, which users build from
// the installed package, forks its own instances (its child's stdout is a
// pipe it polls, in a process group of its own) and keeps that in sight.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace lease::testing {

class child_process {
 public:
  struct options {
    /// NAME=value entries set on top of our environment (one of ours with the same NAME is dropped).
    std::vector<std::string> env;
    /// A file stdout and stderr are appended to (created if need be); empty: the child writes to ours.
    std::string output;
  };

  /// No process.
  child_process() = default;

  /// Forks and execs argv[0] (a path: no PATH search) with `argv`. Throws if
  /// fork fails; a failed exec shows as exit status 127 (and a line on the
  /// child's stderr).
  explicit child_process(std::vector<std::string> argv, options o = {}) {
    if (argv.empty()) throw std::invalid_argument("child_process: no program to run");
    // Everything the child needs is built before fork: after it, only
    // async-signal-safe calls (another thread may hold malloc's lock).
    std::vector<std::string> env = environment(o.env);
    std::vector<char*> a, e;
    for (std::string& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (std::string& s : env) e.push_back(s.data());
    e.push_back(nullptr);
    const std::string failed = "child_process: cannot exec " + argv[0] + "\n";
    std::fflush(nullptr);  // nothing buffered twice, and our lines come before the child's
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("child_process: fork failed for " + argv[0]);
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // we died before prctl: no one would reap or kill it
      if (!o.output.empty()) {
        const int fd = ::open(o.output.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
          ::dup2(fd, STDOUT_FILENO);
          ::dup2(fd, STDERR_FILENO);
        }
      }
      ::execve(a[0], a.data(), e.data());
      (void)!::write(STDERR_FILENO, failed.data(), failed.size());
      ::_exit(127);
    }
    pid_ = pid;
  }

  /// Kills (SIGKILL) and reaps a child still running.
  ~child_process() { kill(); }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  child_process(child_process&& o) noexcept
      : pid_(std::exchange(o.pid_, -1)), status_(std::exchange(o.status_, std::nullopt)) {}
  child_process& operator=(child_process&& o) noexcept {
    if (this != &o) {
      kill();
      pid_ = std::exchange(o.pid_, -1);
      status_ = std::exchange(o.status_, std::nullopt);
    }
    return *this;
  }

  /// Its pid while it is not reaped; -1 after (or for no process).
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
  /// The wait status (WIFEXITED …) once reaped.
  [[nodiscard]] std::optional<int> status() const noexcept { return status_; }

  /// Sends `sig` (SIGTERM, SIGSTOP, SIGCONT, …); false if there is no process to send it to.
  bool signal(int sig) const noexcept { return pid_ > 0 && ::kill(pid_, sig) == 0; }

  /// SIGKILL, then reaps it (a killed process is gone at once).
  void kill() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)wait();
  }

  /// Reaps it if it has exited; its wait status then (also later), nullopt while it runs.
  std::optional<int> poll() noexcept {
    if (pid_ > 0) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) reaped(st);
    }
    return status_;
  }

  /// Waits until it exits; its wait status.
  int wait() noexcept {
    if (pid_ > 0) {
      int st = 0;
      pid_t r;
      while ((r = ::waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {
      }
      reaped(r == pid_ ? st : 0);
    }
    return status_.value_or(0);
  }

  /// Waits until it exits or `deadline` passes (polling every 5 ms); its wait
  /// status, or nullopt if it still runs (it is left running: the caller decides).
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (auto st = poll()) return st;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }
  std::optional<int> wait_for(std::chrono::milliseconds timeout) {
    return wait_until(std::chrono::steady_clock::now() + timeout);
  }

  /// A wait status as a shell reports it: the exit code, or 128 + the signal that ended it.
  [[nodiscard]] static int exit_code(int status) noexcept {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }

 private:
  /// Our environment with `more` set on top.
  static std::vector<std::string> environment(const std::vector<std::string>& more) {
    const auto name = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      bool replaced = false;
      for (const std::string& m : more) replaced = replaced || name(m) == name(kv);
      if (!replaced) env.push_back(kv);
    }
    env.insert(env.end(), more.begin(), more.end());
    return env;
  }
  void reaped(int st) noexcept {
    pid_ = -1;
    status_ = st;
  }

  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace lease::testing
