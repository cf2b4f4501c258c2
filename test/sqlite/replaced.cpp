// test/sqlite/replaced.cpp — the store file deleted or replaced while
// instances have it open (doc/invariants.md, I10), on real files: the
// store notices at its next operation (the path no longer names the inode it
// has open), opens the path again, records lost_at in the file, says so in a
// notice, and wins no attempt until one lease after the loss; fences keep
// growing; a file the store creates is treated as a loss at its creation, so
// that an instance started after the replacement cannot win before the old
// runners have stopped.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "lease/clock/fake.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/faulty_vfs.hpp"
#include "sqlite/raw_sql.hpp"
#include "sqlite/helpers.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::testing::sqlite::claim_of;
using lease::testing::sqlite::inode;
using lease::testing::sqlite::store_on;
using lease::testing::raw_exec;
using Catch::Matchers::Contains;
using lease::claim_outcome;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 3 / 1}};

/// Claimable for 5 min: the tests claim again after a quarantine of a lease.
lease::claim_request request(std::string job, lease::time_point slot, std::string token) {
  return claim_of(std::move(job), slot, std::move(token), lease::claim_reason::scheduled, 5min);
}

/// `rm jobs.db jobs.db-wal jobs.db-shm`.
void delete_store_files(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

/// `mv other jobs.db` (an atomic replace), and the old -wal and -shm removed
/// with it, as a store file must be replaced.
void rename_over(const std::string& other, const std::string& path) {
  std::filesystem::rename(other, path);
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

/// `ln -sfn target link` done atomically, as a deployment switches `current`:
/// a new symlink renamed over the old one.
void retarget(const std::filesystem::path& link, const std::string& target) {
  const std::filesystem::path next = link.parent_path() / (link.filename().string() + ".next");
  std::filesystem::create_directory_symlink(target, next);
  std::filesystem::rename(next, link);
}

}  // namespace

TEST_CASE("a store file deleted while open is noticed at the next operation, and no run starts until a lease after") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  const std::uint64_t old_inode = inode(path);
  const auto first = s.claim(request("report", t0, "tok-a"));
  REQUIRE(first.outcome == claim_outcome::won);
  CHECK(s.take_notices().empty());

  delete_store_files(path);
  clock.advance(2s);
  // The runner of the forgotten run is refused at its next heartbeat: the
  // new file does not know its token, so it stops.
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));
  REQUIRE(std::filesystem::exists(path));  // created again
  CHECK(s.lost_at() == t0 + 2s);
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains(path) && Contains("was deleted") &&
                             Contains("inode " + std::to_string(old_inode) + " -> " + std::to_string(inode(path))) &&
                             Contains("no run starts until one lease after"));
  CHECK(s.take_notices().empty());  // each notice once

  // Claims, new runs and takeovers alike, are quarantined until lost_at + lease.
  clock.advance(30s - 1ms);
  const auto q = s.claim(request("report", t0 + 30s, "tok-b"));
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end == t0 + 2s + 30s);
  CHECK(q.record.job == "report");
  CHECK_FALSE(s.get({"report", t0 + 30s}).has_value());  // nothing created
  clock.advance(1ms);
  const auto won = s.claim(request("report", t0 + 30s, "tok-b"));
  CHECK(won.outcome == claim_outcome::won);
  CHECK(won.record.fence > first.record.fence);  // invariant 10: fences never repeat
}

TEST_CASE("a directory above the store file renamed away, and the path made again, is noticed at the next operation") {
  lease::testing::temp_dir dir;
  const std::filesystem::path app = dir.path() / "app";
  std::filesystem::create_directories(app / "data");
  const std::string path = (app / "data" / "jobs.db").string();
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  std::filesystem::rename(app, dir.path() / "app-old");  // a deployment moves the old tree aside
  std::filesystem::create_directories(app / "data");
  clock.advance(1s);
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));  // the path names no file with that run now
  CHECK(s.lost_at() == t0 + 1s);
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains(path) && Contains("was deleted"));
}

// The watch of the path said something changed, and the stat() that should
// tell what failed (here ELOOP: a symlink to itself put in the file's place):
// every operation fails until a stat() can tell, none runs on the old file
// as though nothing had happened.
TEST_CASE("a store file check that fails after the path changed fails every operation until it can tell") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  std::filesystem::rename(path, dir.file("aside.db"));
  std::filesystem::create_symlink("jobs.db", path);  // ELOOP
  CHECK_THROWS_WITH(s.heartbeat({"report", t0}, "tok-a", 30s), Contains("cannot check"));
  CHECK_THROWS_WITH(s.heartbeat({"report", t0}, "tok-a", 30s), Contains("cannot check"));
  std::filesystem::remove(path);
  clock.advance(1s);
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));  // a new file, which does not know the run
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("was deleted"));
}

// rules::trigger_slot on SQLite: the trigger that notices the replaced file
// takes a slot past every slot that may have run in the old one (a
// scheduled run of its very millisecond, won early there, would otherwise
// share the manual run's key).
TEST_CASE("a trigger that notices a deleted store file in the millisecond of a slot won early takes a slot past the "
          "loss") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  clock.advance(600ms);
  const auto early = s.claim(request("report", t0 + 1s, "tok-a"));  // within early_tolerance
  REQUIRE(early.outcome == claim_outcome::won);

  delete_store_files(path);
  clock.advance(400ms);
  const auto slot = s.trigger("report");  // notices the loss at the slot's own millisecond
  CHECK(s.lost_at() == t0 + 1s);
  CHECK(slot == t0 + 2001ms);
  CHECK(s.trigger("report") == slot);  // idempotent while pending
  clock.advance(30s);
  CHECK(s.claim(request("report", t0 + 1s, "tok-b")).outcome == claim_outcome::quarantined);  // may have run
  auto manual = request("report", slot, "tok-c");
  manual.reason = lease::claim_reason::manual;
  const auto won = s.claim(manual);
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.fence > early.record.fence);
}

