// The store rules (doc/store-rules.md, "Claim" cases and the laws L1–L5), one test
// per row, on the reference store over a fake clock. Every other store is
// held to the same answers by test/laws/store_conformance.hpp.
#include <catch2/catch.hpp>

#include "lease/rules.hpp"
#include "lease/store/memory.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::run_status;

namespace {

const lease::time_point t0{1'700'000'000'000ms};

struct cluster {
  lease::fake_clock clock{t0};
  lease::memory_store<lease::fake_clock> store{clock};
  int tokens = 0;

  lease::claim_request request(lease::time_point slot, std::string runner = "api-1",
                               lease::claim_reason reason = lease::claim_reason::scheduled,
                               lease::overlap_mode overlap = lease::overlap_mode::skip) {
    lease::claim_request r;
    r.run = {"report", slot};
    r.runner = std::move(runner);
    r.token = "token-" + std::to_string(++tokens);
    r.reason = reason;
    r.lease = 30s;
    r.max_attempts = 3;
    r.deadline = slot + 30s;
    r.overlap = overlap;
    r.history_size = 2;
    r.retain = 300s;
    return r;
  }
  lease::claim_result claim(lease::time_point slot, std::string runner = "api-1",
                            lease::claim_reason reason = lease::claim_reason::scheduled,
                            lease::overlap_mode overlap = lease::overlap_mode::skip) {
    return store.claim(request(slot, std::move(runner), reason, overlap));
  }
};

}  // namespace

TEST_CASE("rule 1: a claim for a run with no state wins attempt 1 with its own token and a lease of now plus lease") {
  cluster c;
  const auto won = c.store.claim(c.request(t0, "api-2"));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.attempt == 1);
  CHECK(won.record.token == "token-1");
  CHECK(won.record.runner == "api-2");
  CHECK(won.record.fence == static_cast<std::uint64_t>(t0.time_since_epoch().count()));  // store-now in ms
  CHECK(won.record.status == run_status::running);
  CHECK(won.record.lease_end == t0 + 30s);
  CHECK(won.store_now == t0);
  CHECK(c.store.get({"report", t0}) == won.record);
}

TEST_CASE("a takeover claim for a run with no state answers none and creates nothing") {
  cluster c;
  REQUIRE(c.claim(t0, "api-1", lease::claim_reason::takeover).outcome == claim_outcome::none);
  REQUIRE_FALSE(c.store.get({"report", t0}).has_value());
  // ...so the run can still be won normally afterwards.
  REQUIRE(c.claim(t0).outcome == claim_outcome::won);
}

TEST_CASE("rule 6: a new claim that reaches the store more than deadline plus 10 s late is refused") {
  cluster c;
  c.clock.set(t0 + 30s + 10s);  // exactly at deadline + tolerance: still on time
  REQUIRE(c.claim(t0).outcome == claim_outcome::won);
  c.clock.set(t0 + 60s + 30s + 10s + 1ms);  // 1 ms past deadline + tolerance
  const auto late = c.claim(t0 + 60s);
  REQUIRE(late.outcome == claim_outcome::late);
  REQUIRE_FALSE(c.store.get({"report", t0 + 60s}).has_value());
}

TEST_CASE("a claim for an old slot after a newer run of the job has state is superseded") {
  cluster c;
  c.clock.set(t0 + 60s);
  REQUIRE(c.claim(t0 + 60s).outcome == claim_outcome::won);
  // A stalled claim for the older slot arrives afterwards, still within its deadline.
  c.clock.set(t0 + 61s);
  const auto old = c.claim(t0 + 40s, "api-2");
  REQUIRE(old.outcome == claim_outcome::superseded);
  REQUIRE_FALSE(c.store.get({"report", t0 + 40s}).has_value());
}

TEST_CASE("rule 5: in skip mode a new run is refused as overlap while an earlier run has a live lease") {
  cluster c;
  const auto first = c.claim(t0, "api-1");
  c.clock.advance(3s);
  const auto next = c.claim(t0 + 3s, "api-2");
  REQUIRE(next.outcome == claim_outcome::overlap);
  CHECK(next.record == first.record);  // the blocking run
  REQUIRE_FALSE(c.store.get({"report", t0 + 3s}).has_value());
  REQUIRE(c.store.finish({"report", t0}, first.record.token, run_status::success));
  c.clock.advance(6s);
  REQUIRE(c.claim(t0 + 9s, "api-2").outcome == claim_outcome::won);
}

TEST_CASE("buffer_one refuses an overlapping run in the store exactly as skip does") {
  cluster c;
  c.claim(t0);
  c.clock.advance(3s);
  REQUIRE(c.claim(t0 + 3s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::buffer_one).outcome ==
          claim_outcome::overlap);
}

TEST_CASE("in allow mode a new run starts while an earlier run is live, and the earlier run keeps its lease") {
  cluster c;
  const auto first = c.claim(t0, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  c.clock.advance(3s);
  REQUIRE(c.claim(t0 + 3s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::allow).outcome ==
          claim_outcome::won);
  REQUIRE(c.store.get({"report", t0})->live(c.clock.now()));
  REQUIRE(c.store.heartbeat({"report", t0}, first.record.token, 30s));
}

TEST_CASE("in replace mode a new run interrupts the live earlier run, whose runner is then fenced") {
  cluster c;
  const auto first = c.claim(t0, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::replace);
  c.clock.advance(3s);
  REQUIRE(c.claim(t0 + 3s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::replace).outcome ==
          claim_outcome::won);
  REQUIRE(c.store.get({"report", t0})->status == run_status::interrupted);
  REQUIRE_FALSE(c.store.heartbeat({"report", t0}, first.record.token, 30s));
}

TEST_CASE("a dead earlier run does not block: the new run starts and the old one is marked interrupted") {
  cluster c;
  c.claim(t0);                 // its runner dies: no heartbeat
  c.clock.advance(31s);        // the lease ran out
  REQUIRE(c.claim(t0 + 31s, "api-2").outcome == claim_outcome::won);
  REQUIRE(c.store.get({"report", t0})->status == run_status::interrupted);
}

TEST_CASE("a claim on a running run with a live lease answers running with the live record") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  c.clock.advance(29s);
  const auto backup = c.claim(t0, "api-2", lease::claim_reason::takeover);
  REQUIRE(backup.outcome == claim_outcome::running);
  REQUIRE(backup.record == won.record);
}

