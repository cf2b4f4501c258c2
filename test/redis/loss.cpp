// A redis that lost its state is detected, not believed (issue #9): after a
// restart without persistence, a FLUSHALL or eviction, no instance wins a run
// that could still be running elsewhere (claim_outcome::quarantined for one
// lease), fences keep growing, and take_notices() says what happened. Also:
// the notice on the server's durability settings, and WAIT for replicas.
#include <algorithm>
#include <map>
#include <memory>
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
using lease::run_key;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::redis_options options_on(const std::string& url, const std::string& prefix,
                                std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::redis_options o;
  o.url = url;
  o.prefix = prefix;
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return o;
}

lease::redis_store store_on(const std::string& url, const std::string& prefix,
                            std::optional<lease::fake_clock> clock = std::nullopt) {
  return lease::redis_store{options_on(url, prefix, clock)};
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
  return r;
}

/// Calls `op` until it stops throwing an unavailable store_error (bounded).
template <class Op>
auto until_available(Op op) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    try {
      return op();
    } catch (const lease::store_error& e) {
      REQUIRE(e.code() == lease::errc::unavailable);
      REQUIRE(std::chrono::steady_clock::now() < end);
      std::this_thread::sleep_for(20ms);
    }
  }
}

std::string all(const std::vector<std::string>& notices) {
  std::string s;
  for (const auto& n : notices) s += n + "\n";
  return s;
}