TEST_CASE("fences never repeat when the store file is deleted between two wins") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  auto r = request("report", t0, "tok-a");
  r.lease = 1ms;  // the shortest quarantine: the next win is 1 ms after the loss
  const auto first = s.claim(r);
  REQUIRE(first.outcome == claim_outcome::won);
  delete_store_files(path);
  (void)s.get(r.run);  // noticed now, at t0
  clock.advance(1ms);
  r.token = "tok-b";
  r.run.slot = clock.now() + lease::early_tolerance;  // slot t0 may have run before the loss: it never starts again
  const auto second = s.claim(r);  // the file forgot the job's fence
  REQUIRE(second.outcome == claim_outcome::won);
  CHECK(second.record.attempt == 1);
  CHECK(second.record.fence > first.record.fence);
}

TEST_CASE("a store file replaced by renaming another lease database over it is noticed and quarantines claims") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string other = dir.file("backup.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  {
    auto b = store_on(other, clock);  // an older copy: another run, no lost_at
    REQUIRE(b.claim(request("backup-job", t0, "tok-old")).outcome == claim_outcome::won);
  }
  rename_over(other, path);
  clock.advance(1s);
  const auto q = s.claim(request("report", t0, "tok-b"));
  CHECK(q.outcome == claim_outcome::quarantined);  // the backup never saw tok-a's run
  CHECK(q.record.lease_end == t0 + 1s + 30s);
  CHECK(s.get({"backup-job", t0})->token == "tok-old");  // it reads the file now at the path
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("was replaced"));
}

// The store path goes through a symlink (current -> v1) that an operator
// retargets (current -> v2): the path now names v2's file, although v1's
// file is still where SQLite resolved the path when it opened it.
TEST_CASE("a store path whose directory symlink is retargeted is noticed as a replaced file at the next operation") {
  lease::testing::temp_dir dir;
  std::filesystem::create_directory(dir.path() / "v1");
  std::filesystem::create_directory(dir.path() / "v2");
  std::filesystem::create_directory_symlink("v1", dir.path() / "current");
  const std::string path = dir.file("current/jobs.db");
  lease::fake_clock clock{t0};
  (void)store_on(dir.file("v2/jobs.db"), clock);  // the next release's file, ready beside v1's
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  CHECK(s.take_notices().empty());

  retarget(dir.path() / "current", "v2");
  clock.advance(1s);
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));  // v2's file does not know the run
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains(path) && Contains("was replaced"));
  CHECK(s.lost_at() == t0 + 1s);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::quarantined);
  clock.advance(30s);
  const auto again = s.claim(request("report", t0, "tok-b"));  // t0 may have run before the loss: never again
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == lease::time_point::max());
  CHECK(s.claim(request("report", clock.now(), "tok-c")).outcome == claim_outcome::won);
  {
    auto v2 = store_on(dir.file("v2/jobs.db"), clock);  // the loss and the new run are in v2's file
    CHECK(v2.lost_at() == t0 + 1s);
    CHECK(v2.get({"report", clock.now()})->token == "tok-c");
    CHECK_FALSE(v2.get({"report", t0}).has_value());
  }
  {
    auto v1 = store_on(dir.file("v1/jobs.db"), clock);  // v1's file is left as it was
    CHECK_FALSE(v1.lost_at().has_value());
    CHECK(v1.get({"report", t0})->token == "tok-a");
  }
}

TEST_CASE("a store opened by a file: URI with an authority and %-escapes watches the file the URI names") {
  lease::testing::temp_dir dir;
  std::filesystem::create_directory(dir.path() / "my dir");
  const std::string path = dir.file("my dir/jobs#1.db");
  lease::fake_clock clock{t0};
  lease::sqlite_store s{"file://localhost" + dir.path().string() + "/my%20dir/jobs%231.db?mode=rwc#ignored",
                        {.clock = [clock] { return clock.now(); }, .quarantine_new_file = false}};
  REQUIRE(std::filesystem::exists(path));
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  delete_store_files(path);
  CHECK_FALSE(s.get({"report", t0}).has_value());
  CHECK_THAT(s.take_notices().at(0), Contains("was deleted"));
}

