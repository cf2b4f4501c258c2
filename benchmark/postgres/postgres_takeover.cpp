// SIGTERM-to-takeover on PostgreSQL, with the release pushed (LISTEN/NOTIFY)
// and without it. Two schedulers in one process, each with its own
// postgres_store (its own connection, and in push mode its own LISTEN
// connection and thread): A runs a long job, B watches it as the backup.
// Each iteration: A wins the run, B becomes its backup, then A.stop() —
// what a SIGTERM handler calls — hands the run over (release, NOTIFY), and
// the iteration's time is from the stop() call to B's takeover event.
// Heartbeat 2 s, lease 6 s: without the push, B takes over at one of its
// periodic checks of the run (up to 2 × heartbeat after it became the
// backup); with it, when the announcement arrives.
//
// "Without" is the same store behind a wrapper that hides listen_releases()
// (so the scheduler does not see a PushStore), nothing else changed. Each
// mode runs 20 iterations; the counters are min / median / p95 / max in ms
// (p95 of 20: the 19th smallest).
//
//   postgres_takeover
//   LEASE_BENCH_POSTGRES='host=… dbname=…' postgres_takeover   (your server)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/postgres.hpp"
#include "bench_server.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using lease::bench::conninfo;

const std::string& schema() {
  static const std::string s = "bench_takeover_" + std::to_string(::getpid());
  return s;
}

lease::postgres_store make_store() {
  lease::postgres_options o;
  o.conninfo = conninfo();
  o.schema = schema();
  return lease::postgres_store{std::move(o)};
}

/// postgres_store without PushStore: everything else forwarded as it is.
class without_push {
 public:
  explicit without_push(lease::postgres_store s) : s_(std::move(s)) {}
  lease::claim_result claim(const lease::claim_request& r) { return s_.claim(r); }
  std::vector<lease::claim_result> claim_many(std::span<const lease::claim_request> b) { return s_.claim_many(b); }
  bool heartbeat(const lease::run_key& r, std::string_view t, lease::duration l) { return s_.heartbeat(r, t, l); }
  std::vector<bool> heartbeat_many(std::span<const lease::heartbeat_request> b) { return s_.heartbeat_many(b); }
  bool finish(const lease::run_key& r, std::string_view t, lease::run_status s) { return s_.finish(r, t, s); }
  bool release(const lease::run_key& r, std::string_view t) { return s_.release(r, t); }
  std::vector<bool> finish_many(std::span<const lease::finish_request> b) { return s_.finish_many(b); }
  std::vector<lease::run_record> unfinished(std::string_view job) { return s_.unfinished(job); }
  std::optional<lease::run_record> get(const lease::run_key& r) { return s_.get(r); }
  lease::time_point now() { return s_.now(); }
  std::vector<std::string> take_notices() { return s_.take_notices(); }

 private:
  lease::postgres_store s_;
};
static_assert(lease::BatchClaimStore<without_push> && lease::BatchHeartbeatStore<without_push> &&
              lease::BatchFinishStore<without_push>);
static_assert(!lease::PushStore<without_push>);

/// The first time each kind of event was seen, on the monotonic clock.
struct recorder {
  std::mutex m;
  std::vector<std::pair<lease::event_kind, steady::time_point>> seen;
  void operator()(const lease::event& e) {
    const auto t = steady::now();
    std::scoped_lock l(m);
    seen.emplace_back(e.kind, t);
  }
  std::optional<steady::time_point> at(lease::event_kind k) {
    std::scoped_lock l(m);
    for (const auto& [kind, t] : seen)
      if (kind == k) return t;
    return std::nullopt;
  }
  /// Polls (1 ms) until an event of kind `k`, at most `limit`.
  std::optional<steady::time_point> wait(lease::event_kind k, std::chrono::milliseconds limit) {
    const auto end = steady::now() + limit;
    for (;;) {
      if (auto t = at(k)) return t;
      if (steady::now() > end) return std::nullopt;
      std::this_thread::sleep_for(1ms);
    }
  }
};

