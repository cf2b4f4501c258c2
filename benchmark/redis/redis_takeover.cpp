// SIGTERM-to-takeover on Redis, with the release pushed (sharded pub/sub:
// the release script SPUBLISHes to the job's channel, the backup's store
// hears it on its SSUBSCRIBE connection) and without it. Two schedulers in
// one process, each with its own redis_store (its own connection, and in
// push mode its own subscriber connection and thread): A runs a long job, B
// watches it as the backup. Each iteration: A wins the run, B becomes its
// backup, then A.stop() — what a SIGTERM handler calls — hands the run over
// (release, SPUBLISH), and the iteration's time is from the stop() call to
// B's takeover event. Heartbeat 2 s, lease 6 s: without the push, B takes
// over at one of its periodic checks of the run (up to 2 × heartbeat after
// it became the backup); with it, when the announcement arrives.
//
// "Without" is the same store behind a wrapper that hides listen_releases()
// (so the scheduler does not see a PushStore), nothing else changed. Each
// mode runs 20 iterations; the counters are min / median / p95 / max in ms
// (p95 of 20: the 19th smallest). The same twice: on one redis-server, and
// on a Redis Cluster of 3 masters (test/redis/cluster_fixture.hpp), where
// the backup's subscriber follows the slot map to the master of the job's
// channel. The twin of benchmark/postgres/postgres_takeover.cpp.
//
//   redis_takeover
//   LEASE_BENCH_REDIS_URL=redis://… redis_takeover   (your server, for the one-server pair)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/redis.hpp"
#include "redis/cluster_fixture.hpp"
#include "redis/server.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::unique_ptr<lease::testing::redis_server> own;       // null with LEASE_BENCH_REDIS_URL
std::unique_ptr<lease::testing::redis_cluster> cluster;  // started by the first cluster benchmark

/// The one server: LEASE_BENCH_REDIS_URL, or one of our own.
const std::string& server_url() {
  static const std::string url = [] {
    if (const char* u = std::getenv("LEASE_BENCH_REDIS_URL"); u != nullptr && *u != '\0') return std::string(u);
    own = std::make_unique<lease::testing::redis_server>();
    return own->url();
  }();
  return url;
}

const std::string& cluster_url() {
  if (!cluster) cluster = std::make_unique<lease::testing::redis_cluster>(3);
  static const std::string url = cluster->url();
  return url;
}

const std::string& prefix() {
  static const std::string p = "bench-takeover-" + std::to_string(::getpid());
  return p;
}

/// Where the stores of a hand-over live.
enum class topology { one_server, cluster_3 };

lease::redis_store make_store(topology where) {
  lease::redis_options o;
  o.url = where == topology::one_server ? server_url() : cluster_url();
  o.prefix = prefix();
  o.cluster = where == topology::cluster_3;
  return lease::redis_store{std::move(o)};  // the store's clock: Redis TIME, as in production
}

/// redis_store without PushStore: everything else forwarded as it is.
class without_push {
 public:
  explicit without_push(lease::redis_store s) : s_(std::move(s)) {}
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
  lease::redis_store s_;
};
static_assert(lease::PushStore<lease::redis_store>);
static_assert(lease::BatchClaimStore<without_push> && lease::BatchHeartbeatStore<without_push> &&
              lease::BatchFinishStore<without_push> && lease::NoticeStore<without_push>);
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

/// Waits until the backup's subscriber has the job's channel confirmed by
/// the server: its store subscribes to a job once it has asked about it (B's
/// claim that made it the backup), on a thread of its own, so a moment
/// after. listen_releases() ran in start(), on this thread, so reading the
/// subscriber's atomic count from here is safe.
bool subscribed(lease::redis_store& s, std::chrono::seconds limit) {
  const auto end = steady::now() + limit;
  for (;;) {
    if (s.listener_channels() >= 1) return true;
    if (steady::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
}

/// One hand-over: the seconds from A.stop() to B's takeover, or a negative
/// number with the reason in `error`.
template <class Wrap>
double one_handover(topology where, int i, Wrap wrap, std::string& error) {
  recorder rec;
  auto handler = [](lease::run_context& ctx) {
    while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(1ms);
    throw std::runtime_error("stopping");  // handed over, not finished
  };
  auto a = lease::make_scheduler(lease::store = wrap(make_store(where)), lease::executor = lease::thread_pool{1},
                                 lease::settings = settings("A", 2h));
  auto b = lease::make_scheduler(lease::store = wrap(make_store(where)), lease::executor = lease::thread_pool{1},
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
    a.stop(2s);
    return -1;
  }
  b.start();
  if (!rec.wait(lease::event_kind::backup, 10s)) {
    error = "B did not become the backup";
    a.stop(2s);
    b.stop(2s);
    return -1;
  }
  if constexpr (lease::PushStore<std::decay_t<decltype(b.store())>>) {
    if (!subscribed(b.store(), 10s)) {
      error = "the backup's release subscription did not come up within 10 s";
      a.stop(2s);
      b.stop(2s);
      return -1;
    }
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

int next_job = 0;  // one job per hand-over across all modes: each starts from no state

template <class Wrap>
void run(benchmark::State& state, topology where, Wrap wrap) {
  std::vector<double> ms;
  for (auto _ : state) {
    std::string error;
    double s = -1;
    try {
      s = one_handover(where, next_job++, wrap, error);
    } catch (const std::exception& e) {
      error = e.what();  // e.g. the cluster fixture did not come up
    }
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

auto push = [](lease::redis_store s) { return s; };
auto no_push = [](lease::redis_store s) { return without_push{std::move(s)}; };

void BM_takeover_after_stop_push_on(benchmark::State& state) { run(state, topology::one_server, push); }
void BM_takeover_after_stop_push_off(benchmark::State& state) { run(state, topology::one_server, no_push); }
void BM_cluster3_takeover_after_stop_push_on(benchmark::State& state) { run(state, topology::cluster_3, push); }
void BM_cluster3_takeover_after_stop_push_off(benchmark::State& state) { run(state, topology::cluster_3, no_push); }

BENCHMARK(BM_takeover_after_stop_push_on)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_takeover_after_stop_push_off)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cluster3_takeover_after_stop_push_on)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cluster3_takeover_after_stop_push_off)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

}  // namespace
