// benchmark/cluster/fleet.hpp — the driver's side: instance processes (this
// binary run again with --instance), their audit logs read as they grow,
// kill -9 / SIGTERM, and what /proc says about a process (CPU, syscalls).
// Every child is killed and reaped on every way out.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chaos/audit.hpp"
#include "support/child_process.hpp"

namespace cluster_bench {

using namespace std::chrono_literals;

/// The benchmark cannot go on (something it waited for did not happen).
struct harness_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// utime + stime of a process in seconds (0 if it is gone).
inline double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  double ut = 0, st = 0;
  for (int k = 3; in >> field; ++k) {  // field 3 is the state
    if (k == 14) ut = std::stod(field);
    if (k == 15) {
      st = std::stod(field);
      break;
    }
  }
  return (ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// The parent pid of a process (-1 if it is gone).
inline pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 2));
  std::string state;
  pid_t ppid = -1;
  in >> state >> ppid;
  return ppid;
}

/// CPU seconds of `root` and its direct children (a PostgreSQL postmaster and its backends).
inline double tree_cpu_seconds(pid_t root) {
  double sum = cpu_seconds(root);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t p = std::stoi(n);
    if (parent_of(p) == root) sum += cpu_seconds(p);
  }
  return sum;
}

/// read(2)-family + write(2)-family calls of a process so far (/proc/PID/io).
inline std::uint64_t syscalls(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/io");
  std::string k;
  std::uint64_t v = 0, sum = 0;
  while (f >> k >> v)
    if (k == "syscr:" || k == "syscw:") sum += v;
  return sum;
}

/// Three (or more) instance processes of one store and their audit lines.
class fleet {
 public:
  /// `common`: arguments every instance gets (mode, store, timing).
  fleet(std::filesystem::path dir, std::string self, std::vector<std::string> common)
      : dir_(std::move(dir)), self_(std::move(self)), common_(std::move(common)) {
    std::filesystem::create_directories(dir_);
  }
  ~fleet() = default;  // each child is killed and reaped
  fleet(const fleet&) = delete;
  fleet& operator=(const fleet&) = delete;

  [[nodiscard]] const std::vector<chaos::line>& lines() const { return lines_; }
  [[nodiscard]] std::size_t mark() const { return lines_.size(); }
  [[nodiscard]] pid_t pid(const std::string& n) const { return procs_.at(n).child.pid(); }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (auto& [n, _] : procs_) v.push_back(n);
    return v;
  }

  /// Starts instance `name` (again, after a kill) and waits for its ready line.
  void start(const std::string& name, std::chrono::milliseconds timeout = 30s) {
    proc& p = procs_[name];
    p.name = name;
    p.log = (dir_ / (name + ".audit")).string();
    std::vector<std::string> argv{self_, "--instance", "--name", name, "--log", p.log};
    argv.insert(argv.end(), common_.begin(), common_.end());
    const std::size_t from = mark();
    p.child = lease::testing::child_process(argv, {{}, (dir_ / (name + ".out")).string()});
    if (!wait_for([&](const chaos::line& l) { return l.type == "ready" && l.instance == name; }, timeout, from))
      throw harness_error(name + " did not start within " + std::to_string(timeout.count()) + " ms: " + tail(name));
  }

  /// Reads what the logs gained.
  void pump() {
    for (auto& [_, p] : procs_) {
      std::ifstream f(p.log, std::ios::binary);
      if (!f) continue;
      f.seekg(static_cast<std::streamoff>(p.read));
      std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      p.read += chunk.size();
      p.partial += chunk;
      std::string::size_type from = 0, nl;
      while ((nl = p.partial.find('\n', from)) != std::string::npos) {
        if (auto l = chaos::parse(p.partial.substr(from, nl - from))) lines_.push_back(std::move(*l));
        from = nl + 1;
      }
      p.partial.erase(0, from);
    }
  }

  /// The first line from index `from` on that satisfies `pred`, polling the logs every 2 ms.
  std::optional<chaos::line> wait_for(const std::function<bool(const chaos::line&)>& pred,
                                      std::chrono::milliseconds timeout, std::size_t from) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (std::size_t k = from;;) {
      pump();
      for (; k < lines_.size(); ++k)
        if (pred(lines_[k])) return lines_[k];
      if (std::chrono::steady_clock::now() >= end) return std::nullopt;
      std::this_thread::sleep_for(2ms);
    }
  }

  /// kill -9 and reap; returns CLOCK_MONOTONIC µs of the kill.
  std::int64_t kill9(const std::string& n) {
    const std::int64_t at = chaos::mono_us();
    procs_.at(n).child.kill();
    return at;
  }
  /// SIGTERM (stop()); returns CLOCK_MONOTONIC µs of the signal. Reap with wait_exit().
  std::int64_t term(const std::string& n) {
    const std::int64_t at = chaos::mono_us();
    procs_.at(n).child.signal(SIGTERM);
    return at;
  }
  /// Waits for `n` to exit (after term()); false (and killed) after `timeout`.
  bool wait_exit(const std::string& n, std::chrono::milliseconds timeout) {
    lease::testing::child_process& c = procs_.at(n).child;
    if (c.running() && !c.wait_for(timeout)) {
      c.kill();
      return false;
    }
    pump();
    return true;
  }

 private:
  struct proc {
    std::string name, log, partial;
    lease::testing::child_process child;
    std::size_t read = 0;
  };

  std::string tail(const std::string& n) const {
    std::ifstream f(dir_ / (n + ".out"));
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return all.size() > 400 ? all.substr(all.size() - 400) : all;
  }

  std::filesystem::path dir_;
  std::string self_;
  std::vector<std::string> common_;
  std::map<std::string, proc> procs_;
  std::vector<chaos::line> lines_;
};

}  // namespace cluster_bench