TEST_CASE("after a directory symlink in the store path is retargeted, an old and a new instance do not both win a "
          "slot") {
  lease::testing::temp_dir dir;
  std::filesystem::create_directory(dir.path() / "v1");
  std::filesystem::create_directory(dir.path() / "v2");
  std::filesystem::create_directory_symlink("v1", dir.path() / "current");
  const std::string path = dir.file("current/jobs.db");
  lease::fake_clock clock{t0};
  auto old = store_on(path, clock);
  REQUIRE(old.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  REQUIRE(old.finish({"report", t0}, "tok-a", lease::run_status::success));  // nothing running: the next slot is free

  retarget(dir.path() / "current", "v2");
  auto fresh = store_on(path, clock);  // started after the switch: opens v2's file
  clock.advance(1s);
  const lease::time_point slot = clock.now();
  REQUIRE(fresh.claim(request("report", slot, "tok-b")).outcome == claim_outcome::won);
  const auto second = old.claim(request("report", slot, "tok-c"));
  CHECK(second.outcome != claim_outcome::won);  // old notices the switch and claims in v2's file
  CHECK(old.take_notices().size() == 1);
  const auto seen = old.get({"report", slot});
  REQUIRE(seen.has_value());
  CHECK(seen->token == "tok-b");
  CHECK(fresh.lost_at() == t0 + 1s);  // and fresh obeys the loss old recorded
  CHECK(fresh.claim(request("other", slot, "tok-d")).outcome == claim_outcome::quarantined);
}

// A file restored as another user (root): this process cannot write it,
// and SQLite would silently serve it read-only. The store must neither go on
// read-only (it could never record the loss, and would stay so once the
// owner is fixed, the inode no longer changing) nor tell of a loss it did
// not record: the operation fails, and the next one after the fix recovers.
TEST_CASE("a store file replaced by one this process cannot write fails operations as unavailable until it can, "
          "then the loss is recorded and told") {
  namespace vfs = lease::testing::faulty_vfs;
  const vfs::faults_off_at_scope_end reset;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string other = dir.file("restored.db");
  lease::fake_clock clock{t0};
  auto s = store_on("file:" + path + "?vfs=" + vfs::install(), clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  {
    auto b = store_on(other, clock);  // an older copy: another run, no lost_at
    REQUIRE(b.claim(request("backup-job", t0, "tok-old")).outcome == claim_outcome::won);
  }
  rename_over(other, path);
  clock.advance(1s);

  vfs::open_main_read_only = true;  // restored as root: this process may only read it
  for (int i = 0; i < 2; ++i) {     // each operation tries the reopen again
    try {
      (void)s.get({"report", t0});
      FAIL("an operation went on with a file it cannot write");
    } catch (const lease::store_error& e) {
      CHECK(e.code() == lease::errc::unavailable);
      CHECK((e.code().value() & 0xff) == SQLITE_READONLY);
      CHECK_THAT(e.what(), Contains(path) && Contains("read-only although read-write was asked") &&
                               Contains("?mode=ro"));
    }
    CHECK(s.take_notices().empty());  // no loss told before it is recorded
  }

  vfs::open_main_read_only = false;  // the operator fixed the owner
  clock.advance(1s);
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));  // reopened: the restored file does not know the run
  const auto notices = s.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("was replaced") && Contains("Loss recorded at 2026-03-01T00:00:02.000Z"));
  CHECK(s.lost_at() == t0 + 2s);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::quarantined);
  clock.advance(30s);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::quarantined);  // may have run: never again
  auto plain = store_on(path, clock);  // the loss is in the file now at the path
  CHECK(plain.lost_at() == t0 + 2s);
  CHECK(plain.get({"backup-job", t0})->token == "tok-old");
}

TEST_CASE("a read-only inspector whose store file is replaced tells of the loss without claiming to record it") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string other = dir.file("restored.db");
  lease::fake_clock clock{t0};
  REQUIRE(store_on(path, clock).claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  lease::sqlite_store inspector{"file:" + path + "?mode=ro",
                                {.clock = [clock] { return clock.now(); }, .quarantine_new_file = false}};
  CHECK(inspector.get({"report", t0})->token == "tok-a");
  (void)store_on(other, clock);
  rename_over(other, path);
  clock.advance(1s);
  CHECK_FALSE(inspector.get({"report", t0}).has_value());  // it reads the file now at the path
  const auto notices = inspector.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Contains("was replaced") && Contains("read-only and recorded no loss"));
  CHECK_THAT(notices[0], !Contains("Loss recorded"));
  CHECK_FALSE(inspector.lost_at().has_value());
}

// A backup holds what was running when it was taken, not what ended since:
// restored, it shows a run as running that may have run to its end. Inside
// the loss's horizon that run is never taken over (store-rules.md, case
// 4a), and a trigger pending in the backup is never run at its old slot
// (it may be a forgotten scheduled run's): answered if claimed, moved past
// the horizon if asked again.
TEST_CASE("a store file restored from a backup does not run again a run that was running when the backup was taken") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  const std::string backup = dir.file("backup.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  auto b = store_on(path, clock);
  REQUIRE(a.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  const lease::time_point asked = a.trigger("cleanup");
  const lease::time_point audit = a.trigger("audit");
  raw_exec(path, "VACUUM INTO '" + backup + "'");  // the backup: report running, two triggers pending
  clock.advance(10s);
  REQUIRE(a.finish({"report", t0}, "tok-a", lease::run_status::success));  // report ran to its end
  lease::claim_request manual = request("cleanup", asked, "tok-m");
  manual.reason = lease::claim_reason::manual;
  REQUIRE(a.claim(manual).outcome == claim_outcome::won);  // and so did the trigger's run
  REQUIRE(a.finish({"cleanup", asked}, "tok-m", lease::run_status::success));

  rename_over(backup, path);  // restored: both look as they were
  clock.advance(1s);
  const auto q = b.claim(request("other", clock.now(), "tok-o"));
  CHECK(q.outcome == claim_outcome::quarantined);  // b notices the new file
  CHECK(b.take_notices().size() == 1);

  clock.advance(31s);  // the quarantine is over, report's lease long expired
  lease::claim_request takeover = request("report", t0, "tok-b");
  takeover.reason = lease::claim_reason::takeover;
  const auto after = b.claim(takeover);
  CHECK(after.outcome == claim_outcome::finished);  // not won: it may have run (it did)
  CHECK(after.record.status == lease::run_status::interrupted);
  CHECK(after.record.attempt == 1);
  CHECK(b.get({"report", t0})->status == lease::run_status::interrupted);

  manual.token = "tok-m2";
  const auto again = b.claim(manual);
  CHECK(again.outcome == claim_outcome::quarantined);  // its slot may be a forgotten run's
  CHECK(again.record.lease_end == lease::time_point::max());
  CHECK(b.triggers(std::vector<std::string>{"cleanup"}).empty());  // answered, not run
  REQUIRE(b.triggers(std::vector<std::string>{"audit"}).size() == 1);
  const lease::time_point moved = b.trigger("audit");  // asked again: past the loss's horizon
  CHECK(moved > audit);
  CHECK(moved > *b.lost_at() + 1s);
  CHECK(b.triggers(std::vector<std::string>{"audit"}).at(0).slot == moved);
}

TEST_CASE("a store file replaced by an empty file is noticed, gets the lease schema, and quarantines claims") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  std::ofstream{dir.file("empty")}.close();
  rename_over(dir.file("empty"), path);
  CHECK(std::filesystem::file_size(path) == 0);
  clock.advance(1s);
  CHECK(s.unfinished("report").empty());
  CHECK(s.lost_at() == t0 + 1s);
  CHECK(std::filesystem::file_size(path) > 0);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::quarantined);
  CHECK(s.take_notices().size() == 1);
}

