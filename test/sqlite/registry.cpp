// test/sqlite/registry.cpp — stop, registrations and purge (StopStore,
// RegistryStore) on a real SQLite file shared by several store objects, as
// the instances and leasectl of one host share it: what one writes the
// others see; hostile bytes round-trip and order bytewise; a purge is never
// taken for a loss of state, and fences keep growing across it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>

#include "lease/clock/fake.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/helpers.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::testing::sqlite::claim_of;
using lease::testing::sqlite::store_on;
using namespace std::string_literals;
using lease::claim_outcome;
using lease::job_registration;
using lease::purge_outcome;
using lease::run_status;
using lease::time_point;

namespace {

const time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};

/// Runs of one job may overlap here: the tests claim several slots of it.
lease::claim_request request(std::string job, time_point slot, std::string token) {
  auto r = claim_of(std::move(job), slot, std::move(token));
  r.overlap = lease::overlap_mode::allow;
  return r;
}

/// count(*) of a table, through the store's own connection.
/// Rows of `table`; of lease_jobs, the jobs' (BLOB keys), not the claim
/// counter's row (TEXT 'claims').
std::int64_t rows(lease::sqlite_store& s, const std::string& table) {
  sqlite3_stmt* q = nullptr;
  const std::string sql =
      "SELECT count(*) FROM " + table + (table == "lease_jobs" ? " WHERE typeof(job) = 'blob'" : "");
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), sql.c_str(), -1, &q, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  const std::int64_t n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return n;
}

/// The file's claim counter (lease_jobs' row 'claims').
std::int64_t claim_counter(lease::sqlite_store& s) {
  sqlite3_stmt* q = nullptr;
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), "SELECT fence FROM lease_jobs WHERE job = 'claims'", -1, &q,
                             nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(q) == SQLITE_ROW);
  const std::int64_t n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return n;
}

}  // namespace

TEST_CASE("registrations of one store object are listed by another on the file byte for byte, instances ordered "
          "by bytes, the later of one call's duplicates kept") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  auto b = store_on(path, clock);
  const std::string job = "x'); DROP TABLE lease_registrations; --\0\xff"s;
  // Bytewise: "" < "\0" < "\0\0" < "B" < "a" < "a\0" < "\xc3\xa9" < "\xff"; a text
  // comparison that stops at NUL would make "a" and "a\0" one instance.
  const std::vector<std::string> ids = {"\xff"s, "a\0"s, "a"s, "B"s, "\0\0"s, "\0"s, "\xc3\xa9"s, ""s};
  std::vector<job_registration> regs;
  for (std::size_t i = 0; i < ids.size(); ++i)
    regs.push_back({job, ids[i], "*/5 * * * *\0$1 '\\"s + std::to_string(i), "Europe/Paris\0\x80"s, {}});
  a.register_jobs(regs);
  clock.advance(5ms);
  const std::vector<job_registration> again = {{job, "a", "first", "UTC", {}}, {job, "a", "second", "UTC", {}}};
  a.register_jobs(again);

  const auto jobs = b.list_jobs();
  REQUIRE(jobs.size() == 1);  // a job only registered (it never ran) is listed
  CHECK(jobs[0].name == job);
  CHECK(jobs[0].fence == 0);
  CHECK_FALSE(jobs[0].paused);
  CHECK_FALSE(jobs[0].last_run);
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(jobs[0].instances.size() == ids.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& g = jobs[0].instances[i];
    CHECK(g.instance == sorted[i]);
    CHECK(g.job == job);
    if (g.instance == "a") {
      CHECK(g.schedule == "second");
      CHECK(g.zone == "UTC");
      CHECK(g.last_seen == t0 + 5ms);
    } else {
      const auto k = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), g.instance) - ids.begin());
      CHECK(g.schedule == "*/5 * * * *\0$1 '\\"s + std::to_string(k));
      CHECK(g.zone == "Europe/Paris\0\x80"s);
      CHECK(g.last_seen == t0);
    }
  }
  // A job with runs lists its registrations beside its newest run.
  REQUIRE(b.claim(request("report", t0 + 5ms, "tok")).outcome == claim_outcome::won);
  b.register_jobs(std::vector<job_registration>{{"report", "api-2", "every 30s", "", {}},
                                                {"report", "api-1", "every 30s", "", {}}});
  const auto both = a.list_jobs();
  REQUIRE(both.size() == 2);
  CHECK(both[0].name == "report");
  REQUIRE(both[0].last_run);
  CHECK(both[0].last_run->token == "tok");
  REQUIRE(both[0].instances.size() == 2);
  CHECK(both[0].instances[0].instance == "api-1");
  CHECK(both[0].instances[1].instance == "api-2");
  CHECK(both[1].instances.size() == ids.size());

  // Registered within unseen_for: the newest registration ("a", 5 ms later) keeps it.
  const auto kept = b.purge(job, 1h);
  CHECK(kept.outcome == purge_outcome::registered);
  REQUIRE(kept.instance);
  CHECK(kept.instance->instance == "a");
  CHECK(kept.instance->last_seen == t0 + 5ms);
  clock.advance(2h);
  CHECK(b.purge(job, 1h).outcome == purge_outcome::purged);
  CHECK(a.purge(job, 1h).outcome == purge_outcome::not_found);
  CHECK(a.list_jobs().size() == 1);  // report stays
  CHECK(rows(a, "lease_registrations") == 2);
}