lease::options settings(std::string name, lease::duration catch_up) {
  lease::options o;
  o.instance = std::move(name);
  o.lease = 6s;
  o.heartbeat = 2s;
  o.claim_jitter = 0ms;
  o.catch_up = catch_up;
  o.catch_up_jitter = 0ms;
  return o;
}

/// Waits until `n` release listeners (application_name lease-listener) have
/// sent LISTEN on the server: each scheduler's store listens from start(), on
/// a thread of its own, so a moment after it.
bool listening(int n, std::chrono::seconds limit) {
  const std::string q = "SELECT count(*)::text FROM pg_stat_activity WHERE application_name = 'lease-listener' AND "
                        "query = 'LISTEN \"" + schema() + ".lease\"'";
  const auto end = steady::now() + limit;
  lease::detail::postgres::connection c({conninfo(), 2000ms, 5000ms, 25ms, 1000ms, "lease-bench"});
  c.open();
  for (;;) {
    auto r = c.exec_simple(q, "counting listeners");
    if (std::atoi(PQgetvalue(r.get(), 0, 0)) >= n) return true;
    if (steady::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
}

/// One hand-over: the seconds from A.stop() to B's takeover, or a negative
/// number with the reason in `error`.
template <class Wrap>
double one_handover(int i, Wrap wrap, std::string& error) {
  recorder rec;
  auto handler = [](lease::run_context& ctx) {
    while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(1ms);
    throw std::runtime_error("stopping");  // handed over, not finished
  };
  auto a = lease::make_scheduler(lease::store = wrap(make_store()), lease::executor = lease::thread_pool{1},
                                 lease::settings = settings("A", 2h));
  auto b = lease::make_scheduler(lease::store = wrap(make_store()), lease::executor = lease::thread_pool{1},
                                 lease::settings = settings("B", 0ms));
  const std::string job = "long-" + std::to_string(i);
  for (auto* s : {&a, &b}) s->add(job, lease::every(std::chrono::hours(1)), handler);
  a.on_event(std::ref(rec));
  b.on_event(std::ref(rec));
  a.start();
  if (!rec.wait(lease::event_kind::catch_up, 10s)) {
    error = "A did not start the run; events:";
    std::scoped_lock l(rec.m);
    for (const auto& e : rec.seen) error += " " + std::string(lease::to_string(e.first));
    return -1;
  }
  b.start();
  if (!rec.wait(lease::event_kind::backup, 10s)) {
    error = "B did not become the backup";
    a.stop(2s);
    return -1;
  }
  if (lease::PushStore<decltype(wrap(make_store()))> && !listening(2, 10s)) {
    // A backup that has run for a while listens; one just started may not yet.
    error = "the two stores' LISTEN connections did not come up";
    a.stop(2s);
    b.stop(2s);
    return -1;
  }
  const auto t0 = steady::now();
  a.stop(2s);
  const auto took = rec.wait(lease::event_kind::takeover, 20s);
  b.stop(2s);
  if (!took) {
    error = "B did not take over within 20 s";
    return -1;
  }
  return std::chrono::duration<double>(*took - t0).count();
}

int next_job = 0;  // one job per hand-over across both modes: each starts from no state

template <class Wrap>
void run(benchmark::State& state, Wrap wrap) {
  std::vector<double> ms;
  for (auto _ : state) {
    std::string error;
    const double s = one_handover(next_job++, wrap, error);
    if (s < 0) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.SetIterationTime(s);
    ms.push_back(1e3 * s);
  }
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  const auto rank = [&](double q) {  // nearest rank
    const auto r = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(ms.size()))));
    return ms[std::min(ms.size(), r) - 1];
  };
  state.counters["min_ms"] = ms.front();
  state.counters["median_ms"] = rank(0.5);
  state.counters["p95_ms"] = rank(0.95);
  state.counters["max_ms"] = ms.back();
}

void BM_takeover_after_stop_push_on(benchmark::State& state) {
  run(state, [](lease::postgres_store s) { return s; });
}
void BM_takeover_after_stop_push_off(benchmark::State& state) {
  run(state, [](lease::postgres_store s) { return without_push{std::move(s)}; });
}

BENCHMARK(BM_takeover_after_stop_push_on)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_takeover_after_stop_push_off)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

}  // namespace
