// Push hand-over on redis (PushStore): finish and release announce the job on
// its sharded release channel; a listening store hears the jobs it asked
// about, reconnects after its subscriber connection is cut, and stops hearing
// once stopped. Under the scheduler, a stop() is taken over well before the
// backup's next periodic check; with the announcements refused, the periodic
// checks still take it over.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/redis.hpp"
#include "redis/instances.hpp"
#include "redis/server.hpp"
#include "redis/wait.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_request;
using lease::event_kind;
using lease::run_status;
using lease::time_point;

namespace {

claim_request request(std::string job, time_point slot, std::string token) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "me";
  r.token = std::move(token);
  r.lease = 30s;
  r.deadline = slot + 1h;
  return r;
}

lease::redis_store store_on(const lease::testing::redis_server& srv, const std::string& prefix,
                            std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::redis_options o;
  o.url = srv.url();
  o.prefix = prefix;
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return lease::redis_store{std::move(o)};
}

using lease::testing::heard_jobs;
using lease::testing::wait_for;

/// Events from several loop threads, behind one lock.
struct recorder {
  std::mutex m;
  std::vector<lease::event> events;
  void operator()(const lease::event& e) {
    std::scoped_lock l(m);
    events.push_back(e);
  }
  std::vector<lease::event> of(event_kind k) {
    std::scoped_lock l(m);
    std::vector<lease::event> out;
    for (const auto& e : events)
      if (e.kind == k) out.push_back(e);
    return out;
  }
  bool wait_for(event_kind k, std::chrono::milliseconds limit) {
    return lease::testing::wait_for([&] { return !of(k).empty(); }, limit);
  }
};

}  // namespace

TEST_CASE("a release or finish by one redis store reaches the listener of another, which reconnects when cut") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("push");
  auto watcher = store_on(srv, prefix, clock);
  auto runner = store_on(srv, prefix, clock);
  heard_jobs heard;
  watcher.listen_releases(std::ref(heard));
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1; }));

  // The watcher hears the jobs it asked about; any bytes make a job name.
  const std::string job = std::string("it's {a} job\0 ✓", 17);
  const std::string other = "ends";
  (void)watcher.unfinished(job);
  (void)watcher.unfinished(other);
  REQUIRE(wait_for([&] { return watcher.listener_channels() == 2; }));

  REQUIRE(runner.claim(request(job, clock.now(), "t1")).outcome == claim_outcome::won);
  CHECK(runner.release({job, clock.now()}, "t1"));
  CHECK(wait_for([&] { return heard.count(job) == 1; }));

  REQUIRE(runner.claim(request(other, clock.now(), "t2")).outcome == claim_outcome::won);
  CHECK_FALSE(runner.finish({other, clock.now()}, "not-the-token", run_status::success));  // refused: no announcement
  CHECK(runner.finish({other, clock.now()}, "t2", run_status::success));
  CHECK(wait_for([&] { return heard.count(other) == 1; }));

  // A job it never asked about is not heard.
  REQUIRE(runner.claim(request("unasked", clock.now(), "t3")).outcome == claim_outcome::won);
  CHECK(runner.release({"unasked", clock.now()}, "t3"));

  // Cut the subscriber's connection: it reconnects, subscribes every job again
  // and hears the next release.
  auto killed = srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
  REQUIRE(killed->type == REDIS_REPLY_INTEGER);
  CHECK(killed->integer == 1);
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 2 && watcher.listener_channels() == 2; }));
  clock.advance(1s);
  REQUIRE(runner.claim(request(job, clock.now(), "t4")).outcome == claim_outcome::won);
  CHECK(runner.release({job, clock.now()}, "t4"));
  CHECK(wait_for([&] { return heard.count(job) == 2; }));
  CHECK(heard.count("unasked") == 0);
  CHECK(heard.size() == 3);  // one per accepted release or finish of a watched job, no more

  // Stopped: returns after the last call; nothing more is heard.
  watcher.listen_releases({});
  CHECK(watcher.listener_connects() == 0);
  clock.advance(1s);
  REQUIRE(runner.claim(request(job, clock.now(), "t5")).outcome == claim_outcome::won);
  CHECK(runner.release({job, clock.now()}, "t5"));
  (void)runner.get({job, clock.now()});  // a round trip after the publish
  std::this_thread::sleep_for(50ms);     // room for a wrongly delivered call (cannot prove absence otherwise)
  CHECK(heard.size() == 3);

  // Listening again: the new listener is told of the jobs the store asked
  // about before it existed (the store remembers each job's keys, and must
  // not take "known" for "watched by this listener").
  heard_jobs again;
  watcher.listen_releases(std::ref(again));
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1; }));
  (void)watcher.unfinished(job);
  REQUIRE(wait_for([&] { return watcher.listener_channels() == 1; }));
  clock.advance(1s);
  REQUIRE(runner.claim(request(job, clock.now(), "t6")).outcome == claim_outcome::won);
  CHECK(runner.release({job, clock.now()}, "t6"));
  CHECK(wait_for([&] { return again.count(job) == 1; }));
  watcher.listen_releases({});
}

