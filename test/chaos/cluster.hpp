// test/chaos/cluster.hpp — the driver's side of one chaos test: a temporary
// directory, three chaos_instance processes on one store, their audit logs
// read as they grow, and the faults done to them (each recorded with its
// CLOCK_MONOTONIC time). Faults are triggered by what the logs say (wait_for),
// never by a blind sleep. Every child is killed and reaped, and the directory
// removed, on every way out.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <lease/clock/system.hpp>

#include "chaos/audit.hpp"
#include "chaos/check.hpp"
#include "support/child_process.hpp"

namespace chaos {

using namespace std::chrono_literals;

/// The test cannot go on: something it waited for did not happen in time.
struct harness_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::int64_t wall_ms() { return lease::system_clock{}.now().time_since_epoch().count(); }

/// Rounds of a fault whose CTest run does `ctest_rounds`: times
/// LEASE_CHAOS_SOAK (scripts/chaos --soak sets it) when that is set.
inline int rounds(int ctest_rounds) {
  const char* f = std::getenv("LEASE_CHAOS_SOAK");
  return f != nullptr && std::atoi(f) > 0 ? ctest_rounds * std::atoi(f) : ctest_rounds;
}

/// Where a store lives, as an instance process is told (one backend per store).
struct backend {
  virtual ~backend() = default;
  /// `--store ... --url/--db ...` for instance `name` (a per-instance proxy may be used).
  virtual std::vector<std::string> store_args(const std::string& name) = 0;
  [[nodiscard]] virtual std::string kind() const = 0;
};

class cluster {
 public:
  struct instance {
    std::string name;
    lease::testing::child_process child;
    std::string log;
    std::vector<std::string> env;  ///< e.g. LD_PRELOAD of libfaketime
    std::size_t read = 0;          ///< bytes of the log consumed
    std::string partial;
    bool expect_exit = false;
  };

  cluster(std::string test, backend& b, std::filesystem::path dir) : test_(std::move(test)), b_(b), dir_(std::move(dir)) {
    origin_ = mono_us();
  }
  ~cluster() = default;  // each instance is killed and reaped
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] std::int64_t origin() const { return origin_; }
  [[nodiscard]] const std::vector<line>& lines() const { return lines_; }
  [[nodiscard]] std::size_t mark() const { return lines_.size(); }

  /// Starts instance `name` (again, if it was killed) and waits for its ready line.
  void start(const std::string& name, std::vector<std::string> env = {}) {
    instance& i = inst_[name];
    if (i.name.empty()) {
      i.name = name;
      i.log = (dir_ / (name + ".audit")).string();
      i.env = std::move(env);
    }
    std::vector<std::string> argv{LEASE_CHAOS_INSTANCE, "--name", name, "--log", i.log};
    for (auto& a : b_.store_args(name)) argv.push_back(a);
    const std::size_t from = mark();
    try {
      i.child = lease::testing::child_process(argv, {i.env, (dir_ / (name + ".out")).string()});
    } catch (const std::runtime_error& e) {  // fork failed: the test cannot go on, say so with the verdict
      throw harness_error(e.what());
    }
    i.expect_exit = false;
    need(wait_for([&](const line& l) { return l.type == "ready" && l.instance == name; }, 10s, from),
         name + " to start");
  }

  /// The test window opens: slots due from now on must be run or explained.
  void open_window() { window_from_ = wall_ms() + 500; }

  /// Reads what the logs gained and reaps children that exited.
  void pump() {
    for (auto& [_, i] : inst_) {
      std::ifstream f(i.log, std::ios::binary);
      if (!f) continue;
      f.seekg(static_cast<std::streamoff>(i.read));
      std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      i.read += chunk.size();
      i.partial += chunk;
      std::string::size_type nl;
      while ((nl = i.partial.find('\n')) != std::string::npos) {
        if (auto l = parse(i.partial.substr(0, nl))) lines_.push_back(std::move(*l));
        i.partial.erase(0, nl + 1);
      }
      if (i.child.running()) {
        if (const auto st = i.child.poll(); st && !i.expect_exit)
          crashes_.push_back(i.name + " exited by itself (status " + std::to_string(*st) + "): " + tail(i.name));
      }
    }
  }

  /// The first line from index `from` on that satisfies `pred`, reading the
  /// logs every 5 ms; nullopt after `timeout`.
  std::optional<line> wait_for(const std::function<bool(const line&)>& pred, std::chrono::milliseconds timeout,
                               std::size_t from) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (std::size_t k = from;;) {
      pump();
      for (; k < lines_.size(); ++k)
        if (pred(lines_[k])) return lines_[k];
      if (std::chrono::steady_clock::now() >= end) return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
  }
  /// Reads the logs for `d` (letting the cluster run).
  void run_for(std::chrono::milliseconds d) { (void)wait_for([](const line&) { return false; }, d, mark()); }

  /// "i2 (runner of job a slot 1796039796000 attempt 1, fence 2)"
  static std::string describe_run(const line& s) {
    return s.instance + " (runner of job " + s.job + " slot " + std::to_string(s.slot) + " attempt " +
           std::to_string(s.attempt) + ", fence " + std::to_string(s.fence) + ")";
  }

  static line need(std::optional<line> l, const std::string& what) {
    if (!l) throw harness_error("timed out waiting for " + what);
    return *l;
  }

