// benchmark/sqlite/store.cpp — claims, heartbeats and finishes per second of
// lease::sqlite_store on one WAL file, each next to its floor: the cheapest
// raw write transaction with the same effect on the same file (same tables,
// same indexes, another job), through the plain sqlite3 API with prepared
// statements. The ratio store / floor is what lease's rules and error
// handling cost on top of the write SQLite has to do anyway.
//
//   claim      one won claim of a new slot (the run before it has ended)
//              floor: BEGIN IMMEDIATE; INSERT the run; bump the job's fence; COMMIT
//   claim_among_2000_jobs  the same with 2,000 other jobs in lease_jobs whose
//              names sort before the two jobs timed, so that a job's row and
//              the file's claim counter (the row 'claims', first in the
//              table: store/sqlite/schema.hpp) are on different pages: the
//              claim transaction writes one page more than its floor, as
//              every claim did up to schema version 5. Measured 2026-12-07
//              (2 cores, idle, release): claim 0.83 of its floor, with 2,000
//              jobs 0.72; version 5 (the counter in lease_meta) 0.69-0.72.
//   claim_running  a claim that loses to a live lease (what every instance
//              but the winner gets, every slot)
//              floor: BEGIN IMMEDIATE; SELECT the run by key; COMMIT
//   heartbeat  one renewal of a live lease
//              floor: UPDATE lease_end by key (autocommit)
//   finish     one finish of a running run
//              floor: UPDATE status by key (autocommit)
//   heartbeat_many/16  sixteen renewals in one transaction
//              floor: BEGIN IMMEDIATE; 16 x UPDATE lease_end by key; COMMIT
//   file_check_watched  what every store operation adds first on a local
//              file system: has any name on the path of the open file come
//              or gone? (store/sqlite/path_watch.hpp: one poll() of an
//              inotify instance and the mount table)
//   file_check_stat  what it adds where the watch cannot answer (a symlink
//              in the path, NFS; and after any event): three stat() calls,
//              the file, its -wal and its -shm, compared with the open
//              files' device + inode. Compare both with floor_heartbeat (the
//              cheapest write). Measured 2026-12-07 (2 cores, release build):
//              file_check_stat ~2.8 us CPU, file_check_watched ~0.25 us,
//              floor_heartbeat ~3.7 us: the three stat() calls were most of
//              what store_heartbeat cost above its floor.
//
//   register_jobs/64  one instance's 64 jobs registered in one call (its
//              scheduler does so every register_every, 60 s by default)
//              floor: BEGIN IMMEDIATE; 64 x INSERT OR REPLACE; COMMIT
//   store_start/N  an instance's start with N jobs (1,000 / 10,000 / 100,000):
//              one registration and one trigger poll of each; time per job flat
//   store_list_jobs/0, /1  leasectl jobs on 1000 jobs with a run each,
//              without (0) and with (1) two instances' registrations each.
//              Measured 2026-12-01 (load 5 on 2 cores, -O2): register_jobs/64
//              75 us CPU vs floor 58 us; list_jobs/0 2.7 ms, /1 5.9 ms CPU.
//              Schema version 5's list_jobs (jobs of lease_jobs UNION
//              lease_registrations, one row per registration, sorted) costs
//              about twice version 4's (1.5 ms on the same 1000 jobs, no
//              registrations): an operator's listing, never on a claim's path.
//
// The work a benchmark needs between timed operations (ending the claimed
// run, claiming the run to finish) is done with timing paused, identically
// for the store and its floor.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "lease/clock/system.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;

namespace {

constexpr int batch_size = 16;

std::int64_t ms(lease::time_point t) { return t.time_since_epoch().count(); }

/// The floor's connection: the plain C API on the store's file.
class raw_db {
 public:
  explicit raw_db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open");
    sqlite3_busy_timeout(db_, 5000);
    exec("PRAGMA synchronous=NORMAL");  // as the fixture's store is set (durable = false; WAL is persistent)
  }
  raw_db(const raw_db&) = delete;
  raw_db& operator=(const raw_db&) = delete;
  ~raw_db() {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) throw std::runtime_error(sqlite3_errmsg(db_));
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db_));
    stmts_.push_back(s);
    return s;
  }
  /// Steps a statement to the end and resets it.
  static void run(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(sqlite3_db_handle(s)));
    sqlite3_reset(s);
  }

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

void blob(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_blob64(s, i, v.data(), v.size(), SQLITE_STATIC);
}

lease::claim_request request(std::string job, lease::time_point slot, std::string token) {
  lease::claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "bench-runner";
  r.token = std::move(token);
  r.lease = 30s;
  r.deadline = slot + 1h;
  r.retain = 2h;  // nothing is old enough to prune: the floor prunes nothing either
  return r;
}

