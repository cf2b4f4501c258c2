// postgres_store's "trigger now" (TriggerStore, PushTriggerStore) beyond the
// conformance suite, against the binary's one real server: the migration of
// a version 4 schema, two store objects racing for one trigger, the push of a
// trigger to another store's listener (on a channel of its own), and the
// listener's f("") after its connection was killed, and the SELECT 1 that
// finds a connection that stopped answering without a word.
#include <algorithm>
#include <csignal>
#include <atomic>
#include <barrier>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::run_status;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::postgres_options options(std::string schema, std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::postgres_options o;
  o.conninfo = lease::testing::shared_server().conninfo();
  o.schema = std::move(schema);
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return o;
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

lease::testing::postgres_server& srv() { return lease::testing::shared_server(); }

/// Polls `pred` every 10 ms for up to 10 s: a bounded wait on a condition.
template <class Pred>
bool wait_for(Pred pred) {
  for (int i = 0; i < 1000 && !pred(); ++i) std::this_thread::sleep_for(10ms);
  return pred();
}

/// What a trigger listener heard, for the test thread to read.
struct heard_log {
  std::mutex m;
  std::vector<std::string> jobs;
  void add(std::string_view j) {
    std::scoped_lock lock(m);
    jobs.emplace_back(j);
  }
  std::size_t count(const std::string& j) {
    std::scoped_lock lock(m);
    return static_cast<std::size_t>(std::count(jobs.begin(), jobs.end(), j));
  }
  std::size_t size() {
    std::scoped_lock lock(m);
    return jobs.size();
  }
};

/// The claim statement as version 4 of this library prepared it (14 columns,
/// no o_manual): what an instance still connected during the migration sends.
constexpr const char* v4_claim_sql =
    "SELECT o_outcome, o_now, o_detected, o_marker, o_lost_at, o_slot, o_attempt, o_token, o_fence, o_runner, "
    "o_status, o_lease_end, o_released, o_handovers FROM @.lease_claim($1::int8, $2::text, $3::int8, $4::bytea, "
    "$5::int8, $6::bytea, $7::bytea, $8::int4, $9::int8, $10::int4, $11::int8, $12::int4, $13::int4, $14::int8)";