/// A replica of `master`, its first sync done.
std::unique_ptr<lease::testing::redis_server> replica_of(lease::testing::redis_server& master) {
  // Redis 7 waits repl-diskless-sync-delay (5 s) before a first full sync.
  (void)master.command({"CONFIG", "SET", "repl-diskless-sync-delay", "0"});
  auto replica = std::make_unique<lease::testing::redis_server>(lease::testing::redis_server::settings{
      .append_only = false, .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  for (int i = 0;; ++i) {  // bounded: the first sync takes well under a second, 30 s on a loaded machine
    auto info = replica->command({"INFO", "replication"});
    if (lease::detail::redis::info_field(info.get(), "master_link_status") == "up") break;
    REQUIRE(i < 3000);
    std::this_thread::sleep_for(10ms);
  }
  return replica;
}

bool has(const std::vector<std::string>& notices, std::string_view text) {
  return std::any_of(notices.begin(), notices.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

/// One redis-server (no persistence), a fake clock, and two store handles
/// on one prefix of it: two instances, a and b.
struct two_handles {
  lease::testing::redis_server srv;  // --save '' --appendonly no
  lease::fake_clock clock{at(1'700'000'000'000)};
  std::string prefix = lease::testing::fresh_prefix("loss");
  lease::redis_store a = store_on(srv.url(), prefix, clock);
  lease::redis_store b = store_on(srv.url(), prefix, clock);
};

}  // namespace

TEST_CASE_METHOD(two_handles, "after a restart without persistence between two instances' claims the second claim is quarantined") {
  const run_key run{"report", clock.now()};
  auto won = a.claim(request("report", run.slot, "a1"));
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE_FALSE(b.get(run) == std::nullopt);  // b has connected and seen the store
  (void)a.take_notices();
  (void)b.take_notices();

  srv.restart();  // everything is gone; a is still running its run
  clock.advance(2s);
  auto second = until_available([&] { return b.claim(request("report", run.slot, "b1")); });
  CHECK(second.outcome == claim_outcome::quarantined);
  CHECK(second.record.lease_end == clock.now() + 30s);  // one lease after the loss was noticed
  const auto notices = b.take_notices();
  CAPTURE(all(notices));
  CHECK(has(notices, "lost its state (the server restarted without persistence: run_id changed, marker key gone)"));
  CHECK(has(notices, "no run starts until one lease (of each claim) after 2023-11-14T22:13:22.000Z (store clock)"));
  // Every instance obeys it, whatever it remembers; a's run is gone, so a stops.
  CHECK_FALSE(until_available([&] { return a.heartbeat(run, "a1", 30s); }));
  CHECK(a.claim(request("report", run.slot, "a2")).outcome == claim_outcome::quarantined);
  CHECK(a.claim(request("other", run.slot, "a3")).outcome == claim_outcome::quarantined);
  CHECK_FALSE(a.get(run));  // nothing was created

  clock.advance(30s);  // a's runner has stopped by now…
  auto again = b.claim(request("report", run.slot, "b2"));
  CHECK(again.outcome == claim_outcome::quarantined);  // …but this slot may have run: it never starts again
  CHECK(again.record.lease_end == lease::time_point::max());
  auto next = b.claim(request("report", clock.now(), "b3"));  // a slot after the loss runs
  REQUIRE(next.outcome == claim_outcome::won);
  CHECK(next.record.fence > won.record.fence);  // fences never repeat
}

TEST_CASE_METHOD(two_handles, "after FLUSHALL an instance that never saw the job is quarantined too, and fences keep growing") {
  const run_key run{"report", clock.now()};
  auto first = a.claim(request("report", run.slot, "a1"));
  REQUIRE(first.outcome == claim_outcome::won);
  REQUIRE_FALSE(b.get({"elsewhere", run.slot}));  // b connected; it never saw "report"

  srv.command({"FLUSHALL"});  // the connections stay up: only the marker check can tell b
  auto second = b.claim(request("report", run.slot, "b1"));
  CHECK(second.outcome == claim_outcome::quarantined);
  CHECK(second.record.lease_end == lease::time_point::max());  // this slot may have run: never
  auto rec = b.get(run);  // the win the script gave before the marker said "lost" was ended
  REQUIRE(rec);
  CHECK(rec->token == "b1");
  CHECK(rec->status == lease::run_status::interrupted);
  const auto notices = b.take_notices();
  CAPTURE(all(notices));
  CHECK(has(notices, "the marker key is gone"));
  // Ended, not released: no takeover starts it, during the quarantine or after.
  CHECK(a.claim(request("report", run.slot, "a2", claim_reason::takeover)).outcome == claim_outcome::finished);
  clock.advance(30s);
  CHECK(a.claim(request("report", run.slot, "a3", claim_reason::takeover)).outcome == claim_outcome::finished);

  auto later = a.claim(request("report", clock.now(), "a4"));  // a slot after the loss runs
  REQUIRE(later.outcome == claim_outcome::won);
  CHECK(later.record.fence > first.record.fence);  // fences keep growing
}

// The marker is read in the claim's pipeline, outside the script (on a
// cluster it lives on another node). A claim whose reply is lost never saw
// that answer: the win it may have had inside the loss must still be handed
// back, whether it is read back or answered `running` to a resend of it.
namespace {

/// a has won report's slot (its handler runs); b, connected through a
/// proxy, never saw the job; then FLUSHALL, which keeps connections open.
struct flushed_under_a_runner {
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  std::string prefix = lease::testing::fresh_prefix("flush-in-flight");
  lease::redis_store a = store_on(srv.url(), prefix, clock);
  lease::redis_store b = store_on(proxy.url(), prefix, clock);
  run_key run{"report", clock.now()};

  flushed_under_a_runner() {
    REQUIRE(a.claim(request("report", run.slot, "a1")).outcome == claim_outcome::won);
    REQUIRE_FALSE(b.get({"elsewhere", run.slot}));  // b connected
    srv.command({"FLUSHALL"});
  }
};

}  // namespace

TEST_CASE("after FLUSHALL a win whose reply was lost, read back as ours, is handed back and quarantined") {
  flushed_under_a_runner f;
  f.proxy.lose_next_reply();  // the script wins for b, and b never hears it
  auto res = f.b.claim(request("report", f.run.slot, "b1"));
  CHECK(f.proxy.cuts() == 1);
  CHECK(res.outcome == claim_outcome::quarantined);
  CHECK(res.record.lease_end == lease::time_point::max());
  const auto rec = f.a.get(f.run);
  REQUIRE(rec);  // the lost copy did win…
  CHECK(rec->token == "b1");
  CHECK(rec->status == lease::run_status::interrupted);  // …and was ended: a runs it, no takeover ever will
  CHECK(has(f.b.take_notices(), "the marker key is gone"));
}

TEST_CASE("after FLUSHALL a resent claim answered running with its own token is handed back and quarantined") {
  flushed_under_a_runner f;
  // b's claim is held in the network: b reconnects (and notices the loss),
  // finds no run, and its copy sent again is quarantined. The held copy,
  // sent before b knew, reaches the script later and wins.
  f.proxy.delay_next_request(300ms);
  CHECK(f.b.claim(request("report", f.run.slot, "b1")).outcome == claim_outcome::quarantined);
  REQUIRE(lease::testing::wait_for([&] {
    const auto r = f.a.get(f.run);
    return r && r->token == "b1";
  }));
  // The scheduler sends the same claim again later (its outcome was unknown
  // to it): the script answers running, with b's own token.
  auto again = f.b.claim(request("report", f.run.slot, "b1"));
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == lease::time_point::max());
  const auto rec = f.a.get(f.run);
  REQUIRE(rec);
  CHECK(rec->status == lease::run_status::interrupted);
}

namespace {

/// a has won report's slot early (within early_tolerance: the slot is 1 s
/// ahead, claimed 600 ms on); op, the operator's store (leasectl), is
/// connected; then FLUSHALL, which keeps every connection open.
struct slot_won_early_then_flushed {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  std::string prefix = lease::testing::fresh_prefix("trigger-loss");
  lease::redis_store a = store_on(srv.url(), prefix, clock);
  lease::redis_store op = store_on(srv.url(), prefix, clock);
  time_point slot = clock.now() + 1s;
  lease::claim_result early;

  slot_won_early_then_flushed() {
    clock.advance(600ms);
    early = a.claim(request("report", slot, "a1"));
    REQUIRE(early.outcome == claim_outcome::won);
    REQUIRE_FALSE(op.get({"elsewhere", slot}));  // connected before the loss
    srv.command({"FLUSHALL"});
  }
};

}  // namespace

// rules::trigger_slot on Redis: a trigger asked within a second of a loss
// the store noticed takes a slot past every slot that may have run before
// it (a scheduled run of that millisecond, won early and forgotten, would
// otherwise share the manual run's key).
TEST_CASE("after FLUSHALL a trigger in the very millisecond of a slot won early before it takes a slot past the loss") {
  slot_won_early_then_flushed f;
  f.clock.advance(100ms);
  const time_point lost_at = f.clock.now();
  const auto noticed = f.a.claim(request("report", f.slot - 1h, "a2"));  // a notices the loss (marker, fence)
  REQUIRE(noticed.outcome == claim_outcome::quarantined);
  REQUIRE(noticed.record.lease_end == lost_at + 30s);

  f.clock.advance(300ms);  // the slot's own millisecond
  // The job's own record of the loss ('q'), or the store's (the marker's
  // quarantine, for a job whose loss no claim detected: "unseen").
  SECTION("through the store that noticed the loss") {
    CHECK(f.a.trigger("report") == lost_at + 1001ms);
    CHECK(f.a.trigger("unseen") == lost_at + 1001ms);
  }
  SECTION("through a store that learns of it from the marker's quarantine") {
    auto late = store_on(f.srv.url(), f.prefix, f.clock);  // connects now: reads the quarantine
    CHECK(late.trigger("report") == lost_at + 1001ms);
    CHECK(late.trigger("unseen") == lost_at + 1001ms);
  }
  const time_point manual = lost_at + 1001ms;
  CHECK(f.a.triggers(std::vector<std::string>{"report"}) == std::vector<run_key>{{"report", manual}});
  f.clock.advance(30s);
  CHECK(f.a.claim(request("report", f.slot, "a3")).outcome == claim_outcome::quarantined);  // may have run: never again
  const auto won = f.a.claim(request("report", manual, "a4", claim_reason::manual));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.fence > f.early.record.fence);
}

// The same, before anything noticed the loss: the trigger script runs on
// the forgotten state, at the slot's millisecond. The marker read beside it
// notices the loss, and the trigger is asked again, past the horizon.
TEST_CASE("after FLUSHALL nothing noticed yet, a trigger in the millisecond of a slot won early moves past the loss") {
  slot_won_early_then_flushed f;
  f.clock.advance(400ms);  // the slot's own millisecond
  const time_point noticed = f.clock.now();
  const time_point manual = f.op.trigger("report");
  CHECK(manual == noticed + 1001ms);
  CHECK(has(f.op.take_notices(), "the marker key is gone"));
  CHECK(f.a.triggers(std::vector<std::string>{"report"}) == std::vector<run_key>{{"report", manual}});
  f.clock.advance(30s);
  // (Through op: a's first claim of the job would find its fence counter
  // below the one it saw, and record that loss again, from then.)
  const auto scheduled = f.op.claim(request("report", f.slot, "o1"));
  CHECK(scheduled.outcome == claim_outcome::quarantined);  // may have run: never again
  CHECK(scheduled.record.lease_end == lease::time_point::max());
  const auto won = f.op.claim(request("report", manual, "o2", claim_reason::manual));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.slot != f.slot);
  CHECK(won.record.fence > f.early.record.fence);
}

