// redis_store operations per second from one connection, next to the floor:
// a trivial EVALSHA (`return 1`) round trip made the same way (same hiredis
// connection class, same SIGPIPE guard), timed right after each operation so
// both see the same load. `vs_floor` = floor time / op time (1.0 = as fast as
// the floor; aim ≥ 0.8). Then 1,000 running attempts renewed by 1,000
// heartbeat() calls vs one heartbeat_many(): round trips of each, and
// `speedup` = single time / batched time (aims: ≥ 20× fewer round trips, ≥ 10×
// less wall time). Last, BM_start_per_job: one registration and one trigger
// poll of every job, as an instance's start does, at 1,000 / 10,000 / 100,000
// jobs (time per job flat). The store's clock is Redis TIME, as in production.
//
//   redis_bench [--benchmark_min_time=2]   (LEASE_BENCH_REDIS_URL=redis://... to use your server)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "lease/store/redis.hpp"
#include "redis/server.hpp"
#include "start.hpp"

namespace {

using namespace std::chrono_literals;

std::unique_ptr<lease::testing::redis_server> own;  // null with LEASE_BENCH_REDIS_URL

/// The server every benchmark uses: LEASE_BENCH_REDIS_URL, or one of our own.
const std::string& server_url() {
  static const std::string url = [] {
    if (const char* u = std::getenv("LEASE_BENCH_REDIS_URL"); u != nullptr && *u != '\0') return std::string(u);
    own = std::make_unique<lease::testing::redis_server>();
    return own->url();
  }();
  return url;
}

lease::redis_store make_store(std::string prefix) {
  lease::redis_options o;
  o.url = server_url();
  o.prefix = std::move(prefix);
  return lease::redis_store{std::move(o)};  // the store's clock: Redis TIME, as in production
}

std::string unique_prefix(const char* what) {
  static int n = 0;
  return std::string("bench-") + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

lease::claim_request claim_for(std::string job, lease::time_point slot, std::string token) {
  lease::claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "bench";
  r.token = std::move(token);
  r.lease = 60s;
  r.deadline = slot + 24h;
  return r;
}

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// The floor, on a connection of its own: a trivial script (`return 1`) by
/// EVALSHA through the same connection class the store uses.
class floor_probe {
 public:
  floor_probe() : conn_({lease::detail::redis::parse_url(server_url()), 2000ms, 2000ms, 25ms, 1000ms}) {
    const lease::detail::redis::argv_t load{"SCRIPT", "LOAD", "return 1"};
    sha_ = conn_.exchange(std::span(&load, 1)).front()->str;
    call_ = {"EVALSHA", sha_, "0"};
  }
  /// One round trip; returns its wall time in seconds.
  double once() {
    const auto t = clock_type::now();
    benchmark::DoNotOptimize(conn_.exchange(std::span(&call_, 1)));
    return seconds_since(t);
  }

 private:
  lease::detail::redis::connection conn_;
  std::string sha_;
  lease::detail::redis::argv_t call_;
};

/// Times `op` per iteration (manual time) and a floor round trip right after
/// it, so both see the same machine load; `vs_floor` = floor / op.
template <class Op, class Also = void (*)()>
double paired(benchmark::State& state, Op op, Also also = [] {}) {
  floor_probe floor;
  double op_total = 0, floor_total = 0;
  for (auto _ : state) {
    const auto t = clock_type::now();
    op();
    const double s = seconds_since(t);
    state.SetIterationTime(s);
    op_total += s;
    floor_total += floor.once();
    also();  // untimed here: e.g. a comparison op timing itself
  }
  state.counters["floor_us"] = 1e6 * floor_total / static_cast<double>(state.iterations());
  state.counters["vs_floor"] = floor_total / op_total;
  state.SetItemsProcessed(state.iterations());
  return op_total;
}

void BM_floor_trivial_evalsha(benchmark::State& state) {
  floor_probe floor;
  for (auto _ : state) state.SetIterationTime(floor.once());
  state.SetItemsProcessed(state.iterations());
}

void BM_claim(benchmark::State& state) {
  auto store = make_store(unique_prefix("claim"));
  const lease::time_point slot = store.now();
  std::int64_t i = 0;
  std::string job, token;
  paired(state, [&] {
    // A new job each time: a claim that wins on a job with no live run, the
    // common case at every slot.
    job = "job-" + std::to_string(i);
    token = "tok-" + std::to_string(i++);
    if (store.claim(claim_for(job, slot, token)).outcome != lease::claim_outcome::won)
      state.SkipWithError("claim did not win");
  });
}

/// A won claim that waits for one replica's acknowledgement (redis_options::
/// replicas = 1, WAIT 1) vs the same claim without waiting, each iteration
/// both, plus the floor: `vs_floor` = floor / waiting claim, `wait_cost` =
/// waiting claim / plain claim. Starts a replica of our own server (with
/// LEASE_BENCH_REDIS_URL it is skipped: we cannot attach one to yours).
void BM_claim_wait_1_replica(benchmark::State& state) {
  if (server_url().empty() || !own) {
    state.SkipWithError("needs the benchmark's own server (unset LEASE_BENCH_REDIS_URL)");
    return;
  }
  lease::testing::redis_server replica{
      {.append_only = false, .extra_args = {"--replicaof", "127.0.0.1", std::to_string(own->port())}}};
  for (int i = 0;; ++i) {
    auto info = replica.command({"INFO", "replication"});
    if (lease::detail::redis::info_field(info.get(), "master_link_status") == "up") break;
    if (i == 1000) {
      state.SkipWithError("the replica did not sync within 10 s");
      return;
    }
    std::this_thread::sleep_for(10ms);
  }
  auto plain = make_store(unique_prefix("plain"));
  lease::redis_options o;
  o.url = server_url();
  o.prefix = unique_prefix("wait");
  o.replicas = 1;
  o.replica_timeout = 1000ms;
  lease::redis_store waiting{o};
  const lease::time_point slot = plain.now();
  std::int64_t i = 0;
  double plain_total = 0;
  std::string job, token;
  const double wait_total = paired(state, [&] {
    job = "job-" + std::to_string(i);
    token = "tok-" + std::to_string(i++);
    if (waiting.claim(claim_for(job, slot, token)).outcome != lease::claim_outcome::won)
      state.SkipWithError("claim did not win");
  }, [&] {
    const auto t = clock_type::now();
    if (plain.claim(claim_for(job, slot, token)).outcome != lease::claim_outcome::won)
      state.SkipWithError("claim did not win");
    plain_total += seconds_since(t);
  });
  state.counters["plain_us"] = 1e6 * plain_total / static_cast<double>(state.iterations());
  state.counters["wait_cost"] = wait_total / plain_total;
}

void BM_heartbeat(benchmark::State& state) {
  auto store = make_store(unique_prefix("hb"));
  auto req = claim_for("job", store.now(), "tok");
  if (store.claim(req).outcome != lease::claim_outcome::won) state.SkipWithError("claim did not win");
  paired(state, [&] {
    if (!store.heartbeat(req.run, req.token, 60s)) state.SkipWithError("heartbeat refused");
  });
}

void BM_finish(benchmark::State& state) {
  auto store = make_store(unique_prefix("finish"));
  const lease::time_point slot = store.now();
  // One running run per iteration, claimed before the timed loop.
  const auto n = static_cast<std::int64_t>(state.max_iterations);
  for (std::int64_t i = 0; i < n; ++i)
    (void)store.claim(claim_for("job-" + std::to_string(i), slot, "tok-" + std::to_string(i)));
  std::int64_t i = 0;
  std::string job, token;
  paired(state, [&] {
    job = "job-" + std::to_string(i);
    token = "tok-" + std::to_string(i++);
    if (!store.finish({job, slot}, token, lease::run_status::success)) state.SkipWithError("finish refused");
  });
}

constexpr int batch_size = 1000;

/// 1,000 running attempts, one per job (as an instance's running attempts are).
std::vector<lease::heartbeat_request> running_attempts(lease::redis_store& store) {
  const lease::time_point slot = store.now();
  std::vector<lease::heartbeat_request> batch;
  for (int i = 0; i < batch_size; ++i) {
    auto req = claim_for("job-" + std::to_string(i), slot, "tok-" + std::to_string(i));
    (void)store.claim(req);
    batch.push_back({req.run, req.token, 60s});
  }
  return batch;
}

/// Per iteration: the 1,000 attempts renewed by 1,000 heartbeat() calls, then
/// by one heartbeat_many(). Manual time is the batched renewal; `speedup` =
/// single time / batched time, and the round trips of each.
void BM_heartbeat_1000_batched_vs_single(benchmark::State& state) {
  auto store = make_store(unique_prefix("batch"));
  const auto batch = running_attempts(store);
  double single_total = 0, batched_total = 0;
  std::uint64_t single_trips = 0, batched_trips = 0;
  for (auto _ : state) {
    auto rt = store.round_trips();
    auto t = clock_type::now();
    for (const auto& h : batch)
      if (!store.heartbeat(h.run, h.token, h.lease)) state.SkipWithError("heartbeat refused");
    single_total += seconds_since(t);
    single_trips += store.round_trips() - rt;

    rt = store.round_trips();
    t = clock_type::now();
    auto ok = store.heartbeat_many(batch);
    const double s = seconds_since(t);
    batched_trips += store.round_trips() - rt;
    if (ok.size() != batch.size() || std::find(ok.begin(), ok.end(), false) != ok.end())
      state.SkipWithError("heartbeat refused");
    state.SetIterationTime(s);
    batched_total += s;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["single_ms"] = 1e3 * single_total / n;
  state.counters["speedup"] = single_total / batched_total;
  state.counters["trips_single"] = static_cast<double>(single_trips) / n;
  state.counters["trips_batched"] = static_cast<double>(batched_trips) / n;
  state.SetItemsProcessed(state.iterations() * batch_size);
}

/// An instance's start with 1,000 / 10,000 / 100,000 jobs (start.hpp).
void BM_start_per_job(benchmark::State& state) {
  lease::bench::start_per_job(state, [] { return make_store(unique_prefix("start")); });
}

// Registration order is run order.
BENCHMARK(BM_floor_trivial_evalsha)->UseManualTime();
BENCHMARK(BM_claim)->UseManualTime();
BENCHMARK(BM_claim_wait_1_replica)->UseManualTime();
BENCHMARK(BM_heartbeat)->UseManualTime();
BENCHMARK(BM_finish)->UseManualTime();
BENCHMARK(BM_heartbeat_1000_batched_vs_single)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_start_per_job)->UseManualTime()->Unit(benchmark::kMillisecond)->Arg(1000)->Arg(10000)->Arg(100000)->Iterations(1);

}  // namespace
