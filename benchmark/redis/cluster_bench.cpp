// redis_store on a Redis Cluster it starts itself (1, 3 or 6 masters on
// loopback, test/redis/cluster_fixture.hpp), each figure next to its floor
// from the same run: the same batch of trivial scripts (`return 1` on each
// job's key), routed and pipelined per master the same way.
//
//   BM_cluster_claims/M            claim_many of 60 jobs spread over M masters
//   BM_cluster_floor/M             60 trivial keyed EVALs, routed the same way
//   BM_cluster_heartbeat_3000/M    heartbeat_many of 3,000 running attempts: one
//                                  parallel round over M masters (M = 1: one node)
//
// On a 2-core machine the masters share the cores with the client: the
// scale-out ratio is the store's routing overhead, not a capacity claim.
//   cluster_bench [--benchmark_min_time=2]
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "lease/store/redis.hpp"
#include "lease/store/redis/router.hpp"
#include "redis/cluster_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

lease::testing::redis_cluster& cluster_of(int masters) {
  static std::map<int, std::unique_ptr<lease::testing::redis_cluster>> clusters;
  auto& c = clusters[masters];
  if (!c) c = std::make_unique<lease::testing::redis_cluster>(masters);
  return *c;
}

std::string unique_prefix(const char* what) {
  static int n = 0;
  return std::string("cbench-") + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

lease::redis_store store_on(int masters, std::string prefix) {
  lease::redis_options o;
  o.url = cluster_of(masters).url();
  o.prefix = std::move(prefix);
  o.cluster = true;
  return lease::redis_store{std::move(o)};
}

lease::claim_request claim_for(std::string job, lease::time_point slot, std::string token) {
  lease::claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "bench";
  r.token = std::move(token);
  r.lease = 600s;
  r.deadline = slot + 24h;
  r.overlap = lease::overlap_mode::allow;  // a new slot each iteration while the last one still runs
  return r;
}

constexpr int batch = 60;

void BM_cluster_claims(benchmark::State& state) {
  const int masters = static_cast<int>(state.range(0));
  auto store = store_on(masters, unique_prefix("claims"));
  const lease::time_point base = store.now() - 1h;
  std::int64_t n = 0;
  for (auto _ : state) {
    std::vector<lease::claim_request> reqs;
    for (int j = 0; j < batch; ++j)
      reqs.push_back(claim_for("job-" + std::to_string(j), base + lease::duration{n}, "t" + std::to_string(n)));
    ++n;
    const auto t = clock_type::now();
    auto res = store.claim_many(reqs);
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - t).count());
    if (res.front().outcome != lease::claim_outcome::won) state.SkipWithError("a claim did not win");
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_cluster_floor(benchmark::State& state) {
  const int masters = static_cast<int>(state.range(0));
  auto& c = cluster_of(masters);
  lease::detail::redis::connection_settings s{lease::detail::redis::parse_url(c.url()), 2000ms, 2000ms, 25ms, 1000ms};
  lease::detail::redis::router r(s, true, {s.where});
  const std::string prefix = unique_prefix("floor");
  std::vector<std::string> keys;
  for (int j = 0; j < batch; ++j) keys.push_back(lease::detail::redis::keys_for(prefix, "job-" + std::to_string(j)).runs);
  std::vector<lease::detail::redis::argv_t> cmds;
  for (const auto& k : keys) cmds.push_back({"EVAL", "return 1", "1", k});
  for (auto _ : state) {
    const auto t = clock_type::now();
    auto replies = r.exchange(cmds);
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - t).count());
    benchmark::DoNotOptimize(replies);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_cluster_heartbeat_3000(benchmark::State& state) {
  const int masters = static_cast<int>(state.range(0));
  auto store = store_on(masters, unique_prefix("hb"));
  const lease::time_point slot = store.now() - 1h;
  std::vector<lease::heartbeat_request> beats;
  std::vector<lease::claim_request> reqs;
  for (int j = 0; j < 3000; ++j) {
    reqs.push_back(claim_for("job-" + std::to_string(j), slot, "t" + std::to_string(j)));
    beats.push_back({reqs.back().run, reqs.back().token, 600s});
  }
  for (std::size_t i = 0; i < reqs.size(); i += 300)
    (void)store.claim_many(std::span(reqs).subspan(i, 300));
  for (auto _ : state) {
    const auto t = clock_type::now();
    auto ok = store.heartbeat_many(beats);
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - t).count());
    if (!ok.back()) state.SkipWithError("a heartbeat was refused");
  }
  state.SetItemsProcessed(state.iterations() * 3000);
}

}  // namespace

BENCHMARK(BM_cluster_floor)->Arg(1)->Arg(3)->Arg(6)->UseManualTime();
BENCHMARK(BM_cluster_claims)->Arg(1)->Arg(3)->Arg(6)->UseManualTime();
BENCHMARK(BM_cluster_heartbeat_3000)->Arg(1)->Arg(3)->UseManualTime()->Unit(benchmark::kMillisecond);