TEST_CASE("stop by one store object hands over another's runs at once, keeping their leases, no attempt starts "
          "before the lease ends nor until the resume") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto runner = store_on(path, clock);
  auto op = store_on(path, clock);  // leasectl
  const std::string job = "stop 'me'";
  const auto first = runner.claim(request(job, t0, "t1"));
  REQUIRE(first.outcome == claim_outcome::won);
  REQUIRE(runner.claim(request(job, t0 + 1ms, "t2")).outcome == claim_outcome::won);
  REQUIRE(runner.finish({job, t0 + 1ms}, "t2", run_status::success));
  clock.advance(10s);
  REQUIRE(runner.heartbeat({job, t0}, "t1", 30s));  // lease end t0 + 40 s
  const auto third = runner.claim(request(job, t0 + 2ms, "t3"));  // lease end now + 30 s
  REQUIRE(third.outcome == claim_outcome::won);

  CHECK(op.stop(job) == 2);  // t1 and t3; t2 had finished
  CHECK(runner.paused(job));
  CHECK_FALSE(runner.heartbeat({job, t0}, "t1", 30s));  // the runner learns it at its next heartbeat
  CHECK_FALSE(runner.finish({job, t0 + 2ms}, "t3", run_status::success));
  for (const auto& [slot, tok, end] :
       {std::tuple{t0, "t1", t0 + 40s}, std::tuple{t0 + 2ms, "t3", third.record.lease_end}}) {
    const auto rec = runner.get({job, slot});
    REQUIRE(rec);
    CHECK(rec->released);
    CHECK(rec->handovers == 1);
    CHECK(rec->lease_end == end);  // kept: its handler may run until the runner hears of the stop
    CHECK(rec->token == tok);
    CHECK(rec->status == run_status::running);
  }
  CHECK(runner.get({job, t0 + 1ms})->handovers == 0);
  // An immediate resume: a backup still finds the stopped run live.
  CHECK(op.resume(job));
  CHECK(runner.claim(request(job, t0 + 2ms, "b-early")).outcome == claim_outcome::running);
  CHECK(op.stop(job) == 0);  // handed over already; paused again
  clock.advance(31s);        // past both leases
  CHECK(runner.claim(request(job, t0 + 2ms, "b0")).outcome == claim_outcome::paused);
  CHECK(op.resume(job));
  const auto back = runner.claim(request(job, t0 + 2ms, "b1"));
  CHECK(back.outcome == claim_outcome::won);
  CHECK(back.record.attempt == 2);
  CHECK(back.record.handovers == 1);  // the stop's hand-over is not charged against max_attempts
  // A job that never ran is stopped as it is paused.
  CHECK(op.stop("never ran") == 0);
  CHECK(runner.paused("never ran"));
}

TEST_CASE("a purge is not a loss of state: a store object that won the job before claims it afresh with a higher "
          "fence, unquarantined, with no notice") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto instance = store_on(path, clock);
  auto op = store_on(path, clock);
  const auto won = instance.claim(request("report", t0, "tok-a"));
  REQUIRE(won.outcome == claim_outcome::won);
  instance.register_jobs(std::vector<job_registration>{{"report", "api-1", "every 60s", "", {}}});
  CHECK(op.pause("report"));
  CHECK(op.trigger("report") == t0);

  // In the rules' order: registered, then running, then too_soon.
  CHECK(op.purge("report", 1h).outcome == purge_outcome::registered);
  const auto live = op.purge("report", 0ms);
  CHECK(live.outcome == purge_outcome::running);
  REQUIRE(live.run);
  CHECK(live.run->token == "tok-a");
  REQUIRE(instance.finish({"report", t0}, "tok-a", run_status::success));
  CHECK(op.purge("report", 0ms).outcome == purge_outcome::too_soon);  // store-now in ms = the fence
  clock.advance(1ms);
  CHECK(op.purge("report", 0ms).outcome == purge_outcome::purged);
  for (const char* t : {"lease_runs", "lease_jobs", "lease_registrations"}) CHECK(rows(op, t) == 0);
  CHECK(claim_counter(op) > 0);  // the file's, no job's: kept
  CHECK(op.list_jobs().empty());
  CHECK_FALSE(op.paused("report"));
  const std::vector<std::string> jobs{"report"};
  CHECK(op.triggers(jobs).empty());

  // The instance that saw fence t0 claims the job afresh: no loss, a higher fence.
  clock.advance(1s);
  const auto again = instance.claim(request("report", t0 + 1s, "tok-b"));
  CHECK(again.outcome == claim_outcome::won);
  CHECK(again.record.fence > won.record.fence);
  CHECK(again.record.attempt == 1);
  CHECK_FALSE(instance.lost_at().has_value());
  CHECK(instance.take_notices().empty());
  CHECK(op.take_notices().empty());
  // The purged slot has no state: a late claim of it is a new run, by the ordinary rules (superseded here).
  CHECK(instance.claim(request("report", t0, "tok-c")).outcome == claim_outcome::superseded);
}

