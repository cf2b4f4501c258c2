// test/leasectl/output.cpp — what leasectl prints for each command, exactly,
// on memory_store and a fake clock (check.sh checks the same on the real
// stores with times normalised): the columns, "expired" for a running run
// whose lease ended, NEXT SLOT from the registered schedules, --json's
// fields, and exit codes 3 and 4.
#include <catch2/catch.hpp>

#include <lease/clock/fake.hpp>
#include <lease/store/memory.hpp>

#include "leasectl/commands.hpp"
#include "seed.hpp"

namespace {

using namespace std::chrono;

struct seeded {
  lease::fake_clock clock{sys_days{2026y / 11 / 29} + 6h + 2min};
  lease::memory_store<lease::fake_clock> store{clock};
  seeded() {
    leasectl_test::seed(store);
    store.pause("report");
  }
};

}  // namespace

TEST_CASE("jobs: a table by name, and one JSON array", "[leasectl]") {
  seeded s;
  const auto now = s.store.now();
  CHECK(leasectl::jobs_table(s.store.list_jobs(), now) ==
        R"(NAME     SCHEDULE                NEXT SLOT                 PAUSED  TRIGGERED  LAST SLOT                 LAST STATUS  RUNNER  ATTEMPT  INSTANCES
cleanup  every 1m                2026-11-29T06:03:00.000Z  no      -          2026-11-29T06:01:00.000Z  failed       api-3   1        1, api-3 0 s ago
report   0 6 * * * Europe/Paris  paused                    yes     -          2026-11-29T06:01:00.000Z  running      api-2   2        2, api-1 0 s ago
)");
  CHECK(leasectl::jobs_json(s.store.list_jobs(), now) ==
        R"([
 {"name":"cleanup","paused":false,"trigger":null,"next_slot":"2026-11-29T06:03:00.000Z","next_slot_ms":1795932180000,"fence":1795932120000,"last_run":{"job":"cleanup","slot":"2026-11-29T06:01:00.000Z","slot_ms":1795932060000,"manual":false,"status":"failed","attempt":1,"handovers":0,"runner":"api-3","fence":1795932120000,"lease_end":"2026-11-29T06:12:00.000Z","lease_end_ms":1795932720000,"released":false},"instances":[{"instance":"api-3","schedule":"every 1m","zone":"","last_seen":"2026-11-29T06:02:00.000Z","last_seen_ms":1795932120000}]},
 {"name":"report","paused":true,"trigger":null,"next_slot":"2026-11-30T05:00:00.000Z","next_slot_ms":1796014800000,"fence":1795932120002,"last_run":{"job":"report","slot":"2026-11-29T06:01:00.000Z","slot_ms":1795932060000,"manual":false,"status":"running","attempt":2,"handovers":1,"runner":"api-2","fence":1795932120002,"lease_end":"2026-11-29T06:12:00.000Z","lease_end_ms":1795932720000,"released":false},"instances":[{"instance":"api-1","schedule":"0 6 * * *","zone":"Europe/Paris","last_seen":"2026-11-29T06:02:00.000Z","last_seen_ms":1795932120000},{"instance":"api-2","schedule":"0 6 * * *","zone":"Europe/Paris","last_seen":"2026-11-29T06:02:00.000Z","last_seen_ms":1795932120000}]}
]
)");
}