lease::detail::postgres::params v4_claim_params(std::string_view job, std::int64_t slot, std::string_view token) {
  lease::detail::postgres::params p;
  p.i64(slot).text("").i64(0).bytes(job).i64(slot).bytes("r-" + std::string(token)).bytes(token).i32(0).i64(30'000)
      .i32(3).i64(slot + 3'600'000).i32(0).i32(10).i64(300'000);
  return p;
}

}  // namespace

TEST_CASE("a version 4 schema with live runs is migrated to version 9: no trigger pending, no run manual, runs and "
          "pauses kept, triggers then held, and a version 4 instance still connected keeps claiming") {
  namespace pg = lease::detail::postgres;
  const std::string schema = lease::testing::fresh_schema("v4");
  // Version 4 exactly as the previous release left it: its migrations, in order.
  srv().sql(pg::in_schema(pg::schema_at(4), schema));
  const std::string q = "\"" + schema + "\"";
  REQUIRE(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "4");
  // An instance of version 4, connected, its claim prepared: a run won through it, and a paused job.
  pg::connection old{{.conninfo = srv().conninfo()}};
  REQUIRE(old.open());
  old.prepare("old_claim", pg::in_schema(v4_claim_sql, schema));
  {
    auto r = old.exec_prepared("old_claim", v4_claim_params("old", 1'700'000'000'000, "t1"), "old claim");
    REQUIRE(pg::row{r.get(), 0}.i32(0, "old claim") == 0);  // won
  }
  srv().sql("INSERT INTO " + q + ".lease_jobs (job, fence, paused) VALUES ('paused'::bytea, 0, true)");

  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(schema, clock)};
  const auto rec = store.get({"old", clock.now()});  // connects: migrates
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "9");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_schema_version") == "1");
  // Version 5's registrations (none yet), no placeholder job row, no purge yet; stop and purge functions.
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_registrations") == "0");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_jobs WHERE placeholder") == "0");
  CHECK(srv().sql("SELECT coalesce(purged_at::text, 'none') FROM " + q + ".lease_store") == "none");
  CHECK(srv().sql("SELECT count(*)::text FROM pg_proc WHERE proname IN ('lease_stop', 'lease_purge') AND "
                  "pronamespace = '" + q + "'::regnamespace") == "2");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_jobs WHERE trigger IS NOT NULL") == "0");
  CHECK(srv().sql("SELECT string_agg(manual::text, ',') FROM " + q + ".lease_runs") == "false");
  CHECK(srv().sql("SELECT (prosrc LIKE '%v_trigger%')::text FROM pg_proc WHERE proname = 'lease_claim' AND "
                  "pronamespace = '" + q + "'::regnamespace") == "true");
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK_FALSE(rec->manual);
  CHECK(store.paused("paused"));
  CHECK(store.triggers(std::vector<std::string>{"old", "paused"}).empty());
  // The run won under version 4 is still the runner's.
  CHECK(store.claim(request("old", rec->slot, "t2", claim_reason::takeover)).outcome == claim_outcome::running);
  CHECK(store.heartbeat({"old", rec->slot}, "t1", 30s));

  // The version 4 instance, still connected, keeps claiming on the migrated schema (its statement names the
  // 14 columns it reads; the function it calls was replaced).
  {
    auto r = old.exec_prepared("old_claim", v4_claim_params("old4", 1'700'000'000'000, "o1"), "old claim");
    REQUIRE(PQnfields(r.get()) == 14);
    CHECK(pg::row{r.get(), 0}.i32(0, "old claim") == 0);  // won
    const auto o1 = store.get({"old4", clock.now()});
    REQUIRE(o1);
    CHECK(o1->token == "o1");
    CHECK_FALSE(o1->manual);
  }

  // Version 5's trigger: held until a manual claim answers it; the run is marked manual.
  CHECK(store.finish({"old", rec->slot}, "t1", run_status::success));
  clock.advance(5s);
  const time_point slot = store.trigger("old");
  CHECK(slot == clock.now());
  clock.advance(1s);
  CHECK(store.trigger("old") == slot);  // pending: the same request
  CHECK(store.triggers(std::vector<std::string>{"paused", "old"}) == std::vector<lease::run_key>{{"old", slot}});
  const auto jobs = store.list_jobs();
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].name == "old");
  CHECK(jobs[0].trigger == slot);
  CHECK_FALSE(jobs[2].trigger);
  // A scheduled claim of that very millisecond wins it as a scheduled run and leaves the trigger pending;
  // the manual claim then finds that run: its answer.
  CHECK(store.claim(request("old", slot, "m0")).outcome == claim_outcome::won);
  CHECK(store.triggers(std::vector<std::string>{"old"}).size() == 1);
  CHECK(store.claim(request("old", slot, "m1", claim_reason::manual)).outcome == claim_outcome::running);
  CHECK(store.triggers(std::vector<std::string>{"old"}).empty());
  CHECK_FALSE(store.get({"old", slot})->manual);
  CHECK(store.finish({"old", slot}, "m0", run_status::success));
  clock.advance(1s);
  const time_point slot2 = store.trigger("old");
  const auto won = store.claim(request("old", slot2, "m2", claim_reason::manual));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.fence > rec->fence);
  CHECK(store.triggers(std::vector<std::string>{"old"}).empty());
  CHECK(store.claim(request("old", slot2, "m3", claim_reason::manual)).outcome == claim_outcome::running);
  const auto runs = store.list_runs("old", 1);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
  CHECK(runs[0].token == "m2");
  // A paused job's trigger is answered `paused`, and no longer pending.
  const time_point p = store.trigger("paused");
  CHECK(store.claim(request("paused", p, "p1", claim_reason::manual)).outcome == claim_outcome::paused);
  CHECK(store.triggers(std::vector<std::string>{"paused"}).empty());
  CHECK_FALSE(store.get({"paused", p}));
}