TEST_CASE("two instances: one notices the replacement, the other then obeys the quarantine it recorded") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  auto b = store_on(path, clock);
  const auto ran = a.claim(request("report", t0, "tok-a"));
  REQUIRE(ran.outcome == claim_outcome::won);
  delete_store_files(path);
  clock.advance(5s);
  CHECK_FALSE(a.heartbeat({"report", t0}, "tok-a", 30s));  // a notices, records lost_at = t0 + 5 s
  clock.advance(10s);
  // b notices too, at its own next operation, and moves lost_at later: its
  // own runners may have had heartbeats acknowledged by the old file until now.
  const auto q = b.claim(request("report", t0, "tok-b"));
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end == t0 + 15s + 30s);
  CHECK(a.lost_at() == t0 + 15s);  // one file, one lost_at
  CHECK(a.take_notices().size() == 1);
  CHECK(b.take_notices().size() == 1);
  clock.advance(30s);
  const auto again = b.claim(request("report", t0, "tok-b2"));
  CHECK(again.outcome == claim_outcome::quarantined);  // t0 may have run before the loss: never again
  CHECK(again.record.lease_end == lease::time_point::max());
  const auto won = b.claim(request("report", clock.now(), "tok-b3"));  // a slot after the loss runs
  CHECK(won.outcome == claim_outcome::won);
  CHECK(won.record.fence > ran.record.fence);
}

TEST_CASE("an instance started after the file was replaced is quarantined by the new file's creation") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto old = store_on(path, clock);
  REQUIRE(old.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  delete_store_files(path);
  clock.advance(1s);

  SECTION("by default a file the store creates counts as a loss at its creation") {
    auto fresh = store_on(path, clock, /*quarantine_new_file=*/true);  // creates the new file; old has not noticed
    CHECK(fresh.lost_at() == t0 + 1s);
    const auto q = fresh.claim(request("report", t0, "tok-b"));
    CHECK(q.outcome == claim_outcome::quarantined);  // the old runner may still run until t0 + 30 s
    CHECK(q.record.lease_end == t0 + 1s + 30s);
    const auto notices = fresh.take_notices();
    REQUIRE(notices.size() == 1);
    CHECK_THAT(notices[0], Contains("created a new store file"));
    auto again = store_on(path, clock, true);  // opening an existing file is no loss
    CHECK(again.take_notices().empty());
    CHECK(again.lost_at() == t0 + 1s);
  }
  SECTION("without it, the new instance wins before the old one notices: the double-run window") {
    auto fresh = store_on(path, clock, /*quarantine_new_file=*/false);
    CHECK(fresh.claim(request("report", t0, "tok-b")).outcome == claim_outcome::won);
    CHECK(old.get({"report", t0})->token == "tok-b");  // old notices only now
    CHECK(old.take_notices().size() == 1);
  }
}

TEST_CASE("a store on the host clock quarantines claims for one lease after it creates the file") {
  lease::testing::temp_dir dir;
  lease::sqlite_store s{dir.file("jobs.db")};
  const auto created = s.lost_at();
  REQUIRE(created.has_value());
  auto r = request("report", s.now(), "tok");
  r.lease = 200ms;
  const auto q = s.claim(r);
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end == *created + 200ms);
  std::this_thread::sleep_until(std::chrono::system_clock::time_point{q.record.lease_end.time_since_epoch()} + 5ms);
  CHECK(s.claim(r).outcome == claim_outcome::won);
}

namespace {

std::int64_t schema_version(lease::sqlite_store& s) {
  sqlite3_stmt* v = nullptr;
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), "SELECT version FROM lease_schema", -1, &v, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(v) == SQLITE_ROW);
  const std::int64_t version = sqlite3_column_int64(v, 0);
  sqlite3_finalize(v);
  return version;
}

/// After an upgrade: an operator's trigger is stored and listed, a manual
/// claim of it wins a run marked manual (in get, list_runs, list_jobs) and
/// answers it; `job` must not be paused.
void trigger_works(lease::sqlite_store& s, lease::fake_clock& clock, const std::string& job) {
  const lease::time_point slot = s.trigger(job);
  CHECK(slot == clock.now());
  CHECK(s.trigger(job) == slot);  // pending: the same request
  const std::vector<std::string> jobs{job};
  CHECK(s.triggers(jobs) == std::vector<lease::run_key>{{job, slot}});
  auto r = request(job, slot, "tok-manual");
  r.reason = lease::claim_reason::manual;
  r.overlap = lease::overlap_mode::allow;
  const auto won = s.claim(r);
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(s.get({job, slot})->manual);
  CHECK(s.list_runs(job, 1).at(0).manual);
  CHECK(s.triggers(jobs).empty());
  for (const auto& j : s.list_jobs())
    if (j.name == job) CHECK_FALSE(j.trigger.has_value());
}

/// After an upgrade: a registration of `job` (which must have state and no
/// live run) is stored and listed, keeps the job from a purge while recent,
/// and a purge then deletes every trace of it.
void registry_works(lease::sqlite_store& s, lease::fake_clock& clock, const std::string& job,
                    const std::string& schedule) {
  clock.advance(1s);
  s.register_jobs(std::vector<lease::job_registration>{{job, "api-1", schedule, "Europe/Paris", {}}});
  bool listed = false;
  for (const auto& j : s.list_jobs()) {
    if (j.name != job) continue;
    listed = true;
    REQUIRE(j.instances.size() == 1);
    CHECK(j.instances[0].instance == "api-1");
    CHECK(j.instances[0].schedule == schedule);
    CHECK(j.instances[0].zone == "Europe/Paris");
    CHECK(j.instances[0].last_seen == clock.now());
  }
  CHECK(listed);
  const auto kept = s.purge(job, 1h);
  CHECK(kept.outcome == lease::purge_outcome::registered);
  clock.advance(2h);
  CHECK(s.purge(job, 1h).outcome == lease::purge_outcome::purged);
  for (const auto& j : s.list_jobs()) CHECK(j.name != job);
  CHECK(s.list_runs(job, 10).empty());
  CHECK(s.purge(job, 1h).outcome == lease::purge_outcome::not_found);
}

}  // namespace