TEST_CASE("jobs: NEXT SLOT is the registered schedule's next slot after the store's now, or says why not", "[leasectl]") {
  lease::fake_clock clock{sys_days{2026y / 11 / 26} + 6h + 2min};
  lease::memory_store<lease::fake_clock> store{clock};
  using reg = lease::job_registration;
  // Three days ago: instances that are gone since (they never renewed).
  const reg old[] = {{"f-changed", "api-old", "every 1h", "", {}}, {"g-gone", "api-old", "0 3 * * *", "UTC", {}}};
  store.register_jobs(old);
  clock.advance(days(3));  // now 2026-11-29T06:02Z, a Sunday
  const reg regs[] = {
      {"a-every", "api-1", "every 1h anchored 15m after 1970-01-01 00:00 UTC", "", {}},
      {"b-cron", "api-1", "0 3 * * *", "America/New_York", {}},  // 03:00 EST is 08:00Z
      {"c-custom", "api-1", "custom schedule", "", {}},
      {"d-disagree", "api-1", "*/5 * * * *", "UTC", {}},
      {"d-disagree", "api-2", "*/5 * * * *", "Europe/Paris", {}},
      {"f-changed", "api-1", "every 5m", "", {}},  // api-old's "every 1h" is 3 days old: it counts for nothing
      {"h-paused", "api-1", "every 5m", "", {}},
  };
  store.register_jobs(regs);
  store.pause("h-paused");
  lease::claim_request req;  // a job that ran here but that no instance registered
  req.run = {"e-unregistered", sys_days{2026y / 11 / 29} + 6h};
  req.runner = "api-1";
  req.token = "t1";
  req.lease = 10min;
  req.deadline = req.run.slot + 1h;
  REQUIRE(store.claim(req).outcome == lease::claim_outcome::won);

  const auto jobs = store.list_jobs();
  CHECK(leasectl::jobs_table(jobs, store.now()) ==
        R"(NAME            SCHEDULE                                          NEXT SLOT                 PAUSED  TRIGGERED  LAST SLOT                 LAST STATUS  RUNNER  ATTEMPT  INSTANCES
a-every         every 1h anchored 15m after 1970-01-01 00:00 UTC  2026-11-29T06:15:00.000Z  no      -          -                         -            -       -        1, api-1 0 s ago
b-cron          0 3 * * * America/New_York                        2026-11-29T08:00:00.000Z  no      -          -                         -            -       -        1, api-1 0 s ago
c-custom        custom schedule                                   -                         no      -          -                         -            -       -        1, api-1 0 s ago
d-disagree      */5 * * * * UTC                                   instances disagree        no      -          -                         -            -       -        2, api-1 0 s ago
e-unregistered  -                                                 -                         no      -          2026-11-29T06:00:00.000Z  running      api-1   1        -
f-changed       every 5m                                          2026-11-29T06:05:00.000Z  no      -          -                         -            -       -        2, api-1 0 s ago
g-gone          0 3 * * * UTC                                     -                         no      -          -                         -            -       -        1, api-old 3 d ago
h-paused        every 5m                                          paused                    yes     -          -                         -            -       -        1, api-1 0 s ago
)");
  const auto json = leasectl::jobs_json(jobs, store.now());
  const auto next_in_json = [&](const std::string& job) {
    const auto at = json.find("{\"name\":\"" + job + "\"");
    REQUIRE(at != std::string::npos);
    const auto from = json.find("\"next_slot\":", at);
    return json.substr(from, json.find(",\"fence\"", from) - from);
  };
  CHECK(next_in_json("a-every") == R"("next_slot":"2026-11-29T06:15:00.000Z","next_slot_ms":1795932900000)");
  CHECK(next_in_json("b-cron") == R"("next_slot":"2026-11-29T08:00:00.000Z","next_slot_ms":1795939200000)");
  CHECK(next_in_json("c-custom") == R"("next_slot":null)");
  CHECK(next_in_json("d-disagree") == R"("next_slot":null)");
  CHECK(next_in_json("e-unregistered") == R"("next_slot":null)");
  CHECK(next_in_json("g-gone") == R"("next_slot":null)");
  // Paused: the schedule's slot all the same ("paused":true says it does not run).
  CHECK(next_in_json("h-paused") == R"("next_slot":"2026-11-29T06:05:00.000Z","next_slot_ms":1795932300000)");

  // A slot is strictly after now: at 06:15:00.000 exactly, the next one.
  clock.advance(13min);
  CHECK(leasectl::next_of(store.list_jobs().front(), store.now()).at == sys_days{2026y / 11 / 29} + 7h + 15min);
}