TEST_CASE("rule 3: a run whose lease ran out is won as the next attempt with a fresh token and the next fence") {
  cluster c;
  c.claim(t0, "api-1");
  c.clock.advance(30s);  // lease end is exclusive: at now == lease_end it has run out
  const auto taken = c.claim(t0, "api-2", lease::claim_reason::takeover);
  REQUIRE(taken.outcome == claim_outcome::won);
  CHECK(taken.record.attempt == 2);
  CHECK(taken.record.token == "token-2");
  CHECK(taken.record.runner == "api-2");
  CHECK(taken.record.fence == static_cast<std::uint64_t>((t0 + 30s).time_since_epoch().count()));
  CHECK(taken.record.lease_end == t0 + 60s);
}

TEST_CASE("an expired run is marked interrupted, not retried, once a newer run of the job has state") {
  cluster c;
  lease::claim_request allow_first = c.request(t0, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  c.store.claim(allow_first);
  c.clock.advance(10s);
  REQUIRE(c.claim(t0 + 10s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::allow).outcome ==
          claim_outcome::won);
  c.clock.advance(25s);  // the first run's lease has run out; the second was not renewed either
  const auto takeover = c.claim(t0, "api-3", lease::claim_reason::takeover);
  REQUIRE(takeover.outcome == claim_outcome::finished);
  REQUIRE(takeover.record.status == run_status::interrupted);
  REQUIRE(takeover.record.attempt == 1);
}

TEST_CASE("after max_attempts runners died the run is marked interrupted and no further attempt starts") {
  cluster c;
  c.claim(t0, "api-1");
  for (int attempt = 2; attempt <= 3; ++attempt) {
    c.clock.advance(31s);
    REQUIRE(c.claim(t0, "api-" + std::to_string(attempt), lease::claim_reason::takeover).outcome ==
            claim_outcome::won);
  }
  c.clock.advance(31s);
  const auto last = c.claim(t0, "api-4", lease::claim_reason::takeover);
  REQUIRE(last.outcome == claim_outcome::finished);
  REQUIRE(last.record.status == run_status::interrupted);
  REQUIRE(last.record.attempt == 3);
}

TEST_CASE("a release counts as a hand-over, not against max_attempts") {
  cluster c;
  auto won = c.claim(t0, "api-1").record;
  for (int i = 0; i < 5; ++i) {  // five deploys in a row hand the run over
    REQUIRE(c.store.release({"report", t0}, won.token));
    const auto next = c.claim(t0, "api-2", lease::claim_reason::takeover);
    REQUIRE(next.outcome == claim_outcome::won);
    won = next.record;
  }
  CHECK(won.attempt == 6);
  CHECK(won.handovers == 5);
  CHECK(won.attempt - won.handovers <= 3);
}

TEST_CASE("a claim on an ended run answers finished with its record") {
  cluster c;
  const auto won = c.claim(t0);
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::failed));
  c.clock.advance(40s);
  const auto again = c.claim(t0, "api-2", lease::claim_reason::takeover);
  REQUIRE(again.outcome == claim_outcome::finished);
  REQUIRE(again.record.status == run_status::failed);  // a failed handler is never retried
}

TEST_CASE("rule 2: a heartbeat moves the lease end to now plus lease, only with the current token") {
  cluster c;
  const auto won = c.claim(t0);
  c.clock.advance(5s);
  REQUIRE(c.store.heartbeat({"report", t0}, won.record.token, 30s));
  REQUIRE(c.store.get({"report", t0})->lease_end == t0 + 35s);
  REQUIRE_FALSE(c.store.heartbeat({"report", t0}, "someone-elses-token", 30s));
  REQUIRE_FALSE(c.store.heartbeat({"report", t0 + 1s}, won.record.token, 30s));  // no such run
}

TEST_CASE("fencing: once a backup won the next attempt, the old token can change nothing") {
  cluster c;
  const auto a = c.claim(t0, "api-1").record;  // then frozen
  c.clock.advance(31s);
  const auto b = c.claim(t0, "api-2", lease::claim_reason::takeover).record;
  REQUIRE(b.attempt == 2);
  REQUIRE_FALSE(c.store.heartbeat({"report", t0}, a.token, 30s));
  REQUIRE_FALSE(c.store.finish({"report", t0}, a.token, run_status::success));
  REQUIRE_FALSE(c.store.release({"report", t0}, a.token));
  REQUIRE(c.store.get({"report", t0}) == b);
}

TEST_CASE("a heartbeat from the current runner renews a lease that ran out if nobody took over") {
  cluster c;
  const auto won = c.claim(t0);
  c.clock.advance(31s);
  REQUIRE(c.store.heartbeat({"report", t0}, won.record.token, 30s));
  REQUIRE(c.store.get({"report", t0})->live(c.clock.now()));
}

TEST_CASE("a released lease stays released: a heartbeat arriving after the release does not renew it") {
  cluster c;
  const auto won = c.claim(t0);
  c.clock.advance(5s);
  REQUIRE(c.store.release({"report", t0}, won.record.token));
  const auto released = c.store.get({"report", t0});
  REQUIRE(released->released);
  REQUIRE(released->lease_end == t0 + 5s);
  REQUIRE(released->handovers == 1);
  REQUIRE_FALSE(c.store.heartbeat({"report", t0}, won.record.token, 30s));
  REQUIRE_FALSE(c.store.get({"report", t0})->live(c.clock.now()));
  REQUIRE_FALSE(c.store.release({"report", t0}, won.record.token));  // counted once
  REQUIRE(c.claim(t0, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::won);
}

TEST_CASE("rule 4: finish works only with the current token of a running, unreleased run") {
  cluster c;
  const auto won = c.claim(t0);
  REQUIRE_FALSE(c.store.finish({"report", t0}, "not-mine", run_status::success));
  REQUIRE_FALSE(c.store.finish({"report", t0}, won.record.token, run_status::running));
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::success));
  REQUIRE_FALSE(c.store.finish({"report", t0}, won.record.token, run_status::failed));  // once only
  REQUIRE(c.store.get({"report", t0})->status == run_status::success);
}

