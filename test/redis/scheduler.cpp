// redis_store under the scheduler: two instances run every slot of a job
// exactly once, and an instance renews all its running attempts with one
// batched round trip per heartbeat tick (BatchHeartbeatStore, detected).
#include <catch2/catch.hpp>

#include <map>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/redis.hpp"
#include "laws/two_schedulers.hpp"
#include "redis/server.hpp"

using namespace std::chrono_literals;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};

lease::redis_store store_on(const lease::testing::redis_server& srv, const std::string& prefix, lease::fake_clock clock) {
  return lease::redis_store{{.url = srv.url(), .prefix = prefix, .clock = [clock] { return clock.now(); }}};
}

}  // namespace

TEST_CASE("two schedulers sharing one redis run every slot of a job exactly once") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("sched");
  lease::testing::check_two_schedulers_run_each_slot_once(
      [&](lease::fake_clock clock) { return store_on(srv, prefix, clock); });
}

TEST_CASE("a scheduler renews all its running attempts on redis in one round trip per heartbeat tick") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{t0};
  lease::manual_executor exec;  // never run: every won attempt stays running
  auto s = lease::make_scheduler(lease::store = store_on(srv, lease::testing::fresh_prefix("batch"), clock),
                                 lease::clock = clock, lease::executor = exec,
                                 lease::settings = lease::options{.lease = 3s, .instance = "a", .seed = 7});
  constexpr int jobs = 40;
  for (int i = 0; i < jobs; ++i) s.add("job-" + std::to_string(i), lease::every(1h), [](lease::run_context&) {});
  s.start();
  auto running = [&] {
    int n = 0;
    for (int i = 0; i < jobs; ++i) n += static_cast<int>(s.store().unfinished("job-" + std::to_string(i)).size());
    return n;
  };
  for (int step = 0; step < 100 && running() < jobs; ++step) {  // the claims (jitter up to 2 s)
    clock.advance(50ms);
    s.poll();
  }
  REQUIRE(running() == jobs);
  const auto before = s.store().round_trips();
  for (int step = 0; step < 40; ++step) {  // 2 s: four heartbeat ticks of 0.5 s
    clock.advance(50ms);
    s.poll();
  }
  const auto trips = s.store().round_trips() - before;
  CHECK(trips >= 3);
  CHECK(trips <= 8);  // one per tick, not one per attempt (that would be 160)
  for (int i = 0; i < jobs; ++i) {
    auto live = s.store().unfinished("job-" + std::to_string(i));
    REQUIRE(live.size() == 1);
    CHECK(live.front().lease_end > clock.now());  // renewed, still live
  }
}