TEST_CASE("runs: newest slot first, and a running run past its lease end is expired", "[leasectl]") {
  seeded s;
  CHECK(leasectl::runs_table(s.store.list_runs("report", 20), s.store.now()) ==
        R"(SLOT                      BY        STATUS   ATTEMPT  HANDOVERS  RUNNER  FENCE          LEASE END                 RELEASED
2026-11-29T06:01:00.000Z  schedule  running  2        1          api-2   1795932120002  2026-11-29T06:12:00.000Z  no
2026-11-29T06:00:00.000Z  schedule  success  1        0          api-1   1795932120000  2026-11-29T06:12:00.000Z  no
)");
  s.clock.advance(minutes(10));  // past the running attempt's 600 s lease
  CHECK(leasectl::runs_json(s.store.list_runs("report", 1), s.store.now()) ==
        R"([
 {"job":"report","slot":"2026-11-29T06:01:00.000Z","slot_ms":1795932060000,"manual":false,"status":"expired","attempt":2,"handovers":1,"runner":"api-2","fence":1795932120002,"lease_end":"2026-11-29T06:12:00.000Z","lease_end_ms":1795932720000,"released":false}
]
)");
  CHECK(leasectl::jobs_table({}, s.store.now()) ==
        "NAME  SCHEDULE  NEXT SLOT  PAUSED  TRIGGERED  LAST SLOT  LAST STATUS  RUNNER  ATTEMPT  INSTANCES\n");
  CHECK(leasectl::runs_json({}, s.store.now()) == "[]\n");
}

TEST_CASE("a job paused before it ever ran has no last run, and any name stays on its row, escaped", "[leasectl]") {
  lease::memory_store<lease::fake_clock> store{lease::fake_clock{sys_days{2026y / 11 / 29}}};
  store.pause("never \"ran\"\n");
  const auto jobs = store.list_jobs();
  CHECK(leasectl::jobs_table(jobs, store.now()) ==
        R"(NAME             SCHEDULE  NEXT SLOT  PAUSED  TRIGGERED  LAST SLOT  LAST STATUS  RUNNER  ATTEMPT  INSTANCES
never \"ran\"\n  -         paused     yes     -          -          -            -       -        -
)");
  CHECK(leasectl::jobs_json(jobs, store.now()) ==
        "[\n {\"name\":\"never \\\"ran\\\"\\n\",\"paused\":true,\"trigger\":null,\"next_slot\":null,\"fence\":0,\"last_run\":null,\"instances\":[]}\n]\n");
}

namespace {

/// A Store and nothing more: no InspectStore, no PauseStore.
struct bare_store {
  lease::memory_store<lease::fake_clock> s{lease::fake_clock{}};
  lease::claim_result claim(const lease::claim_request& r) { return s.claim(r); }
  bool heartbeat(const lease::run_key& k, std::string_view t, lease::duration d) { return s.heartbeat(k, t, d); }
  bool finish(const lease::run_key& k, std::string_view t, lease::run_status st) { return s.finish(k, t, st); }
  bool release(const lease::run_key& k, std::string_view t) { return s.release(k, t); }
  std::vector<lease::run_record> unfinished(std::string_view j) { return s.unfinished(j); }
  std::optional<lease::run_record> get(const lease::run_key& k) { return s.get(k); }
  lease::time_point now() { return s.now(); }
};
static_assert(lease::Store<bare_store> && !lease::InspectStore<bare_store> && !lease::PauseStore<bare_store> &&
              !lease::TriggerStore<bare_store>);

}  // namespace

TEST_CASE("a store without a capability answers exit code 3 and changes nothing", "[leasectl]") {
  bare_store store;
  const auto spec = leasectl::parse_store_url("redis://ops:hunter2@10.0.0.7:6379");
  for (const auto what :
       {leasectl::verb::jobs, leasectl::verb::runs, leasectl::verb::pause, leasectl::verb::resume, leasectl::verb::trigger}) {
    const auto r = leasectl::run(store, {what, "report", 20, false}, spec);
    CHECK(r.code == leasectl::cannot);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("leasectl: the Redis store (redis://***@10.0.0.7:6379) cannot "));
    CHECK_THAT(r.err, Catch::Contains(what == leasectl::verb::jobs || what == leasectl::verb::runs ? "InspectStore"
                                      : what == leasectl::verb::trigger                            ? "TriggerStore"
                                                                                                   : "PauseStore"));
  }
}