TEST_CASE("a version 1 store file is upgraded to version 6 and has lost nothing") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  {
    auto s = store_on(path, clock);
    REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
    REQUIRE(sqlite3_exec(s.native_handle(), "DROP TABLE lease_meta; DROP INDEX lease_jobs_triggered; "
                         "ALTER TABLE lease_jobs DROP COLUMN trigger_slot; ALTER TABLE lease_runs DROP COLUMN manual; "
                         "ALTER TABLE lease_jobs DROP COLUMN paused; DROP TABLE lease_registrations; "
                         "UPDATE lease_schema SET version = 1", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
  }
  auto s = store_on(path, clock, true);
  CHECK_FALSE(s.lost_at().has_value());
  CHECK(s.take_notices().empty());
  CHECK(s.get({"report", t0})->token == "tok-a");
  CHECK_FALSE(s.get({"report", t0})->manual);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::running);
  CHECK(schema_version(s) == 6);
  CHECK_FALSE(s.paused("report"));
  clock.advance(1s);
  trigger_works(s, clock, "report");  // through versions 2 and 3 to 4: the trigger and manual columns exist
  CHECK(s.pause("report"));           // and the pause column
  registry_works(s, clock, "report", "every 60s");  // and to 5: the registrations
}

namespace {

/// The version 2 schema exactly as the previous release created it.
constexpr const char* v2_schema = R"sql(
CREATE TABLE lease_schema (version INTEGER NOT NULL);
INSERT INTO lease_schema (version) VALUES (2);
CREATE TABLE lease_meta (name TEXT NOT NULL PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE lease_jobs (job BLOB NOT NULL PRIMARY KEY, fence INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE lease_runs (
  job BLOB NOT NULL, slot INTEGER NOT NULL, attempt INTEGER NOT NULL, token BLOB NOT NULL,
  fence INTEGER NOT NULL, runner BLOB NOT NULL, status INTEGER NOT NULL, lease_end INTEGER NOT NULL,
  released INTEGER NOT NULL, handovers INTEGER NOT NULL, PRIMARY KEY (job, slot)) WITHOUT ROWID;
CREATE INDEX lease_runs_running ON lease_runs (job, slot) WHERE status = 0;
)sql";

}  // namespace

TEST_CASE("a version 2 store file opened read-only is refused with a sentence, not a missing column") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v2_schema);
  try {
    lease::sqlite_store s{"file:" + path + "?mode=ro"};
    FAIL("a version 2 file opened read-only was served");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
    CHECK_THAT(e.what(), Contains(path) && Contains("version 2") && Contains("open it once read-write"));
  }
}

TEST_CASE("a version 2 store file is upgraded to version 6: runs and fences kept, no job paused, pauses then stored") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  // A version 2 file with a run in progress and a job's fence.
  const lease::time_point lease_end = t0 + 30s;
  raw_exec(path, std::string(v2_schema) + "INSERT INTO lease_meta VALUES ('created_at', 1);" +
                     "INSERT INTO lease_jobs VALUES (CAST('report' AS BLOB), 9000000000000);" +
                     "INSERT INTO lease_runs VALUES (CAST('report' AS BLOB), " +
                     std::to_string(t0.time_since_epoch().count()) +
                     ", 1, CAST('tok-a' AS BLOB), 9000000000000, CAST('runner-tok-a' AS BLOB), 0, " +
                     std::to_string(lease_end.time_since_epoch().count()) + ", 0, 0);");
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock);
  CHECK(s.take_notices().empty());
  const auto kept = s.get({"report", t0});
  REQUIRE(kept);
  CHECK(kept->token == "tok-a");
  CHECK(kept->fence == 9000000000000);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::running);
  CHECK_FALSE(s.paused("report"));
  // The pause is stored in the job's row and survives the store object.
  CHECK(s.pause("report"));
  CHECK_FALSE(s.pause("report"));
  clock.advance(60s);  // tok-a's lease ran out
  {
    auto other = store_on(path, clock);
    CHECK(other.paused("report"));
    CHECK(other.claim(request("report", t0, "tok-c")).outcome == claim_outcome::paused);
    CHECK(other.claim(request("report", t0 + 60s, "tok-d")).outcome == claim_outcome::paused);
    CHECK(other.resume("report"));
    const auto won = other.claim(request("report", t0 + 60s, "tok-e"));
    REQUIRE(won.outcome == claim_outcome::won);
    CHECK(won.record.fence == 9000000000001);  // the fence kept by the upgrade goes on
    CHECK_FALSE(won.record.manual);
  }
  CHECK_FALSE(s.paused("report"));
  CHECK(schema_version(s) == 6);
  trigger_works(s, clock, "report");  // through version 3 to 4
  registry_works(s, clock, "cleanup", "every 60s");  // and to 5
  // report's fence, 9000000000000 ms, is years ahead: a purge of it is
  // too_soon (its runs have ended by now), so fences never repeat.
  CHECK(s.purge("report", 0ms).outcome == lease::purge_outcome::too_soon);
}