// rules::trigger_slot on PostgreSQL: the trigger that notices a lost schema
// takes a slot past every slot that may have run before (a scheduled run of
// its very millisecond, won early and forgotten, would otherwise share the
// manual run's key).
TEST_CASE("a trigger that notices a dropped schema in the millisecond of a slot won early takes a slot past the loss") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store s{options(lease::testing::fresh_schema("trigger_loss"), clock)};
  const time_point slot = clock.now() + 1s;
  clock.advance(600ms);
  const auto early = s.claim(request("report", slot, "a1"));  // within early_tolerance
  REQUIRE(early.outcome == claim_outcome::won);

  srv().sql("DROP SCHEMA \"" + s.options().schema + "\" CASCADE");
  clock.advance(400ms);
  const time_point manual = s.trigger("report");  // notices the loss at the slot's own millisecond
  CHECK(s.lost_at() == slot);
  CHECK(manual == slot + 1001ms);
  CHECK(s.trigger("report") == manual);  // idempotent while pending
  clock.advance(30s);
  CHECK(s.claim(request("report", slot, "a2")).outcome == claim_outcome::quarantined);  // may have run: never again
  const auto won = s.claim(request("report", manual, "a3", claim_reason::manual));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.fence > early.record.fence);
}

// A backup holds what was running and pending when it was taken, not what
// ended since. Restored (here by copying the two tables back; lease_store
// has not changed since the backup, so this is the whole database as it
// was: the marker is the same, so only the fences an instance saw can
// tell), a run shows as running
// that ran to its end, and a trigger as pending that was answered. Inside
// the loss's horizon neither runs again (store-rules.md, cases 4a and 14), a
// trigger asked again moves past it, and a job whose fence was won after
// the backup but before the loss was noticed does not move the loss on.
TEST_CASE("a schema restored from a backup runs nothing again that may have run since the backup") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("restored");
  lease::postgres_store a{options(schema, clock)};
  lease::postgres_store b{options(schema, clock)};
  const time_point t0 = clock.now();
  REQUIRE(a.claim(request("report", t0, "a1")).outcome == claim_outcome::won);
  const time_point cleanup = a.trigger("cleanup");
  const time_point audit = a.trigger("audit");
  const std::string q = "\"" + schema + "\"";
  srv().sql("CREATE TABLE " + q + ".bk_runs AS SELECT * FROM " + q + ".lease_runs; CREATE TABLE " + q +
            ".bk_jobs AS SELECT * FROM " + q + ".lease_jobs");  // the backup

  clock.advance(10s);
  REQUIRE(a.finish({"report", t0}, "a1", run_status::success));  // report ran to its end
  REQUIRE(a.claim(request("cleanup", cleanup, "a2", claim_reason::manual)).outcome == claim_outcome::won);
  REQUIRE(a.finish({"cleanup", cleanup}, "a2", run_status::success));  // so did the trigger's run
  const auto daily = a.claim(request("daily", clock.now(), "a3"));  // won after the backup
  REQUIRE(daily.outcome == claim_outcome::won);
  srv().sql("DELETE FROM " + q + ".lease_runs; INSERT INTO " + q + ".lease_runs SELECT * FROM " + q +
            ".bk_runs; DELETE FROM " + q + ".lease_jobs; INSERT INTO " + q + ".lease_jobs SELECT * FROM " + q +
            ".bk_jobs");  // restored

  clock.advance(1s);
  const time_point noticed = clock.now();
  // a saw cleanup's fence above the restored counter: the loss, noticed.
  const auto first = a.claim(request("cleanup", cleanup, "a4", claim_reason::manual));
  CHECK(first.outcome == claim_outcome::quarantined);
  CHECK(a.lost_at() == noticed);

  clock.advance(31s);  // the quarantine is over
  // daily's fence was won before the loss was noticed: that loss explains
  // it, and the quarantine does not start again.
  CHECK(a.claim(request("daily", clock.now(), "a5")).outcome == claim_outcome::won);
  CHECK(a.lost_at() == noticed);
  CHECK(b.claim(request("weekly", clock.now(), "b0")).outcome == claim_outcome::won);

  const auto taken = b.claim(request("report", t0, "b1", claim_reason::takeover));
  CHECK(taken.outcome == claim_outcome::finished);  // not won: it may have run (it did)
  CHECK(taken.record.status == run_status::interrupted);
  CHECK(taken.record.attempt == 1);

  const auto manual = b.claim(request("cleanup", cleanup, "b2", claim_reason::manual));
  CHECK(manual.outcome == claim_outcome::quarantined);  // its slot may be a forgotten run's
  CHECK(manual.record.lease_end == time_point::max());
  CHECK(b.triggers(std::vector<std::string>{"cleanup"}).empty());  // answered, not run

  REQUIRE(b.triggers(std::vector<std::string>{"audit"}).size() == 1);
  const time_point moved = b.trigger("audit");  // asked again: past the loss's horizon
  CHECK(moved > audit);
  CHECK(moved > noticed + 1s);
  CHECK(b.triggers(std::vector<std::string>{"audit"}).at(0).slot == moved);
}