TEST_CASE("runs of a job the store has no state for is exit code 4, of a job only paused an empty table", "[leasectl]") {
  lease::memory_store<lease::fake_clock> store{lease::fake_clock{}};
  const auto spec = leasectl::parse_store_url("jobs.db");
  auto r = leasectl::run(store, {leasectl::verb::runs, "report", 20, false}, spec);
  CHECK(r.code == leasectl::no_such_job);
  CHECK(r.err ==
        "leasectl: the SQLite store (sqlite:jobs.db) has no state for job 'report': it never ran there and was never "
        "paused or triggered. Check the name (`leasectl jobs` lists them) and --store.\n");
  r = leasectl::run(store, {leasectl::verb::pause, "report", 20, false}, spec);
  CHECK(r.code == leasectl::ok);
  r = leasectl::run(store, {leasectl::verb::runs, "report", 20, true}, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out == "[]\n");
}

TEST_CASE("trigger: a new request, one already pending, and what stands in its way", "[leasectl]") {
  seeded s;  // report is paused; cleanup ran
  const auto spec = leasectl::parse_store_url("jobs.db");
  auto r = leasectl::run(s.store, {leasectl::verb::trigger, "cleanup", 20, false}, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out ==
        "job cleanup triggered: one instance that has it runs it once, as a manual run of slot "
        "2026-11-29T06:02:00.000Z (`leasectl runs cleanup` shows it)\n");
  s.clock.advance(seconds(5));
  r = leasectl::run(s.store, {leasectl::verb::trigger, "cleanup", 20, true}, spec);
  CHECK(r.out ==
        R"({"job":"cleanup","trigger":"2026-11-29T06:02:00.000Z","trigger_ms":1795932120000,"changed":false,"paused":false,"ever_ran":true})"
        "\n");
  const std::string cleanup = "cleanup";
  CHECK(s.store.triggers(std::span(&cleanup, 1)).size() == 1);  // one request, not two
  CHECK_THAT(leasectl::jobs_table(s.store.list_jobs(), s.store.now()),
             Catch::Contains("cleanup  every 1m                2026-11-29T06:03:00.000Z  no      2026-11-29T06:02:00.000Z  "));

  r = leasectl::run(s.store, {leasectl::verb::trigger, "report", 20, false}, spec);
  CHECK_THAT(r.out, Catch::Contains("note: job report is paused: the trigger is answered `paused` and does not run"));
  r = leasectl::run(s.store, {leasectl::verb::trigger, "reprot", 20, false}, spec);
  CHECK_THAT(r.out, Catch::EndsWith("note: no instance ever ran job reprot in this store: the trigger waits until an "
                                    "instance that has the job picks it up (check the name)\n"));
}

TEST_CASE("runs: a manual run says so", "[leasectl]") {
  seeded s;
  const auto slot = s.store.trigger("cleanup");
  lease::claim_request req;
  req.run = {"cleanup", slot};
  req.runner = "api-3";
  req.token = "t9";
  req.reason = lease::claim_reason::manual;
  REQUIRE(s.store.claim(req).outcome == lease::claim_outcome::won);
  const auto table = leasectl::runs_table(s.store.list_runs("cleanup", 1), s.store.now());
  CHECK_THAT(table, Catch::Contains("2026-11-29T06:02:00.000Z  manual  running"));
  CHECK_THAT(leasectl::runs_json(s.store.list_runs("cleanup", 1), s.store.now()), Catch::Contains(R"("manual":true)"));
}