namespace {

/// The version 3 schema exactly as the previous release created it.
constexpr const char* v3_schema = R"sql(
CREATE TABLE lease_schema (version INTEGER NOT NULL);
INSERT INTO lease_schema (version) VALUES (3);
CREATE TABLE lease_meta (
  name  TEXT    NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE lease_jobs (
  job    BLOB    NOT NULL PRIMARY KEY,
  fence  INTEGER NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE lease_runs (
  job       BLOB    NOT NULL,
  slot      INTEGER NOT NULL,
  attempt   INTEGER NOT NULL,
  token     BLOB    NOT NULL,
  fence     INTEGER NOT NULL,
  runner    BLOB    NOT NULL,
  status    INTEGER NOT NULL,
  lease_end INTEGER NOT NULL,
  released  INTEGER NOT NULL,
  handovers INTEGER NOT NULL,
  PRIMARY KEY (job, slot)
) WITHOUT ROWID;
CREATE INDEX lease_runs_running ON lease_runs (job, slot) WHERE status = 0;
)sql";

/// A version 3 file as the previous release left it: a run in progress of
/// "report" (fence 9000000000000), and "batch" paused with an ended run.
std::string v3_file_with_data(lease::time_point lease_end) {
  const std::string slot = std::to_string(t0.time_since_epoch().count());
  return std::string(v3_schema) + "INSERT INTO lease_meta VALUES ('created_at', 1);" +
         "INSERT INTO lease_jobs VALUES (CAST('report' AS BLOB), 9000000000000, 0);" +
         "INSERT INTO lease_jobs VALUES (CAST('batch' AS BLOB), 7, 1);" +
         "INSERT INTO lease_runs VALUES (CAST('report' AS BLOB), " + slot +
         ", 1, CAST('tok-a' AS BLOB), 9000000000000, CAST('runner-tok-a' AS BLOB), 0, " +
         std::to_string(lease_end.time_since_epoch().count()) + ", 0, 0);" +
         "INSERT INTO lease_runs VALUES (CAST('batch' AS BLOB), " + slot +
         ", 1, CAST('tok-b' AS BLOB), 7, CAST('runner-tok-b' AS BLOB), 1, " + slot + ", 0, 0);";
}

}  // namespace

TEST_CASE("a version 3 store file opened read-only is refused with a sentence, not a missing column") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v3_file_with_data(t0 + 30s));
  try {
    lease::sqlite_store s{"file:" + path + "?mode=ro"};
    FAIL("a version 3 file opened read-only was served");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
    CHECK_THAT(e.what(), Contains(path) && Contains("version 3") && Contains("release's 6") &&
                             Contains("open it once read-write"));
  }
  // The file is still usable: opened read-write, it is upgraded.
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock);
  CHECK(schema_version(s) == 6);
}

TEST_CASE("a version 3 store file is upgraded to version 6: runs, fences and pauses kept, no trigger pending, "
          "triggers then stored") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v3_file_with_data(t0 + 30s));
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock, true);  // an existing file: no creation quarantine either
  CHECK(s.take_notices().empty());
  CHECK_FALSE(s.lost_at().has_value());
  CHECK(schema_version(s) == 6);
  const auto kept = s.get({"report", t0});
  REQUIRE(kept);
  CHECK(kept->token == "tok-a");
  CHECK(kept->fence == 9000000000000);
  CHECK(kept->status == lease::run_status::running);
  CHECK_FALSE(kept->manual);
  CHECK(s.claim(request("report", t0, "tok-x")).outcome == claim_outcome::running);
  CHECK(s.paused("batch"));
  CHECK_FALSE(s.paused("report"));
  const std::vector<std::string> jobs{"report", "batch"};
  CHECK(s.triggers(jobs).empty());
  const auto listed = s.list_jobs();
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "batch");
  CHECK(listed[0].paused);
  CHECK_FALSE(listed[0].trigger.has_value());
  REQUIRE(listed[0].last_run.has_value());
  CHECK(listed[0].last_run->status == lease::run_status::success);
  CHECK_FALSE(listed[0].last_run->manual);
  CHECK(listed[1].name == "report");
  CHECK(listed[1].fence == 9000000000000);
  CHECK_FALSE(listed[1].trigger.has_value());

  // The paused job's trigger is stored, listed and answered `paused` (it
  // does not wait for the resume).
  clock.advance(1s);
  const lease::time_point slot = s.trigger("batch");
  CHECK(slot == clock.now());
  for (const auto& j : s.list_jobs())
    if (j.name == "batch") CHECK(j.trigger == slot);
  auto m = request("batch", slot, "tok-m");
  m.reason = lease::claim_reason::manual;
  CHECK(s.claim(m).outcome == claim_outcome::paused);
  CHECK(s.triggers(jobs).empty());
  CHECK(s.resume("batch"));
  CHECK(s.claim(m).outcome == claim_outcome::none);  // answered: not run after the resume

  // A manual run of "report" beside its running scheduled run (allow), with
  // the fence the upgrade kept going on.
  auto r = request("report", s.trigger("report"), "tok-r");
  r.reason = lease::claim_reason::manual;
  r.overlap = lease::overlap_mode::allow;
  const auto won = s.claim(r);
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.fence == 9000000000001);
  CHECK(s.get({"report", t0})->status == lease::run_status::running);  // live: left alone
  {
    auto other = store_on(path, clock);  // the file, not the object, holds it
    const auto runs = other.list_runs("report", 10);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].manual);
    CHECK_FALSE(runs[1].manual);
  }
  registry_works(s, clock, "batch", "*/5 * * * *");  // through versions 4 and 5 to 6
}

namespace {

/// The version 4 schema exactly as the previous release created it.
constexpr const char* v4_schema = R"sql(
CREATE TABLE lease_schema (version INTEGER NOT NULL);
INSERT INTO lease_schema (version) VALUES (4);
CREATE TABLE lease_meta (
  name  TEXT    NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE lease_jobs (
  job          BLOB    NOT NULL PRIMARY KEY,
  fence        INTEGER NOT NULL,
  paused       INTEGER NOT NULL DEFAULT 0,
  trigger_slot INTEGER
) WITHOUT ROWID;
CREATE INDEX lease_jobs_triggered ON lease_jobs (trigger_slot) WHERE trigger_slot IS NOT NULL;
CREATE TABLE lease_runs (
  job       BLOB    NOT NULL,
  slot      INTEGER NOT NULL,
  attempt   INTEGER NOT NULL,
  token     BLOB    NOT NULL,
  fence     INTEGER NOT NULL,
  runner    BLOB    NOT NULL,
  status    INTEGER NOT NULL,
  lease_end INTEGER NOT NULL,
  released  INTEGER NOT NULL,
  handovers INTEGER NOT NULL,
  manual    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job, slot)
) WITHOUT ROWID;
CREATE INDEX lease_runs_running ON lease_runs (job, slot) WHERE status = 0;
)sql";

