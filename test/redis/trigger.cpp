// "Trigger now" on redis (PushTriggerStore): an operator's trigger is kept in
// the job's runs hash, answered by exactly one manual claim among store
// objects racing for it, pushed to the listeners of other store objects on
// the store's trigger channel (apart from the release announcements), and a
// listener whose connection was cut is told it may have missed pushes.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"
#include "redis/wait.hpp"
#include "support/loopback_proxy.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::time_point;
using lease::testing::heard_jobs;
using lease::testing::wait_for;

static_assert(lease::PushTriggerStore<lease::redis_store>);

namespace {

lease::redis_store store_at(const std::string& url, const std::string& prefix,
                            std::optional<lease::fake_clock> clock = std::nullopt,
                            std::chrono::milliseconds command_timeout = 2000ms,
                            std::chrono::milliseconds trigger_ping_every = lease::redis_options{}.trigger_ping_every) {
  lease::redis_options o;
  o.url = url;
  o.prefix = prefix;
  o.command_timeout = command_timeout;
  o.trigger_ping_every = trigger_ping_every;
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return lease::redis_store{std::move(o)};
}

claim_request manual_claim(std::string job, time_point slot, std::string runner) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = runner;
  r.token = "token of " + runner;
  r.reason = claim_reason::manual;
  r.lease = 30s;
  r.deadline = slot;  // never late: a manual claim ignores it
  r.overlap = lease::overlap_mode::allow;
  return r;
}

}  // namespace

TEST_CASE("two redis store objects claim one trigger at once and exactly one of them wins it") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("trig");
  auto op = store_at(srv.url(), prefix);  // an operator's tool, on the server's clock
  auto a = store_at(srv.url(), prefix);
  auto b = store_at(srv.url(), prefix);
  for (int round = 0; round < 30; ++round) {
    const std::string job = "nightly {report} " + std::to_string(round);
    CAPTURE(job);
    const time_point slot = op.trigger(job);
    CHECK(op.trigger(job) == slot);  // idempotent while pending
    const std::string names[] = {job};
    REQUIRE(a.triggers(names) == std::vector<lease::run_key>{{job, slot}});
    REQUIRE(b.triggers(names) == std::vector<lease::run_key>{{job, slot}});
    const auto listed = op.list_jobs();
    auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& j) { return j.name == job; });
    REQUIRE(it != listed.end());
    CHECK(it->trigger == slot);

    // Both claim at once, each on its own store object and thread.
    std::mutex m;
    std::condition_variable cv;
    bool go = false;
    auto claim_on = [&](lease::redis_store& s, const std::string& runner) {
      {
        std::unique_lock l(m);
        cv.wait(l, [&] { return go; });
      }
      return s.claim(manual_claim(job, slot, runner));
    };
    lease::claim_result ra, rb;
    std::thread ta([&] { ra = claim_on(a, "a"); });
    std::thread tb([&] { rb = claim_on(b, "b"); });
    {
      std::scoped_lock l(m);
      go = true;
    }
    cv.notify_all();
    ta.join();
    tb.join();
    const bool a_won = ra.outcome == claim_outcome::won;
    CHECK(a_won != (rb.outcome == claim_outcome::won));  // exactly one
    const lease::claim_result& loser = a_won ? rb : ra;
    CHECK(loser.outcome == claim_outcome::running);  // the winner's run is the trigger's answer
    CHECK(loser.record.token == (a_won ? "token of a" : "token of b"));
    CHECK(loser.record.manual);

    // The trigger is answered: nothing pending, the run marked manual everywhere.
    CHECK(op.triggers(names).empty());
    const auto run = op.get({job, slot});
    REQUIRE(run);
    CHECK(run->manual);
    CHECK(run->runner == (a_won ? "a" : "b"));
    REQUIRE(op.list_runs(job, 5).size() == 1);
    CHECK(op.list_runs(job, 5).front().manual);
    // A late third instance is not given a second run.
    auto late = manual_claim(job, slot, "c");
    CHECK(op.claim(late).outcome == claim_outcome::running);
  }
}