TEST_CASE("watch: the state as it is, then one line per change, each said once", "[leasectl]") {
  seeded s;  // report paused; report's newest run live (attempt 2), cleanup failed
  leasectl::watcher w;
  auto lines = w.poll(s.store);
  CHECK(lines == std::vector<std::string>{
                     "2026-11-29T06:02:00.000Z  job report is paused: no claim of it wins",
                     "2026-11-29T06:02:00.000Z  job cleanup slot 2026-11-29T06:01:00.000Z: failed (attempt 1 by api-3, fence 1795932120000)",
                     "2026-11-29T06:02:00.000Z  job report slot 2026-11-29T06:01:00.000Z: running (attempt 2 by api-2, fence 1795932120002)"});
  CHECK(w.poll(s.store).empty());  // nothing changed, nothing said

  s.clock.advance(seconds(1));
  REQUIRE(s.store.resume("report"));
  const auto slot = s.store.trigger("cleanup");
  lines = w.poll(s.store);
  CHECK(lines == std::vector<std::string>{
                     "2026-11-29T06:02:01.000Z  job cleanup has a trigger pending: a manual run of slot 2026-11-29T06:02:01.000Z",
                     "2026-11-29T06:02:01.000Z  job report was resumed"});

  lease::claim_request req;
  req.run = {"cleanup", slot};
  req.runner = "api-1";
  req.token = "m1";
  req.reason = lease::claim_reason::manual;
  req.lease = seconds(30);
  REQUIRE(s.store.claim(req).outcome == lease::claim_outcome::won);
  REQUIRE(s.store.release({"report", s.store.list_runs("report", 1)[0].slot}, "t3"));
  lines = w.poll(s.store);
  CHECK(lines == std::vector<std::string>{
                     "2026-11-29T06:02:01.000Z  job cleanup: the trigger of slot 2026-11-29T06:02:01.000Z was answered",
                     "2026-11-29T06:02:01.000Z  job cleanup manual run of slot 2026-11-29T06:02:01.000Z: running (attempt 1 by api-1, fence 1795932121000)",
                     "2026-11-29T06:02:01.000Z  job report slot 2026-11-29T06:01:00.000Z: handed over by api-2 (it stopped): a backup takes it over"});

  s.clock.advance(seconds(31));  // the manual run's lease ran out
  lines = w.poll(s.store);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("manual run of slot 2026-11-29T06:02:01.000Z: expired: api-1 stopped renewing"));
  CHECK(w.poll(s.store).empty());  // said once
}

TEST_CASE("watch JOB: that job's runs only, in JSON one object per line", "[leasectl]") {
  seeded s;
  leasectl::watcher w{"report", true, 20};
  const auto lines = w.poll(s.store);
  REQUIRE(lines.size() == 2);  // report's two runs, oldest slot first; not cleanup, not the pause
  CHECK_THAT(lines[0], Catch::StartsWith(R"({"time":"2026-11-29T06:02:00.000Z","time_ms":1795932120000,"job":"report","change":"run","text":"job report slot 2026-11-29T06:00:00.000Z: success)"));
  CHECK_THAT(lines[1], Catch::Contains(R"("run":{"job":"report","slot":"2026-11-29T06:01:00.000Z")"));
}

TEST_CASE("stop: the job paused and its runs in progress handed over, said in one sentence", "[leasectl]") {
  seeded s;  // report's newest run is live (api-2)
  const auto spec = leasectl::parse_store_url("jobs.db");
  auto r = leasectl::run(s.store, {leasectl::verb::stop, "report", 20, false}, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out ==
        "job report stopped: paused, and 1 run in progress handed over (each runner stops its handler at its next "
        "heartbeat); no instance takes it over or starts a slot until `leasectl resume report`\n");
  CHECK(s.store.list_runs("report", 1)[0].released);
  r = leasectl::run(s.store, {leasectl::verb::stop, "report", 20, true}, spec);
  CHECK(r.out == "{\"job\":\"report\",\"paused\":true,\"handed_over\":0}\n");
}

TEST_CASE("purge: refused with who still has the job or which run holds a lease, then done", "[leasectl]") {
  seeded s;
  const auto spec = leasectl::parse_store_url("jobs.db");
  leasectl::command c{leasectl::verb::purge, "cleanup", 20, false};
  c.unseen_for = std::chrono::hours(1);
  auto r = leasectl::run(s.store, c, spec);
  CHECK(r.code == leasectl::refused);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "leasectl: not purged: instance api-3 registered job cleanup 0 s ago (schedule every 1m), within --unseen-for "
        "3600 s. Remove the job from that instance first, or wait. Nothing was changed.\n");
  s.clock.advance(hours(2));
  r = leasectl::run(s.store, c, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out == "job cleanup purged: its runs, fence, pause, trigger and registrations are gone\n");
  r = leasectl::run(s.store, c, spec);
  CHECK(r.code == leasectl::no_such_job);

  // report's run holds a 600 s lease; registrations are 2 h old.
  s.clock.advance(-hours(2));
  c.job = "report";
  c.unseen_for = std::chrono::seconds(0);
  c.json = true;
  r = leasectl::run(s.store, c, spec);
  CHECK(r.code == leasectl::refused);
  CHECK_THAT(r.out, Catch::StartsWith(R"({"job":"report","outcome":"running","run":{"job":"report")"));
}

