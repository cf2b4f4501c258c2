// cluster_bench.cpp — real-process benchmarks of one store (issue #13, item 3):
// three instance processes (this binary again, with --instance:
// instance.hpp) on one store whose server this program starts (backend.hpp),
// measured from the outside through their audit logs and /proc.
//
//  a. takeover after kill -9 of the runner (--runs times): from the runner's
//     last acknowledged heartbeat and from lease end (last ack + lease: the
//     store set the end no later than that) to the backup's handler start,
//     next to the bound lease + 2 × heartbeat + one round trip and the target
//     median ≤ lease + heartbeat / 2 after the last ack;
//  b. hand-over after SIGTERM (stop()) of the runner: SIGTERM → the backup's start;
//  c. a crash loop: the runner of each attempt killed as it starts, until the
//     run ends interrupted after max_attempts (2);
//  d. idle traffic: 1,000 jobs due in days, nothing due: server commands/s
//     (Redis), instance syscalls/s (every store: a round trip or a file
//     access is one or more), over --idle-seconds;
//  e. the sweep: S jobs every 1 s over 3 instances for --sweep-seconds each:
//     slot-runs exactly once (audited from the handler starts in the logs),
//     missed (and the events logged for them), lag slot → handler start p50 /
//     p99 and, of it, slot → handed to the executor (the scheduler's part; the
//     rest is the pool's queue), client round trips per fire (counted by each instance's store),
//     commands run inside scripts per fire (Redis INFO commandstats), instance
//     and server CPU per 1,000 fires (/proc; Redis: INFO cpu), stop() time
//     (SIGTERM to all three at once, 150 ms after a slot).
//
// Lease 2 s, heartbeat 0.5 s in a–c (short, so 20 runs fit in minutes); 3 s
// and 0.5 s in d and e.
// Exit status 1 if any slot ran twice or a takeover went past its bound.
// A plain program, not a Google Benchmark: a cluster run is the measurement.
//
//   cluster_<store> [--quick] [--runs N] [--sweep 1000,2000,...] [--sweep-seconds N]
//                   [--sweep-threads N] [--idle-seconds N] [--lease MS] [--heartbeat MS]
//                   [--only abcde]
// --sweep-threads: pool threads per instance at every S, instead of enough
// to start each instance's burst of handlers within 200 ms (sweep_threads
// below): e.g. a smaller pool, to see what its queue costs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <unordered_map>

#include "cluster/backend.hpp"

namespace {

using namespace cluster_bench;
using namespace std::chrono_literals;

struct config {
  int runs = 20;
  std::vector<int> sweep{1000, 2000, 3000, 6000, 10000};
  int sweep_seconds = 10;
  int sweep_threads = 0;  // 0: the default rule (sweep_threads())
  int idle_seconds = 10;
  std::int64_t lease = 2000, heartbeat = 500, every = 4000;
  std::string only = "abcde";
};

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

double pct(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) ;
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];  // nearest rank
}

std::string stats(const std::vector<double>& v) {
  char b[160];
  std::snprintf(b, sizeof b, "%6.0f / %6.0f / %6.0f / %6.0f ms", pct(v, 0), pct(v, 50), pct(v, 95), pct(v, 100));
  return b;
}

std::map<std::string, std::string> kv(const std::string& msg) {
  std::map<std::string, std::string> m;
  std::istringstream in(msg);
  for (std::string w; in >> w;)
    if (auto eq = w.find('='); eq != std::string::npos) m[w.substr(0, eq)] = w.substr(eq + 1);
  return m;
}

