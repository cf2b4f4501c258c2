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
// (p95 of 20: the 19th smallest). The driver is benchmark/takeover.hpp,
// shared with benchmark/redis/redis_takeover.cpp.
//
//   postgres_takeover
//   LEASE_BENCH_POSTGRES='host=… dbname=…' postgres_takeover   (your server)
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "lease/store/postgres.hpp"
#include "bench_server.hpp"
#include "takeover.hpp"

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

using without_push = lease::bench::without_push<lease::postgres_store>;
static_assert(lease::BatchClaimStore<without_push> && lease::BatchHeartbeatStore<without_push> &&
              lease::BatchFinishStore<without_push>);
static_assert(!lease::PushStore<without_push>);

/// Waits until `n` release listeners (application_name lease-listener) have
/// sent LISTEN on the server: each scheduler's store listens from start(), on
/// a thread of its own, so a moment after it. A scheduler listens to
/// triggers on the same connection, in the same statement
/// (`LISTEN "<schema>.lease"; LISTEN "<schema>.trigger"`): the query starts so.
bool listening(int n, std::chrono::seconds limit) {
  const std::string q = "SELECT count(*)::text FROM pg_stat_activity WHERE application_name = 'lease-listener' AND "
                        "starts_with(query, 'LISTEN \"" + schema() + ".lease\"')";
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

template <class Wrap>
void run(benchmark::State& state, Wrap wrap) {
  lease::bench::run_takeovers(
      state, [&] { return wrap(make_store()); },
      [](lease::postgres_store&) -> std::string {
        // A backup that has run for a while listens; one just started may not yet.
        return listening(2, 10s) ? "" : "the two stores' LISTEN connections did not come up";
      });
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