// Every instance remembers a fence of each job it claims, so after one
// FLUSHALL each job's first claim finds its counter below that fence again.
// A fence is at least the store's clock when it was won: one at most the
// recorded loss was won before it, and that loss explains it for every
// other job. Taken for a new loss, it restarted the store-wide quarantine
// at each job's first claim, and skipped (or never took over) the slots of
// every job up to then. The job itself stays cautious: runs of it won after
// the recorded loss and lost again would look the same to this instance.
TEST_CASE_METHOD(two_handles, "after FLUSHALL a fence won before the recorded loss does not restart every job's quarantine") {
  const run_key report{"report", clock.now()};
  REQUIRE(a.claim(request("report", report.slot, "a1")).outcome == claim_outcome::won);
  REQUIRE(a.claim(request("daily", report.slot, "a2")).outcome == claim_outcome::won);
  REQUIRE_FALSE(b.get({"elsewhere", report.slot}));  // b connected

  srv.command({"FLUSHALL"});
  clock.advance(1s);
  const time_point lost_at = clock.now();
  REQUIRE(b.claim(request("other", clock.now(), "b1")).outcome == claim_outcome::quarantined);  // b notices
  REQUIRE(has(b.take_notices(), "the marker key is gone"));
  clock.advance(31s);  // the quarantine is over

  // a's first claim since: daily's counter is behind the fence a saw. For
  // daily itself that is a loss noticed now (its slot may be one that ran)...
  auto daily = a.claim(request("daily", clock.now(), "a3"));
  CHECK(daily.outcome == claim_outcome::quarantined);
  CHECK(daily.record.lease_end == clock.now() + 30s);
  CHECK_FALSE(a.heartbeat(report, "a1", 30s));  // report's run is gone, and report's counter too
  const auto notices = a.take_notices();
  CAPTURE(all(notices));
  CHECK(has(notices, "another instance noticed it"));  // a adopts b's loss...
  CHECK_FALSE(has(notices, "found its fence counter below"));  // ...and proved no new one
  // ...but the store-wide quarantine did not start again: b's claims win.
  CHECK(b.claim(request("third", clock.now(), "b2")).outcome == claim_outcome::won);
  CHECK(b.claim(request("weekly", clock.now(), "b3")).outcome == claim_outcome::won);
  CHECK(b.claim(request("report", clock.now(), "b5")).outcome == claim_outcome::quarantined);  // report's own, from a's heartbeat
  CHECK_FALSE(has(b.take_notices(), "lost its state"));

  // A fence won after the recorded loss does prove a new one, for every job.
  clock.advance(31s);
  auto fresh = a.claim(request("daily", clock.now(), "a4"));
  REQUIRE(fresh.outcome == claim_outcome::won);
  CHECK(fresh.record.fence > static_cast<std::uint64_t>(lost_at.time_since_epoch().count()));
  auto keys = lease::detail::redis::keys_for(prefix, "daily");
  REQUIRE(srv.command({"DEL", keys.runs, keys.ended})->integer >= 1);
  clock.advance(1s);
  auto again = a.claim(request("daily", clock.now(), "a5"));
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == clock.now() + 30s);  // one lease after the new loss
  CHECK(has(a.take_notices(), "found its fence counter below fence " + std::to_string(fresh.record.fence)));
  CHECK(b.claim(request("fourth", clock.now(), "b4")).outcome == claim_outcome::quarantined);  // store-wide again
}