TEST_CASE("a heartbeat refused by a restored schema proves the loss: no backup takes over again a run already taken over") {
  // A failover to a standby that lacked the last writes, or a restore: the
  // store forgot that b took report@t0 over. b's runner still runs it; its
  // heartbeat, refused, carries the fence it won, above the restored
  // counter. Without the proof c's takeover would win attempt 2 a second
  // time while b's handler runs (two handlers of one run).
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("hbproof");
  lease::postgres_store a{options(schema, clock)}, b{options(schema, clock)}, c{options(schema, clock)};
  const time_point t0 = clock.now();
  REQUIRE(a.claim(request("report", t0, "a1")).outcome == claim_outcome::won);
  const std::string q = "\"" + schema + "\"";
  srv().sql("CREATE TABLE " + q + ".bk_runs AS SELECT * FROM " + q + ".lease_runs; CREATE TABLE " + q +
            ".bk_jobs AS SELECT * FROM " + q + ".lease_jobs");  // the backup: a's attempt 1 running

  clock.advance(31s);  // a died: its lease ran out
  const auto taken = b.claim(request("report", t0, "b1", claim_reason::takeover));
  REQUIRE(taken.outcome == claim_outcome::won);
  REQUIRE(taken.record.attempt == 2);
  srv().sql("DELETE FROM " + q + ".lease_runs; INSERT INTO " + q + ".lease_runs SELECT * FROM " + q +
            ".bk_runs; DELETE FROM " + q + ".lease_jobs; INSERT INTO " + q + ".lease_jobs SELECT * FROM " + q +
            ".bk_jobs");  // restored: attempt 1 running, its lease long over

  clock.advance(1s);
  const time_point noticed = clock.now();
  SECTION("one heartbeat") {
    CHECK_FALSE(b.heartbeat({"report", t0}, "b1", 30s));  // refused: the store forgot attempt 2...
  }
  SECTION("heartbeat_many") {
    REQUIRE(b.claim(request("audit", clock.now(), "b2")).outcome == claim_outcome::won);
    const std::vector<lease::heartbeat_request> batch{{{"report", t0}, "b1", 30s}, {{"audit", clock.now()}, "b2", 30s}};
    CHECK(b.heartbeat_many(batch) == std::vector<bool>{false, true});
  }
  CHECK(b.lost_at() == noticed);  // ...and the refusal proved it
  CHECK(c.lost_at() == noticed);                         // recorded in the store, for every instance

  const auto again = c.claim(request("report", t0, "c1", claim_reason::takeover));
  CHECK(again.outcome != claim_outcome::won);  // it may be running (it is): never taken over again
  clock.advance(31s);                          // the quarantine is over, b's runner long stopped
  const auto later = c.claim(request("report", t0, "c2", claim_reason::takeover));
  CHECK(later.outcome == claim_outcome::finished);  // inside the loss's horizon: interrupted, not run again
  CHECK(later.record.status == run_status::interrupted);

  // A heartbeat refused for a reason that is no loss proves nothing.
  const auto weekly = a.claim(request("weekly", clock.now(), "a2"));
  REQUIRE(weekly.outcome == claim_outcome::won);
  REQUIRE(a.finish({"weekly", weekly.record.slot}, "a2", run_status::success));
  CHECK_FALSE(a.heartbeat({"weekly", weekly.record.slot}, "a2", 30s));
  CHECK(a.lost_at() == noticed);
}