TEST_CASE("a manual claim without a pending trigger is none and a scheduled run is not marked manual") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("trig");
  auto s = store_at(srv.url(), prefix, clock);
  // Made up: no trigger, nothing created.
  CHECK(s.claim(manual_claim("j", clock.now(), "x")).outcome == claim_outcome::none);
  CHECK(s.list_jobs().empty());
  // A scheduled run started after the trigger is newer; the manual run, older,
  // still wins (never superseded) and leaves the newer one running.
  const time_point t = s.trigger("j");
  CHECK(t == clock.now());
  clock.advance(2s);
  claim_request sched = manual_claim("j", clock.now(), "sched");
  sched.reason = claim_reason::scheduled;
  sched.deadline = clock.now();
  REQUIRE(s.claim(sched).outcome == claim_outcome::won);
  CHECK_FALSE(s.get(sched.run)->manual);
  REQUIRE(s.claim(manual_claim("j", t, "m")).outcome == claim_outcome::won);
  CHECK(s.get({"j", t})->manual);
  CHECK(s.get(sched.run)->status == lease::run_status::running);
  const auto running = s.unfinished("j");
  REQUIRE(running.size() == 2);
  CHECK(running[0].manual);  // oldest first
  CHECK_FALSE(running[1].manual);
  // An overlap names the newest live run, not the one won last.
  claim_request next = sched;
  next.run.slot += 1s;
  next.deadline = next.run.slot;
  next.token = "next";
  next.overlap = lease::overlap_mode::skip;
  clock.advance(1s);
  const auto overlap = s.claim(next);
  REQUIRE(overlap.outcome == claim_outcome::overlap);
  CHECK(overlap.record.slot == sched.run.slot);
  const auto jobs = s.list_jobs();
  REQUIRE(jobs.size() == 1);
  CHECK_FALSE(jobs[0].trigger);
  REQUIRE(jobs[0].last_run);
  CHECK(jobs[0].last_run->slot == sched.run.slot);  // the newest run is still the scheduled one
}

TEST_CASE("a trigger on one redis store reaches the trigger listener of another, apart from releases") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("tpush");
  auto watcher = store_at(srv.url(), prefix, clock);
  auto op = store_at(srv.url(), prefix, clock);
  heard_jobs triggers, releases;
  watcher.listen_triggers(std::ref(triggers));
  watcher.listen_releases(std::ref(releases));
  // Subscribed: told once that it may have missed pushes until now.
  REQUIRE(wait_for([&] { return triggers.count("") == 1; }));
  CHECK(watcher.trigger_listener_subscribed());

  const std::string job = std::string("it's {a} job\0 ✓", 17);  // any bytes make a job name
  (void)watcher.unfinished(job);  // the release listener hears jobs it asked about
  REQUIRE(wait_for([&] { return watcher.listener_channels() == 1; }));
  const time_point slot = op.trigger(job);
  CHECK(wait_for([&] { return triggers.count(job) == 1; }, 5s));
  // A job the watcher never asked about is heard too: triggers are per prefix.
  (void)op.trigger("never asked about");
  CHECK(wait_for([&] { return triggers.count("never asked about") == 1; }, 5s));

  // A release is heard by the release listener only, a trigger by the trigger listener only.
  REQUIRE(op.claim(manual_claim(job, slot, "op")).outcome == claim_outcome::won);
  CHECK(op.release({job, slot}, "token of op"));
  CHECK(wait_for([&] { return releases.count(job) == 1; }, 5s));
  CHECK(releases.size() == 1);
  CHECK(triggers.size() == 3);

  // A store with another prefix hears none of them.
  auto other = store_at(srv.url(), lease::testing::fresh_prefix("tpush"), clock);
  heard_jobs heard_other;
  other.listen_triggers(std::ref(heard_other));
  REQUIRE(wait_for([&] { return heard_other.count("") == 1; }));

  // Stopped: returns after the last call. A third listener hearing the next
  // trigger proves it was published to every subscriber by then.
  watcher.listen_triggers({});
  CHECK(watcher.trigger_listener_connects() == 0);
  auto third = store_at(srv.url(), prefix, clock);
  heard_jobs heard_third;
  third.listen_triggers(std::ref(heard_third));
  REQUIRE(wait_for([&] { return heard_third.count("") == 1; }));
  (void)op.trigger("after the stop");
  CHECK(wait_for([&] { return heard_third.count("after the stop") == 1; }, 5s));
  CHECK(triggers.size() == 3);
  CHECK(heard_other.size() == 1);  // only its own "subscribed"
}