/// A version 4 file as the previous release left it: a run in progress of
/// "report" (fence 9000000000000), "batch" paused with an ended run, and a
/// pending trigger of "cleanup", which never ran.
std::string v4_file_with_data(lease::time_point lease_end) {
  const std::string slot = std::to_string(t0.time_since_epoch().count());
  return std::string(v4_schema) + "INSERT INTO lease_meta VALUES ('created_at', 1);" +
         "INSERT INTO lease_jobs VALUES (CAST('report' AS BLOB), 9000000000000, 0, NULL);" +
         "INSERT INTO lease_jobs VALUES (CAST('batch' AS BLOB), 7, 1, NULL);" +
         "INSERT INTO lease_jobs VALUES (CAST('cleanup' AS BLOB), 0, 0, " + slot + ");" +
         "INSERT INTO lease_runs VALUES (CAST('report' AS BLOB), " + slot +
         ", 1, CAST('tok-a' AS BLOB), 9000000000000, CAST('runner-tok-a' AS BLOB), 0, " +
         std::to_string(lease_end.time_since_epoch().count()) + ", 0, 0, 0);" +
         "INSERT INTO lease_runs VALUES (CAST('batch' AS BLOB), " + slot +
         ", 1, CAST('tok-b' AS BLOB), 7, CAST('runner-tok-b' AS BLOB), 1, " + slot + ", 0, 0, 0);";
}

}  // namespace

TEST_CASE("a version 4 store file opened read-only is refused with a sentence, not a missing table") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v4_file_with_data(t0 + 30s));
  try {
    lease::sqlite_store s{"file:" + path + "?mode=ro"};
    FAIL("a version 4 file opened read-only was served");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
    CHECK_THAT(e.what(), Contains(path) && Contains("version 4") && Contains("release's 6") &&
                             Contains("open it once read-write"));
  }
}

TEST_CASE("a version 4 store file is upgraded to version 6: runs, fences, pauses and triggers kept, no job "
          "registered, then registrations, stops and purges stored") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v4_file_with_data(t0 + 30s));
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock, true);  // an existing file: no creation quarantine either
  CHECK(s.take_notices().empty());
  CHECK_FALSE(s.lost_at().has_value());
  CHECK(schema_version(s) == 6);
  const auto listed = s.list_jobs();
  REQUIRE(listed.size() == 3);
  CHECK(listed[0].name == "batch");
  CHECK(listed[0].paused);
  CHECK(listed[1].name == "cleanup");
  CHECK(listed[1].trigger == t0);
  CHECK_FALSE(listed[1].last_run);
  CHECK(listed[2].name == "report");
  CHECK(listed[2].fence == 9000000000000);
  REQUIRE(listed[2].last_run);
  CHECK(listed[2].last_run->token == "tok-a");
  for (const auto& j : listed) CHECK(j.instances.empty());
  CHECK(s.claim(request("report", t0, "tok-x")).outcome == claim_outcome::running);

  // stop on the upgraded file: report's run in progress handed over, its lease kept.
  CHECK(s.stop("report") == 1);
  const auto stopped = s.get({"report", t0});
  REQUIRE(stopped);
  CHECK(stopped->released);
  CHECK(stopped->handovers == 1);
  CHECK(stopped->lease_end == t0 + 30s);
  CHECK(s.paused("report"));
  CHECK(s.purge("report", 0ms).outcome == lease::purge_outcome::running);
  registry_works(s, clock, "batch", "*/5 * * * *");
}

namespace {

/// One integer a query on the store's connection answers (-1: no row).
std::int64_t scalar(lease::sqlite_store& s, const char* sql) {
  sqlite3_stmt* q = nullptr;
  REQUIRE(sqlite3_prepare_v2(s.native_handle(), sql, -1, &q, nullptr) == SQLITE_OK);
  const std::int64_t v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  return v;
}

/// A version 5 file as the previous release left it: version 4's data
/// (v4_file_with_data) upgraded by version 5's own step (no registration),
/// and its claim counter, in lease_meta then, at 41.
std::string v5_file_with_data(lease::time_point lease_end) {
  return v4_file_with_data(lease_end) + lease::detail::sqlite_upgrade_4_to_5 +
         "INSERT INTO lease_meta VALUES ('claims', 41);";
}

}  // namespace

// leasectl opens the instances' file so: a newer leasectl must not stop the
// claims of an older fleet, which reads the version in every claim.
TEST_CASE("a store that upgrades none refuses a version 5 file with a sentence and changes nothing") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v5_file_with_data(t0 + 30s));
  try {
    lease::sqlite_store s{path, {.upgrade = false}};
    FAIL("a version 5 file was opened by a store that upgrades none");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::sqlite_errc::schema_outdated);
    CHECK(e.code() == lease::errc::unavailable);
    CHECK_THAT(e.what(), Contains(path) && Contains("version 5") && Contains("release's 6") &&
                             Contains("upgrade the instances first"));
  }
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));  // not even switched to WAL
  {
    sqlite3* db = nullptr;  // the file as the refusal left it: still version 5
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* v = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT version FROM lease_schema", -1, &v, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(v) == SQLITE_ROW);
    CHECK(sqlite3_column_int64(v, 0) == 5);
    sqlite3_finalize(v);
    sqlite3_close(db);
  }
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock, true);  // an instance of this release: upgraded now
  CHECK(scalar(s, "SELECT fence FROM lease_jobs WHERE job = 'claims'") == 41);  // untouched until then
  CHECK(schema_version(s) == 6);
  lease::sqlite_store tool{path, {.upgrade = false}};  // current now: opened
  CHECK(tool.list_jobs().size() == 3);
}