TEST_CASE("two store objects claiming one trigger at once: exactly one wins it, every time") {
  const std::string schema = lease::testing::fresh_schema("trig2");
  // The server's clock: both stores read the same one, as two instances do.
  lease::postgres_store a{options(schema)}, b{options(schema)};
  constexpr int rounds = 40;
  const std::string job = "nightly 'report'";
  time_point last{};
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    // A new millisecond, so that this round's trigger is a new run.
    REQUIRE(wait_for([&] { return a.now() > last; }));
    std::barrier sync(2);
    time_point slot_a{}, slot_b{};
    lease::claim_result res_a, res_b;
    std::string error_a, error_b;
    auto instance = [&](lease::postgres_store& s, time_point& slot, lease::claim_result& res, const std::string& who,
                        std::string& error) {
      try {
        slot = s.trigger(job);  // both ask (an operator on each): one request
      } catch (const std::exception& e) {
        error = e.what();
      }
      sync.arrive_and_wait();
      try {
        if (error.empty()) res = s.claim(request(job, slot, who + std::to_string(round), claim_reason::manual));
      } catch (const std::exception& e) {
        error = e.what();
      }
    };
    std::thread ta([&] { instance(a, slot_a, res_a, "a", error_a); });
    std::thread tb([&] { instance(b, slot_b, res_b, "b", error_b); });
    ta.join();
    tb.join();
    REQUIRE(error_a.empty());  // neither fails: the claims wait for each other on the job's row
    REQUIRE(error_b.empty());
    CHECK(slot_a == slot_b);
    last = slot_a;
    const int wins = (res_a.outcome == claim_outcome::won) + (res_b.outcome == claim_outcome::won);
    REQUIRE(wins == 1);
    const auto& winner = res_a.outcome == claim_outcome::won ? res_a : res_b;
    const auto& loser = res_a.outcome == claim_outcome::won ? res_b : res_a;
    CHECK(loser.outcome == claim_outcome::running);
    CHECK(loser.record.token == winner.record.token);
    CHECK(winner.record.manual);
    CHECK(a.triggers(std::vector<std::string>{job}).empty());
    CHECK(a.finish({job, slot_a}, winner.record.token, run_status::success));
  }
  // Every round's run, once, each manual.
  const auto runs = b.list_runs(job, 1000);
  CHECK(runs.size() == static_cast<std::size_t>(rounds));
  CHECK(std::all_of(runs.begin(), runs.end(), [](const lease::run_record& r) { return r.manual && r.attempt == 1; }));
}

TEST_CASE("a trigger by one store reaches another store's trigger listener, not its release listener, and stop "
          "waits for a call under way") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("tpush");
  heard_log triggers, releases;
  lease::postgres_store watcher{options(schema, clock)};
  lease::postgres_store op{options(schema, clock)};
  watcher.listen_triggers([&](std::string_view j) { triggers.add(j); });
  watcher.listen_releases([&](std::string_view j) { releases.add(j); });
  // Listening: the first LISTEN is followed by one "poll once" (a trigger before it was not heard).
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1 && triggers.count("") == 1; }));

  const std::string job = "it's {a} job ✓";
  const time_point slot = op.trigger(job);
  CHECK(wait_for([&] { return triggers.count(job) == 1; }));
  // The instance that heard it claims it.
  CHECK(watcher.claim(request(job, slot, "w1", claim_reason::manual)).outcome == claim_outcome::won);
  CHECK(watcher.release({job, slot}, "w1"));
  CHECK(wait_for([&] { return releases.count(job) == 1; }));
  // A name too long to announce: "poll once".
  const std::string long_name(5000, 'x');
  (void)op.trigger(long_name);
  CHECK(wait_for([&] { return triggers.count("") == 2; }));
  CHECK(triggers.count(job) == 1);  // the release did not reach the trigger listener

  // Stop waits for a call under way (a slow listener).
  std::atomic<bool> entered{false}, returned{false};
  watcher.listen_triggers([&](std::string_view) {
    entered = true;
    std::this_thread::sleep_for(300ms);  // a slow listener, not a wait for something
    returned = true;
  });
  (void)op.trigger("slow");
  REQUIRE(wait_for([&] { return entered.load(); }));
  watcher.listen_triggers({});
  CHECK(returned);
  // Releases are still heard on the same connection; then the thread stops with the last listener.
  clock.advance(1s);
  REQUIRE(op.claim(request("ends", clock.now(), "e1")).outcome == claim_outcome::won);
  CHECK(op.finish({"ends", clock.now()}, "e1", run_status::success));
  CHECK(wait_for([&] { return releases.count("ends") == 1; }));
  CHECK(watcher.listener_connects() == 1);
  watcher.listen_releases({});
  CHECK(watcher.listener_connects() == 0);
}