TEST_CASE("unfinished lists the job's running runs oldest first, whatever their lease") {
  cluster c;
  const auto a = c.claim(t0, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  c.clock.advance(10s);
  const auto b = c.claim(t0 + 10s, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  c.clock.advance(10s);
  const auto d = c.claim(t0 + 20s, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  REQUIRE(c.store.finish({"report", t0 + 10s}, b.record.token, run_status::success));
  const auto open = c.store.unfinished("report");
  REQUIRE(open.size() == 2);
  CHECK(open[0].slot == t0);
  CHECK(open[1].slot == t0 + 20s);
  REQUIRE(c.store.unfinished("other-job").empty());
  (void)a;
  (void)d;
}

TEST_CASE("pruning keeps history_size ended runs and never deletes a run a new claim could still ask for") {
  cluster c;
  // Five runs, each finished at once. history_size 2, retain 300 s.
  for (int i = 0; i < 5; ++i) {
    c.clock.set(t0 + std::chrono::seconds{i * 60});
    const auto won = c.claim(t0 + std::chrono::seconds{i * 60});
    REQUIRE(won.outcome == claim_outcome::won);
    REQUIRE(c.store.finish(won.record.key(), won.record.token, run_status::success));
  }
  // At t0+240 s every run is within slot + 300 s + 10 s: all kept, whatever history_size says.
  REQUIRE(c.store.snapshot().jobs.at("report").runs.size() == 5);
  // Much later, a new run prunes down to the newest 2 ended ones (plus itself).
  c.clock.set(t0 + 1000s);
  REQUIRE(c.claim(t0 + 1000s).outcome == claim_outcome::won);
  const auto table = c.store.snapshot();
  const auto& runs = table.jobs.at("report").runs;
  REQUIRE(runs.size() == 3);
  CHECK(runs.begin()->first == t0 + 180s);
}

TEST_CASE("the fence increases on every won attempt of a job, across runs, and survives pruning") {
  cluster c;
  std::uint64_t last = 0;
  auto ms = [](lease::time_point t) { return static_cast<std::uint64_t>(t.time_since_epoch().count()); };
  for (int i = 0; i < 6; ++i) {
    c.clock.set(t0 + std::chrono::seconds{i * 400});
    const auto won = c.claim(t0 + std::chrono::seconds{i * 400});
    REQUIRE(won.record.fence == std::max(last + 1, ms(c.clock.now())));
    last = won.record.fence;
    c.clock.advance(31s);  // dies; a backup takes over
    const auto taken = c.claim(t0 + std::chrono::seconds{i * 400}, "api-2", lease::claim_reason::takeover);
    REQUIRE(taken.record.fence == std::max(last + 1, ms(c.clock.now())));
    last = taken.record.fence;
    REQUIRE(c.store.finish(taken.record.key(), taken.record.token, run_status::success));
  }
  REQUIRE(c.store.snapshot().jobs.at("report").runs.size() <= 3);
}

TEST_CASE("two attempts won in the same millisecond get consecutive fences") {
  cluster c;
  const auto a = c.claim(t0, "api-1", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  const auto b = c.claim(t0 - 5s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  REQUIRE(a.outcome == claim_outcome::won);
  CHECK(b.outcome == claim_outcome::superseded);
  const auto d = c.claim(t0 + 1s, "api-2", lease::claim_reason::scheduled, lease::overlap_mode::allow);
  REQUIRE(d.outcome == claim_outcome::won);
  CHECK(d.record.fence == a.record.fence + 1);
}

TEST_CASE("fences never repeat or go back, even after the store lost all its state") {
  cluster c;
  const auto before = c.claim(t0, "api-1");
  REQUIRE(before.outcome == claim_outcome::won);
  c.clock.advance(1ms);
  lease::rules::run_table wiped;  // what a store restarted without persistence holds
  wiped.lost_at = c.clock.now();
  c.clock.advance(30s);  // after the quarantine
  lease::claim_request req = c.request(t0 + 30s, "api-2");  // a slot after the loss
  const auto after = lease::rules::claim(wiped, req, c.clock.now());
  REQUIRE(after.outcome == claim_outcome::won);
  CHECK(after.record.fence > before.record.fence);
}

TEST_CASE("after a loss of state, no attempt is won until one lease has passed since it was noticed") {
  cluster c;
  REQUIRE(c.claim(t0, "api-1").outcome == claim_outcome::won);  // api-1 runs t0…
  c.clock.advance(5s);
  c.store.lose_state();  // …and the store forgets it
  const lease::time_point noticed = c.clock.now();
  const auto again = c.claim(t0, "api-2", lease::claim_reason::scheduled);
  REQUIRE(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == noticed + 30s);
  CHECK_FALSE(c.store.get({"report", t0}).has_value());  // nothing was created
  CHECK(c.claim(t0, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::none);
  c.clock.set(noticed + 30s - 1ms);
  CHECK(c.claim(t0, "api-2").outcome == claim_outcome::quarantined);
  c.clock.set(noticed + 30s);  // api-1 has aborted by now: none of its heartbeats was acknowledged since
  // …but t0 itself may have run before the loss: it never starts again.
  const auto never = c.claim(t0, "api-2");
  CHECK(never.outcome == claim_outcome::quarantined);
  CHECK(never.record.lease_end == lease::time_point::max());
  const lease::time_point after = noticed + lease::early_tolerance + 1ms;  // could not have had state
  CHECK(c.claim(after, "api-2").outcome == claim_outcome::won);
}

TEST_CASE("a claim for a slot still more than early_tolerance in the store's future is answered early") {
  cluster c;
  const auto early = c.claim(t0 + lease::early_tolerance + 1ms, "api-1");
  CHECK(early.outcome == claim_outcome::early);
  CHECK(early.store_now == t0);
  CHECK(c.store.snapshot().jobs.empty());  // nothing was created
  CHECK(c.claim(t0 + lease::early_tolerance, "api-1").outcome == claim_outcome::won);
}

TEST_CASE("a paused job wins no new run: the claim is answered paused and nothing is created") {
  cluster c;
  CHECK(c.store.pause("report"));  // a job that never ran can be paused
  CHECK(c.store.paused("report"));
  CHECK_FALSE(c.store.pause("report"));  // idempotent: already paused
  const auto res = c.claim(t0);
  CHECK(res.outcome == claim_outcome::paused);
  CHECK(res.record.job == "report");
  CHECK(res.record.slot == t0);
  CHECK(res.record.token.empty());
  CHECK_FALSE(c.store.get({"report", t0}).has_value());
  CHECK(c.claim(t0, "api-2", lease::claim_reason::catch_up).outcome == claim_outcome::paused);
  // Answers that do not win stay as they were: takeover of nothing, late, early.
  CHECK(c.claim(t0, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::none);
  CHECK(c.claim(t0 + lease::early_tolerance + 1ms).outcome == claim_outcome::early);
  c.clock.advance(41s);
  CHECK(c.claim(t0).outcome == claim_outcome::late);
}

TEST_CASE("after a resume the first claim that can win wins, the slots refused while paused stay not run") {
  cluster c;
  REQUIRE(c.store.pause("report"));
  CHECK(c.claim(t0).outcome == claim_outcome::paused);
  CHECK(c.store.resume("report"));
  CHECK_FALSE(c.store.paused("report"));
  CHECK_FALSE(c.store.resume("report"));  // idempotent
  CHECK_FALSE(c.store.resume("never-paused"));
  c.clock.advance(60s);
  CHECK(c.claim(t0 + 60s).outcome == claim_outcome::won);
  CHECK(c.claim(t0).outcome == claim_outcome::late);  // the paused slot never starts now
  CHECK(c.store.get({"report", t0 + 60s})->attempt == 1);
}

TEST_CASE("a pause lets a run in progress go on, and only stops the next attempt of an expired one") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE(c.store.pause("report"));
  c.clock.advance(10s);
  CHECK(c.store.heartbeat({"report", t0}, won.record.token, 30s));
  CHECK(c.claim(t0, "api-2").outcome == claim_outcome::running);  // live: a backup, as ever
  c.clock.advance(31s);  // api-1 died: its lease ran out
  const auto take = c.claim(t0, "api-2", lease::claim_reason::takeover);
  CHECK(take.outcome == claim_outcome::paused);
  const auto rec = c.store.get({"report", t0});
  REQUIRE(rec);
  CHECK(rec->token == won.record.token);  // the expired run is left as it is
  CHECK(rec->status == run_status::running);
  CHECK(rec->attempt == 1);
  REQUIRE(c.store.resume("report"));
  const auto after = c.claim(t0, "api-2", lease::claim_reason::takeover);
  CHECK(after.outcome == claim_outcome::won);
  CHECK(after.record.attempt == 2);
}

TEST_CASE("a finish of a run in progress is recorded while its job is paused") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(c.store.pause("report"));
  CHECK(c.store.finish({"report", t0}, won.record.token, run_status::success));
  CHECK(c.store.get({"report", t0})->status == run_status::success);
  CHECK(c.claim(t0, "api-2").outcome == claim_outcome::finished);  // a claim that does not win: as before
}

TEST_CASE("a store that lost its state lost its pauses too") {
  cluster c;
  REQUIRE(c.store.pause("report"));
  c.store.lose_state();
  CHECK_FALSE(c.store.paused("report"));
}

TEST_CASE("list_jobs names every job with a fence, a pause or a run, by name, with its fence, pause and newest run") {
  cluster c;
  CHECK(c.store.list_jobs().empty());
  const auto first = c.claim(t0);  // "report": a run
  REQUIRE(first.outcome == claim_outcome::won);
  REQUIRE(c.store.finish({"report", t0}, first.record.token, run_status::failed));
  c.clock.advance(60s);
  const auto second = c.claim(t0 + 60s);
  REQUIRE(second.outcome == claim_outcome::won);
  REQUIRE(c.store.pause("backup"));  // never ran: only its pause
  REQUIRE(c.store.pause("zz-resumed"));
  REQUIRE(c.store.resume("zz-resumed"));  // nothing left an operator could act on
  const auto jobs = c.store.list_jobs();
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].name == "backup");
  CHECK(jobs[0].paused);
  CHECK(jobs[0].fence == 0);
  CHECK_FALSE(jobs[0].last_run.has_value());
  CHECK(jobs[1].name == "report");
  CHECK_FALSE(jobs[1].paused);
  CHECK(jobs[1].fence == second.record.fence);
  CHECK(jobs[1].last_run == second.record);  // the newest slot, not the first one won
  CHECK(jobs == lease::rules::list_jobs(c.store.snapshot()));
}

TEST_CASE("list_jobs orders names bytewise and keeps a job whose runs were pruned by its fence") {
  lease::rules::run_table t;
  t.jobs["\xc3\xa9t\xc3\xa9"].fence = 7;  // UTF-8 sorts after ASCII, as unsigned bytes
  t.jobs["Zeta"].paused = true;
  t.jobs["alpha"].fence = 3;              // runs pruned away, the fence stays
  const auto jobs = lease::rules::list_jobs(t);
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].name == "Zeta");
  CHECK(jobs[1].name == "alpha");
  CHECK(jobs[2].name == "\xc3\xa9t\xc3\xa9");
  CHECK(jobs[1].fence == 3);
  CHECK_FALSE(jobs[1].last_run.has_value());
}

TEST_CASE("list_runs gives the job's runs newest slot first, at most limit, and nothing for an unknown job") {
  cluster c;
  std::vector<lease::run_record> won;
  for (int i = 0; i < 3; ++i) {
    const auto slot = t0 + std::chrono::seconds(60 * i);
    c.clock.set(slot);
    const auto res = c.claim(slot);
    REQUIRE(res.outcome == claim_outcome::won);
    REQUIRE(c.store.finish({"report", slot}, res.record.token, run_status::success));
    won.push_back(*c.store.get({"report", slot}));
  }
  const auto all = c.store.list_runs("report", 10);
  REQUIRE(all.size() == 3);
  CHECK(all[0] == won[2]);
  CHECK(all[1] == won[1]);
  CHECK(all[2] == won[0]);
  const auto two = c.store.list_runs("report", 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0] == won[2]);
  CHECK(two[1] == won[1]);
  CHECK(c.store.list_runs("report", 0).empty());
  CHECK(c.store.list_runs("other", 10).empty());
  CHECK(c.store.list_runs("repor", 10).empty());  // a prefix of a name is another job
}

