// fairness.cpp — is the scheduler's loop fair under load? (issue #16, item 3)
//
// Three instances in real mode (lease::system_clock, lease::thread_pool), each
// with one connection to ONE redis-server that this program starts on a free
// 127.0.0.1 port (test/redis/server.hpp), run S jobs `every(1s)` — the same
// job names on all three — with handlers that sleep 5–20 ms, for 15 s; then
// all three are stopped at once. S = 1,000 and 2,000 (2,000 slot-runs/s).
// Without a redis-server on PATH it falls back to one lease::memory_store
// shared in-process, and says so in its first line.
//
// What it reports, per S (only slots due in the window: from the first slot
// after every instance started to 2 s before stop(), so a slot still waiting
// out its claim jitter at stop() is not counted as missed):
// * slots due vs slots whose handler started exactly once (runs counted per
//   (job, slot) by the handlers themselves; a slot run twice is a bug and is
//   printed loudly, and the exit status is 1);
// * missed slots (no handler start anywhere) grouped by the event kinds the
//   three instances emitted for that slot — the events must explain them;
// * finish lag: handler end → the `success` event on the same instance, both
//   on the monotonic clock (what the fairness fix is about: a finish is sent
//   in the same loop turn, not after every due timer);
// * start lag: slot → handler start (wall clock; includes claim_jitter,
//   uniform in [0, 250 ms], by design);
//   The worst one is printed next to the slowest round trip a probe (its own
//   connection, every 10 ms) saw meanwhile: both high means the server or
//   the machine stalled every client, only the lag high means the loop did;
// * stop(): wall time of each instance's call — made on all three at once,
//   150 ms after a slot, mid-burst, with claims queued and handlers running —
//   against its bound stop_timeout + one store round trip (the probe's
//   slowest; exit status 1 if over).
//
// A program with a main, not a Google Benchmark: one fixed-length run of a
// cluster is the measurement, there is nothing to iterate. Not a CTest test.
// Lags are read with std::chrono clocks directly, as the other benchmarks do:
// they measure the library from outside and are no part of it.
//
//   build/release/benchmark/scheduler/bench_scheduler_fairness [S ...]   (default: 1000 2000)
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lease/clock/system.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/every.hpp"
#include "lease/scheduler.hpp"
#include "lease/store/memory.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"

namespace {

using namespace std::chrono_literals;
using mono = std::chrono::steady_clock;
using wall_clock = std::chrono::system_clock;

constexpr int instances = 3;
constexpr lease::duration interval = 1s;
constexpr auto run_for = 15s;
/// Slots due within this of stop() are not counted: their claims may still
/// wait out the jitter (≤ 250 ms) behind a queue of due timers.
constexpr auto settle = 2s;
/// Slots tracked per job, from `base` (one before the catch-up slot) on.
constexpr int slots_kept = 64;
constexpr lease::duration stop_timeout = 5s;
/// ~700 runs/s per instance × ≤ 20 ms, in bursts (every job's slot is at the
/// same second, spread only by the 250 ms claim jitter): 32 keeps the pool
/// from being what delays a start.
constexpr std::size_t pool_threads = 32;
constexpr std::size_t kinds = 16;  // lease::event_kind has 16 values

double ms_between(mono::time_point a, mono::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string job_name(int j) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "job-%04d", j);
  return buf;
}

/// Nearest-rank percentile; NaN-free: 0 for an empty sample.
double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(k, v.size() - 1)];
}

/// Everything the handlers and the event sinks record for one cluster run.
/// Handlers write atomics (any pool thread); each instance's sink is called
/// on that instance's loop thread only, so its per-instance parts need no
/// lock; everything is read after the schedulers are destroyed.
struct tally {
  tally(int jobs_, lease::time_point base_)
      : jobs(jobs_),
        base(base_),
        runs(cells()),
        who(cells()),
        end_ns(static_cast<std::size_t>(instances) * cells()),
        seen(static_cast<std::size_t>(instances) * cells()) {}

