// redis_store's stop, registrations and purge (StopStore, RegistryStore)
// beyond the conformance suite: hostile registrations (bytes Lua must only
// see as ARGV) listed byte for byte with instances ordered by bytes, a job
// only registered found by list_jobs under a prefix full of glob
// characters, a stop on the server's clock heard by another store's release
// listener, and the purge's tombstone: a handle that remembers a purged
// job's fence is not told of a loss of state, while a job whose keys really
// vanished still is. Each test case starts its own redis-server.
#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/rules.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"
#include "redis/wait.hpp"

using namespace std::chrono_literals;
using namespace std::string_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::job_registration;
using lease::purge_outcome;
using lease::run_status;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::redis_store store_on(const std::string& url, const std::string& prefix,
                            std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::redis_options o;
  o.url = url;
  o.prefix = prefix;
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return lease::redis_store{std::move(o)};
}

claim_request request(std::string job, time_point slot, std::string token,
                      claim_reason reason = claim_reason::scheduled) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.reason = reason;
  r.lease = 30s;
  r.deadline = slot + 1h;
  r.overlap = lease::overlap_mode::allow;
  return r;
}

bool mentions_loss(const std::vector<std::string>& notices) {
  return std::any_of(notices.begin(), notices.end(),
                     [](const std::string& n) { return n.find("lost its state") != std::string::npos; });
}

}  // namespace

TEST_CASE("redis: hostile registrations are stored and listed byte for byte, instances ordered by bytes, a job only "
          "registered is listed under a glob prefix, and a purge deletes every key but its tombstone") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("reg*?[x]\\");
  auto store = store_on(srv.url(), prefix, clock);
  const std::string job = "x'); redis.call('FLUSHALL') --\0\xff}{"s + std::string(10'240, 'j');
  // Bytewise: "" < "\0" < "B" < "a" < "\xc3\xa9" < "\xff".
  const std::vector<std::string> ids = {"\xff"s, "a"s, "B"s, "\0"s, "\xc3\xa9"s, ""s};
  std::vector<job_registration> regs;
  for (std::size_t i = 0; i < ids.size(); ++i)
    regs.push_back({job, ids[i], "*/5 * * * *\0' \"]]--\\"s + std::to_string(i), "Europe/Paris\0\x80"s, {}});
  store.register_jobs(regs);
  // The same (job, instance) twice in one call: the later one, as two calls would.
  clock.advance(5ms);
  const std::vector<job_registration> again = {{job, "a", "first", "UTC", {}}, {job, "a", "second", "UTC", {}}};
  store.register_jobs(again);

  const auto jobs = store.list_jobs();
  REQUIRE(jobs.size() == 1);  // a job with only registrations is listed (SCAN found its instances key)
  CHECK(jobs[0].name == job);
  CHECK(jobs[0].fence == 0);
  CHECK_FALSE(jobs[0].last_run);
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(jobs[0].instances.size() == ids.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& g = jobs[0].instances[i];
    CHECK(g.instance == sorted[i]);
    CHECK(g.job == job);
    if (g.instance == "a") {
      CHECK(g.schedule == "second");
      CHECK(g.last_seen == at(1'700'000'000'005));
    } else {
      const auto k = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), g.instance) - ids.begin());
      CHECK(g.schedule == "*/5 * * * *\0' \"]]--\\"s + std::to_string(k));
      CHECK(g.zone == "Europe/Paris\0\x80"s);
      CHECK(g.last_seen == at(1'700'000'000'000));
    }
  }
  // Registered within unseen_for: the newest registration ("a", 5 ms later) keeps it.
  const auto kept = store.purge(job, 1h);
  CHECK(kept.outcome == purge_outcome::registered);
  REQUIRE(kept.instance);
  CHECK(kept.instance->instance == "a");
  CHECK(kept.instance->last_seen == at(1'700'000'000'005));
  // A run of it, ended: unseen for longer, it is purged, runs and registrations with it.
  REQUIRE(store.claim(request(job, clock.now(), "t1")).outcome == claim_outcome::won);
  REQUIRE(store.finish({job, clock.now()}, "t1", run_status::success));
  clock.advance(2h);
  CHECK(store.purge(job, 1h).outcome == purge_outcome::purged);
  CHECK(store.list_jobs().empty());
  CHECK(store.list_runs(job, 10).empty());
  CHECK(store.purge(job, 1h).outcome == purge_outcome::not_found);
  const auto keys = lease::detail::redis::keys_for(prefix, job);
  CHECK(srv.command({"EXISTS", keys.ended, keys.instances})->integer == 0);
  // Only the tombstone is left, in the job's runs hash: the purge's clock.
  auto left = srv.command({"HGETALL", keys.runs});
  REQUIRE(left->elements == 2);
  CHECK(std::string(left->element[0]->str, left->element[0]->len) == "x");
  CHECK(std::string(left->element[1]->str, left->element[1]->len) == "1700007200005");
}

