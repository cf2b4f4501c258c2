// test/sqlite/rewound.cpp — the store file restored or rewritten in place
// while instances have it open (its inode kept: `sqlite3 jobs.db ".restore
// backup.db"`, `cp`, `rsync --inplace`), on real files: the path still names
// the open inode, so only the store-wide claim counter tells. The first
// claim of an instance that claimed since the backup finds it not above what
// it saw, records the loss in the file in that transaction, quarantines the
// claims it judges, and says so in a notice; a claim transaction that is
// rolled back changes nothing the store remembers.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include <sqlite3.h>

#include "lease/clock/fake.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/faulty_vfs.hpp"
#include "sqlite/helpers.hpp"
#include "sqlite/raw_sql.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::testing::sqlite::claim_of;
using lease::testing::sqlite::error_of;
using lease::testing::sqlite::inode;
using lease::testing::raw_exec;
using lease::testing::sqlite::store_on;
using Catch::Matchers::Contains;
using lease::claim_outcome;
using lease::run_status;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 3 / 1}};

/// Claimable for 5 min: the tests claim again after a quarantine of a lease.
lease::claim_request request(std::string job, lease::time_point slot, std::string token,
                             lease::claim_reason reason = lease::claim_reason::scheduled) {
  return claim_of(std::move(job), slot, std::move(token), reason, 5min);
}

/// The SQLite backup API from connections of the test's own, writing the
/// database `from` into the file `to` page by page (its inode kept):
/// `sqlite3 from ".backup to"`, or `sqlite3 to ".restore from"` on a live
/// store file.
void backup_api_copy(const std::string& from, const std::string& to) {
  sqlite3* src = nullptr;
  sqlite3* dst = nullptr;
  const int open_src = sqlite3_open(from.c_str(), &src);
  const int open_dst = sqlite3_open(to.c_str(), &dst);
  int step = SQLITE_ERROR;
  int finish = SQLITE_ERROR;
  if (open_src == SQLITE_OK && open_dst == SQLITE_OK) {
    sqlite3_busy_timeout(dst, 5000);
    if (sqlite3_backup* b = sqlite3_backup_init(dst, "main", src, "main")) {
      step = sqlite3_backup_step(b, -1);
      finish = sqlite3_backup_finish(b);
    }
  }
  INFO(sqlite3_errmsg(dst));
  sqlite3_close(src);
  sqlite3_close(dst);
  REQUIRE(open_src == SQLITE_OK);
  REQUIRE(open_dst == SQLITE_OK);
  REQUIRE(step == SQLITE_DONE);
  REQUIRE(finish == SQLITE_OK);
}

}  // namespace

TEST_CASE("a store file restored in place from a backup (same inode) is noticed at the next claim of an instance that "
          "claimed since the backup: no finished run is taken over, no run won since is won again") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string backup = dir.file("backup.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  REQUIRE(a.claim(request("report", t0, "tok-1")).outcome == claim_outcome::won);
  backup_api_copy(path, backup);  // sqlite3 jobs.db ".backup backup.db": run t0 running in it

  clock.advance(10s);
  REQUIRE(a.finish({"report", t0}, "tok-1", run_status::success));
  REQUIRE(a.claim(request("report", t0 + 10s, "tok-2")).outcome == claim_outcome::won);
  CHECK(a.take_notices().empty());

  const std::uint64_t ino = inode(path);
  backup_api_copy(backup, path);  // sqlite3 jobs.db ".restore backup.db", while `a` has it open
  REQUIRE(inode(path) == ino);    // the path names the same file: nothing for the stat() check to see
  // The file forgot: run t0 running again (its lease ends at t0 + 30 s), run
  // t0 + 10 s gone; reads notice nothing.
  REQUIRE(a.get({"report", t0})->status == run_status::running);
  REQUIRE_FALSE(a.get({"report", t0 + 10s}).has_value());
  CHECK_FALSE(a.lost_at().has_value());

  clock.advance(40s);  // t0 + 50 s: run t0's lease long over
  // A backup's takeover of run t0, which shows as running with an expired
  // lease but finished after the backup: the claim notices the rewind first,
  // and inside the loss's horizon the run is never taken over.
  const auto takeover = a.claim(request("report", t0, "tok-3", lease::claim_reason::takeover));
  CHECK(takeover.outcome == claim_outcome::finished);  // not attempt 2 of a run that finished
  CHECK(a.get({"report", t0})->attempt == 1);
  CHECK(a.get({"report", t0})->status == run_status::interrupted);
  CHECK(a.lost_at() == t0 + 50s);
  const auto notices = a.take_notices();
  CHECK(notices.size() == 1);
  if (!notices.empty())
    CHECK_THAT(notices[0], Contains(path) && Contains("restored or rewritten in place") &&
                               Contains("same inode " + std::to_string(ino)) && Contains("may be lost") &&
                               Contains("Loss recorded at 2026-03-01T00:00:50.000Z") &&
                               Contains("no run starts until one lease after"));

  // Run t0 + 10 s, won after the backup, has no state in the file: not won
  // again as attempt 1.
  const auto again = a.claim(request("report", t0 + 10s, "tok-4"));
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == t0 + 50s + 30s);
  CHECK_FALSE(a.get({"report", t0 + 10s}).has_value());
  CHECK(a.take_notices().empty());  // one loss, one notice

  // lost_at is in the file: an instance opened now, which saw nothing
  // before, obeys it too.
  auto b = store_on(path, clock);
  CHECK(b.lost_at() == t0 + 50s);
  CHECK(b.claim(request("report", t0 + 10s, "tok-5")).outcome == claim_outcome::quarantined);
  CHECK(b.take_notices().empty());

  // Past the quarantine a new slot runs; the counter goes on from the
  // restored value without a new loss.
  clock.advance(30s);
  CHECK(a.claim(request("report", t0 + 80s, "tok-6")).outcome == claim_outcome::won);
  CHECK(b.claim(request("other", t0 + 80s, "tok-7")).outcome == claim_outcome::won);
  CHECK(a.lost_at() == t0 + 50s);
  CHECK(a.take_notices().empty());
  CHECK(b.take_notices().empty());
}