TEST_CASE_METHOD(two_handles, "a job whose keys alone vanished is detected by the fence an instance saw, and the quarantine is shared") {
  const run_key run{"report", clock.now()};
  auto first = a.claim(request("report", run.slot, "a1"));
  REQUIRE(first.outcome == claim_outcome::won);
  REQUIRE(b.claim(request("other", run.slot, "b0")).outcome == claim_outcome::won);
  // As an eviction of this job's keys would: the marker is still there.
  auto keys = lease::detail::redis::keys_for(prefix, "report");
  REQUIRE(srv.command({"DEL", keys.runs, keys.ended})->integer >= 1);

  // a's heartbeat is refused and proves the loss (its fence is above the job's counter).
  CHECK_FALSE(a.heartbeat(run, "a1", 30s));
  CAPTURE(all(a.take_notices()));
  // b never saw "report": the job's own quarantine stops it in the script...
  auto taken = b.claim(request("report", run.slot, "b1"));
  CHECK(taken.outcome == claim_outcome::quarantined);
  CHECK(taken.record.lease_end == clock.now() + 30s);
  // ...and the store-wide one every other job.
  CHECK(b.claim(request("third", run.slot, "b2")).outcome == claim_outcome::quarantined);
  CHECK(has(b.take_notices(), "another instance noticed it"));

  clock.advance(30s);
  auto later = b.claim(request("report", clock.now(), "b3"));  // a slot after the loss
  REQUIRE(later.outcome == claim_outcome::won);
  CHECK(later.record.fence > first.record.fence);
}

TEST_CASE("a claim of an instance that saw the job detects its lost state by itself") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("evict2");
  auto a = store_on(srv.url(), prefix, clock);
  const run_key run{"report", clock.now()};
  auto first = a.claim(request("report", run.slot, "a1"));
  REQUIRE(first.outcome == claim_outcome::won);
  auto keys = lease::detail::redis::keys_for(prefix, "report");
  srv.command({"DEL", keys.runs, keys.ended});
  clock.advance(1s);
  auto res = a.claim(request("report", run.slot + 1s, "a2"));
  CHECK(res.outcome == claim_outcome::quarantined);
  CHECK(res.record.lease_end == clock.now() + 30s);
  CHECK(has(a.take_notices(), "found its fence counter below fence 1700000000000 seen before"));
}

// As a promoted replica that lagged, or a restore from an older snapshot,
// leaves it: the slot's run is there, but older than the fence this handle
// saw. The claim script answers such a run without reading the job index
// only when the known fence is at most the run's own.
TEST_CASE_METHOD(two_handles, "a job's hash rolled back to an older copy is detected by a claim of a slot that copy still holds") {
  const run_key first{"report", clock.now()};
  REQUIRE(a.claim(request("report", first.slot, "a1")).outcome == claim_outcome::won);
  REQUIRE(a.finish(first, "a1", lease::run_status::success));
  auto keys = lease::detail::redis::keys_for(prefix, "report");
  auto dump = srv.command({"DUMP", keys.runs});
  REQUIRE(dump->type == REDIS_REPLY_STRING);
  const std::string copy(dump->str, dump->len);
  clock.advance(1s);
  auto second = a.claim(request("report", first.slot + 1s, "a2"));
  REQUIRE(second.outcome == claim_outcome::won);
  REQUIRE(srv.command({"RESTORE", keys.runs, "0", copy, "REPLACE"})->type == REDIS_REPLY_STATUS);

  // The copy holds the first slot finished, and a fence counter below the
  // second slot's fence, which a saw: a's claim of the first slot notices.
  auto res = a.claim(request("report", first.slot, "a3"));
  CHECK(res.outcome == claim_outcome::finished);
  CHECK(has(a.take_notices(), "found its fence counter below fence " + std::to_string(second.record.fence)));
  // Recorded in the job's hash: b, which never saw the job, does not start
  // the second slot a second time (the copy forgot a2).
  auto again = b.claim(request("report", first.slot + 1s, "b1"));
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == clock.now() + 30s);
}

TEST_CASE("keys evicted under allkeys-lru are detected as a loss") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("lru");
  auto a = store_on(srv.url(), prefix, clock);
  const run_key run{"report", clock.now()};
  REQUIRE(a.claim(request("report", run.slot, "a1")).outcome == claim_outcome::won);
  srv.command({"DEBUG", "POPULATE", "2000", "filler", "100"});
  srv.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  srv.command({"CONFIG", "SET", "maxmemory", "1"});
  (void)srv.command({"SET", "one-more", "x"});  // evicts every key it can, then answers OOM
  srv.command({"CONFIG", "SET", "maxmemory", "0"});
  auto stats = srv.command({"INFO", "stats"});
  REQUIRE(lease::detail::redis::info_field(stats.get(), "evicted_keys") != "0");
  REQUIRE(srv.command({"DBSIZE"})->integer == 0);

  CHECK(a.claim(request("report", run.slot, "a2")).outcome == claim_outcome::quarantined);
  CHECK(has(a.take_notices(), "lost its state"));
}

TEST_CASE("a fresh empty store is not quarantined, nor a restart that kept the state") {
  lease::testing::redis_server srv{{.append_only = true, .extra_args = {}}};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("fresh");
  auto a = store_on(srv.url(), prefix, clock);
  auto b = store_on(srv.url(), prefix, clock);
  REQUIRE(a.claim(request("report", clock.now(), "a1")).outcome == claim_outcome::won);
  REQUIRE(b.claim(request("other", clock.now(), "b1")).outcome == claim_outcome::won);
  srv.restart();  // the append-only file brings everything back
  CHECK(until_available([&] { return a.heartbeat({"report", clock.now()}, "a1", 30s); }));
  clock.advance(1s);
  CHECK(b.claim(request("third", clock.now(), "b2")).outcome == claim_outcome::won);
  CHECK_FALSE(has(a.take_notices(), "lost its state"));
  CHECK_FALSE(has(b.take_notices(), "lost its state"));
}