TEST_CASE("redis: a purged job claimed again by a handle that remembers its fence is not taken for a loss of state, "
          "but a job whose keys vanished still is") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("tomb");
  auto instance = store_on(srv.url(), prefix, clock);  // runs the job and remembers its fence
  auto op = store_on(srv.url(), prefix, clock);        // the operator's purge, another handle
  const auto first = instance.claim(request("report", clock.now(), "a1"));
  REQUIRE(first.outcome == claim_outcome::won);
  REQUIRE(instance.finish({"report", clock.now()}, "a1", run_status::success));
  (void)instance.take_notices();
  clock.advance(1min);
  REQUIRE(op.purge("report", 1s).outcome == purge_outcome::purged);

  // The remembering handle's heartbeat of the purged run is refused, and not evidence of a loss.
  CHECK_FALSE(instance.heartbeat({"report", first.record.slot}, "a1", 30s));
  // Its next claim wins at once (no quarantine), with a fence above the old one.
  const auto again = instance.claim(request("report", clock.now(), "a2"));
  CHECK(again.outcome == claim_outcome::won);
  CHECK(again.record.fence > first.record.fence);
  // A second job on the same store is not quarantined either.
  CHECK(instance.claim(request("other", clock.now(), "o1")).outcome == claim_outcome::won);
  const auto notices = instance.take_notices();
  CAPTURE(notices);
  CHECK_FALSE(mentions_loss(notices));

  // Control: the same job's keys deleted behind the store's back (not a
  // purge) is still a loss: the fence the handle saw is above the counter.
  REQUIRE(instance.finish({"report", clock.now()}, "a2", run_status::success));
  const auto keys = lease::detail::redis::keys_for(prefix, "report");
  srv.command({"DEL", keys.runs, keys.ended});
  clock.advance(1min);
  CHECK(instance.claim(request("report", clock.now(), "a3")).outcome == claim_outcome::quarantined);
  CHECK(mentions_loss(instance.take_notices()));
}