  /// A scheduled handler of job "b" (the long one; on instance `only`, if
  /// given) that has done `steps` steps: the moment to hurt its runner.
  /// Returns its start line.
  line wait_running(std::chrono::milliseconds timeout, const std::string& only = {}, int steps = 5) {
    const std::size_t from = mark();
    const auto end = std::chrono::steady_clock::now() + timeout;
    std::vector<std::string> too_short;  // tokens of handlers that ended first
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      const line s = need(wait_for(
                              [&](const line& l) {
                                return l.type == "start" && l.kind == "scheduled" && l.job == "b" &&
                                       (only.empty() || l.instance == only) &&
                                       std::find(too_short.begin(), too_short.end(), l.token) == too_short.end();
                              },
                              std::max(left, 1ms), from),
                          "a scheduled handler to start" + (only.empty() ? "" : " on " + only));
      auto step = wait_for(
          [&](const line& l) {
            return l.token == s.token && ((l.type == "step" && std::stoi(l.kind) >= steps - 1) || l.type == "end");
          },
          2s, from);
      if (step && step->type == "step") return s;
      too_short.push_back(s.token);
      if (std::chrono::steady_clock::now() >= end) throw harness_error("no handler ran long enough to be hurt");
    }
  }

  /// A start of the same run as `s` with a higher attempt (a takeover), or
  /// an event saying the run ended; nullopt after `timeout`.
  std::optional<line> wait_taken_over(const line& s, std::chrono::milliseconds timeout, std::size_t from) {
    return wait_for(
        [&](const line& l) {
          return l.job == s.job && l.slot == s.slot &&
                 ((l.type == "start" && l.attempt > s.attempt) || (l.type == "event" && l.kind == "interrupted"));
        },
        timeout, from);
  }

  // ---- faults -------------------------------------------------------------

  /// Records a fault (printed with the verdict, counted).
  void fault(const std::string& what) {
    faults_.push_back(at(mono_us(), origin_) + "  " + what);
    std::cout << "  [" << test_ << "] " << faults_.back() << "\n" << std::flush;
  }
  [[nodiscard]] pid_t pid(const std::string& name) const { return inst_.at(name).child.pid(); }

  void signal(const std::string& name, int sig, const std::string& what) {
    instance& i = inst_.at(name);
    if (!i.child.running()) throw harness_error(name + " is not running");
    fault(what);
    if (sig == SIGKILL) {
      i.expect_exit = true;
      i.child.kill();
    } else {
      i.child.signal(sig);
    }
  }

  /// Stops every instance (SIGTERM, SIGCONT in case one is frozen), waits
  /// for them to exit, reads the last lines.
  void stop_all() {
    window_to_ = wall_ms() - 1500;
    for (auto& [_, i] : inst_)
      if (i.child.running()) {
        i.expect_exit = true;
        i.child.signal(SIGCONT);
        i.child.signal(SIGTERM);
      }
    const auto end = std::chrono::steady_clock::now() + 8s;
    for (auto& [_, i] : inst_) {
      if (i.child.running() && !i.child.wait_until(end)) {
        crashes_.push_back(i.name + " did not exit within 8 s of SIGTERM (killed)");
        i.child.kill();
      }
    }
    pump();
  }

  /// Runs the checker over everything seen, prints the counts and every
  /// violation, saves the merged log (build dir), and returns the report.
  report verdict() {
    std::vector<line> sorted = lines_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const line& a, const line& b) { return a.mono < b.mono; });
    report r = check(sorted, window_from_, window_to_, origin_);
    for (auto& c : crashes_) r.violations.push_back("INSTANCE: " + c);
    std::ostringstream o;
    o << "== chaos " << test_ << " (" << b_.kind() << "): " << r.slots_due << " slots due, " << r.runs
      << " handler runs, " << r.takeovers << " takeovers, " << r.catch_ups << " catch-ups, " << faults_.size()
      << " faults injected; violations: " << r.double_runs << " double runs, " << r.job_overlaps
      << " overlaps of one job, " << r.fence_errors << " fence errors, " << r.unexplained << " unexplained slots, "
      << crashes_.size() << " instance errors";
    if (r.overlaps_after_store_step > 0)
      o << " (" << r.overlaps_after_store_step << " overlap(s) of one job within two leases of a stated step of the "
        << "store's clock: excused)";
    if (r.double_runs_after_store_step > 0)
      o << " (" << r.double_runs_after_store_step << " double run(s) shorter than a lease, within two leases of a "
        << "stated step ahead of the store's clock beyond lease - 2 heartbeats: excused, doc/protocol.md §2)";
    o << "\n";
    o << "   events:";
    for (auto& [k, n] : r.events) o << " " << k << "=" << n;
    o << "\n   faults:\n";
    for (auto& f : faults_) o << "     " << f << "\n";
    for (auto& v : r.violations) o << "   VIOLATION " << v << "\n";
    std::cout << o.str() << std::flush;
    save(sorted, o.str());
    return r;
  }

 private:
  std::string tail(const std::string& name) const {
    std::ifstream f(dir_ / (name + ".out"));
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return all.size() > 400 ? all.substr(all.size() - 400) : all;
  }

  /// The merged audit log of the test, for a human after the fact.
  void save(const std::vector<line>& sorted, const std::string& summary) const {
    std::error_code ec;
    const std::filesystem::path d = std::filesystem::path(LEASE_CHAOS_LOG_DIR);
    std::filesystem::create_directories(d, ec);
    std::string file = test_ + "-" + b_.kind() + ".log";
    std::ofstream o(d / file);
    o << summary;
    for (const line& l : sorted) o << at(l.mono, origin_) << "\t" << format(l);
    std::cout << "   merged audit log: " << (d / file).string() << "\n";
  }

  std::string test_;
  backend& b_;
  std::filesystem::path dir_;
  std::int64_t origin_ = 0;
  std::map<std::string, instance> inst_;
  std::vector<line> lines_;
  std::vector<std::string> faults_, crashes_;
  std::int64_t window_from_ = 0, window_to_ = 0;
};

}  // namespace chaos
