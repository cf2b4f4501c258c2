// test/redis/race.hpp — four processes claim the same runs at once, on the
// server's clock, with leases so short that takeovers race too: each (run,
// attempt) has exactly one winner, attempts stay within max_attempts, and
// every win takes its own fence value. The runs' jobs take turns from
// `jobs` (one job on one server; jobs on every master of a cluster).
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "lease/store/redis.hpp"

namespace lease::testing {

/// Catch2 checks, inside a TEST_CASE; `dir` holds the racers' win logs. Fork
/// only where no other thread runs.
inline void check_four_racers(const lease::redis_options& o, const std::vector<std::string>& jobs,
                              const std::filesystem::path& dir) {
  using namespace std::chrono_literals;
  constexpr int processes = 4, slots = 60, takeovers = 4;
  constexpr std::uint32_t max_attempts = 3;
  // Slots in the past (a slot ahead of the store's clock is answered early).
  const lease::time_point base = lease::redis_store{o}.now() - lease::duration{1000 * slots};

  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    // A racer: waits for the start signal, then for each slot a scheduled
    // claim and a few takeover claims; writes "slot attempt fence token" per win.
    int code = 0;
    try {
      ::close(go[1]);
      char c;
      (void)!::read(go[0], &c, 1);  // EOF when the parent closes: all start together
      lease::redis_store store{o};
      std::ofstream out(dir / ("wins-" + std::to_string(p)));
      for (int s = 0; s < slots; ++s) {
        lease::claim_request req;
        req.run = {jobs[static_cast<std::size_t>(s) % jobs.size()], base + lease::duration{1000 * s}};
        req.runner = "p" + std::to_string(p);
        req.lease = 1ms;  // expired almost at once: takeovers race as well
        req.max_attempts = max_attempts;
        req.deadline = req.run.slot + 1h;
        req.overlap = lease::overlap_mode::allow;
        for (int k = 0; k <= takeovers; ++k) {
          req.reason = k == 0 ? lease::claim_reason::scheduled : lease::claim_reason::takeover;
          req.token = "p" + std::to_string(p) + "-s" + std::to_string(s) + "-k" + std::to_string(k);
          auto res = store.claim(req);
          if (res.outcome == lease::claim_outcome::won)
            out << s << ' ' << res.record.attempt << ' ' << res.record.fence << ' ' << res.record.token << '\n';
        }
      }
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  ::close(go[0]);
  ::close(go[1]);  // start
  for (pid_t c : children) {
    int status = 0;
    REQUIRE(::waitpid(c, &status, 0) == c);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  std::map<std::pair<int, std::uint32_t>, std::vector<std::string>> winners;  // (slot, attempt) -> tokens
  std::map<std::string, std::set<std::uint64_t>> fences;  // per job: a fence counter is the job's
  std::size_t wins = 0;
  for (int p = 0; p < processes; ++p) {
    std::ifstream in(dir / ("wins-" + std::to_string(p)));
    int s = 0;
    std::uint32_t attempt = 0;
    std::uint64_t fence = 0;
    std::string token;
    while (in >> s >> attempt >> fence >> token) {
      winners[{s, attempt}].push_back(token);
      fences[jobs[static_cast<std::size_t>(s) % jobs.size()]].insert(fence);
      ++wins;
    }
  }
  lease::redis_store store{o};
  for (int s = 0; s < slots; ++s) {
    CAPTURE(s);
    REQUIRE(winners.count({s, 1}) == 1);  // every run was won, once
    auto rec = store.get({jobs[static_cast<std::size_t>(s) % jobs.size()], base + lease::duration{1000 * s}});
    REQUIRE(rec);
    CHECK(rec->attempt <= max_attempts);
    for (std::uint32_t a = 1; a <= rec->attempt; ++a) {
      CAPTURE(a);
      REQUIRE(winners.count({s, a}) == 1);
      CHECK(winners[{s, a}].size() == 1);  // exactly one winner per attempt
    }
    CHECK(winners.count({s, rec->attempt + 1}) == 0);
    CHECK(winners[{s, rec->attempt}].front() == rec->token);  // the last winner holds the run
  }
  std::size_t distinct = 0;
  for (const auto& [job, f] : fences) {
    distinct += f.size();
    CHECK(*f.begin() >= static_cast<std::uint64_t>(base.time_since_epoch().count()));  // at least store-now in ms
  }
  CHECK(distinct == wins);  // every win took a fence value of its own
  CHECK(wins > static_cast<std::size_t>(slots));  // takeovers did happen
}

}  // namespace lease::testing