TEST_CASE("a claim transaction rolled back after the claim counter was bumped changes nothing the store remembers: "
          "no loss is made up, and a rewind it found is found again") {
  namespace vfs = lease::testing::faulty_vfs;
  const vfs::faults_off_at_scope_end reset;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string backup = dir.file("backup.db");
  lease::fake_clock clock{t0};
  lease::sqlite_store a{"file:" + path + "?vfs=" + vfs::install(),
                        {.clock = [clock] { return clock.now(); }, .quarantine_new_file = false}};
  REQUIRE(a.claim(request("report", t0, "tok-1")).outcome == claim_outcome::won);

  // The commit fails: the counter this transaction bumped is not in the file.
  vfs::fail_wal_writes = true;
  CHECK(error_of([&] { a.claim(request("other", t0, "tok-2")); }).code() == lease::errc::outcome_unknown);
  vfs::fail_wal_writes = false;
  // The next claim bumps the counter to the value the failed one read: no rewind.
  CHECK(a.claim(request("other", t0, "tok-2")).outcome == claim_outcome::won);
  CHECK_FALSE(a.lost_at().has_value());
  CHECK(a.take_notices().empty());

  backup_api_copy(path, backup);
  clock.advance(1s);
  REQUIRE(a.claim(request("x", t0 + 1s, "tok-3")).outcome == claim_outcome::won);
  REQUIRE(a.claim(request("y", t0 + 1s, "tok-4")).outcome == claim_outcome::won);
  backup_api_copy(backup, path);  // in place: runs t0 + 1 s forgotten

  // The claim that finds the rewind fails at its commit: no loss recorded, no notice yet.
  clock.advance(1s);
  vfs::fail_wal_writes = true;
  CHECK(error_of([&] { a.claim(request("x", t0 + 1s, "tok-5")); }).code() == lease::errc::outcome_unknown);
  vfs::fail_wal_writes = false;
  CHECK_FALSE(a.lost_at().has_value());
  CHECK(a.take_notices().empty());
  // The next claim finds it again, and this time it is recorded.
  clock.advance(1s);
  CHECK(a.claim(request("x", t0 + 1s, "tok-5")).outcome == claim_outcome::quarantined);
  CHECK(a.lost_at() == t0 + 3s);
  const auto notices = a.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("restored or rewritten in place"));
}

// A backup taken before this release upgraded the file (schema version 5:
// the claim counter in lease_meta) restored into the open file: the claim
// transaction finds the older version, which no release writes into a file
// a newer one upgraded. Refused as a newer version is, every instance would
// fail its claims until restarted, and the restarted stores, remembering
// nothing, would upgrade it with no loss recorded.
TEST_CASE("an older schema version restored into the open file is a loss, and the file is upgraded again") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string backup = dir.file("backup.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  REQUIRE(a.claim(request("report", t0, "tok-1")).outcome == claim_outcome::won);
  backup_api_copy(path, backup);
  // The backup as the previous release (schema version 5) would have written it.
  raw_exec(backup, "INSERT INTO lease_meta (name, value) SELECT 'claims', fence FROM lease_jobs WHERE job = 'claims'; "
                   "DELETE FROM lease_jobs WHERE job = 'claims'; UPDATE lease_schema SET version = 5");
  REQUIRE(a.finish({"report", t0}, "tok-1", run_status::success));
  clock.advance(1min);
  REQUIRE(a.claim(request("report", t0 + 1min, "tok-2")).outcome == claim_outcome::won);

  lease::sqlite_store tool{path, {.clock = [&clock] { return clock.now(); }, .quarantine_new_file = false,
                                   .upgrade = false}};
  backup_api_copy(backup, path);  // same inode: only the claim transaction can tell
  clock.advance(1s);
  // A store that upgrades none (sqlite_options::upgrade = false) refuses it, and leaves it so.
  const auto refused = error_of([&] { tool.claim(request("cleanup", t0 + 1min + 1s, "tok-t")); });
  CHECK(refused.code() == lease::sqlite_errc::schema_outdated);
  CHECK_THAT(refused.what(), Contains("went back to lease schema version 5"));
  const auto q = a.claim(request("cleanup", t0 + 1min + 1s, "tok-3"));
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end > t0 + 1min + 1s);
  CHECK(a.lost_at() == t0 + 1min + 1s);
  CHECK(a.claim(request("report", t0 + 1min, "tok-x")).outcome != claim_outcome::won);  // won since the backup
  const auto notices = a.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("went back to lease schema version 5") && Contains("upgraded again") &&
                             Contains("may be lost"));
  sqlite3_stmt* v = nullptr;
  REQUIRE(sqlite3_prepare_v2(a.native_handle(), "SELECT (SELECT version FROM lease_schema), (SELECT count(*) FROM "
                                                "lease_meta WHERE name = 'claims')", -1, &v, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(v) == SQLITE_ROW);
  CHECK(sqlite3_column_int64(v, 0) == 6);
  CHECK(sqlite3_column_int64(v, 1) == 0);
  sqlite3_finalize(v);
  // The run the backup shows as running (t0, finished since) is never taken over.
  clock.advance(10min);
  CHECK(a.claim(request("report", t0, "tok-4")).outcome == claim_outcome::finished);
  CHECK(a.claim(request("report", t0 + 1min, "tok-5")).outcome != claim_outcome::won);  // never starts
  CHECK(a.take_notices().empty());
}