  [[nodiscard]] std::size_t cells() const { return static_cast<std::size_t>(jobs) * slots_kept; }
  /// The cell of (job, slot), if both are tracked.
  [[nodiscard]] std::optional<std::size_t> cell(std::string_view job, lease::time_point slot) const {
    int j = -1;
    if (job.size() < 5 || std::from_chars(job.data() + 4, job.data() + job.size(), j).ec != std::errc{} || j < 0 ||
        j >= jobs)
      return std::nullopt;
    const auto k = (slot - base) / interval;
    if ((slot - base) % interval != lease::duration::zero() || k < 0 || k >= slots_kept) return std::nullopt;
    return static_cast<std::size_t>(j) * slots_kept + static_cast<std::size_t>(k);
  }
  [[nodiscard]] static int slot_of(std::size_t c) { return static_cast<int>(c % slots_kept); }

  int jobs;
  lease::time_point base;
  std::vector<std::atomic<std::uint8_t>> runs;     // handler starts per (job, slot)
  std::vector<std::atomic<std::uint8_t>> who;      // bit i: instance i started it
  std::vector<std::atomic<std::int64_t>> end_ns;   // [instance][cell]: handler end, monotonic
  std::vector<std::uint32_t> seen;                 // [instance][cell]: bit k: event kind k emitted
  std::atomic<int> in_flight{0};                   // handlers running now

  struct per_instance {
    std::mutex m;  // start_lag: written by pool threads
    std::vector<std::pair<int, double>> start_lag;  // (slot index, ms)
    std::array<std::atomic<std::uint64_t>, 3> reasons{};  // handler starts by claim_reason
    // Loop thread only:
    std::vector<std::pair<int, double>> finish_lag;  // (slot index, ms)
    double worst_finish = 0;                         // the largest finish lag, and when it happened:
    mono::time_point worst_end{}, worst_success{};   // handler end, success event
    std::array<std::uint64_t, kinds> events{};
    std::uint64_t finish_unpaired = 0;  // success with no handler end recorded (must stay 0)
    std::vector<std::string> samples;   // first message of each kind, for the report
  };
  std::array<per_instance, instances> inst;
};

/// A slot's handler: counts the start, sleeps 5–20 ms, records its end.
auto make_handler(tally& t, int i) {
  return [&t, i](lease::run_context& ctx) {
    const auto started = wall_clock::now();
    const std::optional<std::size_t> c = t.cell(ctx.job, ctx.slot);
    auto& me = t.inst[static_cast<std::size_t>(i)];
    me.reasons[static_cast<std::size_t>(ctx.reason)].fetch_add(1);
    const double lag = std::chrono::duration<double, std::milli>(started - ctx.slot).count();
    const int k = c ? tally::slot_of(*c) : -1;
    if (c) {
      t.runs[*c].fetch_add(1);
      t.who[*c].fetch_or(static_cast<std::uint8_t>(1u << i));
    }
    {
      std::scoped_lock lock(me.m);
      me.start_lag.emplace_back(k, lag);
    }
    t.in_flight.fetch_add(1);
    const auto work = std::chrono::milliseconds(5 + (c ? (*c * 7 + 3) % 16 : 10));
    std::this_thread::sleep_for(work);
    t.in_flight.fetch_sub(1);
    if (c)
      t.end_ns[static_cast<std::size_t>(i) * t.cells() + *c].store(mono::now().time_since_epoch().count());
  };
}

