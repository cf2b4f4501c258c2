// benchmark/start.hpp — what an instance does for all its jobs at start (and
// every register_every, and when a trigger listener reconnects): one
// registration of each job and one poll of their pending triggers, with the
// release listener on, so that each job's channel is subscribed as its keys
// are first used. Shared by redis/redis_bench.cpp and
// postgres/postgres_bench.cpp (as BM_start_per_job, Arg = the number of
// jobs). Manual time: the registration and the poll, not the store's
// creation. The time per job should stay flat from 1,000 to 100,000 jobs: it
// is all pipelined or one statement, and every lookup is hashed (a linear
// search per job made the Redis store's start quadratic: 100,000 jobs took
// 29 s, a stall of the instance's loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "lease/store/inspect.hpp"

namespace lease::bench {

/// `make_store()`: a fresh store handle (a new instance: it knows no job yet).
template <class MakeStore>
void start_per_job(benchmark::State& state, MakeStore make_store) {
  using clock_type = std::chrono::steady_clock;
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<lease::job_registration> regs;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) {
    names.push_back("job-" + std::to_string(i));
    regs.push_back({names.back(), "bench", "every 1s", "", {}});
  }
  for (auto _ : state) {
    auto store = make_store();
    store.listen_releases([](std::string_view) {});
    const auto t = clock_type::now();
    store.register_jobs(regs);
    benchmark::DoNotOptimize(store.triggers(names));
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - t).count());
    store.listen_releases({});
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

}  // namespace lease::bench