TEST_CASE("a redis finish is announced with its run's slot (listen_ends), a release with none") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("ends");
  std::mutex m;
  std::vector<std::pair<std::string, std::optional<time_point>>> heard;
  auto watcher = store_on(srv, prefix, clock);
  auto runner = store_on(srv, prefix, clock);
  auto count = [&] {
    std::scoped_lock l(m);
    return heard.size();
  };
  watcher.listen_ends([&](std::string_view job, std::optional<time_point> finished) {
    std::scoped_lock l(m);
    heard.emplace_back(job, finished);
  });
  const std::string job = "nightly";
  (void)watcher.unfinished(job);
  REQUIRE(wait_for([&] { return watcher.listener_channels() == 1; }));

  const time_point s1 = clock.now() - 3s, s2 = s1 + 1s, s3 = s1 + 2s, s4 = s1 + 3s;
  for (auto [slot, token] : {std::pair{s1, "t1"}, {s2, "t2"}, {s3, "t3"}, {s4, "t4"}}) {
    auto req = request(job, slot, token);
    req.overlap = lease::overlap_mode::allow;  // four runs of one job at once
    REQUIRE(runner.claim(req).outcome == claim_outcome::won);
  }
  CHECK(runner.finish({job, s1}, "t1", run_status::failed));
  CHECK(runner.release({job, s2}, "t2"));
  const std::vector<lease::finish_request> batch{{{job, s3}, "t3", run_status::success}, {{job, s4}, "t4", std::nullopt}};
  CHECK(runner.finish_many(batch) == std::vector<bool>{true, true});
  REQUIRE(wait_for([&] { return count() == 4; }));
  std::scoped_lock l(m);
  CHECK(heard[0] == std::pair{job, std::optional{s1}});  // a finish: the run it ended
  CHECK(heard[1] == std::pair{job, std::optional<time_point>{}});  // a release: check every watched run
  CHECK(heard[2] == std::pair{job, std::optional{s3}});
  CHECK(heard[3] == std::pair{job, std::optional<time_point>{}});
}

namespace {

/// A stops while running a long handler; B, its backup, takes over. Returns
/// the time from A's stop() to B's takeover event.
std::chrono::milliseconds stop_to_takeover(const lease::testing::redis_server& srv, lease::duration lease_time,
                                           const std::function<void(lease::redis_store&)>& before_stop = {}) {
  recorder rec;
  const std::string prefix = lease::testing::fresh_prefix("handover");
  auto a = lease::make_scheduler(lease::store = store_on(srv, prefix), lease::executor = lease::thread_pool{1},
                                 lease::settings = lease::testing::instance_options("A", lease_time, 20ms, 2h));
  auto b = lease::make_scheduler(lease::store = store_on(srv, prefix), lease::executor = lease::thread_pool{1},
                                 lease::settings = lease::testing::instance_options("B", lease_time, 20ms, 0ms));
  for (auto* s : {&a, &b}) {
    s->add("long", lease::every(1h), lease::testing::run_until_stopped);
    s->on_event(std::ref(rec));
  }
  a.start();
  REQUIRE(rec.wait_for(event_kind::catch_up, 5s));
  b.start();
  REQUIRE(rec.wait_for(event_kind::backup, 5s));
  if (before_stop) before_stop(b.store());
  const auto t0 = std::chrono::steady_clock::now();
  a.stop(2s);
  REQUIRE(rec.of(event_kind::handed_over).size() == 1);
  REQUIRE(rec.wait_for(event_kind::takeover, 4 * lease_time));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  CHECK(rec.of(event_kind::takeover).at(0).instance == "B");
  CHECK(rec.of(event_kind::takeover).at(0).attempt == 2);
  b.stop(2s);
  return took;
}

}  // namespace

