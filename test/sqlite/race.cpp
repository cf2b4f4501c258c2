// test/sqlite/race.cpp — several processes share one file: four forked
// processes open a new file at the same moment and hammer claims for the same
// runs; every (run, attempt) has exactly one winner, the fences are exactly
// 1..wins, and no operation fails (no SQLITE_BUSY reaches a caller).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lease/clock/system.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;

namespace {

struct win {
  std::int64_t slot;
  std::uint32_t attempt;
  std::uint64_t fence;
  std::string token;
};

/// One racing process: waits for the start signal, then for each run claims
/// until it stops winning. Leases of 0 ms expire at once, so every claim of a
/// running run is a takeover race for the next attempt (up to max_attempts),
/// and a claim for the next slot races the takeovers of the previous one.
/// Returns the process's exit code: 0, or 2 if any operation threw.
int racer(const std::string& db, const std::string& out, int id, int start_fd, int runs, lease::time_point base) {
  try {
    char go = 0;
    if (::read(start_fd, &go, 1) < 0) return 3;
    lease::sqlite_store s{db};  // all four open (and create) the file at once
    std::vector<win> wins;
    int n = 0;
    for (int k = 0; k < runs; ++k) {
      for (;;) {
        lease::claim_request r;
        r.run = {"race", base + k * 1ms};
        r.runner = "p" + std::to_string(id);
        r.token = r.runner + "-" + std::to_string(n++);
        r.lease = 0ms;
        r.max_attempts = 3;
        r.deadline = s.now() + 1h;
        const auto res = s.claim(r);
        if (res.outcome != claim_outcome::won) break;
        wins.push_back({k, res.record.attempt, res.record.fence, r.token});
        // Contend on the write lock with the other operations too.
        (void)s.heartbeat(r.run, r.token, 0ms);
        const std::vector<lease::heartbeat_request> batch{{r.run, r.token, 0ms}, {r.run, "stale", 0ms}};
        (void)s.heartbeat_many(batch);
      }
    }
    std::ofstream f(out);
    for (const auto& w : wins) f << w.slot << ' ' << w.attempt << ' ' << w.fence << ' ' << w.token << '\n';
    return f ? 0 : 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "racer %d: %s\n", id, e.what());
    return 2;
  }
}

}  // namespace

TEST_CASE("four processes racing for the same runs get exactly one winner per attempt and never an error") {
  constexpr int procs = 4;
  constexpr int runs = 60;
  lease::testing::temp_dir dir;
  const std::string db = dir.file("jobs.db");
  // Recent slots, so that no run is old enough to be pruned during the test.
  const lease::time_point base = lease::system_clock{}.now();
  int start[2];
  REQUIRE(::pipe(start) == 0);
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(start[1]);
      ::_exit(racer(db, dir.file("wins-" + std::to_string(p)), p, start[0], runs, base));
    }
    kids.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);  // EOF: every racer starts now
  for (const pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 2: an operation threw (see stderr)
  }

  std::map<std::pair<std::int64_t, std::uint32_t>, int> winners;
  std::map<std::int64_t, std::string> last_token;
  std::map<std::int64_t, std::uint32_t> last_attempt;
  std::set<std::uint64_t> fences;
  std::size_t total = 0;
  for (int p = 0; p < procs; ++p) {
    std::ifstream f(dir.file("wins-" + std::to_string(p)));
    win w;
    while (f >> w.slot >> w.attempt >> w.fence >> w.token) {
      ++total;
      ++winners[{w.slot, w.attempt}];
      fences.insert(w.fence);
      if (w.attempt > last_attempt[w.slot]) {
        last_attempt[w.slot] = w.attempt;
        last_token[w.slot] = w.token;
      }
    }
  }
  INFO(total << " wins");
  CHECK(total >= static_cast<std::size_t>(runs));
  for (const auto& [key, count] : winners) {
    INFO("slot " << key.first << " attempt " << key.second);
    CHECK(count == 1);
    CHECK(key.second >= 1);
    CHECK(key.second <= 3);
    if (key.second > 1) CHECK(winners.count({key.first, key.second - 1}) == 1);  // attempts in order
  }
  // One fence per won attempt, none repeated: no lost update. (Fences are
  // max(previous + 1, store-now in ms), so they are not consecutive.)
  CHECK(fences.size() == total);
  CHECK(*fences.begin() >= static_cast<std::uint64_t>(base.time_since_epoch().count()) - 1000);
  // The file agrees with what the winners were told.
  lease::sqlite_store s{db};
  for (const auto& [slot, token] : last_token) {
    const auto r = s.get({"race", base + slot * 1ms});
    REQUIRE(r.has_value());
    CHECK(r->token == token);
    CHECK(r->attempt == last_attempt[slot]);
  }
}

TEST_CASE("a process killed inside a write transaction leaves the file usable and its unfinished write invisible") {
  lease::testing::temp_dir dir;
  const std::string db = dir.file("jobs.db");
  lease::claim_request r;
  r.run = {"report", lease::system_clock{}.now()};
  r.runner = "victim";
  r.token = "tok-victim";
  r.lease = 1h;
  r.deadline = r.run.slot + 1h;
  {
    lease::sqlite_store s{db, {.quarantine_new_file = false}};  // a fresh test file is not a lost one
    REQUIRE(s.claim(r).outcome == claim_outcome::won);
  }
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child takes the write lock and writes far more than the page cache
    // holds, so uncommitted pages spill into the WAL, then waits to be killed.
    ::close(ready[0]);
    try {
      lease::sqlite_store s{db};
      sqlite3* h = s.native_handle();
      int rc = sqlite3_exec(h, "PRAGMA cache_size = 50; BEGIN IMMEDIATE; UPDATE lease_runs SET status = 1", nullptr,
                            nullptr, nullptr);
      for (int i = 0; rc == SQLITE_OK && i < 2000; ++i) {
        const std::string sql = "INSERT INTO lease_jobs (job, fence) VALUES ('filler-" + std::to_string(i) +
                                "-" + std::string(1000, 'x') + "', 1)";
        rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr);
      }
      const char c = rc == SQLITE_OK ? 'y' : 'n';
      if (::write(ready[1], &c, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  CHECK(c == 'y');
  CHECK(std::filesystem::file_size(db + "-wal") > 1'000'000);  // the spilled, uncommitted pages
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));

  lease::sqlite_store s{db};
  const auto run = s.get(r.run);
  REQUIRE(run.has_value());
  CHECK(run->status == lease::run_status::running);  // the killed UPDATE never happened
  CHECK(run->token == "tok-victim");
  r.token = "tok-next";
  CHECK(s.claim(r).outcome == claim_outcome::running);  // the lock died with the process
  CHECK(s.heartbeat(r.run, "tok-victim", 1h));
}