// Trigger now (doc/store-rules.md, "Trigger now").

TEST_CASE("a trigger asks for one manual run at the store's now, exactly one manual claim of it wins") {
  cluster c;
  c.clock.advance(7s);
  const auto slot = c.store.trigger("report");  // a job that never ran can be triggered
  CHECK(slot == t0 + 7s);
  c.clock.advance(2s);
  CHECK(c.store.trigger("report") == slot);  // idempotent while pending
  const std::vector<std::string> mine{"report", "other"};
  CHECK(c.store.triggers(mine) == std::vector<lease::run_key>{{"report", slot}});

  auto req = c.request(slot, "api-1", lease::claim_reason::manual);
  const auto won = c.store.claim(req);
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.attempt == 1);
  CHECK(won.record.lease_end == t0 + 9s + 30s);
  CHECK(c.store.triggers(mine).empty());  // answered: no instance picks it up again
  // Every other instance's claim of it finds the run: a backup, as for a slot.
  CHECK(c.store.claim(c.request(slot, "api-2", lease::claim_reason::manual)).outcome == claim_outcome::running);
  REQUIRE(c.store.finish({"report", slot}, won.record.token, run_status::success));
  CHECK(c.store.claim(c.request(slot, "api-3", lease::claim_reason::manual)).outcome == claim_outcome::finished);
  // A new trigger is a new run.
  c.clock.advance(1s);
  CHECK(c.store.trigger("report") == t0 + 10s);
}

