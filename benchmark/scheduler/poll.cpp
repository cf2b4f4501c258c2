// poll() cost per due event against the number of jobs (100, 10,000,
// 100,000). The scheduler keeps a timer heap, so the work per event should be
// O(log jobs): the per-event time should stay flat within 2× across sizes.
//
// Every job runs every 100 s, anchors spread evenly, so slots fall one at a
// time; an iteration moves the fake clock to next_wakeup() and polls: one
// claim, one handler (inline_executor), one finish. The same interval for
// every size keeps the store's per-job history the same size, so only the
// scheduler's own cost varies with the number of jobs. The floor is the same
// claim + finish made directly on the memory_store.
//
//   bench_scheduler_poll --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/executor/inline.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/every.hpp"
#include "lease/scheduler.hpp"
#include "lease/store/memory.hpp"

using namespace std::chrono_literals;

namespace {

using store_t = lease::memory_store<lease::fake_clock>;
using sched_t = lease::scheduler<store_t, lease::fake_clock, lease::inline_executor, lease::skip_t>;

constexpr lease::duration interval = 100s;

lease::options bench_options() {
  lease::options o;
  o.instance = "bench";
  o.seed = 1;
  o.claim_jitter = 0ms;
  o.catch_up = 0ms;
  return o;
}

lease::time_point anchor(int i, int jobs) {
  return lease::time_point{} + interval * i / jobs;
}

void BM_poll_per_event(benchmark::State& state) {
  const auto jobs = static_cast<int>(state.range(0));
  lease::fake_clock clock{lease::time_point{} + 1h};
  sched_t s(store_t{clock}, clock, lease::inline_executor{}, lease::skip, bench_options());
  for (int i = 0; i < jobs; ++i)
    s.add("job-" + std::to_string(i), lease::every(interval, anchor(i, jobs)), [](lease::run_context&) {});
  s.start();
  s.poll();
  std::size_t handled = 0;
  for (auto _ : state) {
    clock.set(*s.next_wakeup());
    handled += s.poll();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["handled/poll"] = static_cast<double>(handled) / static_cast<double>(state.iterations());
}

void BM_store_floor(benchmark::State& state) {
  const auto jobs = static_cast<int>(state.range(0));
  lease::fake_clock clock{lease::time_point{} + 1h};
  store_t store{clock};
  std::vector<std::string> names;
  for (int i = 0; i < jobs; ++i) names.push_back("job-" + std::to_string(i));
  lease::claim_request req;
  req.runner = "bench";
  req.token = "0123456789abcdef0123456789abcdef";
  req.retain = 30s;
  std::int64_t k = 0;
  for (auto _ : state) {
    const auto i = static_cast<int>(k % jobs);
    const lease::time_point slot = lease::time_point{} + 1h + interval * (k / jobs) + interval * i / jobs;
    ++k;
    clock.set(slot);
    req.run = {names[static_cast<std::size_t>(i)], slot};
    req.deadline = slot + 30s;
    auto r = store.claim(req);
    benchmark::DoNotOptimize(store.finish(r.record.key(), req.token, lease::run_status::success));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

}  // namespace

BENCHMARK(BM_poll_per_event)->Arg(100)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_store_floor)->Arg(100)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);
