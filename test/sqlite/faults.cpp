// test/sqlite/faults.cpp — bad input and faults give a clear lease::store_error
// with the right lease::errc, never a crash and never a silently lost run.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
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
using Catch::Matchers::Contains;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};

}  // namespace

TEST_CASE("a path that cannot be created is refused at construction as unavailable, naming the path") {
  lease::testing::temp_dir dir;
  std::ofstream(dir.file("plain-file")) << "x";
  const std::string path = dir.file("plain-file") + "/jobs.db";  // a file is not a directory
  const auto e = error_of([&] { lease::sqlite_store s{path}; });
  CHECK(e.code() == lease::errc::unavailable);
  CHECK(e.code().category() == lease::sqlite_category());
  CHECK((e.code().value() & 0xff) == SQLITE_CANTOPEN);
  CHECK_THAT(e.what(), Contains(path) && Contains("directory"));
}

TEST_CASE("a file that is not a database is refused as corrupt and left untouched") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("notes.txt");
  const std::string text(4096, 'x');
  std::ofstream(path) << text;
  const auto e = error_of([&] { lease::sqlite_store s{path}; });
  CHECK(e.code() == lease::errc::corrupt);
  CHECK((e.code().value() & 0xff) == SQLITE_NOTADB);
  CHECK_THAT(e.what(), Contains(path) && Contains("not a SQLite database"));
  CHECK(std::filesystem::file_size(path) == text.size());
}

TEST_CASE("another application's database is refused as a foreign schema and not switched to WAL") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("app.db");
  raw_exec(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)");
  const auto e = error_of([&] { lease::sqlite_store s{path}; });
  CHECK(e.code() == lease::errc::corrupt);
  CHECK(e.code() == lease::sqlite_errc::foreign_schema);
  CHECK_THAT(e.what(), Contains(path) && Contains("users") && Contains("new path"));
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST_CASE("a file with an unknown lease schema version is refused, saying which version it has") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  { lease::sqlite_store s{path}; }
  raw_exec(path, "UPDATE lease_schema SET version = 7");
  const auto e = error_of([&] { lease::sqlite_store s{path}; });
  CHECK(e.code() == lease::errc::corrupt);
  CHECK(e.code() == lease::sqlite_errc::unknown_schema_version);
  CHECK_THAT(e.what(), Contains(path) && Contains("version 7") && Contains("version 6"));
}

TEST_CASE("a lease schema with a table missing or changed is refused as corrupt") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  { lease::sqlite_store s{path}; }
  SECTION("missing") {
    raw_exec(path, "DROP TABLE lease_runs");
    const auto e = error_of([&] { lease::sqlite_store s{path}; });
    CHECK(e.code() == lease::errc::corrupt);
    CHECK_THAT(e.what(), Contains("lease_runs"));
  }
  SECTION("a column missing") {
    // (The pending-trigger index kept, so that only the column is missing.)
    raw_exec(path, "DROP TABLE lease_jobs; CREATE TABLE lease_jobs (job BLOB PRIMARY KEY, trigger_slot INTEGER); "
                   "CREATE INDEX lease_jobs_triggered ON lease_jobs (trigger_slot) WHERE trigger_slot IS NOT NULL");
    const auto e = error_of([&] { lease::sqlite_store s{path}; });
    CHECK(e.code() == lease::errc::corrupt);
    CHECK_THAT(e.what(), Contains(path) && Contains("fence"));
  }
  SECTION("the index of pending triggers missing") {
    raw_exec(path, "DROP INDEX lease_jobs_triggered");
    const auto e = error_of([&] { lease::sqlite_store s{path}; });
    CHECK(e.code() == lease::errc::corrupt);
    CHECK_THAT(e.what(), Contains(path) && Contains("lease_jobs_triggered"));
  }
  SECTION("the registrations missing from a version 6 file") {
    raw_exec(path, "DROP TABLE lease_registrations");
    const auto e = error_of([&] { lease::sqlite_store s{path}; });
    CHECK(e.code() == lease::errc::corrupt);
    CHECK_THAT(e.what(), Contains(path) && Contains("version 6") && Contains("lease_registrations"));
  }
}