TEST_CASE("fences keep growing across a wipe on the server's own clock") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("realfence");
  auto a = store_on(srv.url(), prefix);
  auto req = request("report", a.now(), "a1");
  req.lease = 200ms;
  auto first = a.claim(req);
  REQUIRE(first.outcome == claim_outcome::won);
  CHECK(first.record.fence >= static_cast<std::uint64_t>(req.run.slot.time_since_epoch().count()));

  auto win_again = [&](std::string token) {
    req.token = std::move(token);
    req.reason = claim_reason::takeover;
    const auto end = std::chrono::steady_clock::now() + 5s;
    for (;;) {  // quarantined for one 200 ms lease after the loss was noticed
      auto res = until_available([&] { return a.claim(req); });
      if (res.outcome != claim_outcome::quarantined && res.outcome != claim_outcome::none) return res;
      REQUIRE(std::chrono::steady_clock::now() < end);
      req.reason = claim_reason::scheduled;  // the run is gone: claim a slot after the loss
      req.run.slot = a.now();
      req.deadline = req.run.slot + 30s;
      std::this_thread::sleep_for(20ms);
    }
  };
  srv.command({"FLUSHALL"});
  auto second = win_again("a2");
  REQUIRE(second.outcome == claim_outcome::won);
  CHECK(second.record.fence > first.record.fence);
  srv.restart();
  auto third = win_again("a3");
  REQUIRE(third.outcome == claim_outcome::won);
  CHECK(third.record.fence > second.record.fence);
}

TEST_CASE("the first connect tells what the server's persistence and eviction mean for exactly-once") {
  SECTION("no persistence") {
    lease::testing::redis_server srv;
    auto a = store_on(srv.url(), lease::testing::fresh_prefix("n"));
    CHECK(a.take_notices().empty());  // nothing before the first connect
    (void)a.get({"j", at(0)});
    auto notices = a.take_notices();
    REQUIRE(notices.size() == 1);
    CHECK(notices.front().find("redis at 127.0.0.1:" + std::to_string(srv.port()) +
                               ": no persistence (appendonly no, save ''): a restart forgets every run; "
                               "maxmemory-policy noeviction never evicts lease keys.") == 0);
    (void)a.get({"j", at(0)});
    CHECK(a.take_notices().empty());  // once
  }
  SECTION("append-only file and allkeys-lru") {
    lease::testing::redis_server srv{{.append_only = true, .extra_args = {"--maxmemory-policy", "allkeys-lru"}}};
    auto a = store_on(srv.url(), lease::testing::fresh_prefix("a"));
    (void)a.get({"j", at(0)});
    const std::string n = all(a.take_notices());
    CHECK(n.find("append-only file with fsync on every write: a restart keeps every run") != std::string::npos);
    CHECK(n.find("maxmemory-policy allkeys-lru may evict run state") != std::string::npos);
  }
  SECTION("CONFIG renamed away") {
    lease::testing::redis_server srv{{.append_only = false, .extra_args = {"--rename-command", "CONFIG", ""}}};
    auto a = store_on(srv.url(), lease::testing::fresh_prefix("c"));
    (void)a.get({"j", at(0)});
    const std::string n = all(a.take_notices());
    CHECK(n.find("persistence unknown (CONFIG is renamed or forbidden here") != std::string::npos);
  }
}