TEST_CASE("a redis backup takes a stop() over as soon as it is announced, well before its next check") {
  lease::testing::redis_server srv;
  // Heartbeat 4 s: B's first periodic check is 4–8 s after it became the
  // backup; a takeover within 1 s can only come from the announcement.
  const auto took = stop_to_takeover(srv, 20s, [](lease::redis_store& b) {
    REQUIRE(wait_for([&] { return b.listener_channels() >= 1; }));
  });
  CHECK(took < 1s);
}

TEST_CASE("with announcements refused, a redis backup still takes a stop() over by its periodic checks") {
  lease::testing::redis_server srv;
  // No channel allowed: the scripts' SPUBLISH is refused (the release still
  // succeeds) and the subscriber is cut and cannot subscribe again.
  auto acl = srv.command({"ACL", "SETUSER", "default", "resetchannels"});
  REQUIRE(acl->type == REDIS_REPLY_STATUS);
  const auto took = stop_to_takeover(srv, 3s, [&](lease::redis_store& b) {
    (void)srv.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    REQUIRE(wait_for([&] { return b.listener_connects() >= 1; }));
    CHECK(b.listener_channels() == 0);
  });
  CHECK(took < 3s);  // within lease + 2 × heartbeat of the stop, by a periodic check
}

TEST_CASE("a redis instance that hears a slot's run finish while waiting out its claim jitter does not claim that slot") {
  lease::testing::redis_server srv;
  recorder rec;
  std::mutex m;
  std::map<time_point, int> runs;  // slot → handler starts
  const std::string prefix = lease::testing::fresh_prefix("spared");
  // A claims at each slot; B up to 900 ms after it, by when A's 1 ms
  // handler has long finished and its finish has been announced.
  auto a = lease::make_scheduler(lease::store = store_on(srv, prefix), lease::executor = lease::thread_pool{1},
                                 lease::settings = lease::testing::instance_options("A", 3s, 0ms, 0ms));
  auto b = lease::make_scheduler(lease::store = store_on(srv, prefix), lease::executor = lease::thread_pool{1},
                                 lease::settings = lease::testing::instance_options("B", 3s, 900ms, 0ms));
  for (auto* s : {&a, &b}) {
    s->add("quick", lease::every(1s), [&](lease::run_context& ctx) {
      std::scoped_lock l(m);
      ++runs[ctx.slot];
    });
    s->on_event(std::ref(rec));
  }
  a.start();
  b.start();
  REQUIRE(wait_for([&] { return b.store().listener_channels() >= 1; }));
  auto spared = [&] {
    int n = 0;
    for (const auto& e : rec.of(event_kind::skip))
      n += e.instance == "B" && e.message.find("claim not sent: the store announced") != std::string::npos;
    return n;
  };
  REQUIRE(wait_for([&] { return spared() >= 3; }, 20s));  // B sends no claim for most slots…
  a.stop(2s);
  b.stop(2s);
  std::scoped_lock l(m);
  for (const auto& [slot, n] : runs) CHECK(n == 1);  // …and every slot still ran once
  for (const auto& e : rec.of(event_kind::skip))
    if (e.instance == "B" && e.message.find("claim not sent") != std::string::npos) CHECK(runs.count(e.run.slot) == 1);
}