std::string fresh_ns(const char* what) {
  static int n = 0;
  return std::string("cb_") + what + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

std::filesystem::path work_dir() {
  char tmpl[] = "/tmp/lease-cluster-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw harness_error("mkdtemp failed");
  return tmpl;
}

/// A fleet of 3 instances in `mode`, started.
std::unique_ptr<fleet> make_fleet(const backend& b, const std::filesystem::path& dir, const char* mode,
                                  std::vector<std::string> more) {
  std::vector<std::string> common{"--mode", mode};
  for (auto& s : b.store_args(fresh_ns(mode))) common.push_back(s);
  common.insert(common.end(), more.begin(), more.end());
  auto f = std::make_unique<fleet>(dir, self_exe(), common);
  for (const char* n : {"i0", "i1", "i2"}) f->start(n);
  return f;
}

bool bad = false;

// ---- a, b, c -----------------------------------------------------------------

void takeovers(const backend& b, const config& c, const std::filesystem::path& dir) {
  std::vector<double> rtts;
  for (int i = 0; i < 20; ++i) rtts.push_back(b.round_trip_ms());
  const double rtt = pct(rtts, 50);
  const double bound = static_cast<double>(c.lease + 2 * c.heartbeat) + rtt;
  const double target = static_cast<double>(c.lease) + static_cast<double>(c.heartbeat) / 2;
  auto f = make_fleet(b, dir / "takeover", "takeover",
                      {"--lease", std::to_string(c.lease), "--heartbeat", std::to_string(c.heartbeat), "--every",
                       std::to_string(c.every), "--work", "1500", "--max-attempts", "2"});
  std::printf("\nlease %lld ms, heartbeat %lld ms, one job every %lld ms (handler 1.5 s; a takeover's 0.2 s), "
              "max_attempts 2, claim_jitter 20 ms; one round trip (median of 20 probes) %.2f ms%s\n",
              static_cast<long long>(c.lease), static_cast<long long>(c.heartbeat),
              static_cast<long long>(c.every), rtt, rtt == 0 ? " (no server: in-process)" : "");
  const auto slot_wait = std::chrono::milliseconds(2 * c.every + 5000);
  const auto takeover_wait = std::chrono::milliseconds(c.lease + 4 * c.heartbeat + 3000);
  auto next_start = [&](std::size_t from) {
    auto s = f->wait_for([](const chaos::line& l) { return l.type == "start" && l.kind == "scheduled"; }, slot_wait, from);
    if (!s) throw harness_error("no scheduled start of job t within " + std::to_string(slot_wait.count()) + " ms");
    return *s;
  };
  auto first_ack = [&](const chaos::line& s, std::size_t from) {
    return f->wait_for([&](const chaos::line& l) { return l.type == "ack" && l.token == s.token; },
                       std::chrono::milliseconds(c.lease), from);
  };
  auto takeover_of = [&](const chaos::line& s, std::size_t from) {
    return f->wait_for(
        [&](const chaos::line& l) {
          return l.type == "start" && l.job == s.job && l.slot == s.slot && l.attempt > s.attempt;
        },
        takeover_wait, from);
  };

  if (c.only.find('a') != std::string::npos) {
    std::vector<double> after_ack, after_end;
    int over = 0, none = 0;
    for (int r = 0; r < c.runs; ++r) {
      const std::size_t from = f->mark();
      const chaos::line s = next_start(from);
      if (!first_ack(s, from)) {
        ++none;
        continue;
      }
      (void)f->kill9(s.instance);
      f->pump();
      std::int64_t last_ack = 0;
      for (std::size_t k = from; k < f->lines().size(); ++k)
        if (f->lines()[k].type == "ack" && f->lines()[k].token == s.token) last_ack = f->lines()[k].mono;
      auto t = takeover_of(s, from);
      if (!t) {
        ++none;
      } else {
        const double ms = static_cast<double>(t->mono - last_ack) / 1000.0;
        after_ack.push_back(ms);
        after_end.push_back(ms - static_cast<double>(c.lease));
        if (ms > bound) ++over;
      }
      f->start(s.instance);
    }
    std::printf("a. takeover after kill -9 of the runner, %zu runs (min / median / p95 / max):\n",
                after_ack.size());
    std::printf("   after the last acknowledged heartbeat: %s   bound %.0f ms (lease + 2 x heartbeat + rtt): %d over; "
                "target median <= %.0f ms: %s\n",
                stats(after_ack).c_str(), bound, over, target, pct(after_ack, 50) <= target ? "met" : "MISSED");
    std::printf("   after the lease end (last ack + lease):  %s\n", stats(after_end).c_str());
    if (none > 0) std::printf("   %d run(s) without a takeover within %lld ms (or no ack to time from)\n", none,
                              static_cast<long long>(takeover_wait.count()));
    bad = bad || over > 0 || none > 0;
  }

  if (c.only.find('b') != std::string::npos) {
    std::vector<double> handover, stop_ms;
    int none = 0;
    for (int r = 0; r < c.runs; ++r) {
      const std::size_t from = f->mark();
      const chaos::line s = next_start(from);
      if (!first_ack(s, from)) {
        ++none;
        continue;
      }
      const std::int64_t at = f->term(s.instance);
      auto t = takeover_of(s, from);
      if (!t) ++none;
      else handover.push_back(static_cast<double>(t->mono - at) / 1000.0);
      f->wait_exit(s.instance, 10s);
      for (std::size_t k = from; k < f->lines().size(); ++k)
        if (f->lines()[k].type == "bye" && f->lines()[k].instance == s.instance)
          stop_ms.push_back(std::stod(kv(f->lines()[k].message)["stop_ms"]));
      f->start(s.instance);
    }
    std::printf("b. hand-over after SIGTERM (stop()) of the runner, %zu runs (min / median / p95 / max):\n",
                handover.size());
    std::printf("   SIGTERM -> the backup's handler start: %s\n", stats(handover).c_str());
    std::printf("   the runner's stop() call:             %s\n", stats(stop_ms).c_str());
    if (none > 0) std::printf("   %d run(s) without a hand-over within %lld ms\n", none,
                              static_cast<long long>(takeover_wait.count()));
  }

  if (c.only.find('c') != std::string::npos) {
    const std::size_t from = f->mark();
    chaos::line s = next_start(from);
    std::int64_t last_kill = 0;
    int kills = 0;
    for (;;) {
      last_kill = f->kill9(s.instance);
      ++kills;
      f->start(s.instance);
      auto t = takeover_of(s, from);
      if (!t) break;
      s = *t;
    }
    auto end = f->wait_for(
        [&](const chaos::line& l) { return l.type == "event" && l.kind == "interrupted" && l.slot == s.slot; },
        takeover_wait, from);
    int starts = 0;
    f->pump();
    for (std::size_t k = from; k < f->lines().size(); ++k)
      starts += f->lines()[k].type == "start" && f->lines()[k].slot == s.slot ? 1 : 0;
    if (end)
      std::printf("c. crash loop: %d attempt(s) started, each runner killed; the run ended interrupted %.0f ms after "
                  "the last kill (%s: %s)\n",
                  starts, static_cast<double>(end->mono - last_kill) / 1000.0, end->instance.c_str(),
                  end->message.c_str());
    else
      std::printf("c. crash loop: %d attempt(s) started, %d kill(s); NO interrupted event within %lld ms\n", starts,
                  kills, static_cast<long long>(takeover_wait.count()));
    bad = bad || !end || starts != 2;
  }
}

// ---- d -------------------------------------------------------------------------

void idle(const backend& b, const config& c, const std::filesystem::path& dir) {
  auto f = make_fleet(b, dir / "idle", "idle", {"--jobs", "1000"});
  std::this_thread::sleep_for(2s);  // past start-up
  auto sys = [&] {
    std::uint64_t n = 0;
    for (auto& name : f->names()) n += syscalls(f->pid(name));
    return n;
  };
  auto total = [](const std::map<std::string, double>& m) {
    double n = 0;
    for (auto& [k, v] : m) n += k == "info" ? 0 : v;
    return n;
  };
  const auto s0 = sys();
  const auto c0 = b.commands();
  std::this_thread::sleep_for(std::chrono::seconds(c.idle_seconds));
  const auto s1 = sys();
  const auto c1 = b.commands();
  const double secs = c.idle_seconds;
  std::printf("d. idle, 1,000 jobs every 7 days on each of 3 instances, none due, over %d s: instance syscalls %.1f/s",
              c.idle_seconds, static_cast<double>(s1 - s0) / secs);
  if (!c0.empty() || !c1.empty()) std::printf(", server commands %.1f/s (INFO excluded)", (total(c1) - total(c0)) / secs);
  std::printf(" (target 0)\n");
}

// ---- e -------------------------------------------------------------------------

struct sweep_result {
  int jobs = 0;
  long due = 0, once = 0, twice = 0, missed = 0;
  std::map<std::string, long> why;  // the events logged for missed slots
  std::map<std::int64_t, long> silent;
  std::map<std::string, double> per_fire;  // Redis: calls per fire by command, in the window  // missed slots with no event, by seconds after the window opened
  std::vector<double> lag;     // slot → handler start
  std::vector<double> handed;  // slot → handed to the executor (the rest is the pool's queue)
  double stop_max = 0;
  double trips_per_fire = NAN, script_cmds_per_fire = NAN;
  double inst_cpu_per_k = NAN, server_cpu_per_k = NAN;
  long fires_window = 0;
  bool stop_missing = false;
};

/// A sweep's handler time, and the pool threads of each instance for S jobs
/// every second. Every job falls due in the same millisecond, so each
/// instance gets about S / 3 handlers of sweep_work_ms at once: enough
/// threads to start that whole burst within 200 ms, S × work / 3 / 200 ms
/// (at least 32). Sized for the average instead (twice S × work / 3 / 1000,
/// the rule before 2026-12-04), the pool's queue delayed the handlers and so
/// their finishes, the other instances' claims went out before they heard
/// of them, and the sweep measured the pool more than the scheduler and the
/// store: doc/scale.md, "Many jobs due at the same instant" (--sweep-threads
/// sets another size).
constexpr int sweep_work_ms = 10;
constexpr int sweep_burst_ms = 200;
constexpr int sweep_threads(int jobs) {
  return std::max(32, (jobs * sweep_work_ms + 3 * sweep_burst_ms - 1) / (3 * sweep_burst_ms));
}
int sweep_threads(const config& c, int jobs) { return c.sweep_threads > 0 ? c.sweep_threads : sweep_threads(jobs); }

sweep_result sweep_one(const backend& b, const config& c, int jobs, const std::filesystem::path& dir) {
  sweep_result r;
  r.jobs = jobs;
  auto f = make_fleet(b, dir / ("sweep-" + std::to_string(jobs)), "sweep",
                      {"--jobs", std::to_string(jobs), "--work", std::to_string(sweep_work_ms), "--threads",
                       std::to_string(sweep_threads(c, jobs))});
  const auto now_ms = [] { return lease::system_clock{}.now().time_since_epoch().count(); };
  // The window: from the second slot after a fresh store's wait (one lease,
  // 3 s in sweep mode) is over, for --sweep-seconds slots; stop 150 ms
  // after a slot, mid-burst.
  const std::int64_t first = (now_ms() / 1000 + 5) * 1000;
  const std::int64_t stop_at = first + c.sweep_seconds * 1000LL + 150;
  const std::int64_t last = first + (c.sweep_seconds - 2) * 1000LL;  // slots ≥ 2 s before stop
  std::this_thread::sleep_for(std::chrono::milliseconds(first - now_ms()));
  auto inst_cpu = [&] {
    double s = 0;
    for (auto& n : f->names()) s += cpu_seconds(f->pid(n));
    return s;
  };
  const double ic0 = inst_cpu(), sc0 = b.server_cpu();
  const auto cm0 = b.commands();
  std::this_thread::sleep_for(std::chrono::milliseconds(stop_at - now_ms()));
  const double ic1 = inst_cpu(), sc1 = b.server_cpu();
  const auto cm1 = b.commands();
  for (auto& n : f->names()) f->term(n);
  for (auto& n : f->names()) r.stop_missing = !f->wait_exit(n, 20s) || r.stop_missing;

  // Audit.
  const std::int64_t nslots = (last - first) / 1000 + 1;
  std::vector<std::uint8_t> starts(static_cast<std::size_t>(jobs * nslots));
  std::vector<std::set<std::string>> events(starts.size());
  auto cell = [&](const std::string& job, std::int64_t slot) -> long {
    if (job.size() != 6 || job[0] != 'j' || slot < first || slot > last || (slot - first) % 1000 != 0) return -1;
    const int j = std::stoi(job.substr(1));
    return j < jobs ? static_cast<long>(j * nslots + (slot - first) / 1000) : -1;
  };
  double trips = 0, fires = 0;
  for (const auto& l : f->lines()) {
    if (l.type == "start") {
      if (l.slot >= first && l.slot < stop_at - 150) ++r.fires_window;
      const long k = cell(l.job, l.slot);
      if (k < 0) continue;
      if (starts[static_cast<std::size_t>(k)] < 255) ++starts[static_cast<std::size_t>(k)];
      r.lag.push_back(static_cast<double>(l.wall - l.slot));
      if (l.message.starts_with("handed="))
        r.handed.push_back(static_cast<double>(std::stoll(l.message.substr(7)) - l.slot));
    } else if (l.type == "event") {
      const long k = cell(l.job, l.slot);
      if (k >= 0) events[static_cast<std::size_t>(k)].insert(l.kind);
      // "N slot(s) not claimed, …": one late event for N slots from this one on.
      if (l.kind == "late") {
        const long n = std::atol(l.message.c_str());
        if (l.message.find(" slot(s) not claimed") != std::string::npos)
          for (long s = 1; s < n; ++s)
            if (const long k2 = cell(l.job, l.slot + 1000 * s); k2 >= 0) events[static_cast<std::size_t>(k2)].insert("late");
      }
    } else if (l.type == "bye") {
      auto m = kv(l.message);
      r.stop_max = std::max(r.stop_max, std::stod(m["stop_ms"]));
      fires += std::stod(m["fires"]);
      if (m.count("round_trips")) trips += std::stod(m["round_trips"]);
      else trips = NAN;
    }
  }
  for (std::size_t k = 0; k < starts.size(); ++k) {
    ++r.due;
    if (starts[k] == 1) ++r.once;
    else if (starts[k] > 1) ++r.twice;
    else {
      ++r.missed;
      std::string why;
      for (auto& e : events[k]) why += (why.empty() ? "" : "+") + e;
      ++r.why[why.empty() ? "(no event)" : why];
      if (why.empty()) ++r.silent[static_cast<std::int64_t>(k) % nslots];
    }
  }
  if (fires > 0) r.trips_per_fire = trips / fires;
  const double wf = static_cast<double>(std::max(r.fires_window, 1L));
  r.inst_cpu_per_k = (ic1 - ic0) * 1000.0 / wf * 1000.0;  // ms per 1,000 fires
  if (sc0 >= 0) r.server_cpu_per_k = (sc1 - sc0) * 1000.0 / wf * 1000.0;
  if (!cm0.empty() || !cm1.empty()) {
    // Commands run inside scripts: every command counted but those a client
    // sends itself (the script calls, and this driver's INFO).
    static const std::set<std::string> client{"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro",
                                              "info", "ping", "script|load", "script|exists", "script", "client|setname",
                                              "client|setinfo", "select", "hello", "auth", "time", "multi", "exec"};
    // TIME is both (a client's now() and scripts' clock): not counted here,
    // shown with the rest in the per-command breakdown.
    double in_scripts = 0;
    for (auto& [k, v] : cm1) {
      const double d = v - (cm0.count(k) ? cm0.at(k) : 0);
      if (!client.count(k) && k.rfind("config", 0) != 0) in_scripts += d;
      if (d > 0 && k != "info") r.per_fire[k] = d / wf;
    }
    r.script_cmds_per_fire = in_scripts / wf;
  }
  if (r.twice > 0 || r.stop_missing) bad = true;
  return r;
}

void sweep(const backend& b, const config& c, const std::filesystem::path& dir) {
  std::vector<sweep_result> rs;
  for (int s : c.sweep) {
    std::fprintf(stderr, "sweep S=%d ...\n", s);
    rs.push_back(sweep_one(b, c, s, dir));
  }
  std::printf("e. sweep: S jobs every 1 s over 3 instances (handlers %d ms; pool threads per instance: %s: %d at S = "
              "%d), %d s each; "
              "slots audited: %d s from the 2nd slot after start (the last 2 s before stop() not counted)\n",
              sweep_work_ms, c.sweep_threads > 0 ? "--sweep-threads" : "enough to start its burst within 200 ms, at least 32",
              sweep_threads(c, c.sweep.empty() ? 0 : c.sweep.back()), c.sweep.empty() ? 0 : c.sweep.back(),
              c.sweep_seconds, c.sweep_seconds - 1);
  std::printf("   %-6s | %-22s | %-6s | %-7s | %-13s | %-15s | %-10s | %-16s | %-22s | %s\n", "S", "slot-runs exactly once",
              "twice+", "missed", "lag p50 / p99", "to pool p50/p99", "trips/fire", "script cmds/fire", "CPU per 1k fires",
              "stop() max");
  std::printf("   %-6s | %-22s | %-6s | %-7s | %-13s | %-15s | %-10s | %-16s | %-22s | %s\n", "", "", "", "", "ms", "ms",
              "(client)", "(Redis)", "3 instances / server", "ms");
  auto opt = [](double v, const char* fmt) {
    if (std::isnan(v)) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, fmt, v);
    return std::string(b);
  };
  for (auto& r : rs) {
    char once[64], lag[64], handed[64], cpu[64];
    std::snprintf(once, sizeof once, "%ld / %ld (%.2f%%)", r.once, r.due,
                  100.0 * static_cast<double>(r.once) / static_cast<double>(std::max(r.due, 1L)));
    std::snprintf(lag, sizeof lag, "%.0f / %.0f", pct(r.lag, 50), pct(r.lag, 99));
    std::snprintf(handed, sizeof handed, "%.0f / %.0f", pct(r.handed, 50), pct(r.handed, 99));
    std::snprintf(cpu, sizeof cpu, "%.0f / %s ms", r.inst_cpu_per_k, opt(r.server_cpu_per_k, "%.0f").c_str());
    std::printf("   %-6d | %-22s | %-6ld | %-7ld | %-13s | %-15s | %-10s | %-16s | %-22s | %.0f%s\n", r.jobs, once,
                r.twice, r.missed, lag, handed, opt(r.trips_per_fire, "%.2f").c_str(),
                opt(r.script_cmds_per_fire, "%.2f").c_str(), cpu,
                r.stop_max, r.stop_missing ? " (an instance did not exit: killed)" : "");
  }
  for (auto& r : rs)
    if (!r.per_fire.empty()) {
      std::printf("   S=%d Redis calls per fire by command (INFO commandstats; inside scripts and from clients):", r.jobs);
      for (auto& [k, v] : r.per_fire) std::printf(" %s=%.2f", k.c_str(), v);
      std::printf("\n");
    }
  for (auto& r : rs)
    if (!r.why.empty()) {
      std::printf("   S=%d missed slots by the events logged for them:", r.jobs);
      for (auto& [k, n] : r.why) std::printf(" %s=%ld", k.c_str(), n);
      if (!r.silent.empty()) {
        std::printf("; those with no event, by slot (s after the window opened):");
        for (auto& [k, n] : r.silent) std::printf(" %lld:%ld", static_cast<long long>(k), n);
      }
      std::printf("\n");
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--instance") {
    sigset_t sigs = instance_signals();
    args a;
    for (int i = 2; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
    try {
      return instance_main(a, sigs);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "instance %s: %s\n", a["--name"].c_str(), e.what());
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  config c;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (k == "--quick") {
        c.runs = 3;
        c.sweep = {200, 500};
        c.sweep_seconds = 4;
        c.idle_seconds = 3;
      } else if (k == "--runs") c.runs = std::stoi(val());
      else if (k == "--sweep-seconds") c.sweep_seconds = std::stoi(val());
      else if (k == "--sweep-threads") c.sweep_threads = std::stoi(val());
      else if (k == "--idle-seconds") c.idle_seconds = std::stoi(val());
      else if (k == "--lease") c.lease = std::stoll(val());
      else if (k == "--heartbeat") c.heartbeat = std::stoll(val());
      else if (k == "--only") c.only = val();
      else if (k == "--sweep") {
        c.sweep.clear();
        std::istringstream in(val());
        for (std::string s; std::getline(in, s, ',');) c.sweep.push_back(std::stoi(s));
      } else {
        std::fprintf(stderr, "error: unknown option '%s' (see the top of cluster_bench.cpp)\n", k.c_str());
        return 2;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "error: %s needs a number\n", k.c_str());
      return 2;
    }
  }
  if (c.sweep_seconds < 3 || c.runs < 1 || c.idle_seconds < 1 || c.sweep_threads < 0 || c.sweep_threads > 4096) {
    std::fprintf(stderr, "error: --sweep-seconds must be at least 3, --runs and --idle-seconds at least 1, "
                         "--sweep-threads from 1 to 4096 (or 0: the default)\n");
    return 2;
  }
  if (c.heartbeat * 2 >= c.lease) {
    std::fprintf(stderr, "error: --heartbeat must be under half of --lease\n");
    return 2;
  }
  c.every = std::max<std::int64_t>(4000, c.lease + 2 * c.heartbeat + 1000);
  try {
    const backend b;
    const auto dir = work_dir();
    std::ifstream la("/proc/loadavg");
    std::string l1, l5, l15;
    la >> l1 >> l5 >> l15;
    std::printf("cluster benchmark, store %s: %s; 3 instance processes; %ld cores; load average before: %s %s %s\n",
                store_name, b.describe().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), l1.c_str(), l5.c_str(), l15.c_str());
    std::fflush(stdout);
    if (c.only.find_first_of("abc") != std::string::npos) takeovers(b, c, dir);
    std::fflush(stdout);
    if (c.only.find('d') != std::string::npos) idle(b, c, dir);
    std::fflush(stdout);
    if (c.only.find('e') != std::string::npos) sweep(b, c, dir);
    std::ifstream lb("/proc/loadavg");
    lb >> l1 >> l5 >> l15;
    std::printf("load average after: %s %s %s\n", l1.c_str(), l5.c_str(), l15.c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  if (bad) std::printf("FAILED: a slot ran twice, a takeover went past its bound or did not happen, or stop() hung\n");
  return bad ? 1 : 0;
}