TEST_CASE("purges racing claims of one job from other store objects on threads: no won run loses its job, fences "
          "only grow, and no purge is taken for a loss of state") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  // The host clock. synchronous=NORMAL: the race is one of purge and claim
  // rules, not of the disk; with FULL's fsync per commit the two claimers kept
  // the purger from the lock on a 2-core machine (8 purges in 30 s, once a
  // purge past the 10 s busy_timeout).
  const lease::sqlite_options opts{.busy_timeout = 10s, .durable = false, .quarantine_new_file = false};
  { lease::sqlite_store create{path, opts}; }
  const std::string job = "raced";
  constexpr int claimers = 2;
  constexpr auto run_for = 2s;
  std::atomic<std::uint64_t> highest{0};  // the highest fence of a win that has returned
  std::atomic<bool> done{false};
  std::atomic<int> purged{0}, wins{0};
  // Set by the purger after four wins since its last purge: the claimers finish
  // the run they hold and park (`parked`) until a purge got through, which
  // the purger tries only once both are parked (a purge hammered meanwhile
  // would starve their finishes of the file's lock). Without it, a
  // ThreadSanitizer build's claimers kept a run of the job running for 30 s
  // (wins 181, purges 0): the purge's window between a finish and the next
  // claim is a few microseconds. Between holds, purges race claims freely.
  std::atomic<bool> hold{false};
  std::atomic<int> parked{0};
  std::vector<std::string> errors(claimers + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < claimers; ++c) {
    threads.emplace_back([&, c] {
      try {
        lease::sqlite_store s{path, opts};
        for (int i = 0; !done.load(); ++i) {
          if (hold.load()) {
            ++parked;
            while (hold.load() && !done.load()) std::this_thread::yield();
            --parked;
          }
          const std::uint64_t before = highest.load();
          const time_point slot = s.now();
          const std::string token = std::to_string(c) + "-" + std::to_string(i);
          const auto res = s.claim(request(job, slot, token));
          if (res.outcome != claim_outcome::won) continue;
          ++wins;
          if (res.record.fence <= before)
            throw std::runtime_error("a win's fence " + std::to_string(res.record.fence) +
                                     " is not above an earlier win's " + std::to_string(before));
          std::uint64_t h = highest.load();
          while (h < res.record.fence && !highest.compare_exchange_weak(h, res.record.fence)) {
          }
          // Won, so live: no purge may take it or its job row (its fence) away.
          const auto rec = s.get({job, slot});
          if (!rec || rec->token != token) throw std::runtime_error("a won run vanished before it finished");
          const auto jobs = s.list_jobs();
          auto j = std::find_if(jobs.begin(), jobs.end(), [&](const lease::stored_job& x) { return x.name == job; });
          if (j == jobs.end() || j->fence < res.record.fence)
            throw std::runtime_error("a won run's job lost its fence while the run was running");
          if (!s.finish({job, slot}, token, run_status::success)) throw std::runtime_error("a won run could not finish");
        }
        if (s.lost_at()) throw std::runtime_error("a claimer took a purge for a loss of state");
        if (!s.take_notices().empty()) throw std::runtime_error("a claimer was told of a loss");
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(c)] = e.what();
        done = true;
      }
    });
  }
  threads.emplace_back([&] {
    try {
      lease::sqlite_store s{path, opts};
      // At least run_for, and on until both sides did it often enough (a
      // sanitizer's build is slow), but never beyond 30 s.
      const auto start = std::chrono::steady_clock::now();
      const auto enough = [&] { return purged.load() > 20 && wins.load() > 20; };
      int wins_at_purge = 0;
      for (auto now = start; !done.load() && now < start + 30s && (now < start + run_for || !enough());
           now = std::chrono::steady_clock::now()) {
        if (wins.load() >= wins_at_purge + 4) hold = true;  // four wins since the last purge
        if (hold.load() && parked.load() < claimers) {
          std::this_thread::yield();
          continue;
        }
        if (s.purge(job, 0ms).outcome == purge_outcome::purged) {
          ++purged;
          wins_at_purge = wins.load();
          hold = false;
        }
      }
    } catch (const std::exception& e) {
      errors[claimers] = e.what();
    }
    done = true;
  });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e == "");
  INFO("wins " << wins.load() << ", purges " << purged.load());
  CHECK(wins.load() > 10);
  CHECK(purged.load() > 10);  // the race was run, not avoided
}