/// An instance's event sink (its loop thread).
auto make_sink(tally& t, int i) {
  return [&t, i](const lease::event& e) {
    const auto now = mono::now();
    auto& me = t.inst[static_cast<std::size_t>(i)];
    const auto k = static_cast<std::size_t>(e.kind);
    if (k < kinds) {
      if (me.events[k]++ == 0 && me.samples.size() < 40)
        me.samples.push_back(std::string(lease::to_string(e.kind)) + ": " + e.message.substr(0, 200));
    }
    const std::optional<std::size_t> c = t.cell(e.run.job, e.run.slot);
    if (!c) return;
    const std::size_t at = static_cast<std::size_t>(i) * t.cells();
    t.seen[at + *c] |= 1u << k;
    if (e.kind == lease::event_kind::success) {
      const std::int64_t end = t.end_ns[at + *c].load();
      if (end == 0) {
        ++me.finish_unpaired;
      } else {
        const mono::time_point ended{mono::duration{end}};
        const double lag = ms_between(ended, now);
        me.finish_lag.emplace_back(tally::slot_of(*c), lag);
        if (lag > me.worst_finish) {
          me.worst_finish = lag;
          me.worst_end = ended;
          me.worst_success = now;
        }
      }
    }
    // "N slot(s) not claimed, A to B: …" (claims.hpp, on_slot): one event
    // names N skipped slots from e.run.slot on; mark each of them.
    if (e.kind == lease::event_kind::late) {
      int n = 0;
      const char* b = e.message.data();
      auto [p, ec] = std::from_chars(b, b + e.message.size(), n);
      if (ec == std::errc{} && e.message.compare(static_cast<std::size_t>(p - b), 21, " slot(s) not claimed,") == 0)
        for (int s = 1; s < n && tally::slot_of(*c) + s < slots_kept; ++s) t.seen[at + *c + static_cast<std::size_t>(s)] |= 1u << k;
    }
  };
}

struct result {
  int jobs = 0;
  std::string backend;
  long due = 0, once = 0, twice = 0, missed = 0;
  std::vector<double> start_lag, finish_lag;
  std::array<double, instances> stop_ms{};
  double bound_ms = 0;
  double rt_p50 = 0, rt_p99 = 0, rt_max = 0;
  std::array<std::uint64_t, kinds> events{};
  std::array<std::uint64_t, 3> reasons{};
  std::uint64_t unpaired = 0;
  std::array<double, instances> trips_per_s{};
  bool stop_over = false;
  int in_flight_at_stop = 0;
  double worst_finish = 0, probe_max_then = 0;  // the probe's slowest round trip during the worst finish lag
};

