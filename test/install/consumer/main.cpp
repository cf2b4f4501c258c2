// Builds against an installed lease (with CMake or pkg-config): the core
// rules over a fake clock, a cron in UTC and in a zone, and, when linked,
// the SQLite store and the testing kit.
#include <lease/lease.hpp>
#include <lease/rules.hpp>
#include <lease/store/memory.hpp>
#if CONSUMER_SQLITE
#include <lease/store/sqlite.hpp>
#endif
#if CONSUMER_TESTING
#include <lease/testing.hpp>
#endif

#include <cstdio>

int main() {
  using namespace std::chrono_literals;
  lease::fake_clock clock{lease::time_point{1'000'000ms}};
  lease::memory_store<lease::fake_clock> store{clock};
  lease::claim_request req;
  req.run = {"consumer", clock.now()};
  req.runner = "consumer-1";
  req.token = "t1";
  req.deadline = clock.now() + 30s;
  if (store.claim(req).outcome != lease::claim_outcome::won) return 1;
  const lease::time_point t{std::chrono::sys_days{std::chrono::year{2026} / 3 / 29}};
  if (lease::cron("0 3 * * *").next(t) != t + 3h) return 2;
  if (lease::cron("0 3 * * *", "Europe/Berlin").next(t) != t + 1h) return 3;  // 03:00 CEST = 01:00 UTC
#if CONSUMER_SQLITE
  lease::sqlite_store db{"consumer.db"};
  (void)db.now();
#endif
#if CONSUMER_TESTING
  if (!lease::testing::clock_violations(clock).empty()) return 4;
#endif
  std::puts("consumer: ok");
  return 0;
}
