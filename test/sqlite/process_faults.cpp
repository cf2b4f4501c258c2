// test/sqlite/process_faults.cpp — faults a running process meets, on real
// files: a full disk when a write transaction commits (the WAL write answers
// SQLITE_FULL, as the unix VFS does on ENOSPC), the -wal file deleted under
// running instances, a newer release's schema under a running store.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/faulty_vfs.hpp"
#include "sqlite/helpers.hpp"
#include "sqlite/raw_sql.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::testing::raw_exec;
using lease::testing::sqlite::claim_of;
using lease::testing::sqlite::error_of;
using lease::testing::sqlite::store_on;
using lease::claim_outcome;
using lease::run_status;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 5 / 1}};

/// An instance started later, in a child process forked now — before this
/// process opens the file, so that the two share no SQLite state (a store
/// must not cross a fork). It waits for go(), then opens the store at
/// `path` with its clock at `now` and claims `job` at `slot`.
class later_instance {
 public:
  later_instance(const std::string& path, lease::time_point now, const std::string& job, lease::time_point slot) {
    REQUIRE(::pipe(up_) == 0);
    REQUIRE(::pipe(down_) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(up_[0]);
      ::close(down_[1]);
      char c = 'e';
      if (::read(down_[0], &c, 1) != 1) ::_exit(3);
      try {
        lease::fake_clock clock{now};
        auto b = store_on(path, clock);
        c = b.claim(claim_of(job, slot, "tok-b")).outcome == claim_outcome::won ? 'w' : 'x';
      } catch (...) {
        c = 'e';
      }
      if (::write(up_[1], &c, 1) != 1) ::_exit(3);
      ::_exit(0);
    }
    ::close(up_[1]);
    ::close(down_[0]);
  }
  later_instance(const later_instance&) = delete;
  later_instance& operator=(const later_instance&) = delete;
  /// A test that failed before go(): the child reads end of file and exits.
  ~later_instance() {
    if (pid_ > 0) reap();
  }

  /// Lets it start and claim; waits for it to exit. 'w': its claim won,
  /// 'x': it did not, 'e': it failed.
  char go() {
    char c = 0;
    const bool told = ::write(down_[1], "g", 1) == 1 && ::read(up_[0], &c, 1) == 1;
    reap();
    REQUIRE(told);
    return c;
  }