TEST_CASE("with replicas set a resent claim answered running with its own token waits for them too") {
  lease::testing::redis_server master;  // no replica: every WAIT falls short
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-resent"), clock);
  const run_key run{"report", clock.now()};
  // The first copy, applied but never answered (and never waited for): the
  // same request through a handle without replicas set.
  REQUIRE(lease::redis_store{o}.claim(request("report", run.slot, "t1")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  std::error_code err;
  try {
    (void)store.claim(request("report", run.slot, "t1"));  // the resend: running, with its own token
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  CHECK(err == lease::redis_errc::not_replicated);
  auto rec = store.get(run);
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK(rec->released);  // handed back: no handler runs on it
}

TEST_CASE("with replicas set a won claim waits for them and is released when they fall short") {
  lease::testing::redis_server master;
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait"), clock);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  const run_key run{"report", clock.now()};
  std::error_code err;
  std::string what;
  try {
    (void)store.claim(request("report", run.slot, "t1"));
  } catch (const lease::store_error& e) {
    err = e.code();
    what = e.what();
  }
  CHECK(err == lease::errc::unavailable);
  CHECK(err == lease::redis_errc::not_replicated);
  CHECK(what.find("acknowledged by 0 of 1 replicas within 50 ms") != std::string::npos);
  auto rec = store.get(run);
  REQUIRE(rec);
  CHECK(rec->released);  // handed back: no handler runs on an unreplicated claim

  const auto replica = replica_of(master);
  o.replica_timeout = 2000ms;
  lease::redis_store waiting{o};
  auto res = waiting.claim(request("report", run.slot, "t2"));
  CHECK(res.outcome == claim_outcome::won);
  CHECK(res.record.attempt == 2);
  CHECK(res.record.handovers == 1);  // the release was a handover, not a dead runner
  CHECK(replica->command({"EXISTS", lease::detail::redis::keys_for(o.prefix, "report").runs})->integer == 1);
}

// A failover to a replica that missed a renewal brings back the earlier
// lease end: a backup could take the run over while its runner, told it was
// renewed, goes on. So a renewal counts only once the replicas have it.
TEST_CASE("with replicas set a heartbeat the replicas lack throws not_replicated and counts once they have it") {
  lease::testing::redis_server master;  // no replica yet: every WAIT falls short
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-heartbeat"), clock);
  const run_key run{"report", clock.now()};
  REQUIRE(lease::redis_store{o}.claim(request("report", run.slot, "t1")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  clock.advance(10s);
  std::error_code err;
  std::string what;
  try {
    (void)store.heartbeat(run, "t1", 30s);
  } catch (const lease::store_error& e) {
    err = e.code();
    what = e.what();
  }
  CHECK(err == lease::redis_errc::not_replicated);
  CHECK(err == lease::errc::unavailable);  // retried at the next heartbeat; no renewal counted meanwhile
  CHECK(what.find("the heartbeat of job 'report' was acknowledged by 0 of 1 replicas within 50 ms") !=
        std::string::npos);
  CHECK(what.find("the renewal does not count") != std::string::npos);
  // A refused renewal needs no replica to be believed: it is refused.
  CHECK_FALSE(store.heartbeat(run, "not-the-token", 30s));

  const auto replica = replica_of(master);
  o.replica_timeout = 2000ms;
  lease::redis_store waiting{o};
  clock.advance(1s);
  CHECK(waiting.heartbeat(run, "t1", 30s));
  CHECK(waiting.get(run)->lease_end == clock.now() + 30s);
}

// WAIT answers for the writes of the connection it is sent on. A
// connection opened after the writes, in the same call, has written none
// of them: a reconnect that reaches another server at the same address (a
// managed endpoint moved to the new primary after a failover, or a
// proxy's) answered WAIT with that server's replicas, though the write
// reached no replica and the new primary never had it. (Back on the same
// server, Redis 7.0 moves the offset a WAIT waits for with every command
// of the connection, so the reconnect's own commands make it cover the
// write; a server that moves it only with the connection's writes answers
// at once there too.)
TEST_CASE("with replicas set: a WAIT on a connection opened after the writes counts no replica") {
  lease::testing::redis_server old_primary, new_primary;
  const auto old_replica = replica_of(old_primary), new_replica = replica_of(new_primary);
  std::string sha;
  for (auto* s : {&old_primary, &new_primary}) {
    const auto loaded = s->command({"SCRIPT", "LOAD", "return redis.call('INCR', KEYS[1])"});
    REQUIRE(loaded->type == REDIS_REPLY_STRING);
    sha.assign(loaded->str, loaded->len);
  }
  lease::testing::loopback_proxy endpoint(old_primary.port());
  lease::detail::redis::connection_settings s;
  s.where.port = endpoint.port();
  lease::detail::redis::router r(s, false);
  using argv_t = lease::detail::redis::argv_t;
  const argv_t write{"EVALSHA", sha, "1", "k"}, read{"GET", "k"};
  r.forget_writes();
  (void)r.exchange(std::span(&write, 1));
  REQUIRE(r.wait_replicas({"WAIT", "1", "5000"}) == 1);  // the replica is well

  std::int64_t acked = 0;
  {
    lease::testing::frozen stalled(*old_replica);
    r.forget_writes();
    (void)r.exchange(std::span(&write, 1));  // applied on the old primary, on no replica
    // The endpoint moves to the other server; the connection breaks and
    // the next command notices. The WAIT after it connects again, if it may.
    endpoint.retarget(new_primary.port());
    endpoint.cut_all();
    REQUIRE(lease::testing::wait_for([&] { return endpoint.cuts() == 1; }));
    CHECK_THROWS_AS(r.exchange(std::span(&read, 1)), lease::store_error);
    acked = r.wait_replicas({"WAIT", "1", "300"});
  }
  CHECK(acked < 1);
}

// Found by a review: after a SCRIPT FLUSH (or a restart) the EVALSHAs of a
// batch answer NOSCRIPT and are sent again one by one, and those resends
// were counted as short of replicas whatever the replica had: with
// replicas set, the first claim batch after it was released and thrown as
// not_replicated ("2 of 2 claims"), and the first finish batch told a
// notice that the replicas lacked its finishes. A resend goes out on the
// connection the batch wrote on, so the batch's WAIT covers it.
TEST_CASE("with replicas set a claim batch sent again after SCRIPT FLUSH is won") {
  lease::testing::redis_server master;
  const auto replica = replica_of(master);
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-noscript"), clock);
  o.replicas = 1;
  o.replica_timeout = 2000ms;
  lease::redis_store store{o};
  (void)store.get({"report", clock.now()});  // connects (loads the scripts): the connect notice comes now
  (void)store.take_notices();
  (void)master.command({"SCRIPT", "FLUSH"});
  const std::vector<claim_request> claims = {request("report", clock.now(), "t1"),
                                             request("batch", clock.now(), "t2")};
  std::vector<lease::claim_result> answers;
  REQUIRE_NOTHROW(answers = store.claim_many(claims));
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].outcome == claim_outcome::won);
  CHECK(answers[1].outcome == claim_outcome::won);
  for (const char* job : {"report", "batch"}) {
    const auto rec = store.get({job, clock.now()});
    REQUIRE(rec);
    CHECK_FALSE(rec->released);  // not handed back: its handler runs
    CHECK(replica->command({"EXISTS", lease::detail::redis::keys_for(o.prefix, job).runs})->integer == 1);
  }
  CHECK(store.take_notices().empty());
}

TEST_CASE("with replicas set a finish batch sent again after SCRIPT FLUSH is waited for") {
  lease::testing::redis_server master;
  const auto replica = replica_of(master);
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-noscript-finish"), clock);
  REQUIRE(lease::redis_store{o}.claim(request("report", clock.now(), "t1")).outcome == claim_outcome::won);
  REQUIRE(lease::redis_store{o}.claim(request("batch", clock.now(), "t2")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 2000ms;
  lease::redis_store store{o};
  (void)store.get({"report", clock.now()});  // connects (loads the scripts): the connect notice comes now
  (void)store.take_notices();
  (void)master.command({"SCRIPT", "FLUSH"});
  const std::vector<lease::finish_request> finishes = {{{"report", clock.now()}, "t1", lease::run_status::success},
                                                       {{"batch", clock.now()}, "t2", lease::run_status::failed}};
  CHECK(store.finish_many(finishes) == std::vector<bool>{true, true});
  CHECK(store.take_notices().empty());  // the replica has both finishes: nothing to tell
  CHECK(store.get({"batch", clock.now()})->status == lease::run_status::failed);
}

// The safety the resend keeps: a script sent again on a connection opened
// after the batch's writes (one dropped in between, as a failed recording
// of a loss between them leaves it) is counted as short of replicas, as
// any write whose WAIT would go out on another connection (router.hpp
// wait_each). Redis 7.0 would answer that WAIT with the replica at once.
TEST_CASE("with replicas set a script resent on a new connection counts none") {
  lease::testing::redis_server master;
  const auto replica = replica_of(master);
  lease::testing::loopback_proxy endpoint(master.port());
  lease::detail::redis::connection_settings s;
  s.where.port = endpoint.port();
  lease::detail::redis::router r(s, false);
  using lease::detail::redis::argv_t;
  using lease::detail::redis::script;
  r.open();  // loads the scripts
  (void)master.command({"SCRIPT", "FLUSH"});
  const argv_t write{"EVALSHA", r.sha(script::pause), "1", "k"}, read{"GET", "k"};
  auto add_key = [](argv_t& a) { a.insert(a.end(), {"1", "k"}); };
  std::size_t node = 7;

  r.forget_writes();
  auto first = r.exchange(std::span(&write, 1));
  REQUIRE(lease::detail::redis::connection::error_code_of(first.front().get()) == lease::redis_errc::noscript);
  (void)r.eval(script::pause, add_key, &node);  // the resend, on the same connection
  CHECK(node == 0);
  CHECK(r.wait_each({"WAIT", "1", "5000"}) == std::map<std::size_t, std::int64_t>{{0, 1}});

  (void)master.command({"SCRIPT", "FLUSH"});
  r.forget_writes();
  first = r.exchange(std::span(&write, 1));
  REQUIRE(lease::detail::redis::connection::error_code_of(first.front().get()) == lease::redis_errc::noscript);
  endpoint.cut_all();
  REQUIRE(lease::testing::wait_for([&] { return endpoint.cuts() == 1; }));
  CHECK_THROWS_AS(r.exchange(std::span(&read, 1)), lease::store_error);  // notices the cut
  node = 7;
  (void)r.eval(script::pause, add_key, &node);  // reconnects: another connection
  CHECK(node == 0);
  CHECK(r.wait_each({"WAIT", "1", "300"}) == std::map<std::size_t, std::int64_t>{{0, -1}});
}

// A batch of claims that starts no handler waits for no replica, as one
// claim() does: WAIT counts every write of the connection, so once it had
// written while a replica lagged (a heartbeat of its own run), every batch
// of a backup answered `running` fell short and was thrown (the sim found).
TEST_CASE("with replicas set a claim batch that starts nothing does not wait for them") {
  lease::testing::redis_server master;  // no replica: every WAIT falls short
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-nothing"), clock);
  REQUIRE(lease::redis_store{o}.claim(request("report", clock.now(), "t1")).outcome == claim_outcome::won);
  REQUIRE(lease::redis_store{o}.claim(request("batch", clock.now(), "t2")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  // This connection writes while the replica is missing: a renewal.
  std::error_code err;
  try {
    (void)store.heartbeat({"report", clock.now()}, "t1", 30s);
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  CHECK(err == lease::redis_errc::not_replicated);
  const std::vector<claim_request> backups = {request("report", clock.now(), "b1"),
                                              request("batch", clock.now(), "b2")};
  std::vector<lease::claim_result> answers;
  REQUIRE_NOTHROW(answers = store.claim_many(backups));
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].outcome == claim_outcome::running);
  CHECK(answers[1].outcome == claim_outcome::running);
}

// A refusal needs no replica to be believed: in a batch whose renewals the
// replicas lack it is still answered (partial_batch_error), so its runner
// stops now instead of at its self-abort deadline.
TEST_CASE("with replicas set a refusal is answered in a batch whose renewals the replicas lack") {
  lease::testing::redis_server master;  // no replica: every WAIT falls short
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-partial"), clock);
  REQUIRE(lease::redis_store{o}.claim(request("report", clock.now(), "t1")).outcome == claim_outcome::won);
  REQUIRE(lease::redis_store{o}.claim(request("batch", clock.now(), "t2")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  const std::vector<lease::heartbeat_request> beats = {{{"report", clock.now()}, "t1", 30s},
                                                       {{"batch", clock.now()}, "not-ours", 30s}};
  std::vector<std::optional<bool>> answers;
  std::string what;
  try {
    (void)store.heartbeat_many(beats);
  } catch (const lease::partial_batch_error<bool>& e) {
    CHECK(e.code() == lease::redis_errc::not_replicated);
    answers = e.answers();
    what = e.what();
  }
  CHECK(answers == std::vector<std::optional<bool>>{std::nullopt, false});
  CHECK(what.find("the heartbeat of job 'report' was acknowledged by 0 of 1 replicas") != std::string::npos);
}

// A finish cannot be taken back once the master has it; what is left is to
// say what a failover before the replicas catch up would do.
TEST_CASE("with replicas set a finish the replicas lack is recorded and told in a notice") {
  lease::testing::redis_server master;
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(master.url(), lease::testing::fresh_prefix("wait-finish"), clock);
  REQUIRE(lease::redis_store{o}.claim(request("report", clock.now(), "t1")).outcome == claim_outcome::won);
  REQUIRE(lease::redis_store{o}.claim(request("batch", clock.now(), "t2")).outcome == claim_outcome::won);
  REQUIRE(lease::redis_store{o}.claim(request("other", clock.now(), "t3")).outcome == claim_outcome::won);
  o.replicas = 1;
  o.replica_timeout = 50ms;
  lease::redis_store store{o};
  (void)store.get({"report", clock.now()});  // connects: the connect notice comes now
  (void)store.take_notices();
  CHECK(store.finish({"report", clock.now()}, "t1", lease::run_status::success));
  CHECK(store.get({"report", clock.now()})->status == lease::run_status::success);
  auto notices = store.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("the finish of job 'report' was acknowledged by 0 of 1 replicas within 50 ms; it is "
                        "recorded on the master, but a failover before the replicas catch up would bring the run "
                        "back as running") != std::string::npos);
  const std::vector<lease::finish_request> batch = {{{"batch", clock.now()}, "t2", lease::run_status::failed},
                                                    {{"other", clock.now()}, "t3", std::nullopt}};
  CHECK(store.finish_many(batch) == std::vector<bool>{true, true});
  notices = store.take_notices();
  REQUIRE(notices.size() == 1);  // the release needs no replica: a lost one only delays the takeover
  CHECK(notices[0].find("the finish of job 'batch' was acknowledged by 0 of 1") != std::string::npos);
  CHECK(notices[0].find("more in its batch") == std::string::npos);
  // A refused finish changed nothing: nothing to tell.
  CHECK_FALSE(store.finish({"report", clock.now()}, "t1", lease::run_status::success));
  CHECK(store.take_notices().empty());
}

// Found by a review: a finish settled by reading it back after a lost reply
// was written on the lost connection, which no WAIT reaches: the WAIT on
// the new one answered for nothing, and no notice came.
TEST_CASE("with replicas set a finish settled by reading it back is told as unknown to the replicas") {
  lease::testing::redis_server master;
  const auto replica = replica_of(master);
  lease::testing::loopback_proxy proxy{master.port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options_on(proxy.url(), lease::testing::fresh_prefix("wait-readback"), clock);
  o.replicas = 1;
  o.replica_timeout = 2000ms;
  lease::redis_store store{o};
  const run_key run{"report", clock.now()};
  REQUIRE(store.claim(request("report", run.slot, "t1")).outcome == claim_outcome::won);  // replicated
  (void)store.take_notices();
  proxy.lose_next_reply();
  CHECK(store.finish(run, "t1", lease::run_status::success));
  CHECK(proxy.cuts() == 1);
  const auto notices = store.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("the finish of job 'report' was settled by reading it back after a lost reply, so whether 1 "
                        "replicas have it is unknown") != std::string::npos);
}

TEST_CASE("a pause is stored in the job's hash: every handle obeys it, it survives a kill -9 with AOF, and a wipe forgets it") {
  lease::testing::redis_server srv{{.append_only = true, .extra_args = {}}};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string prefix = lease::testing::fresh_prefix("pause");
  auto a = store_on(srv.url(), prefix, clock);
  auto b = store_on(srv.url(), prefix, clock);
  CHECK(a.pause("report"));  // a job that never ran
  CHECK_FALSE(a.pause("report"));
  CHECK(b.paused("report"));
  CHECK_FALSE(b.paused("other"));
  CHECK(b.claim(request("report", clock.now(), "b1")).outcome == claim_outcome::paused);
  CHECK_FALSE(b.get({"report", clock.now()}));  // nothing was created
  CHECK(b.claim(request("other", clock.now(), "b2")).outcome == claim_outcome::won);

  srv.restart();  // kill -9; the AOF (fsync always) has the pause
  CHECK(until_available([&] { return b.paused("report"); }));
  CHECK(b.claim(request("report", clock.now(), "b3")).outcome == claim_outcome::paused);
  CHECK(until_available([&] { return a.resume("report"); }));  // a reconnects after the restart
  CHECK_FALSE(a.resume("report"));
  CHECK(b.claim(request("report", clock.now(), "b4")).outcome == claim_outcome::won);

  CHECK(a.pause("report"));
  (void)srv.command({"FLUSHALL"});  // the store lost its state: the pause with it
  clock.advance(1s);
  (void)until_available([&] { return b.claim(request("report", clock.now(), "b5")); });  // notices the loss
  const auto notices = b.take_notices();
  CAPTURE(all(notices));
  CHECK(has(notices, "a job paused in the lost keys is no longer paused (pause it again)"));
  CHECK_FALSE(b.paused("report"));
}

// A manual claim answered `paused` has answered the trigger in the store.
// If the marker read beside it then shows a loss this handle did not know
// of, the answer must stand: turned into `quarantined`, the scheduler would
// send the claim again after the quarantine, find no trigger (`none`), and
// the trigger would end without a word (rules::quarantine_after_loss; found
// by the property tests on lease::sim, session 31).
TEST_CASE_METHOD(two_handles, "a paused job's trigger answered paused beside a loss the handle learns of then stays answered paused") {
  REQUIRE_FALSE(a.get({"elsewhere", clock.now()}));  // both connected: they know the marker as it is now
  REQUIRE_FALSE(b.get({"elsewhere", clock.now()}));

  srv.command({"FLUSHALL"});  // the connections stay up
  const time_point lost_at = clock.now();
  REQUIRE(b.claim(request("other", clock.now(), "b1")).outcome == claim_outcome::quarantined);  // b notices
  REQUIRE(has(b.take_notices(), "the marker key is gone"));
  REQUIRE(b.pause("report"));
  const time_point manual = b.trigger("report");
  REQUIRE(manual == lost_at + 1001ms);  // past the loss's horizon
  clock.advance(5ms);  // no longer early

  // a sends what it knew (no loss); the script answers paused and takes the
  // trigger; the marker read after it tells a of b's loss.
  const auto answer = a.claim(request("report", manual, "a1", claim_reason::manual));
  CHECK(answer.outcome == claim_outcome::paused);
  CHECK(b.triggers(std::vector<std::string>{"report"}).empty());  // answered, not left pending
  CHECK_FALSE(a.get({"report", manual}));  // nothing was created
  // a knows of the loss now: a scheduled claim inside the quarantine waits.
  CHECK(a.claim(request("third", clock.now(), "a2")).outcome == claim_outcome::quarantined);
}
