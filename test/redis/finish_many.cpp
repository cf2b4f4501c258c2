// redis_store::finish_many (BatchFinishStore): a batch of finishes and
// releases answers exactly as the single calls and the pure rules do (the
// memory store is the rules' reference), in one round trip, announcing each
// ended run; a lost reply is resolved as the single calls resolve theirs,
// and a store_error thrown mid-batch leaves the other elements possibly
// applied: every outcome is unknown until read back.
#include <algorithm>
#include <array>
#include <random>
#include <thread>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/store/memory.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"
#include "redis/wait.hpp"
#include "support/loopback_proxy.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_request;
using lease::finish_request;
using lease::run_key;
using lease::run_status;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::redis_options options_for(std::string url, lease::fake_clock clock,
                                 std::string prefix = lease::testing::fresh_prefix("fm")) {
  lease::redis_options o;
  o.url = std::move(url);
  o.prefix = std::move(prefix);
  o.clock = [clock] { return clock.now(); };
  return o;
}

claim_request request(std::string job, time_point slot, std::string token, std::chrono::seconds lease = 30s) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.lease = lease;
  r.deadline = slot + 1h;
  return r;
}

}  // namespace

TEST_CASE("redis finish_many answers as the single calls and the rules do, in one round trip, announcing each end") {
  lease::testing::redis_server srv;
  std::mt19937 rng(12);  // fixed: a failure replays
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    lease::fake_clock clock{at(1'700'000'000'000 + round * 100'000)};
    const std::string prefix = lease::testing::fresh_prefix("fm");
    lease::redis_store batched{options_for(srv.url(), clock, prefix)};
    lease::redis_store single{options_for(srv.url(), clock)};
    lease::memory_store<lease::fake_clock> rules{clock};
    lease::redis_store watcher{options_for(srv.url(), clock, prefix)};
    lease::testing::heard_jobs heard;
    watcher.listen_releases(std::ref(heard));

    // Eight runs in every state a batch can meet: live, expired, released, ended; one run without state.
    const int runs = 8;
    auto job = [](int j) { return "job-" + std::to_string(j); };
    for (int j = 0; j < runs; ++j) (void)watcher.unfinished(job(j));  // the watcher hears these jobs
    REQUIRE(lease::testing::wait_for([&] { return watcher.listener_channels() == runs; }));
    for (int j = 0; j + 1 < runs; ++j) {
      const auto req = request(job(j), clock.now(), "t" + std::to_string(j), j % 3 == 0 ? 1s : 30s);
      REQUIRE(batched.claim(req).outcome == claim_outcome::won);
      REQUIRE(single.claim(req).outcome == claim_outcome::won);
      REQUIRE(rules.claim(req).outcome == claim_outcome::won);
    }
    const run_key ended{job(1), clock.now()}, released{job(2), clock.now()};
    for (auto* s : {&batched, &single}) {
      REQUIRE(s->finish(ended, "t1", run_status::failed));
      REQUIRE(s->release(released, "t2"));
    }
    REQUIRE(rules.finish(ended, "t1", run_status::failed));
    REQUIRE(rules.release(released, "t2"));
    clock.advance(5s);  // the 1 s leases ran out
    REQUIRE(lease::testing::wait_for([&] { return heard.size() == 2; }));

    // A random batch, duplicates and wrong tokens included.
    std::vector<finish_request> batch(std::uniform_int_distribution<std::size_t>(1, 12)(rng));
    for (auto& f : batch) {
      const int j = std::uniform_int_distribution<int>(0, runs - 1)(rng);
      f.run = {job(j), at(1'700'000'000'000 + round * 100'000)};
      f.token = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? "stale" : "t" + std::to_string(j);
      const int s = std::uniform_int_distribution<int>(0, 4)(rng);
      if (s < 4) f.status = std::array{run_status::success, run_status::failed, run_status::running,
                                       run_status::interrupted}[static_cast<std::size_t>(s)];
    }
    const auto before = batched.round_trips();
    const std::vector<bool> got = batched.finish_many(batch);
    const bool any_sent =
        std::any_of(batch.begin(), batch.end(), [](const auto& f) { return f.status != run_status::running; });
    CHECK(batched.round_trips() - before == (any_sent ? 1U : 0U));  // a running status is refused unsent
    std::vector<bool> one_by_one;
    for (const auto& f : batch)
      one_by_one.push_back(f.status ? single.finish(f.run, f.token, *f.status) : single.release(f.run, f.token));
    CHECK(got == one_by_one);
    CHECK(got == rules.finish_many(batch));
    for (int j = 0; j < runs; ++j) {
      const run_key k{job(j), at(1'700'000'000'000 + round * 100'000)};
      auto b = batched.get(k), s = single.get(k), r = rules.get(k);
      CHECK(b == r);
      CHECK(s == r);
    }
    // Each element that ended or released its run was announced on the run's job.
    std::size_t accepted = 0;
    for (bool ok : got) accepted += ok ? 1 : 0;
    CHECK(lease::testing::wait_for([&] { return heard.size() == 2 + accepted; }));
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (got[i]) CHECK(heard.count(batch[i].run.job) >= 1);
  }
}

TEST_CASE("a redis finish_many whose reply was lost is resolved by reading back, as the single calls are") {
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  lease::fake_clock clock{at(8'000'000)};
  lease::redis_store store{options_for(proxy.url(), clock)};
  for (const char* j : {"a", "b", "c"})
    REQUIRE(store.claim(request(j, clock.now(), std::string("t-") + j)).outcome == claim_outcome::won);
  const std::vector<finish_request> batch{{{"a", clock.now()}, "t-a", run_status::success},
                                          {{"b", clock.now()}, "t-b", std::nullopt},
                                          {{"c", clock.now()}, "wrong", run_status::failed},
                                          {{"a", clock.now()}, "t-a", std::nullopt}};  // a ended just before
  proxy.lose_next_reply();
  CHECK(store.finish_many(batch) == std::vector<bool>{true, true, false, false});
  CHECK(proxy.cuts() == 1);
  CHECK(store.get({"a", clock.now()})->status == run_status::success);
  CHECK(store.get({"b", clock.now()})->released);
  CHECK(store.get({"b", clock.now()})->handovers == 1);  // released once, not twice
  CHECK(store.get({"c", clock.now()})->status == run_status::running);
}

TEST_CASE("a store_error in the middle of a redis finish_many leaves every outcome unknown: the others may be applied") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(9'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("fm");
  lease::redis_store store{options_for(srv.url(), clock, prefix)};
  for (const char* j : {"a", "b", "c"})
    REQUIRE(store.claim(request(j, clock.now(), std::string("t-") + j)).outcome == claim_outcome::won);
  // b's run key now holds a string: its script fails (WRONGTYPE) while a's and c's run.
  srv.command({"SET", lease::detail::redis::keys_for(prefix, "b").runs, "foreign"});
  const std::vector<finish_request> batch{{{"a", clock.now()}, "t-a", run_status::success},
                                          {{"b", clock.now()}, "t-b", run_status::success},
                                          {{"c", clock.now()}, "t-c", std::nullopt}};
  std::optional<std::error_code> err;
  try {
    (void)store.finish_many(batch);
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  REQUIRE(err);
  CHECK(*err == lease::errc::corrupt);
  // The caller treats all three as unknown and reads back: a and c were applied.
  CHECK(store.get({"a", clock.now()})->status == run_status::success);
  CHECK(store.get({"c", clock.now()})->released);
}

TEST_CASE("a redis finish_many that cannot be resolved is outcome_unknown, and read back later shows what ran") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(9'500'000)};
  auto o = options_for(srv.url(), clock);
  o.command_timeout = 150ms;
  lease::redis_store store{o};
  for (const char* j : {"a", "b"})
    REQUIRE(store.claim(request(j, clock.now(), std::string("t-") + j)).outcome == claim_outcome::won);
  std::jthread sleeper([&] { srv.command({"DEBUG", "SLEEP", "0.8"}); });  // joined on every way out
  // The batch must reach a server already asleep: wait until a PING of
  // another connection goes unanswered (the sleep has begun, ~0.8 s left).
  REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
  std::optional<std::error_code> err;
  try {
    (void)store.finish_many(std::vector<finish_request>{{{"a", clock.now()}, "t-a", run_status::success},
                                                        {{"b", clock.now()}, "t-b", std::nullopt}});
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  sleeper.join();
  REQUIRE(err);
  CHECK(*err == lease::errc::outcome_unknown);
  auto a = lease::testing::until([&] { return store.get({"a", clock.now()}); });
  REQUIRE(a);
  CHECK(a->status == run_status::success);  // it ran once the server woke
  CHECK(store.get({"b", clock.now()})->released);
}