/// A fresh store file and a raw connection to it (the floor's).
struct fixture {
  lease::testing::temp_dir dir;
  // A fresh file is no lost one here: no creation quarantine. NORMAL, not
  // the default FULL: the CPU per operation is measured, not the disk's fsync.
  lease::sqlite_store store{dir.file("jobs.db"), {.durable = false, .quarantine_new_file = false}};
  raw_db raw{dir.file("jobs.db")};
  // Slots in the past: claims for slots more than 1 s ahead of the store's
  // clock are answered early, and a benchmark claims faster than 1 per ms.
  lease::time_point base = store.now() - 30min;
  sqlite3_stmt* insert_run = raw.prepare(
      "INSERT INTO lease_runs (job, slot, attempt, token, fence, runner, status, lease_end, released, handovers) "
      "VALUES (?1, ?2, 1, ?3, ?4, ?5, 0, ?6, 0, 0)");
  sqlite3_stmt* begin = raw.prepare("BEGIN IMMEDIATE");
  sqlite3_stmt* commit = raw.prepare("COMMIT");

  explicit fixture(int other_jobs = 0) {
    raw.exec("INSERT INTO lease_jobs (job, fence) VALUES (x'666c6f6f72', 0)");  // 'floor'
    if (other_jobs > 0)  // 'a-job-00001' ...: before 'bench' and 'floor', after the counter's row
      raw.exec(("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < " +
                std::to_string(other_jobs) +
                ") INSERT INTO lease_jobs (job, fence) SELECT CAST(printf('a-job-%05d', i) AS BLOB), 0 FROM c")
                   .c_str());
  }

  void raw_insert(const std::string& job, lease::time_point slot, const std::string& token, std::int64_t fence) {
    blob(insert_run, 1, job);
    sqlite3_bind_int64(insert_run, 2, ms(slot));
    blob(insert_run, 3, token);
    sqlite3_bind_int64(insert_run, 4, fence);
    static const std::string runner = "bench-runner";
    blob(insert_run, 5, runner);
    sqlite3_bind_int64(insert_run, 6, ms(lease::system_clock{}.now() + 30s));
    raw_db::run(insert_run);
  }
};

void store_claim_in(benchmark::State& st, fixture& f) {
  std::int64_t i = 0;
  for (auto _ : st) {
    const auto r = request("bench", f.base + i * 1ms, "token-" + std::to_string(i));
    ++i;
    if (f.store.claim(r).outcome != lease::claim_outcome::won) st.SkipWithError("claim not won");
    st.PauseTiming();
    f.store.finish(r.run, r.token, lease::run_status::success);
    st.ResumeTiming();
  }
  st.SetItemsProcessed(i);
}

void floor_claim_in(benchmark::State& st, fixture& f) {
  sqlite3_stmt* fence = f.raw.prepare("UPDATE lease_jobs SET fence = fence + 1 WHERE job = ?1");
  sqlite3_stmt* end = f.raw.prepare("UPDATE lease_runs SET status = 1 WHERE job = ?1 AND slot = ?2");
  const std::string job = "floor";
  std::int64_t i = 0;
  for (auto _ : st) {
    const lease::time_point slot = f.base + i * 1ms;
    const std::string token = "token-" + std::to_string(i);
    ++i;
    raw_db::run(f.begin);
    f.raw_insert(job, slot, token, i);
    blob(fence, 1, job);
    raw_db::run(fence);
    raw_db::run(f.commit);
    st.PauseTiming();
    blob(end, 1, job);
    sqlite3_bind_int64(end, 2, ms(slot));
    raw_db::run(end);
    st.ResumeTiming();
  }
  st.SetItemsProcessed(i);
}

void store_claim(benchmark::State& st) {
  fixture f;
  store_claim_in(st, f);
}
void floor_claim(benchmark::State& st) {
  fixture f;
  floor_claim_in(st, f);
}
void store_claim_among_2000_jobs(benchmark::State& st) {
  fixture f{2000};
  store_claim_in(st, f);
}
void floor_claim_among_2000_jobs(benchmark::State& st) {
  fixture f{2000};
  floor_claim_in(st, f);
}

void store_claim_running(benchmark::State& st) {
  fixture f;
  f.store.claim(request("bench", f.base, "winner"));
  const auto r = request("bench", f.base, "loser");
  std::int64_t n = 0;
  for (auto _ : st) {
    if (f.store.claim(r).outcome != lease::claim_outcome::running) st.SkipWithError("not running");
    ++n;
  }
  st.SetItemsProcessed(n);
}