TEST_CASE("a trigger in the very millisecond of a run's slot is answered by that run") {
  cluster c;
  const auto live = c.claim(t0);
  REQUIRE(live.outcome == claim_outcome::won);
  const auto slot = c.store.trigger("report");
  REQUIRE(slot == t0);
  CHECK(c.claim(slot, "api-2", lease::claim_reason::manual).outcome == claim_outcome::running);
  const std::string job = "report";
  CHECK(c.store.triggers(std::span(&job, 1)).empty());
}

TEST_CASE("a manual claim without a pending trigger for its slot creates nothing") {
  cluster c;
  CHECK(c.claim(t0, "api-1", lease::claim_reason::manual).outcome == claim_outcome::none);
  const auto slot = c.store.trigger("report");
  c.clock.advance(1ms);
  CHECK(c.claim(slot + 1ms, "api-1", lease::claim_reason::manual).outcome == claim_outcome::none);  // another slot
  CHECK_FALSE(c.store.get({"report", slot + 1ms}));
  const std::string job = "report";
  CHECK(c.store.triggers(std::span(&job, 1)).size() == 1);  // still pending
}

TEST_CASE("a trigger waits for an instance however long: a manual run is never late and never superseded") {
  cluster c;
  const auto slot = c.store.trigger("report");
  c.clock.advance(1h);
  REQUIRE(c.claim(t0 + 1h - 1s).outcome == claim_outcome::won);  // the schedule ran a newer slot meanwhile
  c.clock.advance(1s);
  const auto won = c.store.claim(c.request(slot, "api-2", lease::claim_reason::manual, lease::overlap_mode::allow));
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  // The newer scheduled run is not interrupted by the older manual one.
  CHECK(c.store.get({"report", t0 + 1h - 1s})->status == run_status::running);
}

TEST_CASE("a trigger obeys the job's overlap mode: skip drops it, buffer_one keeps it for after the live run") {
  cluster c;
  const auto live = c.claim(t0);
  REQUIRE(live.outcome == claim_outcome::won);
  const std::string job = "report";
  SECTION("skip: answered overlap, and the trigger is answered") {
    c.clock.advance(1s);
    const auto slot = c.store.trigger("report");
    CHECK(c.store.claim(c.request(slot, "api-2", lease::claim_reason::manual)).outcome == claim_outcome::overlap);
    CHECK(c.store.triggers(std::span(&job, 1)).empty());
  }
  SECTION("buffer_one: answered overlap, the trigger stays pending and wins once the live run ended") {
    c.clock.advance(1s);
    const auto slot = c.store.trigger("report");
    auto req = [&] { return c.request(slot, "api-2", lease::claim_reason::manual, lease::overlap_mode::buffer_one); };
    CHECK(c.store.claim(req()).outcome == claim_outcome::overlap);
    CHECK(c.store.triggers(std::span(&job, 1)).size() == 1);
    REQUIRE(c.store.finish({"report", t0}, live.record.token, run_status::success));
    CHECK(c.store.claim(req()).outcome == claim_outcome::won);
  }
  SECTION("replace: the manual run interrupts the live one") {
    c.clock.advance(1s);
    const auto slot = c.store.trigger("report");
    CHECK(c.store.claim(c.request(slot, "api-2", lease::claim_reason::manual, lease::overlap_mode::replace)).outcome ==
          claim_outcome::won);
    CHECK(c.store.get({"report", t0})->status == run_status::interrupted);
  }
}

TEST_CASE("a trigger of a paused job is answered paused and does not wait for the resume") {
  cluster c;
  REQUIRE(c.store.pause("report"));
  const auto slot = c.store.trigger("report");
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::paused);
  REQUIRE(c.store.resume("report"));
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::none);
}

TEST_CASE("a trigger in a quarantine stays pending and runs once the quarantine ended, a loss forgets triggers") {
  cluster c;
  const std::string job = "report";
  (void)c.store.trigger("report");
  c.store.lose_state();
  CHECK(c.store.triggers(std::span(&job, 1)).empty());
  c.clock.advance(2s);  // past the loss's horizon (below)
  const auto slot = c.store.trigger("report");
  REQUIRE(slot == t0 + 2s);
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::quarantined);
  c.clock.advance(28s);  // one lease since the loss
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::won);
}