TEST_CASE("a redis trigger listener whose connection is cut reconnects and is told it may have missed pushes") {
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  const std::string prefix = lease::testing::fresh_prefix("tcut");
  auto watcher = store_at(proxy.url(), prefix);
  auto op = store_at(srv.url(), prefix);
  heard_jobs heard;
  watcher.listen_triggers(std::ref(heard));
  REQUIRE(wait_for([&] { return heard.count("") == 1; }));
  (void)op.trigger("before");
  REQUIRE(wait_for([&] { return heard.count("before") == 1; }, 5s));

  // The network drops the subscriber's connection: whatever was published
  // until it is subscribed again is lost, so it says so with f("").
  proxy.cut_all();
  CHECK(wait_for([&] { return heard.count("") == 2; }, 5s));
  CHECK(watcher.trigger_listener_connects() == 2);
  CHECK(proxy.cuts() >= 1);
  (void)op.trigger("after");
  CHECK(wait_for([&] { return heard.count("after") == 1; }, 5s));
  watcher.listen_triggers({});
}

TEST_CASE("a redis trigger listener whose server stops answering notices by a ping and subscribes again") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("tping");
  auto watcher = store_at(srv.url(), prefix, std::nullopt, 300ms, 500ms);
  heard_jobs heard;
  watcher.listen_triggers(std::ref(heard));
  REQUIRE(wait_for([&] { return heard.count("") == 1; }));
  // Frozen for 2.5 s with the connection open: only an unanswered PING
  // tells (nothing closes the socket). Once it answers again, the listener
  // is subscribed on a new connection and says it may have missed pushes.
  std::jthread freeze([&] { (void)srv.command({"DEBUG", "SLEEP", "2.5"}); });
  CHECK(wait_for([&] { return heard.count("") >= 2; }, 10s));
  CHECK(watcher.trigger_listener_connects() >= 2);
}

/// Times the server ran PING (INFO commandstats), 0 if never.
long pings(lease::testing::redis_server& srv) {
  auto r = srv.command({"INFO", "commandstats"});
  const std::string text = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : std::string();
  const auto at = text.find("cmdstat_ping:calls=");
  return at == std::string::npos ? 0 : std::stol(text.substr(at + 19));
}

TEST_CASE("an idle redis trigger listener sends nothing until trigger_ping_every has passed in silence") {
  // Its PING is all an idle instance would send: once a second it was the
  // only idle traffic of a Redis instance; with the default (30 s) a few
  // seconds of silence cost nothing, and a short interval does ping.
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("tidle");
  auto quiet = store_at(srv.url(), prefix);
  heard_jobs heard;
  quiet.listen_triggers(std::ref(heard));
  REQUIRE(wait_for([&] { return heard.count("") == 1; }));
  const long before = pings(srv);
  std::this_thread::sleep_for(2500ms);  // a window of silence, not a wait for an event
  CHECK(pings(srv) == before);
  auto chatty = store_at(srv.url(), prefix, std::nullopt, 2000ms, 200ms);
  heard_jobs heard2;
  chatty.listen_triggers(std::ref(heard2));
  CHECK(wait_for([&] { return pings(srv) >= before + 3; }, 5s));
  CHECK(pings(srv) < before + 30);  // one per interval, not a busy loop
  lease::redis_options bad;
  bad.trigger_ping_every = 0ms;
  try {
    lease::redis_store s{bad};
    FAIL("trigger_ping_every = 0 was accepted");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::invalid_argument);
    CHECK(std::string(e.what()).find("trigger_ping_every must be above 0") != std::string::npos);
  }
}

TEST_CASE("a redis run record written before the manual flag existed reads as not manual and keeps working") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("old");
  auto s = store_at(srv.url(), prefix, clock);
  // An 8-field record, as an earlier version wrote it: {attempt, token,
  // fence, runner, status, lease_end, released, handovers}.
  const std::string slot = std::to_string(clock.now().time_since_epoch().count());
  const std::string end = std::to_string((clock.now() + 30s).time_since_epoch().count());
  auto w = srv.command({"EVAL",
                        "redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack({1, 'old', 5, 'r', 0, tonumber(ARGV[2]), 0, 0}))",
                        "1", lease::detail::redis::keys_for(prefix, "j").runs, slot, end});
  REQUIRE(w->type != REDIS_REPLY_ERROR);
  const lease::run_key run{"j", clock.now()};
  auto rec = s.get(run);
  REQUIRE(rec);
  CHECK(rec->token == "old");
  CHECK_FALSE(rec->manual);
  CHECK(s.heartbeat(run, "old", 10s));
  CHECK(s.finish(run, "old", lease::run_status::success));
  rec = s.get(run);
  REQUIRE(rec);
  CHECK(rec->status == lease::run_status::success);
  CHECK_FALSE(rec->manual);
  CHECK(s.list_runs("j", 5).size() == 1);
}