// Version 6 keeps the claim counter in lease_jobs (the row 'claims', a TEXT
// key) rather than in lease_meta, so that a won claim dirties one page fewer.
TEST_CASE("a version 5 store file is upgraded to version 6: the claim counter carries over to lease_jobs, where no "
          "job sees it") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  raw_exec(path, v5_file_with_data(t0 + 30s));
  lease::fake_clock clock{t0 + 1s};
  auto s = store_on(path, clock, true);
  CHECK(schema_version(s) == 6);
  CHECK(scalar(s, "SELECT count(*) FROM lease_meta WHERE name = 'claims'") == 0);
  CHECK(scalar(s, "SELECT fence FROM lease_jobs WHERE job = 'claims'") == 41);
  CHECK(s.list_jobs().size() == 3);  // batch, cleanup, report: the counter is no job

  // Every claim transaction counts there, and nothing takes the move for a rewind.
  CHECK(s.claim(request("report", t0, "tok-x")).outcome == claim_outcome::running);
  CHECK(scalar(s, "SELECT fence FROM lease_jobs WHERE job = 'claims'") == 42);
  CHECK_FALSE(s.lost_at().has_value());
  CHECK(s.take_notices().empty());

  // A job named "claims" (its name a BLOB) is a job like any other beside the counter.
  clock.advance(1s);
  const auto won = s.claim(request("claims", t0 + 2s, "tok-c"));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(scalar(s, "SELECT fence FROM lease_jobs WHERE job = 'claims'") == 43);
  const auto listed = s.list_jobs();
  REQUIRE(listed.size() == 4);
  CHECK(listed[0].name == "batch");
  CHECK(listed[1].name == "claims");
  CHECK(listed[1].fence == won.record.fence);
  CHECK(s.pause("claims"));
  CHECK(s.paused("claims"));
  CHECK(s.claim(request("report", t0 + 2s, "tok-y")).outcome == claim_outcome::overlap);  // one more claim transaction
  CHECK(scalar(s, "SELECT fence FROM lease_jobs WHERE job = 'claims'") == 44);
  CHECK(scalar(s, "SELECT paused FROM lease_jobs WHERE job = 'claims'") == 0);
  CHECK_FALSE(s.lost_at().has_value());
}

TEST_CASE("a path with control characters and invalid UTF-8 is escaped in error messages") {
  lease::testing::temp_dir dir;
  const std::string bad = dir.file(std::string("no\nsuch\x01" "dir\xff")) + "/jobs.db";
  try {
    lease::sqlite_store s{bad};
    FAIL("opened a file in a directory that does not exist");
  } catch (const lease::store_error& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.find('\x01') == std::string::npos);
    CHECK_THAT(what, Contains("no\\nsuch\\x01dir\\xff/jobs.db"));
  }
  CHECK(lease::detail::sqlite_printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(lease::detail::sqlite_printable("\xc2\x85 \xc0\xaf \xed\xa0\x80 \\ \t") == "\\u{85} \\xc0\\xaf \\xed\\xa0\\x80 \\\\ \\t");
}

TEST_CASE("an instance whose clock is behind does not move a recorded lost_at earlier") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock ahead{t0 + 10s};
  lease::fake_clock behind{t0};
  auto a = store_on(path, ahead);
  auto b = store_on(path, behind);
  REQUIRE(b.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  delete_store_files(path);
  CHECK(a.lost_at() == t0 + 10s);  // a notices first, on its clock
  CHECK(b.lost_at() == t0 + 10s);  // b notices at t0: the later time stays
  const auto q = b.claim(request("report", t0, "tok-b"));
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end == t0 + 10s + 30s);
  CHECK_THAT(b.take_notices().at(0), Contains("2026-03-01T00:00:10.000Z"));
}

TEST_CASE("a recovery that fails (the directory is gone) is an unavailable error and is finished by the next operation") {
  lease::testing::temp_dir dir;
  const std::string sub = dir.file("store");
  std::filesystem::create_directory(sub);
  const std::string path = sub + "/jobs.db";
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(request("report", t0, "tok-a")).outcome == claim_outcome::won);
  std::filesystem::rename(sub, dir.file("moved"));
  try {
    (void)s.get({"report", t0});
    FAIL("an operation went on without its file");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
  }
  CHECK(s.take_notices().empty());
  std::filesystem::create_directory(sub);  // an empty directory: the file is created anew
  clock.advance(1s);
  CHECK_FALSE(s.get({"report", t0}).has_value());
  CHECK(s.lost_at() == t0 + 1s);
  CHECK(s.take_notices().size() == 1);
  CHECK(s.claim(request("report", t0, "tok-b")).outcome == claim_outcome::quarantined);
}

TEST_CASE("a takeover of a run won since the loss is quarantined too while a longer lease would reach back before it") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  delete_store_files(path);
  (void)s.get({"report", t0});  // the loss, noticed at t0
  clock.advance(5s);
  auto r = request("report", t0 + 5s, "tok-a");  // a slot after the loss (t0 itself never starts again)
  r.lease = 5s;
  REQUIRE(s.claim(r).outcome == claim_outcome::won);  // t0 + 5 s: a 5 s quarantine is over
  clock.advance(5s);                                  // its lease ran out; the runner died
  r.token = "tok-b";
  r.lease = 20s;
  const auto q = s.claim(r);  // a 20 s lease from t0 + 10 s would reach back before the loss
  CHECK(q.outcome == claim_outcome::quarantined);
  CHECK(q.record.lease_end == t0 + 20s);
  CHECK(s.get({"report", t0 + 5s})->token == "tok-a");
  clock.advance(10s);
  CHECK(s.claim(r).outcome == claim_outcome::won);
}