// The property tests' counterexample: a slot won early, the state lost, and
// an operator's trigger in the very millisecond of that slot. With slot =
// now, the manual run had the scheduled run's key and was won as its
// attempt 1 a second time.
TEST_CASE("a trigger within a second of a loss takes a slot past every slot that may have run before the loss") {
  cluster c;
  const auto slot = t0 + 1s;
  c.clock.advance(600ms);
  const auto early = c.claim(slot);  // within early_tolerance: won
  REQUIRE(early.outcome == claim_outcome::won);
  c.clock.advance(100ms);
  c.store.lose_state();  // noticed at t0 + 700 ms: slots up to t0 + 1.7 s may have run
  c.clock.advance(300ms);
  const auto manual = c.store.trigger("report");  // asked at the slot's own millisecond
  CHECK(manual == t0 + 1701ms);
  CHECK(c.store.trigger("report") == manual);  // idempotent while pending
  // The scheduled slot itself is never started again; the manual run is
  // started once the quarantine is over, under its own key.
  c.clock.advance(30s);
  CHECK(c.claim(slot, "api-2").outcome == claim_outcome::quarantined);
  const auto won = c.claim(manual, "api-2", lease::claim_reason::manual);
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(won.record.slot != early.record.slot);
  CHECK(won.record.fence > early.record.fence);
  // Past the horizon a trigger is at now again.
  REQUIRE(c.store.finish({"report", manual}, won.record.token, run_status::success));
  CHECK(c.store.trigger("report") == t0 + 31s);
}

TEST_CASE("a manual claim in the very millisecond of the loss, before its trigger's slot, is answered early and wins "
          "later") {
  cluster c;
  c.clock.advance(5s);
  c.store.lose_state();
  const auto slot = c.store.trigger("report");
  REQUIRE(slot == t0 + 6001ms);
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::early);
  c.clock.advance(1ms);
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::quarantined);
  const std::string job = "report";
  CHECK(c.store.triggers(std::span(&job, 1)).size() == 1);  // still pending
  c.clock.advance(30s);
  CHECK(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::won);
}

// A store that notices a loss beside its claims (Redis reads its marker in
// the claim's round trip): between the loss and its notice, claims run on
// the forgotten state. These rules keep what they won then from running.
TEST_CASE("a loss noticed later: a run won on the forgotten state is never taken over, whatever its attempt") {
  cluster c;
  REQUIRE(c.claim(t0, "api-1").outcome == claim_outcome::won);  // t0 runs on api-1…
  c.clock.advance(2s);
  c.store.forget_state();  // …the store forgets it, and does not know yet
  const auto blind = c.claim(t0, "api-2");
  REQUIRE(blind.outcome == claim_outcome::won);  // won again, on the forgotten state
  c.clock.advance(1s);
  c.store.notice_loss();  // noticed at t0 + 3 s: slots up to t0 + 4 s may have run
  c.clock.advance(40s);   // the blind run's lease and the quarantine are over
  const auto takeover = c.claim(t0, "api-3", lease::claim_reason::takeover);
  CHECK(takeover.outcome == claim_outcome::finished);
  CHECK(c.store.get({"report", t0})->status == run_status::interrupted);
  // A run past the horizon is taken over as usual.
  const auto later = c.clock.now();
  REQUIRE(c.claim(later, "api-1").outcome == claim_outcome::won);
  c.clock.advance(31s);
  CHECK(c.claim(later, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::won);
}

TEST_CASE("a loss noticed later: a trigger asked before the notice is not run at a slot inside the horizon, and "
          "moves past it when asked again") {
  cluster c;
  const std::string job = "report";
  const auto slot = t0 + 1s;
  c.clock.advance(600ms);
  REQUIRE(c.claim(slot).outcome == claim_outcome::won);  // a scheduled run, won early…
  c.clock.advance(100ms);
  c.store.forget_state();  // …forgotten
  c.clock.advance(300ms);
  const auto asked = c.store.trigger("report");  // in the slot's own millisecond, nothing knows of the loss
  REQUIRE(asked == slot);
  c.store.notice_loss();  // at t0 + 1 s
  c.clock.advance(30s);   // past the quarantine
  // Its key may be the forgotten scheduled run's: answered, not run.
  const auto manual = c.claim(asked, "api-2", lease::claim_reason::manual);
  CHECK(manual.outcome == claim_outcome::quarantined);
  CHECK(manual.record.lease_end == lease::time_point::max());
  CHECK(c.store.triggers(std::span(&job, 1)).empty());  // answered: no instance claims it again
  // A trigger pending inside the horizon (its asker learnt of the loss and
  // asks again) moves past it, and runs there.
  c.store.forget_state();
  c.clock.advance(1s);
  const auto again = c.store.trigger("report");
  c.store.notice_loss();
  const auto moved = c.store.trigger("report");
  CHECK(moved == c.clock.now() + lease::early_tolerance + 1ms);
  CHECK(moved != again);
  CHECK(c.store.trigger("report") == moved);  // idempotent while pending
  c.clock.advance(31s);
  CHECK(c.claim(moved, "api-2", lease::claim_reason::manual).outcome == claim_outcome::won);
}

TEST_CASE("a fence above the stored counter proves a loss of the job's state: its slots up to now are skipped, "
          "its next attempt waits out a lease") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::success));
  c.clock.advance(5s);
  c.store.forget_job("report");  // an evicted key: nothing notices
  CHECK_FALSE(c.store.lost_at());
  // A handle that remembers no fence cannot tell (doc/protocol.md §15,
  // "What detection cannot see")...
  CHECK_FALSE(c.store.prove_loss("report", 0));
  // ...one that remembers t0's can.
  REQUIRE(c.store.prove_loss("report", won.record.fence));
  const auto proved_at = c.clock.now();
  CHECK(c.store.snapshot().jobs.at("report").fence == won.record.fence);  // the counter raised back
  CHECK_FALSE(c.store.prove_loss("report", won.record.fence));           // proved once
  CHECK_FALSE(c.store.lost_at());  // one job's horizon, not yet every job's
  // Every claim of the job waits out a lease from the proof...
  const auto again = c.claim(t0, "api-2");
  CHECK(again.outcome == claim_outcome::quarantined);
  CHECK(again.record.lease_end == proved_at + 30s);
  c.clock.advance(2s);
  const auto next = c.claim(c.clock.now(), "api-2");
  CHECK(next.outcome == claim_outcome::quarantined);
  CHECK(next.record.lease_end == proved_at + 30s);
  // ...while another job, untouched, runs at once.
  auto other = c.request(c.clock.now(), "api-2");
  other.run.job = "mail";
  CHECK(c.store.claim(other).outcome == claim_outcome::won);
  // After it, the next slot wins with a fence above the one that proved.
  c.clock.advance(30s);
  // t0 ran before the loss: never again, however late its claim comes.
  const auto late = c.claim(t0, "api-2");
  CHECK(late.outcome == claim_outcome::quarantined);
  CHECK(late.record.lease_end == lease::time_point::max());
  const auto after = c.claim(c.clock.now(), "api-3");
  REQUIRE(after.outcome == claim_outcome::won);
  CHECK(after.record.fence > won.record.fence);
}

