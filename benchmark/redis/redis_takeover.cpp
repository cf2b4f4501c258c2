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
// channel. The twin of benchmark/postgres/postgres_takeover.cpp; the driver
// both share is benchmark/takeover.hpp.
//
//   redis_takeover
//   LEASE_BENCH_REDIS_URL=redis://… redis_takeover   (your server, for the one-server pair)
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "lease/store/redis.hpp"
#include "redis/cluster_fixture.hpp"
#include "redis/server.hpp"
#include "takeover.hpp"

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

using without_push = lease::bench::without_push<lease::redis_store>;
static_assert(lease::PushStore<lease::redis_store>);
static_assert(lease::BatchClaimStore<without_push> && lease::BatchHeartbeatStore<without_push> &&
              lease::BatchFinishStore<without_push> && lease::NoticeStore<without_push>);
static_assert(!lease::PushStore<without_push>);

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

template <class Wrap>
void run(benchmark::State& state, topology where, Wrap wrap) {
  lease::bench::run_takeovers(
      state, [&] { return wrap(make_store(where)); },
      [](lease::redis_store& b) -> std::string {
        return subscribed(b, 10s) ? "" : "the backup's release subscription did not come up within 10 s";
      });
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