void floor_claim_running(benchmark::State& st) {
  fixture f;
  const std::string job = "floor";
  f.raw_insert(job, f.base, "winner", 1);
  sqlite3_stmt* read = f.raw.prepare(
      "SELECT job, slot, attempt, token, fence, runner, status, lease_end, released, handovers "
      "FROM lease_runs WHERE job = ?1 AND slot = ?2");
  std::int64_t n = 0;
  for (auto _ : st) {
    raw_db::run(f.begin);
    blob(read, 1, job);
    sqlite3_bind_int64(read, 2, ms(f.base));
    if (sqlite3_step(read) != SQLITE_ROW) st.SkipWithError("no row");
    benchmark::DoNotOptimize(sqlite3_column_int64(read, 7));
    sqlite3_reset(read);
    raw_db::run(f.commit);
    ++n;
  }
  st.SetItemsProcessed(n);
}

void store_heartbeat(benchmark::State& st) {
  fixture f;
  const auto r = request("bench", f.base, "token");
  f.store.claim(r);
  std::int64_t n = 0;
  for (auto _ : st) {
    if (!f.store.heartbeat(r.run, r.token, 30s)) st.SkipWithError("heartbeat refused");
    ++n;
  }
  st.SetItemsProcessed(n);
}

void floor_heartbeat(benchmark::State& st) {
  fixture f;
  const std::string job = "floor";
  f.raw_insert(job, f.base, "token", 1);
  sqlite3_stmt* renew = f.raw.prepare("UPDATE lease_runs SET lease_end = ?3 WHERE job = ?1 AND slot = ?2");
  std::int64_t n = 0;
  for (auto _ : st) {
    blob(renew, 1, job);
    sqlite3_bind_int64(renew, 2, ms(f.base));
    sqlite3_bind_int64(renew, 3, ms(lease::system_clock{}.now() + 30s));
    raw_db::run(renew);
    ++n;
  }
  st.SetItemsProcessed(n);
}

void store_finish(benchmark::State& st) {
  fixture f;
  std::int64_t i = 0;
  for (auto _ : st) {
    st.PauseTiming();
    const auto r = request("bench", f.base + i * 1ms, "token-" + std::to_string(i));
    ++i;
    f.store.claim(r);
    st.ResumeTiming();
    if (!f.store.finish(r.run, r.token, lease::run_status::success)) st.SkipWithError("finish refused");
  }
  st.SetItemsProcessed(i);
}

void floor_finish(benchmark::State& st) {
  fixture f;
  sqlite3_stmt* end = f.raw.prepare("UPDATE lease_runs SET status = 1 WHERE job = ?1 AND slot = ?2");
  const std::string job = "floor";
  std::int64_t i = 0;
  for (auto _ : st) {
    st.PauseTiming();
    const lease::time_point slot = f.base + i * 1ms;
    ++i;
    f.raw_insert(job, slot, "token-" + std::to_string(i), i);
    st.ResumeTiming();
    blob(end, 1, job);
    sqlite3_bind_int64(end, 2, ms(slot));
    raw_db::run(end);
  }
  st.SetItemsProcessed(i);
}

void store_heartbeat_many(benchmark::State& st) {
  fixture f;
  std::vector<lease::heartbeat_request> batch;
  for (int j = 0; j < batch_size; ++j) {
    const auto r = request("bench-" + std::to_string(j), f.base, "token");
    f.store.claim(r);
    batch.push_back({r.run, r.token, 30s});
  }
  std::int64_t n = 0;
  for (auto _ : st) {
    const auto ok = f.store.heartbeat_many(batch);
    if (!ok.front() || !ok.back()) st.SkipWithError("heartbeat refused");
    n += batch_size;
  }
  st.SetItemsProcessed(n);
}

void floor_heartbeat_many(benchmark::State& st) {
  fixture f;
  std::vector<std::string> jobs;
  for (int j = 0; j < batch_size; ++j) {
    jobs.push_back("floor-" + std::to_string(j));
    f.raw_insert(jobs.back(), f.base, "token", j + 1);
  }
  sqlite3_stmt* renew = f.raw.prepare("UPDATE lease_runs SET lease_end = ?3 WHERE job = ?1 AND slot = ?2");
  std::int64_t n = 0;
  for (auto _ : st) {
    raw_db::run(f.begin);
    const std::int64_t end = ms(lease::system_clock{}.now() + 30s);
    for (const auto& job : jobs) {
      blob(renew, 1, job);
      sqlite3_bind_int64(renew, 2, ms(f.base));
      sqlite3_bind_int64(renew, 3, end);
      raw_db::run(renew);
    }
    raw_db::run(f.commit);
    n += batch_size;
  }
  st.SetItemsProcessed(n);
}

/// 64 jobs of one instance, as its scheduler registers them every minute.
std::vector<lease::job_registration> registrations(int n) {
  std::vector<lease::job_registration> regs;
  for (int j = 0; j < n; ++j)
    regs.push_back({"job-" + std::to_string(j), "api-1", "*/5 * * * *", "Europe/Paris", {}});
  return regs;
}