TEST_CASE("a stored value lease never writes is reported as corrupt, not misread") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(claim_of("report", t0, "tok")).outcome == claim_outcome::won);
  raw_exec(path, "UPDATE lease_runs SET status = 7");
  const auto e = error_of([&] { (void)s.get({"report", t0}); });
  CHECK(e.code() == lease::errc::corrupt);
  CHECK(e.code() == lease::sqlite_errc::bad_value);
  CHECK_THAT(e.what(), Contains("status"));
  raw_exec(path, "UPDATE lease_runs SET status = 0, attempt = 'one'");
  CHECK(error_of([&] { (void)s.unfinished("report"); }).code() == lease::errc::corrupt);
}

TEST_CASE("a read-only database serves reads and refuses writes as unavailable") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  { auto w = store_on(path, clock); REQUIRE(w.claim(claim_of("report", t0, "tok")).outcome == claim_outcome::won); }
  lease::sqlite_options o;
  o.clock = [clock] { return clock.now(); };
  o.quarantine_new_file = false;  // a fresh test file is not a lost one
  lease::sqlite_store ro{"file:" + path + "?mode=ro", o};
  CHECK(ro.get({"report", t0})->token == "tok");
  const auto e = error_of([&] { ro.claim(claim_of("other", t0, "tok-2")); });
  CHECK(e.code() == lease::errc::unavailable);
  CHECK((e.code().value() & 0xff) == SQLITE_READONLY);
  CHECK_THAT(e.what(), Contains(path) && Contains("read-only"));
  CHECK(error_of([&] { ro.heartbeat({"report", t0}, "tok", 30s); }).code() == lease::errc::unavailable);
  CHECK_FALSE(ro.get({"other", t0}).has_value());  // nothing half-written
  CHECK(ro.get({"report", t0})->lease_end == t0 + 30s);
  // A new file cannot be created read-only.
  const auto fresh = error_of([&] { lease::sqlite_store s{"file:" + dir.file("new.db") + "?mode=ro"}; });
  CHECK(fresh.code() == lease::errc::unavailable);
  if (::geteuid() != 0) {  // root ignores file permissions; others also get a chmod-ed file refused
    std::filesystem::permissions(path, std::filesystem::perms::owner_read);
    lease::sqlite_store chmodded{path, o};
    CHECK(error_of([&] { chmodded.claim(claim_of("other", t0, "tok-3")); }).code() == lease::errc::unavailable);
  }
}

TEST_CASE("a full disk fails the claim as unavailable, loses nothing, and the store recovers") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  auto s = store_on(path, clock);
  REQUIRE(s.claim(claim_of("warmup", t0, "tok")).outcome == claim_outcome::won);
  // Cap the file at its current size: the next page it needs is "disk full".
  REQUIRE(sqlite3_exec(s.native_handle(), "PRAGMA max_page_count = 1", nullptr, nullptr, nullptr) == SQLITE_OK);
  const std::string big(20'000, 'j');  // needs new pages
  const auto e = error_of([&] { s.claim(claim_of(big, t0, "tok-big")); });
  CHECK(e.code() == lease::errc::unavailable);
  CHECK((e.code().value() & 0xff) == SQLITE_FULL);
  CHECK_THAT(e.what(), Contains(path) && Contains("full"));
  CHECK_FALSE(s.get({big, t0}).has_value());                      // rolled back, not half-written
  CHECK(s.heartbeat({"warmup", t0}, "tok", 30s));                 // small writes still fit
  REQUIRE(sqlite3_exec(s.native_handle(), "PRAGMA max_page_count = 1000000", nullptr, nullptr, nullptr) == SQLITE_OK);
  const auto retried = s.claim(claim_of(big, t0, "tok-big"));      // space freed: the retry wins
  CHECK(retried.outcome == claim_outcome::won);
  CHECK(retried.record.fence == static_cast<std::uint64_t>(t0.time_since_epoch().count()));
}