 private:
  void reap() {
    ::close(up_[0]);
    ::close(down_[1]);
    int status = 0;
    (void)::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  int up_[2]{};
  int down_[2]{};
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("a full disk at commit is unavailable and applies nothing") {
  namespace vfs = lease::testing::faulty_vfs;
  const vfs::faults_off_at_scope_end reset;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on("file:" + path + "?vfs=" + vfs::install(), clock);
  REQUIRE(s.claim(claim_of("report", t0, "tok-1")).outcome == claim_outcome::won);

  vfs::wal_disk_full = true;
  auto full = [](const lease::store_error& e) {
    return e.code() == lease::errc::unavailable && (e.code().value() & 0xff) == SQLITE_FULL;
  };
  clock.advance(1s);
  CHECK(full(error_of([&] { s.claim(claim_of("other", t0, "tok-2")); })));
  CHECK(full(error_of([&] { s.heartbeat({"report", t0}, "tok-1", 60s); })));
  const std::vector<lease::finish_request> fin{{{"report", t0}, "tok-1", run_status::success}};
  CHECK(full(error_of([&] { s.finish_many(fin); })));
  CHECK(full(error_of([&] { s.trigger("report"); })));
  CHECK(full(error_of([&] { s.pause("report"); })));
  vfs::wal_disk_full = false;

  // Nothing of it was applied, and the store carries on once space is freed.
  CHECK_FALSE(s.get({"other", t0}).has_value());
  CHECK(s.get({"report", t0})->status == run_status::running);
  CHECK(s.get({"report", t0})->lease_end == t0 + 30s);
  CHECK_FALSE(s.paused("report"));
  CHECK(s.triggers(std::vector<std::string>{"report"}).empty());
  CHECK(s.claim(claim_of("other", t0, "tok-2")).outcome == claim_outcome::won);
  CHECK(s.finish({"report", t0}, "tok-1", run_status::success));
  // A second store on the file sees the same (no stray frame was committed).
  auto other = store_on(path, clock);
  CHECK(other.get({"report", t0})->status == run_status::success);
  CHECK(other.get({"other", t0})->token == "tok-2");
}

// `rm jobs.db-wal` (a cleanup script, an operator) while an instance runs:
// its connection keeps writing into the unlinked -wal, which is the only
// copy of every commit since the last checkpoint. When that process dies
// without a clean close, those commits are gone with the -wal, and the file
// is rewound in place (same inode) with nothing left that remembers it: a
// run won and run since is won again as attempt 1.
TEST_CASE("a deleted -wal is noticed before its runs are lost") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  { auto s = store_on(path, clock); }  // the schema, checkpointed into the file at close
  int up[2];
  int down[2];
  REQUIRE(::pipe(up) == 0);
  REQUIRE(::pipe(down) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(up[0]);
    ::close(down[1]);
    try {
      auto s = store_on(path, clock);
      char c = s.claim(claim_of("report", t0, "tok-a")).outcome == claim_outcome::won ? 'w' : 'x';
      if (::write(up[1], &c, 1) != 1 || ::read(down[0], &c, 1) != 1) ::_exit(3);
      // The -wal is gone now. The instance goes on: a heartbeat of its run.
      c = 'e';
      try {
        (void)s.heartbeat({"report", t0}, "tok-a", 30s);
        c = s.take_notices().empty() ? 's' : 'n';  // silent, or noticed
      } catch (const lease::store_error&) {
      }
      if (::write(up[1], &c, 1) != 1) ::_exit(3);
      for (;;) ::pause();  // killed -9 here: no clean close, no checkpoint
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(up[1]);
  ::close(down[0]);
  char c = 0;
  REQUIRE(::read(up[0], &c, 1) == 1);
  CHECK(c == 'w');
  REQUIRE(std::filesystem::remove(path + "-wal"));
  REQUIRE(::write(down[1], "g", 1) == 1);
  REQUIRE(::read(up[0], &c, 1) == 1);
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(up[0]);
  ::close(down[1]);
  CHECK(c == 'n');  // the instance noticed the loss (a notice queued)

  // A new instance: the run the killed one won (and ran) must not be won again.
  clock.advance(1s);
  auto s = store_on(path, clock);
  const auto again = s.claim(claim_of("report", t0, "tok-b"));
  CHECK(again.outcome != claim_outcome::won);
}

// A newer release upgrades the file (its schema version above this
// release's) while an instance of this release runs: a store opened now
// refuses the file, but the running one keeps claiming by its own rules.
TEST_CASE("a newer schema under a running store stops its claims") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(claim_of("report", t0, "tok-1")).outcome == claim_outcome::won);
  raw_exec(path, "BEGIN; ALTER TABLE lease_runs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0; "
                 "UPDATE lease_schema SET version = 7; COMMIT");
  CHECK(error_of([&] { auto fresh = store_on(path, clock); }).code() == lease::sqlite_errc::unknown_schema_version);
  const auto e = error_of([&] { s.claim(claim_of("report", t0 + 1min, "tok-2")); });
  CHECK(e.code() == lease::sqlite_errc::unknown_schema_version);
  CHECK_FALSE(s.get({"report", t0 + 1min}).has_value());
}

// `rm jobs.db-shm` while an instance runs: in WAL mode the write lock and
// the index of the -wal live in the -shm. The running instance keeps the
// unlinked one; an instance started after the rm creates a new one, so the
// two hold the write lock at once, neither sees the other's commits, and
// both win the same run.
TEST_CASE("a deleted -shm does not let two instances win one run") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  later_instance b{path, t0, "report", t0};  // opens the file at go(), after the rm
  auto a = store_on(path, clock);
  REQUIRE(a.claim(claim_of("warmup", t0, "tok-w")).outcome == claim_outcome::won);
  REQUIRE(std::filesystem::remove(path + "-shm"));
  CHECK(b.go() == 'w');
  const auto mine = a.claim(claim_of("report", t0, "tok-a"));
  CHECK(mine.outcome != claim_outcome::won);  // the run is the other instance's
}

// Two store objects on the file in one process share SQLite's lock state
// for it (the unix VFS keys it by the file's inode): one that notices the
// deleted -shm and reopens joins the other's stale one again, and once the
// other has reopened too, neither notices any more.
TEST_CASE("a deleted -shm under two stores of one process") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  later_instance b{path, t0 + 1h, "report", t0 + 1h};  // opens the file at go(), after the rm
  auto a1 = store_on(path, clock);
  auto a2 = store_on(path, clock);
  REQUIRE(a1.claim(claim_of("warmup", t0, "tok-w")).outcome == claim_outcome::won);
  REQUIRE(std::filesystem::remove(path + "-shm"));
  // Each notices at its next operation (an error while the other still
  // holds the stale state is fine), until both work again.
  for (int i = 0; i < 3; ++i) {
    try { (void)a1.get({"warmup", t0}); } catch (const lease::store_error&) {}
    try { (void)a2.get({"warmup", t0}); } catch (const lease::store_error&) {}
  }
  CHECK(a1.get({"warmup", t0}).has_value());
  CHECK(a2.get({"warmup", t0}).has_value());
  clock.advance(1h);
  CHECK(b.go() == 'w');
  const auto mine = a1.claim(claim_of("report", t0 + 1h, "tok-a"));
  CHECK(mine.outcome != claim_outcome::won);  // the run is the other instance's
}