void store_register_jobs(benchmark::State& st) {
  fixture f;
  const auto regs = registrations(static_cast<int>(st.range(0)));
  for (auto _ : st) f.store.register_jobs(regs);
  st.SetItemsProcessed(st.iterations() * st.range(0));
}

/// What an instance does for all its jobs at start (and every
/// register_every): one registration of each and one poll of their pending
/// triggers. At 1,000, 10,000 and 100,000 jobs the time per job should stay
/// flat (redis_bench BM_start_per_job says why it is measured).
void store_start(benchmark::State& st) {
  fixture f;
  const auto regs = registrations(static_cast<int>(st.range(0)));
  std::vector<std::string> names;
  for (const auto& r : regs) names.push_back(r.job);
  for (auto _ : st) {
    f.store.register_jobs(regs);
    benchmark::DoNotOptimize(f.store.triggers(names));
  }
  st.SetItemsProcessed(st.iterations() * st.range(0));
}

void floor_register_jobs(benchmark::State& st) {
  fixture f;
  const auto regs = registrations(static_cast<int>(st.range(0)));
  sqlite3_stmt* put = f.raw.prepare(
      "INSERT OR REPLACE INTO lease_registrations (job, instance, schedule, zone, last_seen) VALUES (?1, ?2, ?3, ?4, ?5)");
  for (auto _ : st) {
    raw_db::run(f.begin);
    const std::int64_t now = ms(lease::system_clock{}.now());
    for (const auto& r : regs) {
      blob(put, 1, r.job);
      blob(put, 2, r.instance);
      blob(put, 3, r.schedule);
      blob(put, 4, r.zone);
      sqlite3_bind_int64(put, 5, now);
      raw_db::run(put);
    }
    raw_db::run(f.commit);
  }
  st.SetItemsProcessed(st.iterations() * st.range(0));
}

/// leasectl jobs on 1000 jobs, each with one run and, for range(0) = 1,
/// registrations by two instances (list_jobs reads one row per registration).
void store_list_jobs(benchmark::State& st) {
  fixture f;
  for (int j = 0; j < 1000; ++j) {
    const auto r = request("job-" + std::to_string(j), f.base, "token");
    if (f.store.claim(r).outcome != lease::claim_outcome::won) st.SkipWithError("claim not won");
  }
  if (st.range(0) != 0) {
    auto regs = registrations(1000);
    f.store.register_jobs(regs);
    for (auto& r : regs) r.instance = "api-2";
    f.store.register_jobs(regs);
  }
  for (auto _ : st)
    if (f.store.list_jobs().size() != 1000) st.SkipWithError("not 1000 jobs");
  st.SetItemsProcessed(st.iterations());
}

void file_check_stat(benchmark::State& st) {
  fixture f;
  const std::string path = f.dir.file("jobs.db");
  const std::string paths[] = {path, path + "-wal", path + "-shm"};
  struct ::stat opened[3] {};
  for (int i = 0; i < 3; ++i)
    if (::stat(paths[i].c_str(), &opened[i]) != 0) st.SkipWithError("stat");
  std::int64_t n = 0;
  for (auto _ : st) {
    for (int i = 0; i < 3; ++i) {
      struct ::stat now {};
      if (::stat(paths[i].c_str(), &now) != 0 || now.st_ino != opened[i].st_ino || now.st_dev != opened[i].st_dev)
        st.SkipWithError("the file changed");
    }
    ++n;
  }
  st.SetItemsProcessed(n);
}

void file_check_watched(benchmark::State& st) {
  fixture f;
  lease::detail::path_watch w;
  if (!w.start(f.dir.file("jobs.db"))) st.SkipWithError("the path cannot be watched here (path_watch.hpp)");
  std::int64_t n = 0;
  for (auto _ : st) {
    if (!w.quiet()) st.SkipWithError("the path changed");
    ++n;
  }
  st.SetItemsProcessed(n);
}

}  // namespace

BENCHMARK(file_check_stat);
BENCHMARK(file_check_watched);
BENCHMARK(floor_claim);
BENCHMARK(store_claim);
BENCHMARK(floor_claim_among_2000_jobs);
BENCHMARK(store_claim_among_2000_jobs);
BENCHMARK(floor_claim_running);
BENCHMARK(store_claim_running);
BENCHMARK(floor_heartbeat);
BENCHMARK(store_heartbeat);
BENCHMARK(floor_finish);
BENCHMARK(store_finish);
BENCHMARK(floor_heartbeat_many);
BENCHMARK(store_heartbeat_many);
BENCHMARK(floor_register_jobs)->Arg(64);
BENCHMARK(store_register_jobs)->Arg(64);
BENCHMARK(store_list_jobs)->Arg(0)->Arg(1);
BENCHMARK(store_start)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);