TEST_CASE("the trigger listener's connection killed: it reconnects and says 'poll once' (an empty job name), and hears the next "
          "trigger") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("tkill");
  heard_log heard;
  lease::postgres_store watcher{options(schema, clock)};
  lease::postgres_store op{options(schema, clock)};
  watcher.listen_triggers([&](std::string_view j) { heard.add(j); });
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1 && heard.count("") == 1; }));
  (void)op.trigger("before");
  REQUIRE(wait_for([&] { return heard.count("before") == 1; }));

  CHECK(srv().sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
                  "'lease-listener' AND query LIKE 'LISTEN%" + schema + ".trigger%'") == "1");
  // A trigger while it is down is not pushed: the "poll once" after the reconnect finds it.
  clock.advance(1s);
  const time_point missed = op.trigger("missed");
  CHECK(wait_for([&] { return watcher.listener_connects() == 2 && heard.count("") == 2; }));
  CHECK(watcher.triggers(std::vector<std::string>{"before", "missed"}) ==
        std::vector<lease::run_key>{{"before", at(1'700'000'000'000)}, {"missed", missed}});
  (void)op.trigger("after");
  CHECK(wait_for([&] { return heard.count("after") == 1; }));
  watcher.listen_triggers({});
}

TEST_CASE("a LISTEN connection whose backend stops answering is found by SELECT 1 after listen_ping_every and "
          "replaced") {
  const std::string schema = lease::testing::fresh_schema("tping");
  auto o = options(schema);
  o.command_timeout = 300ms;
  o.listen_ping_every = 500ms;
  heard_log heard;
  lease::postgres_store watcher{o};
  watcher.listen_triggers([&](std::string_view j) { heard.add(j); });
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1 && heard.count("") == 1; }));
  const std::string listening = "application_name = 'lease-listener' AND query LIKE 'LISTEN%" + schema + ".trigger%'";
  const std::string pid = srv().sql("SELECT pid FROM pg_stat_activity WHERE " + listening);
  REQUIRE_FALSE(pid.empty());
  // Its backend frozen with the socket open (a frozen server, a partition
  // that resets nothing): no error ever comes, only the unanswered SELECT 1
  // tells. The listener then listens on a new connection and says it may
  // have missed pushes ("poll once").
  ::kill(std::stoi(pid), SIGSTOP);
  const bool replaced = wait_for([&] { return watcher.listener_connects() >= 2 && heard.count("") >= 2; });
  ::kill(std::stoi(pid), SIGCONT);
  CHECK(replaced);
  lease::postgres_store op{options(schema)};
  (void)op.trigger("after");
  CHECK(wait_for([&] { return heard.count("after") == 1; }));
  watcher.listen_triggers({});
}

TEST_CASE("an idle LISTEN connection sends nothing before listen_ping_every, and 0 is refused with a sentence") {
  const std::string schema = lease::testing::fresh_schema("tidle");
  heard_log heard;
  lease::postgres_store quiet{options(schema)};  // the default: 30 s
  quiet.listen_triggers([&](std::string_view j) { heard.add(j); });
  REQUIRE(wait_for([&] { return quiet.listener_connects() == 1 && heard.count("") == 1; }));
  // pg_stat_activity.query is the backend's latest statement: LISTEN until
  // the listener sends its first SELECT 1.
  const std::string last = "SELECT query FROM pg_stat_activity WHERE application_name = 'lease-listener' AND "
                           "query LIKE '%" + schema + ".trigger%'";
  std::this_thread::sleep_for(1500ms);  // a window of silence, not a wait for an event
  CHECK(srv().sql(last).starts_with("LISTEN"));
  quiet.listen_triggers({});

  auto o = options(lease::testing::fresh_schema("tidle"));
  o.listen_ping_every = 200ms;
  lease::postgres_store chatty{o};
  chatty.listen_triggers([&](std::string_view) {});
  REQUIRE(wait_for([&] { return chatty.listener_connects() == 1; }));
  CHECK(wait_for([&] {
    return srv().sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lease-listener' AND query = "
                     "'SELECT 1'") != "0";
  }));
  chatty.listen_triggers({});

  auto bad = options(lease::testing::fresh_schema("tidle"));
  bad.listen_ping_every = 0ms;
  try {
    lease::postgres_store s{bad};
    FAIL("listen_ping_every = 0 was accepted");
  } catch (const lease::store_error& e) {
    CHECK(std::string(e.what()).find("listen_ping_every must be above 0") != std::string::npos);
  }
}