// What check_side_files() cannot see: an instance started after the rm has
// made a new -shm before the two store objects of this process notice; the
// first to reopen joins the other's stale state, and the new -shm at the
// path looks like its own.
TEST_CASE("a -shm recreated before two stores of one process notice", "[!mayfail]") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  later_instance b{path, t0 + 1h, "report", t0 + 1h};  // opens the file at go(), after the rm
  auto a1 = store_on(path, clock);
  auto a2 = store_on(path, clock);
  REQUIRE(a1.claim(claim_of("warmup", t0, "tok-w")).outcome == claim_outcome::won);
  REQUIRE(std::filesystem::remove(path + "-shm"));
  CHECK(b.go() == 'w');
  for (int i = 0; i < 3; ++i) {
    try { (void)a1.get({"warmup", t0}); } catch (const lease::store_error&) {}
    try { (void)a2.get({"warmup", t0}); } catch (const lease::store_error&) {}
  }
  clock.advance(1h);
  const auto mine = a1.claim(claim_of("report", t0 + 1h, "tok-a"));
  CHECK(mine.outcome != claim_outcome::won);  // the run is the other instance's
}

TEST_CASE("a deleted -wal under two stores of one process") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto a1 = store_on(path, clock);
  auto a2 = store_on(path, clock);
  REQUIRE(a1.claim(claim_of("report", t0, "tok-1")).outcome == claim_outcome::won);
  REQUIRE(std::filesystem::remove(path + "-wal"));
  clock.advance(1s);
  int errors = 0;
  for (int i = 0; i < 3; ++i) {
    try { (void)a1.get({"report", t0}); } catch (const lease::store_error& e) { ++errors; INFO(e.what()); }
    try { (void)a2.get({"report", t0}); } catch (const lease::store_error& e) { ++errors; INFO(e.what()); }
  }
  CHECK(errors <= 2);  // transient: while the other store still holds the stale state
  CHECK(a1.lost_at().has_value());
  CHECK(a2.claim(claim_of("report", t0, "tok-2")).outcome != claim_outcome::won);
  CHECK(a1.claim(claim_of("report", t0, "tok-3")).outcome != claim_outcome::won);
  CHECK_FALSE(a1.take_notices().empty());
  CHECK_FALSE(a2.take_notices().empty());
}

// `mv jobs.db jobs.old` alone: its -wal and -shm stay beside the path.
TEST_CASE("a store file renamed away alone is noticed as deleted") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto a = store_on(path, clock);
  auto b = store_on(path, clock);
  REQUIRE(a.claim(claim_of("report", t0, "tok-a")).outcome == claim_outcome::won);
  std::filesystem::rename(path, dir.file("jobs.old"));
  clock.advance(1s);
  int errors = 0;
  for (int i = 0; i < 3; ++i) {
    try { (void)a.get({"report", t0}); } catch (const lease::store_error& e) { ++errors; UNSCOPED_INFO(e.what()); }
    try { (void)b.get({"report", t0}); } catch (const lease::store_error& e) { ++errors; UNSCOPED_INFO(e.what()); }
  }
  CHECK(errors <= 2);
  CHECK(a.claim(claim_of("report", t0, "tok-2")).outcome == claim_outcome::quarantined);
  CHECK(b.claim(claim_of("report", t0, "tok-3")).outcome == claim_outcome::quarantined);
  CHECK(a.lost_at() == t0 + 1s);
  CHECK(a.take_notices().size() == 1);
  CHECK(b.take_notices().size() == 1);
}