TEST_CASE("hostile job names, tokens and runners round-trip as bytes") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const std::vector<std::string> names{
      "'; DROP TABLE lease_runs; --", std::string("nul\0inside", 10), std::string("nul\0other", 9),
      "\"double\" 'single' `back`", std::string(10'000, 'k'), "", "\xff\xfe not utf-8", "%_ like wildcards"};
  for (const auto& name : names) {
    INFO("job of " << name.size() << " bytes");
    auto r = claim_of(name, t0, name + "-token");
    r.runner = name + "-runner";
    const auto res = s.claim(r);
    REQUIRE(res.outcome == claim_outcome::won);
    CHECK(res.record.fence == static_cast<std::uint64_t>(t0.time_since_epoch().count()));  // every name is its own job
    const auto back = s.get({name, t0});
    REQUIRE(back.has_value());
    CHECK(back->job == name);
    CHECK(back->token == name + "-token");
    CHECK(back->runner == name + "-runner");
    CHECK(s.heartbeat({name, t0}, name + "-token", 30s));
    REQUIRE(s.unfinished(name).size() == 1);
    CHECK(s.unfinished(name)[0].job == name);
  }
  CHECK(s.get({"nul", t0}) == std::nullopt);  // a NUL does not truncate the key
  for (const auto& name : names) CHECK(s.finish({name, t0}, name + "-token", run_status::success));
  CHECK(s.get({"'; DROP TABLE lease_runs; --", t0})->status == run_status::success);
}

TEST_CASE("on the host clock the store reads real milliseconds and a lease really runs out") {
  lease::testing::temp_dir dir;
  lease::sqlite_store s{dir.file("jobs.db"), {.quarantine_new_file = false}};  // a fresh test file is not a lost one
  const auto before = lease::system_clock{}.now();
  auto r = claim_of("report", before, "tok-1");
  r.lease = 300ms;
  const auto won = s.claim(r);
  const auto after = lease::system_clock{}.now();
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.store_now >= before);
  CHECK(won.store_now <= after);
  CHECK(won.record.lease_end == won.store_now + 300ms);
  std::this_thread::sleep_for(50ms);
  // The heartbeat's time is read by SQLite inside the UPDATE: same clock, later.
  REQUIRE(s.heartbeat(r.run, "tok-1", 300ms));
  const auto renewed = s.get(r.run)->lease_end;
  CHECK(renewed >= won.record.lease_end + 50ms);
  CHECK(renewed <= lease::system_clock{}.now() + 300ms);
  r.token = "tok-2";
  CHECK(s.claim(r).outcome == claim_outcome::running);
  std::this_thread::sleep_for(400ms);
  const auto takeover = s.claim(r);
  CHECK(takeover.outcome == claim_outcome::won);
  CHECK(takeover.record.attempt == 2);
  REQUIRE(s.release(r.run, "tok-2"));
  const auto released = s.get(r.run)->lease_end;
  CHECK(released >= takeover.store_now);
  CHECK(released <= lease::system_clock{}.now());
}

TEST_CASE("an I/O error while committing is outcome unknown and a read-back then tells what happened") {
  namespace vfs = lease::testing::faulty_vfs;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  lease::sqlite_options o;
  o.clock = [clock] { return clock.now(); };
  o.quarantine_new_file = false;  // a fresh test file is not a lost one
  lease::sqlite_store s{"file:" + path + "?vfs=" + vfs::install(), o};
  REQUIRE(s.claim(claim_of("report", t0, "tok-1")).outcome == claim_outcome::won);

  vfs::fail_wal_writes = true;
  const auto e = error_of([&] { s.claim(claim_of("other", t0, "tok-2")); });
  CHECK(e.code() == lease::errc::outcome_unknown);
  CHECK(e.code() == lease::sqlite_errc::commit_unknown);
  CHECK_THAT(e.what(), Contains(path) && Contains("read the run back"));
  CHECK(error_of([&] { s.heartbeat({"report", t0}, "tok-1", 60s); }).code() == lease::errc::outcome_unknown);
  CHECK(error_of([&] { s.finish({"report", t0}, "tok-1", run_status::success); }).code() == lease::errc::outcome_unknown);
  vfs::fail_wal_writes = false;

  // The read-back the error asks for works, and decides: here nothing was applied.
  CHECK_FALSE(s.get({"other", t0}).has_value());
  CHECK(s.get({"report", t0})->status == run_status::running);
  CHECK(s.get({"report", t0})->lease_end == t0 + 30s);
  // The store carries on once the disk does.
  const auto retried = s.claim(claim_of("other", t0, "tok-2"));
  CHECK(retried.outcome == claim_outcome::won);
  CHECK(s.finish({"report", t0}, "tok-1", run_status::success));
}

