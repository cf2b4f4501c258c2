// postgres_store operations per second from one connection, next to the
// floor: a one-row `INSERT … ON CONFLICT (k) DO UPDATE` round trip, prepared,
// with binary parameters, through the same connection class, with the same
// synchronous_commit (the session's), timed right after each operation so
// both see the same load. `vs_floor` = floor time / op time (1.0 = as fast
// as the floor; aim ≥ 0.7). Then 1,000 running attempts renewed by 1,000
// heartbeat() calls vs one heartbeat_many(): round trips of each, and
// `speedup` = single time / batched time (aim ≥ 10×); the same for 100
// claims of new jobs, claim() each vs one claim_many(). The store's clock is
// the server's clock_timestamp(), as in production. `wal_B`: WAL bytes per
// operation (the server's insert position over the loop, less the floors').
// Last, BM_start_per_job: one registration and one trigger poll of every
// job, as an instance's start does, at 1,000 / 10,000 / 100,000 jobs.
//
// A figure and its floor run on two connections, so two server processes:
// while they are timed, this thread runs on one core and both backends on
// another (pinned_apart, bench_server.hpp, which says why: unpinned, where
// the scheduler happened to put each backend moved a ratio by up to 0.5
// between runs). BM_upsert_on_another_connection is the method's check:
// the floor against itself on a second connection, which must read 1.00.
// Ratios measured before that (2026-12-07 and earlier, in the paragraphs
// below) were unpinned.
//
// Why BM_claim's cpu_vs_floor stays near 0.4-0.6 (measured 2026-12-01 on
// 2 loaded cores, pgbench -M prepared and pg_stat_statements on the bench
// server's settings): a claim of a new job writes 5 WAL records (2 heap
// inserts, 2 primary-key entries, the commit), ~460 B, against the floor's
// 2 records (one HOT update, the commit), ~125-170 B. That is not what holds
// it back: BM_claim_writes_alone, the same two rows in one statement with no
// read, lock or rule, runs at ~0.75-0.9 of the floor. The rest is the three
// statements lease_claim runs for them (lock probe of the job's row, read of
// lease_store and the clock, the insert): ~145 us of server execution per
// claim, of which the three statements' own execution is ~70 us (the insert
// ~50) and the rest their executor start-up and shutdown, plan-cache checks
// and the function call (perf: ExecutorStart alone ~16% of the backend's
// CPU, plpgsql ~55%). Merging the probe and the read, skipping the probe
// when no fence is known, or one CTE in the function: no difference above
// the machine's noise (±20%); the new-job claim as one top-level CTE
// statement: ~15-20% less server CPU (pgbench: 201-206 vs 236-258 us), still
// short of 0.7 as long as it must read the store's marker and lost_at (loss
// of state) and find out whether the job exists before writing.
// A second try (2026-12-01, not merged: a schema version and a longer
// locking argument for no measured gain) cut a statement from every path —
// a new job's win 3 -> 1 statement, a claim that finds the run running
// 3 -> 2, the next slot of a job 4 -> 3 (the runs' locks, the clock and the
// store's row in one statement) — and, in 4 alternating runs, moved BM_claim
// from 0.64 to 0.70 and BM_claim_next_slot_of_a_job from 0.48 to 0.39, both
// inside each other's ranges. pg_stat_statements per next-slot claim: job
// row ~9 us, runs + clock + store ~13, fence + prune + insert ~30 of ~140 us
// in the function; the prune deletes one run on every claim of a job at its
// history size, so pruning less often would not save it. finish without its
// pg_notify (an experiment: listeners depend on it) was within the noise too.
// Schema version 9 (2026-12-07, pinned, alternating binaries): a claim's
// time beyond its statements' execution is mostly their executor start-up
// (perf: ExecutorStart ~17% of the backend's CPU, every plan node set up
// again at each call) and PL/pgSQL expressions, each compiled again in every
// transaction (a trivial function with the claim's 14 arguments and 15
// results costs what `SELECT 1` does; 10 assignments and 5 IFs more cost
// ~8-14 us). Version 9 decides the common outcomes in SQL, a first claim in
// 2 statements without the probe, and drops a CHECK that was compiled at
// every write of a run: BM_claim server CPU 68 -> 57-64 us, vs_floor 0.67 ->
// 0.70-0.73; BM_heartbeat 0.93 -> 0.97, BM_finish 0.86 -> 0.89;
// BM_claim_next_slot_of_a_job unchanged (~100-105 us, 0.55). Tried then and
// measured worse: the clock's statement and the new run's merged into one
// (108 vs 101 us), a first claim as one CTE statement (66 vs 63 us); the
// runs read by a FOR loop instead of one aggregate: the same.
// Also measured 2026-12-07 for the next slot, none of it kept (pgbench -M
// prepared, server and client pinned to one core each, a claim's time = a
// script with it minus the same script without it): version 9's claim ~140
// us against the floor's ~63; the same claim as one top-level CTE statement
// (job row locked, clock, store's row, runs checked, fence, run and prune
// as data-modifying CTEs) with lease_claim as the fallback in the same
// statement ~131, without the fallback ~128. ~9 % at best, with a second
// text of the rules and a weaker ordering (the statement's snapshot comes
// before its lock), so not worth it. pg_stat_statements shows the runs'
// read and the new run's statement planned again at every call (custom
// plans win on cost), yet plan_cache_mode = force_generic_plan made
// BM_claim_next_slot_of_a_job's server CPU no lower (108 vs 100-106 us).
// With fsync on (the server's default, unpinned, 2 repetitions), vs_floor:
// BM_claim 0.74, next slot 0.63, heartbeat 0.95, finish 1.00, against a
// floor that now includes a flush. BM_claim_next_slot_of_a_job at 0.7 of
// the floor (fsync off, as measured here) needs fewer statements than the
// minimum of one lock, one read and one write that this function runs: a
// different layout of the tables, not a rewrite of the function.
// cpu_vs_floor (server CPU) is the steadier figure on a loaded machine.
//
//   postgres_bench [--benchmark_min_time=2]
//   LEASE_BENCH_POSTGRES='host=… dbname=…' postgres_bench   (your server; fsync and
//   synchronous_commit as it has them; the bench server runs with fsync=off)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "lease/store/postgres.hpp"
#include "bench_server.hpp"
#include "start.hpp"