TEST_CASE("pause --all pauses every job the store knows, resume --all every paused one, each said", "[leasectl]") {
  seeded s;  // report is paused already; cleanup is not
  s.store.trigger("only-triggered");  // known to the store, never ran
  const auto spec = leasectl::parse_store_url("jobs.db");
  leasectl::command c{leasectl::verb::pause, "", 20, false};
  c.all = true;
  auto r = leasectl::run(s.store, c, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out ==
        "job cleanup paused\n"
        "job only-triggered paused\n"
        "job report was already paused\n"
        "3 jobs paused (2 just now): no claim of any wins on any instance until `leasectl resume --all`. A job the "
        "store first hears of after this is not paused\n");
  CHECK(s.store.paused("cleanup"));
  CHECK(s.store.paused("only-triggered"));
  c.what = leasectl::verb::resume;
  c.json = true;
  r = leasectl::run(s.store, c, spec);
  CHECK(r.out ==
        "[\n"
        " {\"job\":\"cleanup\",\"paused\":false,\"changed\":true},\n"
        " {\"job\":\"only-triggered\",\"paused\":false,\"changed\":true},\n"
        " {\"job\":\"report\",\"paused\":false,\"changed\":true}\n"
        "]\n");
  for (const auto& j : s.store.list_jobs()) CHECK_FALSE(j.paused);
  c.json = false;
  r = leasectl::run(s.store, c, spec);
  CHECK(r.out == "no job in the store is paused: nothing changed\n");
}

namespace {

/// Another operator's `leasectl resume` lands between resume --all's listing
/// and its own resume of each job: every resume() finds the job not paused.
struct resumed_meanwhile : lease::memory_store<lease::fake_clock> {
  using lease::memory_store<lease::fake_clock>::memory_store;
  bool resume(std::string_view job) {
    (void)lease::memory_store<lease::fake_clock>::resume(job);  // the other operator's
    return lease::memory_store<lease::fake_clock>::resume(job);  // ours: nothing left to lift
  }
};

}  // namespace

TEST_CASE("resume --all says that a job resumed by someone else meanwhile was not paused, not that it was paused",
          "[leasectl]") {
  lease::fake_clock clock{sys_days{2026y / 11 / 29} + 6h + 2min};
  resumed_meanwhile store{clock};
  leasectl_test::seed(store);
  store.pause("report");
  const auto spec = leasectl::parse_store_url("jobs.db");
  leasectl::command c{leasectl::verb::resume, "", 20, false};
  c.all = true;
  const auto r = leasectl::run(store, c, spec);
  CHECK(r.code == leasectl::ok);
  CHECK(r.out ==
        "job report was not paused any more: nothing changed\n"
        "1 job resumed: each job's next slot is claimed as usual; slots due while paused do not run\n");
  CHECK_FALSE(store.paused("report"));
}