TEST_CASE("a job's proof moves every job's horizon only when the recorded loss does not explain its fence") {
  cluster c;
  const auto before = c.claim(t0, "api-1");  // a fence won before the loss
  REQUIRE(before.outcome == claim_outcome::won);
  c.clock.advance(10s);
  c.store.lose_state();  // noticed at once, at t0 + 10 s
  const auto lost_at = *c.store.lost_at();
  c.clock.advance(5s);
  // A fence won before the recorded loss: that loss explains it.
  REQUIRE(c.store.prove_loss("report", before.record.fence));
  CHECK_FALSE(c.store.record_proof(before.record.fence));
  CHECK(c.store.lost_at() == lost_at);
  // The job's own horizon is the proof's moment all the same: runs won
  // after the recorded loss may have been lost since, unseen by this caller.
  const auto slot = lost_at + 2s;
  CHECK(c.claim(slot, "api-2").record.lease_end == c.clock.now() + 30s);  // not lost_at + 30 s
  c.clock.advance(30s);
  CHECK(c.claim(slot, "api-2").record.lease_end == lease::time_point::max());  // and then never
  // A fence won after the recorded loss is news for every job.
  c.clock.advance(40s);
  const auto after = c.claim(c.clock.now(), "api-1");
  REQUIRE(after.outcome == claim_outcome::won);
  c.clock.advance(1s);
  c.store.forget_job("report");
  REQUIRE(c.store.prove_loss("report", after.record.fence));
  CHECK(c.store.record_proof(after.record.fence));
  CHECK(c.store.lost_at() == c.clock.now());
}

TEST_CASE("a trigger of a job whose loss a fence proved takes a slot past the job's horizon") {
  cluster c;
  const std::string job = "report";
  const auto won = c.claim(t0, "api-1");
  REQUIRE(won.outcome == claim_outcome::won);
  c.store.forget_job(job);
  REQUIRE(c.store.prove_loss(job, won.record.fence));  // at t0: t0 may have run
  CHECK(c.store.trigger(job) == t0 + lease::early_tolerance + 1ms);
}

TEST_CASE("a fence of a purged job proves nothing, and a fence above the purge's clock does") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::success));
  c.clock.advance(1s);
  REQUIRE(c.store.purge("report", 0s).outcome == lease::purge_outcome::purged);
  const std::uint64_t purged_at = lease::rules::detail::as_fence(c.clock.now());
  CHECK_FALSE(c.store.prove_loss("report", won.record.fence));
  CHECK_FALSE(c.store.prove_loss("report", purged_at));
  CHECK(c.store.list_jobs().empty());  // nothing made up
  CHECK(c.store.prove_loss("report", purged_at + 1));  // won after the purge, and lost since
}

TEST_CASE("quarantine_after_loss: a win or a resent win inside the horizon never runs, one after it waits out the "
          "quarantine") {
  cluster c;
  const lease::time_point lost_at = t0 + 10s;
  auto req = c.request(t0 + 10s);
  lease::claim_result won;
  won.outcome = claim_outcome::won;
  won.store_now = t0 + 10s;
  won.record.token = req.token;
  won.record.runner = req.runner;
  won.record.attempt = 2;  // any attempt
  CHECK(lease::rules::quarantine_after_loss(req, won, lost_at) == lease::time_point::max());
  // `running` with our own token: a resent claim whose first copy won.
  lease::claim_result resent = won;
  resent.outcome = claim_outcome::running;
  resent.record.lease_end = t0 + 40s;
  CHECK(lease::rules::quarantine_after_loss(req, resent, lost_at) == lease::time_point::max());
  resent.record.released = true;  // released: it starts nothing, nothing to hand back
  CHECK_FALSE(lease::rules::quarantine_after_loss(req, resent, lost_at).has_value());
  // Past the horizon: applied within a lease of the loss waits for its end.
  auto past = c.request(t0 + 12s);
  lease::claim_result inside = won;
  inside.record.token = past.token;
  inside.store_now = t0 + 12s;
  CHECK(lease::rules::quarantine_after_loss(past, inside, lost_at) == lost_at + past.lease);
  inside.store_now = lost_at + past.lease;  // applied after the quarantine: stands
  CHECK_FALSE(lease::rules::quarantine_after_loss(past, inside, lost_at).has_value());
  // Someone else's run: this claim starts nothing.
  lease::claim_result other = resent;
  other.record.released = false;
  other.record.token = "someone-else";
  CHECK_FALSE(lease::rules::quarantine_after_loss(req, other, lost_at).has_value());
  // Paused inside the quarantine is quarantined (claim() puts it first).
  lease::claim_result paused;
  paused.outcome = claim_outcome::paused;
  paused.store_now = t0 + 12s;
  CHECK(lease::rules::quarantine_after_loss(past, paused, lost_at) == lost_at + past.lease);
  // ...but a manual claim's `paused` stands: it answered the trigger in the
  // store, and a resend would find the trigger gone and say nothing.
  lease::claim_request manual = past;
  manual.reason = lease::claim_reason::manual;
  CHECK_FALSE(lease::rules::quarantine_after_loss(manual, paused, lost_at).has_value());
}