// The same with the two instances in two processes: the -shm beside the
// path is still the other process's, whose index names frames of the -wal
// the renamed file took along.
TEST_CASE("a store file renamed away under two processes") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  { auto s = store_on(path, clock); }
  int up[2];
  int down[2];
  REQUIRE(::pipe(up) == 0);
  REQUIRE(::pipe(down) == 0);
  const pid_t pid = ::fork();  // before this process opens the file
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(up[0]);
    ::close(down[1]);
    try {
      lease::fake_clock mine{t0};
      auto c = store_on(path, mine);
      char cmd = 0;
      int n = 0;
      // w: claim a slot of its own; o: any operation (a get); q: quit.
      while (::read(down[0], &cmd, 1) == 1 && cmd != 'q') {
        mine.advance(1s);
        char r = 'e';
        try {
          if (cmd == 'w') {
            const auto res = c.claim(claim_of("child-" + std::to_string(n++), mine.now(), "tok-c"));
            r = res.outcome == claim_outcome::won ? 'w' : res.outcome == claim_outcome::quarantined ? 'q' : 'x';
          } else {
            (void)c.get({"report", t0});
            r = 'o';
          }
        } catch (const lease::store_error&) {
          r = 'e';
        }
        if (::write(up[1], &r, 1) != 1) ::_exit(3);
      }
      ::_exit(0);
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(up[1]);
  ::close(down[0]);
  auto ask = [&](char cmd) {
    char r = 0;
    REQUIRE(::write(down[1], &cmd, 1) == 1);
    REQUIRE(::read(up[0], &r, 1) == 1);
    return r;
  };
  CHECK(ask('w') == 'w');
  auto a = store_on(path, clock);
  REQUIRE(a.claim(claim_of("report", t0, "tok-a")).outcome == claim_outcome::won);
  CHECK(ask('w') == 'w');
  std::filesystem::rename(path, dir.file("jobs.old"));
  clock.advance(1s);
  std::string seen;
  for (int i = 0; i < 3; ++i) {
    try {
      (void)a.get({"report", t0});
      seen += 'o';
    } catch (const lease::store_error& e) {
      seen += 'e';
      UNSCOPED_INFO(e.what());
    }
    seen += ask('o');
  }
  INFO("parent, child: " << seen);
  CHECK(seen.substr(seen.size() - 2) == "oo");  // both work again
  CHECK(a.claim(claim_of("report", t0, "tok-2")).outcome == claim_outcome::quarantined);
  CHECK(ask('w') == 'q');
  CHECK(a.lost_at().has_value());
  REQUIRE(::write(down[1], "q", 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  ::close(up[0]);
  ::close(down[1]);
}

// The last writer closing while a read-only inspector has the file open
// deletes nothing under it (its shared lock keeps the -wal and -shm): no
// loss is taken for one.
TEST_CASE("the last writer closing is no loss to a read-only inspector") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  std::optional<lease::sqlite_store> w{store_on(path, clock)};
  REQUIRE(w->claim(claim_of("report", t0, "tok")).outcome == claim_outcome::won);
  auto ro = store_on("file:" + path + "?mode=ro", clock);
  REQUIRE(ro.get({"report", t0}).has_value());
  w.reset();
  CHECK(std::filesystem::exists(path + "-wal"));
  CHECK(std::filesystem::exists(path + "-shm"));
  CHECK(ro.get({"report", t0})->token == "tok");
  CHECK(ro.take_notices().empty());
  auto w2 = store_on(path, clock);  // and a writer after it
  CHECK(w2.heartbeat({"report", t0}, "tok", 30s));
  CHECK(w2.take_notices().empty());
  CHECK(ro.get({"report", t0})->lease_end == t0 + 30s);
  CHECK(ro.take_notices().empty());
}

// An I/O error while a single-statement write reads its pages comes before
// anything is written: nothing was applied, and saying "outcome unknown"
// sends the caller to read back (and the on-call engineer to a disk that
// may have lost a commit) for nothing.
TEST_CASE("a read error before a heartbeat writes is unavailable") {
  namespace vfs = lease::testing::faulty_vfs;
  const vfs::faults_off_at_scope_end reset;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on("file:" + path + "?vfs=" + vfs::install(), clock);
  auto other = store_on(path, clock);
  REQUIRE(s.claim(claim_of("report", t0, "tok-1")).outcome == claim_outcome::won);
  REQUIRE(other.claim(claim_of("other", t0, "tok-2")).outcome == claim_outcome::won);  // s's cache is stale now
  vfs::fail_reads = true;
  const auto e = error_of([&] { s.heartbeat({"report", t0}, "tok-1", 60s); });
  vfs::fail_reads = false;
  CHECK((e.code().value() & 0xff) == SQLITE_IOERR);
  CHECK(e.code() == lease::errc::unavailable);
  CHECK(s.get({"report", t0})->lease_end == t0 + 30s);  // indeed nothing applied
}