namespace {

using namespace std::chrono_literals;
using lease::bench::backend_cpu_ns;
using lease::bench::clock_type;
using lease::bench::conninfo;
using lease::bench::floor_probe;
using lease::bench::pinned_apart;
using lease::bench::seconds_since;

std::string unique_schema(const char* what) {
  static int n = 0;
  return std::string("bench_") + what + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

lease::postgres_store make_store(const char* what, std::string* schema = nullptr) {
  lease::postgres_options o;
  o.conninfo = conninfo();
  o.schema = unique_schema(what);
  if (schema != nullptr) *schema = o.schema;
  return lease::postgres_store{std::move(o)};
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

/// Times `op` and the floor alternately; with `pid` (the store's server
/// process) also the server's CPU time of each, so the ratio can be read on a
/// loaded machine too (`cpu_vs_floor`).
template <class Op, class Pid, class Also = void (*)()>
double paired(benchmark::State& state, Op op, Pid pid, Also also = [] {}) {
  floor_probe floor;
  const double floor_wal = floor.wal_per_upsert();
  const std::int64_t wal0 = floor.wal_position();
  double op_total = 0, floor_total = 0, op_cpu = 0, floor_cpu = 0;
  bool cpu = true;
  const pinned_apart pin{pid(), floor.pid()};
  for (auto _ : state) {
    const double c0 = backend_cpu_ns(pid());
    const auto t = clock_type::now();
    op();
    const double s = seconds_since(t);
    const double c1 = backend_cpu_ns(pid());
    state.SetIterationTime(s);
    op_total += s;
    const double f0 = backend_cpu_ns(floor.pid());
    floor_total += floor.once();
    const double f1 = backend_cpu_ns(floor.pid());
    if (c0 < 0 || c1 < 0 || f0 < 0 || f1 < 0) cpu = false;
    op_cpu += c1 - c0;
    floor_cpu += f1 - f0;
    also();  // untimed: e.g. setting up the next iteration
  }
  const auto n = static_cast<double>(state.iterations());
  // WAL bytes per operation: the loop's (operations, floors and whatever
  // `also` did) less the floors' (measured alone before the loop).
  state.counters["floor_wal_B"] = floor_wal;
  state.counters["wal_B"] = static_cast<double>(floor.wal_position() - wal0) / n - floor_wal;
  state.counters["floor_us"] = 1e6 * floor_total / n;
  state.counters["vs_floor"] = floor_total / op_total;
  if (cpu && op_cpu > 0) {
    state.counters["srv_cpu_us"] = op_cpu / n / 1e3;
    state.counters["floor_srv_cpu_us"] = floor_cpu / n / 1e3;
    state.counters["cpu_vs_floor"] = floor_cpu / op_cpu;
  }
  state.counters["pinned"] = pin.pinned() ? 1 : 0;
  state.SetItemsProcessed(state.iterations());
  return op_total;
}

void BM_floor_upsert(benchmark::State& state) {
  floor_probe floor;
  for (auto _ : state) state.SetIterationTime(floor.once());
  state.SetItemsProcessed(state.iterations());
}

/// The method's own check: the floor's upsert on a second connection, timed
/// as every figure below is. It must read 1.00 of the floor; anything else is
/// a bias in how the two are timed or where they run, not in what they do.
void BM_upsert_on_another_connection(benchmark::State& state) {
  floor_probe other;
  paired(state, [&] { (void)other.once(); }, [&] { return other.pid(); });
}

void BM_claim(benchmark::State& state) {
  auto store = make_store("claim");
  const lease::time_point slot = store.now();
  std::int64_t i = 0;
  paired(state, [&] {
    // A new job each time: a claim that wins on a job with no live run, the common case at every slot.
    const std::string n = std::to_string(i++);
    if (store.claim(claim_for("job-" + n, slot, "tok-" + n)).outcome != lease::claim_outcome::won)
      state.SkipWithError("claim did not win");
  }, [&] { return store.backend_pid(); });
}

/// What BM_claim writes and nothing else: the job's row and its run, in the
/// store's own tables (same indexes and constraints), inserted by one prepared
/// statement on a connection of its own, with no read, no lock taken first,
/// no rule and no function call. No claim of a new job under this layout can
/// be faster: its vs_floor is the ceiling of BM_claim's.
void BM_claim_writes_alone(benchmark::State& state) {
  std::string schema;
  auto store = make_store("writes", &schema);
  (void)store.now();  // creates the schema
  lease::detail::postgres::connection conn({conninfo(), 2000ms, 5000ms, 25ms, 1000ms, "lease-bench-writes"});
  conn.open();
  conn.prepare("writes", lease::detail::postgres::in_schema(
                             "WITH j AS (INSERT INTO @.lease_jobs (job, fence) VALUES ($1::bytea, $2::int8) "
                             "           ON CONFLICT (job) DO NOTHING RETURNING fence) "
                             "INSERT INTO @.lease_runs SELECT $1::bytea, $2::int8, 1, $3::bytea, j.fence, 'bench'::bytea, "
                             "  0, $2::int8 + 60000, false, 0 FROM j RETURNING *",
                             schema));
  const std::int64_t slot = store.now().time_since_epoch().count();  // ms
  std::int64_t i = 0;
  paired(state, [&] {
    const std::string n = std::to_string(i++);
    lease::detail::postgres::params p;
    p.bytes("job-" + n).i64(slot).bytes("tok-" + n);
    if (PQntuples(conn.exec_prepared("writes", p, "writes").get()) != 1) state.SkipWithError("no row written");
  }, [&] { return conn.backend_pid(); });
}

/// The steady state of a job that runs every slot: one job, the next slot
/// each time, the previous run finished (untimed), history pruned as it goes.
void BM_claim_next_slot_of_a_job(benchmark::State& state) {
  auto store = make_store("next");
  const lease::time_point base = store.now() - 12h;  // slots 1 ms apart, all due, none late
  std::int64_t i = 0;
  std::string token;
  paired(state, [&] {
    token = "tok-" + std::to_string(i);
    if (store.claim(claim_for("job", base + lease::duration{i}, token)).outcome != lease::claim_outcome::won)
      state.SkipWithError("claim did not win");
  }, [&] { return store.backend_pid(); }, [&] {
    (void)store.finish({"job", base + lease::duration{i++}}, token, lease::run_status::success);
  });
}

void BM_heartbeat(benchmark::State& state) {
  auto store = make_store("hb");
  auto req = claim_for("job", store.now(), "tok");
  if (store.claim(req).outcome != lease::claim_outcome::won) state.SkipWithError("claim did not win");
  paired(state, [&] {
    if (!store.heartbeat(req.run, req.token, 60s)) state.SkipWithError("heartbeat refused");
  }, [&] { return store.backend_pid(); });
}

void BM_finish(benchmark::State& state) {
  auto store = make_store("finish");
  const lease::time_point slot = store.now();
  std::int64_t i = 0;
  auto claim_next = [&] { (void)store.claim(claim_for("job-" + std::to_string(i), slot, "tok-" + std::to_string(i))); };
  claim_next();
  paired(state, [&] {
    if (!store.finish({"job-" + std::to_string(i), slot}, "tok-" + std::to_string(i), lease::run_status::success))
      state.SkipWithError("finish refused");
  }, [&] { return store.backend_pid(); }, [&] {
    ++i;
    claim_next();
  });
}

constexpr int batch_size = 1000;

void BM_heartbeat_1000_batched_vs_single(benchmark::State& state) {
  auto store = make_store("batch");
  const lease::time_point slot = store.now();
  std::vector<lease::heartbeat_request> batch;
  for (int i = 0; i < batch_size; ++i) {
    auto req = claim_for("job-" + std::to_string(i), slot, "tok-" + std::to_string(i));
    (void)store.claim(req);
    batch.push_back({req.run, req.token, 60s});
  }
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

constexpr int claim_batch_size = 100;

/// 100 claims of new jobs due together: 100 claim() calls vs one
/// claim_many() (pipelined: one round trip, each claim its own transaction).
void BM_claim_100_batched_vs_single(benchmark::State& state) {
  auto store = make_store("cbatch");
  const lease::time_point slot = store.now();
  std::int64_t n = 0;
  auto fresh = [&] {
    std::vector<lease::claim_request> b;
    for (int i = 0; i < claim_batch_size; ++i, ++n) b.push_back(claim_for("job-" + std::to_string(n), slot, "tok"));
    return b;
  };
  double single_total = 0, batched_total = 0;
  std::uint64_t single_trips = 0, batched_trips = 0;
  for (auto _ : state) {
    auto singles = fresh();
    auto rt = store.round_trips();
    auto t = clock_type::now();
    for (const auto& c : singles)
      if (store.claim(c).outcome != lease::claim_outcome::won) state.SkipWithError("claim did not win");
    single_total += seconds_since(t);
    single_trips += store.round_trips() - rt;

    auto batch = fresh();
    rt = store.round_trips();
    t = clock_type::now();
    const auto got = store.claim_many(batch);
    const double s = seconds_since(t);
    batched_trips += store.round_trips() - rt;
    for (const auto& r : got)
      if (r.outcome != lease::claim_outcome::won) state.SkipWithError("claim did not win");
    state.SetIterationTime(s);
    batched_total += s;
  }
  const auto k = static_cast<double>(state.iterations());
  state.counters["single_ms"] = 1e3 * single_total / k;
  state.counters["speedup"] = single_total / batched_total;
  state.counters["trips_single"] = static_cast<double>(single_trips) / k;
  state.counters["trips_batched"] = static_cast<double>(batched_trips) / k;
  state.SetItemsProcessed(state.iterations() * claim_batch_size);
}

/// An instance's start with 1,000 / 10,000 / 100,000 jobs (start.hpp).
void BM_start_per_job(benchmark::State& state) {
  lease::bench::start_per_job(state, [] { return make_store("start"); });
}

// Registration order is run order.
BENCHMARK(BM_floor_upsert)->UseManualTime();
BENCHMARK(BM_upsert_on_another_connection)->UseManualTime();
BENCHMARK(BM_claim)->UseManualTime();
BENCHMARK(BM_claim_writes_alone)->UseManualTime();
BENCHMARK(BM_claim_next_slot_of_a_job)->UseManualTime();
BENCHMARK(BM_heartbeat)->UseManualTime();
BENCHMARK(BM_finish)->UseManualTime();
BENCHMARK(BM_heartbeat_1000_batched_vs_single)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_claim_100_batched_vs_single)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_start_per_job)->UseManualTime()->Unit(benchmark::kMillisecond)->Arg(1000)->Arg(10000)->Arg(100000)->Iterations(1);

}  // namespace