TEST_CASE("a store file this process can only read is served read-only at construction: reads work, writes fail "
          "as unavailable") {
  // An operator's leasectl running as another user than the instances must
  // still read the file (a review found that refusing it broke leasectl);
  // only a reopen of a replaced file that was writable refuses read-only
  // (replaced.cpp).
  namespace vfs = lease::testing::faulty_vfs;
  const vfs::faults_off_at_scope_end reset;
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  { auto w = store_on(path, clock); REQUIRE(w.claim(claim_of("report", t0, "tok")).outcome == claim_outcome::won); }
  const std::string uri = "file:" + path + "?vfs=" + vfs::install();
  vfs::open_main_read_only = true;  // as the unix VFS does with a file this process may not write (EACCES)
  auto reader = store_on(uri, clock);
  CHECK(reader.get({"report", t0})->token == "tok");
  const auto e = error_of([&] { (void)reader.heartbeat({"report", t0}, "tok", 30s); });
  CHECK(e.code() == lease::errc::unavailable);
  vfs::open_main_read_only = false;
  auto writer = store_on(uri, clock);
  CHECK(writer.heartbeat({"report", t0}, "tok", 30s));
}

TEST_CASE("a lock held past busy_timeout fails the operation as unavailable and nothing is left locked") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  lease::sqlite_options o;
  o.clock = [clock] { return clock.now(); };
  o.quarantine_new_file = false;  // a fresh test file is not a lost one
  o.busy_timeout = 100ms;
  lease::sqlite_store s{path, o};
  REQUIRE(s.claim(claim_of("report", t0, "tok")).outcome == claim_outcome::won);

  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);  // a stuck writer
  const auto e = error_of([&] { s.claim(claim_of("other", t0, "tok-2")); });
  CHECK(e.code() == lease::errc::unavailable);
  CHECK((e.code().value() & 0xff) == SQLITE_BUSY);
  CHECK_THAT(e.what(), Contains(path) && Contains("busy_timeout"));
  CHECK(error_of([&] { s.heartbeat({"report", t0}, "tok", 30s); }).code() == lease::errc::unavailable);
  CHECK(s.get({"report", t0}).has_value());  // WAL: reads are not blocked by the writer
  REQUIRE(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);

  CHECK(s.claim(claim_of("other", t0, "tok-2")).outcome == claim_outcome::won);  // the retry goes through
  CHECK(s.heartbeat({"report", t0}, "tok", 30s));
}

TEST_CASE("a database file with damaged pages gives corrupt errors, never a crash or a wrong answer") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::fake_clock clock{t0};
  {
    auto s = store_on(path, clock);
    for (int i = 0; i < 200; ++i) REQUIRE(s.claim(claim_of("job-" + std::to_string(i), t0, "tok")).outcome == claim_outcome::won);
  }  // the last connection closes: the WAL is checkpointed into the file
  const auto size = std::filesystem::file_size(path);
  REQUIRE(size > 8192);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);  // keep page 1 (the header and schema), damage all the others
    const std::string junk(size - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const auto e = error_of([&] {
    auto s = store_on(path, clock);
    for (int i = 0; i < 200; ++i) (void)s.get({"job-" + std::to_string(i), t0});
  });
  CHECK(e.code() == lease::errc::corrupt);
  CHECK_THAT(e.what(), Contains(path));
}