TEST_CASE("redis: stop on the server's clock hands the runs over keeping their leases, another store's release "
          "listener hears it, and no takeover wins while paused") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("stop");
  // Before the stores: the watcher's listener thread may call in until its store is destroyed.
  std::mutex m;
  std::vector<std::string> heard;
  auto runner = store_on(srv.url(), prefix), op = store_on(srv.url(), prefix), watcher = store_on(srv.url(), prefix);
  watcher.listen_releases([&](std::string_view j) {
    std::scoped_lock lock(m);
    heard.emplace_back(j);
  });
  const std::string job = "stop 'me' \"\0\""s;
  (void)watcher.unfinished(job);  // the listener hears the jobs its store asked about
  REQUIRE(lease::testing::wait_for([&] { return watcher.listener_channels() >= 1; }));
  const time_point slot = runner.now();
  const auto one = runner.claim(request(job, slot, "t1"));
  REQUIRE(one.outcome == claim_outcome::won);
  REQUIRE(runner.claim(request(job, slot + 1ms, "t2")).outcome == claim_outcome::won);
  REQUIRE(runner.finish({job, slot + 1ms}, "t2", run_status::success));
  const auto three = runner.claim(request(job, slot + 2ms, "t3"));
  REQUIRE(three.outcome == claim_outcome::won);

  CHECK(op.stop(job) == 2);  // t1 and t3; t2 had finished
  CHECK(op.paused(job));
  CHECK(lease::testing::wait_for([&] {
    std::scoped_lock lock(m);
    return std::count(heard.begin(), heard.end(), job) >= 1;
  }));
  CHECK_FALSE(runner.heartbeat({job, slot}, "t1", 30s));  // the runner learns it at its next heartbeat
  for (const auto& [s, end] : {std::pair{slot, one.record.lease_end}, std::pair{slot + 2ms, three.record.lease_end}}) {
    const auto r = op.get({job, s});
    REQUIRE(r);
    CHECK(r->released);
    CHECK(r->handovers == 1);
    CHECK(r->status == run_status::running);
    CHECK(r->lease_end == end);  // kept: live until then
  }
  CHECK(op.stop(job) == 0);  // nothing left to hand over; still paused
  // A takeover waits for the lease, then for the resume.
  CHECK(op.claim(request(job, slot, "b1", claim_reason::takeover)).outcome == claim_outcome::running);
  CHECK(op.purge(job, 1s).outcome == purge_outcome::running);
}

TEST_CASE("redis: a job whose only state was a pause, resumed, is still there for purge (purged, as the rules say, "
          "not not_found) and is not listed") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto store = store_on(srv.url(), lease::testing::fresh_prefix("resumed"), clock);
  lease::rules::run_table model;
  for (const std::string job : {"never ran", "purged before"}) {
    if (job == "purged before") {  // a tombstone in its runs hash already: still not state
      (void)store.pause(job);
      REQUIRE(store.purge(job, 0s).outcome == purge_outcome::purged);
    }
    CHECK(store.pause(job));
    CHECK(store.resume(job));
    (void)lease::rules::pause(model, job, clock.now());
    (void)lease::rules::resume(model, job, clock.now());
    CHECK(store.list_jobs() == lease::rules::list_jobs(model));
    const auto want = lease::rules::purge(model, job, 0s, clock.now());
    REQUIRE(want.outcome == purge_outcome::purged);
    CHECK(store.purge(job, 0s) == want);
    CHECK(store.purge(job, 0s).outcome == purge_outcome::not_found);
  }
}

TEST_CASE("redis: a stop or purge whose reply is lost is outcome_unknown with a sentence saying what to look at, "
          "never a silent 0 or not_found from sending it again") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::redis_options o;
  o.url = srv.url();
  o.prefix = lease::testing::fresh_prefix("lost");
  o.clock = [clock] { return clock.now(); };
  o.command_timeout = 150ms;
  lease::redis_store store{o};
  REQUIRE(store.claim(request("j", clock.now(), "t1")).outcome == claim_outcome::won);
  // Each call reaches a server already asleep (a PING of another connection
  // goes unanswered), times out, and is applied once the server wakes.
  auto lost = [&](auto op) {
    std::jthread sleeper([&] { srv.command({"DEBUG", "SLEEP", "0.8"}); });
    REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
    std::string what;
    std::error_code code;
    try {
      op();
    } catch (const lease::store_error& e) {
      what = e.what();
      code = e.code();
    }
    sleeper.join();
    CAPTURE(what);
    CHECK(code == lease::errc::outcome_unknown);
    CHECK(what.find("may or may not have been applied") != std::string::npos);
    return what;
  };
  CHECK(lost([&] { (void)store.stop("j"); }).find("stop it again if it is not paused") != std::string::npos);
  const auto paused = lease::testing::wait_for([&] {
    try {
      return store.paused("j");
    } catch (const lease::store_error&) {
      return false;
    }
  });
  CHECK(paused);
  CHECK(store.get({"j", clock.now()})->released);
  clock.advance(1h);
  CHECK(lost([&] { (void)store.purge("j", 0s); }).find("look for the job (list_jobs)") != std::string::npos);
}