TEST_CASE("list_jobs shows a pending trigger and list_runs marks a manual run") {
  cluster c;
  const auto slot = c.store.trigger("report");
  auto jobs = c.store.list_jobs();
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].trigger == slot);
  REQUIRE(c.claim(slot, "api-1", lease::claim_reason::manual).outcome == claim_outcome::won);
  jobs = c.store.list_jobs();
  CHECK_FALSE(jobs[0].trigger);
  const auto runs = c.store.list_runs("report", 10);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].manual);
}

// Stop (a pause that hands over the runs in progress), registration and purge.

TEST_CASE("stop pauses the job and hands over its runs in progress, they stay stopped until a resume") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(won.outcome == claim_outcome::won);
  CHECK(c.store.stop("report") == 1);
  CHECK(c.store.paused("report"));
  const auto rec = c.store.get({"report", t0});
  CHECK(rec->released);
  CHECK(rec->handovers == 1);
  CHECK(rec->lease_end == t0 + 30s);  // kept: the handler runs until the runner hears of it
  CHECK_FALSE(c.store.heartbeat({"report", t0}, won.record.token, 30s));  // the runner learns it here
  // Until the lease ends no attempt starts, not even after an immediate resume.
  REQUIRE(c.store.resume("report"));
  CHECK(c.claim(t0, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::running);
  REQUIRE(c.store.pause("report"));
  c.clock.advance(30s);
  CHECK(c.claim(t0, "api-2", lease::claim_reason::takeover).outcome == claim_outcome::paused);  // stays stopped
  CHECK(c.store.stop("report") == 0);  // nothing left to hand over
  REQUIRE(c.store.resume("report"));
  const auto take = c.claim(t0, "api-2", lease::claim_reason::takeover);
  CHECK(take.outcome == claim_outcome::won);
  CHECK(take.record.attempt == 2);  // the handover is not charged against max_attempts
}

TEST_CASE("registrations list which instances have a job, its schedule and zone, and when each was last seen") {
  cluster c;
  const lease::job_registration a{"report", "api-1", "0 6 * * *", "Europe/Paris", {}};
  const lease::job_registration b{"report", "api-2", "0 6 * * *", "Europe/Paris", {}};
  c.store.register_jobs(std::vector{a, b});
  c.clock.advance(60s);
  c.store.register_jobs(std::vector{a});
  const auto jobs = c.store.list_jobs();
  REQUIRE(jobs.size() == 1);  // a job that never ran is listed by its registrations
  REQUIRE(jobs[0].instances.size() == 2);
  CHECK(jobs[0].instances[0].instance == "api-1");
  CHECK(jobs[0].instances[0].last_seen == t0 + 60s);
  CHECK(jobs[0].instances[1].instance == "api-2");
  CHECK(jobs[0].instances[1].last_seen == t0);
  CHECK(jobs[0].instances[1].schedule == "0 6 * * *");
  CHECK(jobs[0].instances[1].zone == "Europe/Paris");
}

TEST_CASE("purge deletes a job no instance registered for a while, and refuses while one did or a run is live") {
  cluster c;
  CHECK(c.store.purge("report", 1h).outcome == lease::purge_outcome::not_found);
  const auto won = c.claim(t0, "api-1");
  c.store.register_jobs(std::vector{lease::job_registration{"report", "api-1", "every 1h", "", {}}});
  c.clock.advance(10s);
  auto r = c.store.purge("report", 1h);
  CHECK(r.outcome == lease::purge_outcome::registered);
  REQUIRE(r.instance);
  CHECK(r.instance->instance == "api-1");
  r = c.store.purge("report", 5s);  // api-1 unseen for 10 s, but its run still holds a lease
  CHECK(r.outcome == lease::purge_outcome::running);
  CHECK(r.run == c.store.get({"report", t0}));
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::success));
  REQUIRE(c.store.pause("report"));
  (void)c.store.trigger("report");
  CHECK(c.store.purge("report", 5s).outcome == lease::purge_outcome::purged);
  CHECK(c.store.list_jobs().empty());  // runs, pause, trigger and registrations gone
  CHECK_FALSE(c.store.paused("report"));
  CHECK_FALSE(c.store.get({"report", t0}));
  // A later attempt of the job still gets a fence above every earlier one.
  c.clock.advance(1ms);
  const auto again = c.claim(t0 + 10s, "api-2");
  REQUIRE(again.outcome == claim_outcome::won);
  CHECK(again.record.fence > won.record.fence);
}

TEST_CASE("purge waits until the store's clock is past the job's last fence, so fences never repeat") {
  cluster c;
  const auto won = c.claim(t0, "api-1");
  REQUIRE(c.store.finish({"report", t0}, won.record.token, run_status::success));
  CHECK(c.store.purge("report", 0s).outcome == lease::purge_outcome::too_soon);  // same millisecond
  c.clock.advance(1ms);
  CHECK(c.store.purge("report", 0s).outcome == lease::purge_outcome::purged);
}

TEST_CASE("a manual run interrupts an expired newer run too, so its takeover cannot win beside it in skip mode") {
  cluster c;
  const auto slot = c.store.trigger("report");  // pending; no instance picks it up for a while
  c.clock.advance(10s);
  REQUIRE(c.claim(t0 + 10s, "api-1").outcome == claim_outcome::won);  // a newer scheduled run…
  c.clock.advance(31s);                                                  // …whose runner died
  REQUIRE(c.claim(slot, "api-2", lease::claim_reason::manual).outcome == claim_outcome::won);
  CHECK(c.store.get({"report", t0 + 10s})->status == run_status::interrupted);
  CHECK(c.claim(t0 + 10s, "api-3", lease::claim_reason::takeover).outcome == claim_outcome::finished);
}