/// Runs the cluster once with `jobs` jobs over stores from `make_store`
/// (called once per instance, and once for the round-trip probe).
template <class Store, class MakeStore>
result run_cluster(int jobs, MakeStore make_store, std::string backend) {
  using sched_t = lease::scheduler<Store, lease::system_clock, lease::thread_pool, lease::skip_t>;
  const lease::every every(interval);
  const lease::system_clock clock;
  // Slot 0 is one before the catch-up slot (the latest slot due at start).
  tally t(jobs, every.latest(clock.now()) - 2 * interval);
  result r;
  r.jobs = jobs;
  r.backend = std::move(backend);

  // Store round trips while the cluster runs, on a connection of their own:
  // stop()'s bound is stop_timeout + one of them.
  std::vector<std::pair<mono::time_point, double>> trips;  // (sent, ms)
  std::jthread probe([&trips, s = make_store()](std::stop_token st) mutable {
    while (!st.stop_requested()) {
      const auto a = mono::now();
      try {
        (void)s.now();
      } catch (const std::exception&) {
      }
      trips.emplace_back(a, ms_between(a, mono::now()));
      std::this_thread::sleep_for(10ms);
    }
  });

  std::vector<std::unique_ptr<sched_t>> cluster;
  for (int i = 0; i < instances; ++i) {
    lease::options o;
    o.instance = "i" + std::to_string(i);
    o.stop_timeout = stop_timeout;
    cluster.push_back(std::make_unique<sched_t>(make_store(), clock, lease::thread_pool{pool_threads}, lease::skip, o));
    for (int j = 0; j < jobs; ++j) cluster.back()->add(job_name(j), every, make_handler(t, i));
    cluster.back()->on_event(make_sink(t, i));
  }
  for (auto& s : cluster) s->start();
  const lease::time_point first = every.next(clock.now());
  const auto began = mono::now();
  // Stop in the middle of a burst — 150 ms after a slot, while claims are
  // queued on every loop and handlers run — where an unfair loop would make
  // stop() wait behind the queue.
  const auto run_slots = std::chrono::duration_cast<lease::duration>(run_for) / interval - 1;
  std::this_thread::sleep_until(first + run_slots * interval + 150ms);

  // Stop all three at once, each call timed on its own thread.
  const lease::time_point stop_at = clock.now();
  r.in_flight_at_stop = t.in_flight.load();
  {
    std::vector<std::jthread> stoppers;
    for (int i = 0; i < instances; ++i)
      stoppers.emplace_back([&, i] {
        const auto a = mono::now();
        cluster[static_cast<std::size_t>(i)]->stop();
        r.stop_ms[static_cast<std::size_t>(i)] = ms_between(a, mono::now());
      });
  }
  const double ran_s = std::chrono::duration<double>(mono::now() - began).count();
  if constexpr (requires(Store& s) { s.round_trips(); })
    for (int i = 0; i < instances; ++i)
      r.trips_per_s[static_cast<std::size_t>(i)] =
          static_cast<double>(cluster[static_cast<std::size_t>(i)]->store().round_trips()) / ran_s;
  probe.request_stop();
  probe.join();
  cluster.clear();  // joins every pool: no handler writes to the tally any more

  std::vector<double> rt;
  for (auto [at, ms] : trips) rt.push_back(ms);
  r.rt_p50 = pct(rt, 50);
  r.rt_p99 = pct(rt, 99);
  r.rt_max = rt.empty() ? 0 : *std::max_element(rt.begin(), rt.end());
  // Was the worst finish lag the loop's doing, or did every client of the
  // server (the probe too) stall then? The probe's slowest round trip that
  // overlapped it says which.
  for (auto& in : t.inst)
    if (in.worst_finish > r.worst_finish) {
      r.worst_finish = in.worst_finish;
      r.probe_max_then = -1;  // no probe sample overlapped it
      for (auto [at, ms] : trips)
        if (at <= in.worst_success && at + std::chrono::duration_cast<mono::duration>(
                                                std::chrono::duration<double, std::milli>(ms)) >= in.worst_end)
          r.probe_max_then = std::max(r.probe_max_then, ms);
    }
  r.bound_ms = static_cast<double>(stop_timeout.count()) + r.rt_max;
  for (double s : r.stop_ms) r.stop_over = r.stop_over || s > r.bound_ms;

  const int k0 = static_cast<int>((first - t.base) / interval);
  const int k1 = static_cast<int>((every.latest(stop_at - std::chrono::duration_cast<lease::duration>(settle)) - t.base) / interval);
  auto in_window = [&](int k) { return k >= k0 && k <= k1; };

  // Per slot of the window: runs, and why missed ones did not run.
  std::map<std::string, long> why_missed;
  std::map<int, std::array<long, 3>> per_second;  // slot index → {once, missed, twice+}
  std::vector<std::string> doubles;
  for (std::size_t c = 0; c < t.cells(); ++c) {
    const int k = tally::slot_of(c);
    const int n = t.runs[c].load();
    if (n >= 2) {  // in the window or not (the catch-up slot, the last ones): never
      ++r.twice;
      if (doubles.size() < 20)
        doubles.push_back(job_name(static_cast<int>(c / slots_kept)) + " slot +" + std::to_string(k - k0 + 1) +
                          " s: " + std::to_string(n) + " runs, instances mask " + std::to_string(t.who[c].load()));
    }
    if (!in_window(k)) continue;
    ++r.due;
    auto& row = per_second[k];
    if (n >= 2) {
      ++row[2];
      continue;
    }
    if (n == 1) {
      ++r.once;
      ++row[0];
      continue;
    }
    ++r.missed;
    ++row[1];
    std::array<int, kinds> count{};
    for (int i = 0; i < instances; ++i)
      for (std::size_t b = 0; b < kinds; ++b)
        if (t.seen[static_cast<std::size_t>(i) * t.cells() + c] & (1u << b)) ++count[b];
    std::string sig;
    for (std::size_t b = 0; b < kinds; ++b)
      if (count[b] > 0)
        sig += (sig.empty() ? "" : " ") + std::string(lease::to_string(static_cast<lease::event_kind>(b))) + "x" +
               std::to_string(count[b]);
    ++why_missed[sig.empty() ? "NO EVENT (unexplained)" : sig];
  }
  for (auto& in : t.inst) {
    for (auto [k, v] : in.start_lag)
      if (in_window(k)) r.start_lag.push_back(v);
    for (auto [k, v] : in.finish_lag)
      if (in_window(k)) r.finish_lag.push_back(v);
    for (std::size_t b = 0; b < kinds; ++b) r.events[b] += in.events[b];
    for (std::size_t b = 0; b < 3; ++b) r.reasons[b] += in.reasons[b].load();
    r.unpaired += in.finish_unpaired;
  }

  std::printf("\n== S = %d jobs every 1 s on %d instances (%s), window %d slots (+%d s .. +%d s after start), "
              "ran %.1f s ==\n",
              jobs, instances, r.backend.c_str(), k1 - k0 + 1, 1, k1 - k0 + 1, ran_s);
  if (!doubles.empty()) {
    std::printf("!!!!! BUG: %ld slot(s) RUN TWICE OR MORE (a slot must start at most once) !!!!!\n", r.twice);
    for (auto& d : doubles) std::printf("!!!!!   %s\n", d.c_str());
  }
  std::printf("per slot second:  once / missed / twice+  | start lag p99 ms | finish lag p99 ms\n");
  for (auto& [k, row] : per_second) {
    std::vector<double> sl, fl;
    for (auto& in : t.inst) {
      for (auto [kk, v] : in.start_lag)
        if (kk == k) sl.push_back(v);
      for (auto [kk, v] : in.finish_lag)
        if (kk == k) fl.push_back(v);
    }
    std::printf("  +%2d s  %5ld / %5ld / %3ld  | %8.1f | %8.1f\n", k - k0 + 1, row[0], row[1], row[2], pct(sl, 99),
                pct(fl, 99));
  }
  if (!why_missed.empty()) {
    std::printf("missed slots by the events the 3 instances emitted for them (kind x instances):\n");
    for (auto& [sig, n] : why_missed) std::printf("  %6ld  %s\n", n, sig.c_str());
  }
  std::printf("events (all instances, whole run):");
  for (std::size_t b = 0; b < kinds; ++b)
    if (r.events[b] > 0)
      std::printf(" %s=%llu", std::string(lease::to_string(static_cast<lease::event_kind>(b))).c_str(),
                  static_cast<unsigned long long>(r.events[b]));
  std::printf("\nhandler starts by reason: scheduled=%llu catch_up=%llu takeover=%llu\n",
              static_cast<unsigned long long>(r.reasons[0]), static_cast<unsigned long long>(r.reasons[1]),
              static_cast<unsigned long long>(r.reasons[2]));
  std::map<std::string, std::string> sample;  // one message per kind, from any instance
  for (auto& in : t.inst)
    for (auto& s : in.samples) sample.try_emplace(s.substr(0, s.find(':')), s);
  for (auto& [kind, s] : sample)
    if (kind != "success" && kind != "won" && kind != "store_notice") std::printf("  e.g. %s\n", s.c_str());
  std::fflush(stdout);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int a = 1; a < argc; ++a) sizes.push_back(std::stoi(argv[a]));
  if (sizes.empty()) sizes = {1000, 2000};
  const std::string load_before = load_average();

  std::unique_ptr<lease::testing::redis_server> server;
  try {
    server = std::make_unique<lease::testing::redis_server>();
  } catch (const std::exception& e) {
    std::printf("NOTE: no redis-server (%s): falling back to one lease::memory_store shared in-process\n", e.what());
  }
  std::printf("lease scheduler fairness: %d instances, %s, jobs every 1 s, handlers 5-20 ms, %zu pool threads per "
              "instance, %lld s per size, stop_timeout %lld ms; load average before: %s\n",
              instances, server ? ("redis-server " + server->url() + ", one connection per instance").c_str()
                                : "memory_store (in-process)",
              pool_threads, static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(run_for).count()),
              static_cast<long long>(stop_timeout.count()), load_before.c_str());

  std::vector<result> results;
  for (int n : sizes) {
    if (server) {
      const std::string prefix = lease::testing::fresh_prefix("fair");
      results.push_back(run_cluster<lease::redis_store>(
          n,
          [&] {
            lease::redis_options o;
            o.url = server->url();
            o.prefix = prefix;
            return lease::redis_store{std::move(o)};  // the store's clock: Redis TIME, as in production
          },
          "redis"));
    } else {
      lease::memory_store<lease::system_clock> shared{lease::system_clock{}};  // copies share state
      results.push_back(run_cluster<lease::memory_store<lease::system_clock>>(n, [&] { return shared; }, "memory"));
    }
  }

  bool bad = false;
  std::printf("\n%-44s", "summary");
  for (auto& r : results) std::printf(" | %18s", ("S=" + std::to_string(r.jobs)).c_str());
  auto row = [&](const char* name, auto cell) {
    std::printf("\n%-44s", name);
    for (auto& r : results) std::printf(" | %18s", cell(r).c_str());
  };
  auto num = [](double v, const char* fmt = "%.1f") {
    char b[64];
    std::snprintf(b, sizeof b, fmt, v);
    return std::string(b);
  };
  row("slots due in window", [&](const result& r) { return std::to_string(r.due); });
  row("started exactly once", [&](const result& r) {
    return std::to_string(r.once) + " (" + num(100.0 * static_cast<double>(r.once) / static_cast<double>(std::max(r.due, 1L)), "%.2f") + "%)";
  });
  row("started twice+, any slot (BUG if > 0)", [&](const result& r) { return std::to_string(r.twice); });
  row("missed (no start)", [&](const result& r) { return std::to_string(r.missed); });
  row("finish lag p50 / p99 ms (end -> success)",
      [&](const result& r) { return num(pct(r.finish_lag, 50), "%.2f") + " / " + num(pct(r.finish_lag, 99), "%.2f"); });
  row("finish lag max ms", [&](const result& r) {
    return num(r.finish_lag.empty() ? 0 : *std::max_element(r.finish_lag.begin(), r.finish_lag.end()));
  });
  row("worst finish lag: probe's max RT meanwhile",
      [&](const result& r) {
        return num(r.worst_finish) + ": " + (r.probe_max_then < 0 ? std::string("no sample") : num(r.probe_max_then));
      });
  row("start lag p50 / p99 ms (slot -> start)",
      [&](const result& r) { return num(pct(r.start_lag, 50)) + " / " + num(pct(r.start_lag, 99)); });
  row("start lag max ms", [&](const result& r) {
    return num(r.start_lag.empty() ? 0 : *std::max_element(r.start_lag.begin(), r.start_lag.end()));
  });
  for (int i = 0; i < instances; ++i) {
    const std::string name = "stop() i" + std::to_string(i) + " ms";
    row(name.c_str(), [&](const result& r) { return num(r.stop_ms[static_cast<std::size_t>(i)]); });
  }
  row("handlers running when stop() was called", [&](const result& r) { return std::to_string(r.in_flight_at_stop); });
  row("stop() bound ms (timeout + max round trip)", [&](const result& r) {
    return num(r.bound_ms) + (r.stop_over ? " OVER" : " ok");
  });
  row("probe round trip p50 / p99 / max ms", [&](const result& r) {
    return num(r.rt_p50, "%.2f") + "/" + num(r.rt_p99, "%.1f") + "/" + num(r.rt_max, "%.0f");
  });
  row("store round trips/s per instance", [&](const result& r) {
    return num(r.trips_per_s[0], "%.0f") + "/" + num(r.trips_per_s[1], "%.0f") + "/" + num(r.trips_per_s[2], "%.0f");
  });
  row("success events without handler end", [&](const result& r) { return std::to_string(r.unpaired); });
  std::printf("\nload average after: %s\n", load_average().c_str());
  for (auto& r : results) bad = bad || r.twice > 0 || r.stop_over;
  if (bad) std::printf("FAILED: a slot ran twice or a stop() exceeded its bound (see above)\n");
  return bad ? 1 : 0;
}
