// Property tests over lease::sim histories: random clusters (3–5 instances,
// skewed clocks), random job settings and handler scripts, random faults
// (crash, restart, freeze, stop, slow store calls that block the caller,
// failing store calls and lost replies, store calls that time out while
// their request is still in the network and is applied later, handler tasks
// a busy executor starts late, heartbeat batches answered in part (each
// unanswered renewal applied or not), wall-clock steps, a store that loses
// its state and notices at once or, as Redis does, only by a marker read
// beside its claims), jobs paused and resumed in the store (no attempt is
// won while paused), and jobs removed and added again while instances run (I5
// then also says a removed-then-readded job never starts a slot twice),
// and operators' triggers ("trigger now", from outside every instance and
// through an instance's API, of paused jobs too, in skip and buffer_one
// modes, over a store that pushes them and one that is polled: no trigger
// runs twice, each runs or an event says why), operators' stops of jobs
// (a stopped run's handler is asked to stop; taken over only after a
// resume), and registration (every up instance's jobs registered within
// register_every + slack, at most one call per register_every when idle),
// and the events that end attempts (success, failed, handed_over, stopped,
// lost) say what the store and the operators did, late copies of finishes
// and releases aimed at the ends of runs (check_event_kinds);
// every history must satisfy the invariants of doc/invariants.md,
// including I9 (no two handlers of one run execute at once) and "a healthy
// runner is kept".
//
// At least 1,000 histories per run. RapidCheck prints the seed it uses;
// replay a failure with RC_PARAMS="seed=<that seed>".
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "lease/schedule/every.hpp"
#include "lease/sim.hpp"

using namespace std::chrono_literals;
using lease::duration;

namespace {

struct fault_cmd {
  int kind;  // 0 run, 1 crash, 2 restart, 3 freeze, 4 stop, 5 delay
  std::size_t who;
  duration d;
  int n;
};

duration ms(int v) { return duration{v}; }

/// Uniform in [lo, hi): RapidCheck scales inRange by its size, which would
/// make early histories all alike (every handler short, every step a wait).
int pick(int lo, int hi) { return *rc::gen::resize(100, rc::gen::inRange(lo, hi)); }
template <class T, class... Ts>
T one_of(T first, Ts... rest) {
  const T all[] = {first, rest...};
  return all[pick(0, static_cast<int>(sizeof...(Ts) + 1))];
}

/// What the random histories covered, printed after the property so a run
/// shows that the interesting paths (takeovers, lost, hand-overs) happen.
struct coverage_counts {
  std::size_t histories = 0, with_takeover = 0, handlers = 0, store_calls = 0, timed_takeovers = 0;
  std::size_t removes = 0, readds = 0, runs_after_readd = 0, slots_accounted = 0, pauses = 0, runs_after_resume = 0;
  std::size_t stops = 0, stopped_taken_over = 0, registration_calls = 0, resume_catch_ups = 0;
  std::size_t triggers = 0, manual_started = 0, manual_takeovers = 0, triggers_refused = 0, trigger_polls = 0;
  std::size_t unheard_triggers = 0, spared_claims = 0, store_steps = 0, store_back_steps = 0, aimed_loss_triggers = 0, losses_inside_claims = 0, restored_backups = 0, unnoticed_restores = 0;
  std::size_t partial_losses = 0, stale_partial_losses = 0, fence_proofs = 0, explained_proofs = 0, stale_proofs = 0;
  std::size_t handed_back = 0, resent_handed_back = 0;
  std::size_t late_copies = 0, late_claim_wins = 0, late_starts = 0, late_starts_refused = 0, wins_answered_after_loss = 0;
  std::size_t outlived_lease = 0, outlived_lease_returned = 0;
  std::size_t replicated_histories = 0, lags = 0, histories_with_lag = 0, failovers = 0, histories_with_failover = 0;
  std::size_t unreplicated_claims = 0, unreplicated_heartbeats = 0, unreplicated_finishes = 0, unreplicated_other = 0;
  std::size_t finishes_lost = 0, accepted_reruns = 0;
  std::size_t partial_batches = 0, unanswered_applied = 0, unanswered_dropped = 0, partial_refusals = 0;
  std::size_t partial_claim_batches = 0, unanswered_claims_applied = 0, unanswered_claims_dropped = 0;
  std::size_t partial_finish_batches = 0, unanswered_ends_applied = 0, unanswered_ends_dropped = 0;
  std::size_t aimed_slot_calls = 0;  // adds, remove-and-adds and starts in a slot's very millisecond
  std::size_t kinds_checked = 0;  // attempts' last events held to the store's truth (check_event_kinds)
  std::array<std::size_t, static_cast<std::size_t>(lease::event_kind::stopped) + 1> kinds{};
  void print() const {
    std::cout << "  coverage: " << histories << " histories, " << with_takeover << " with a takeover, "
              << handlers << " handler runs, " << store_calls << " store calls, " << timed_takeovers
              << " lease ends held to the takeover deadline (I6), " << removes << " jobs removed and " << readds
              << " added again while running (" << runs_after_readd << " handler starts after one), " << slots_accounted
              << " (instance, slot) pairs held to \"every slot says why\", " << pauses << " pauses ("
              << runs_after_resume << " handler starts after a resume, " << resume_catch_ups
              << " slots missed while paused caught up by a resume), " << triggers << " triggers ("
              << manual_started << " manual runs started, " << manual_takeovers << " manual attempts taken over, "
              << triggers_refused << " with a skip or paused event (not run, or waited in buffer_one); " << trigger_polls << " trigger polls, " << unheard_triggers << " pushed while every listener was cut, " << aimed_loss_triggers << " in a slot's millisecond just after a loss of state); " << losses_inside_claims << " losses inside a claim round trip; " << restored_backups << " backups restored (" << unnoticed_restores << " noticed only by a fence); " << partial_losses << " losses of one job's state, unnoticed (" << stale_partial_losses << " after a noticed loss, with an instance frozen since before it), " << fence_proofs << " losses proved by a fence an instance remembered (" << explained_proofs << " explained by the recorded loss; " << stale_proofs << " losses of one job's state first proved by a fence from before a recorded loss); " << spared_claims << " claims not sent, their run's finish announced; " << store_steps << " steps of the store's clock ahead and " << store_back_steps << " back (in histories without a loss of state); " << handed_back << " answers won on a forgotten state handed back by the marker beside them (" << resent_handed_back << " of them resent claims answered running with their own token); " << stops << " operator stops that handed over a run ("
              << stopped_taken_over << " stopped runs taken over after a resume); " << registration_calls
              << " registrations; " << late_copies << " store requests applied after their caller gave up on them (" << late_claim_wins << " claims that won); " << late_starts << " handler tasks taken late by a busy executor (" << late_starts_refused << " after their lease was lost, not started); " << outlived_lease << " handlers that ended after their lease was lost (" << outlived_lease_returned << " returned); " << wins_answered_after_loss << " wins answered after a loss of their state; " << aimed_slot_calls << " adds, remove-and-adds and starts in a slot's very millisecond; events:";
    for (std::size_t k = 0; k < kinds.size(); ++k)
      std::cout << ' ' << lease::to_string(static_cast<lease::event_kind>(k)) << '=' << kinds[k];
    std::cout << std::endl;
    std::cout << "  event kind accuracy: " << kinds_checked
              << " success, failed, handed_over, stopped and lost events held to the store's truth" << std::endl;
    std::cout << "  heartbeat batches answered in part: " << partial_batches << " (" << unanswered_applied
              << " unanswered renewals applied, " << unanswered_dropped << " never received; " << partial_refusals
              << " runners stopped by a refusal answered in one)" << std::endl;
    std::cout << "  claim batches answered in part: " << partial_claim_batches << " (" << unanswered_claims_applied
              << " unanswered claims applied, " << unanswered_claims_dropped << " never received)" << std::endl;
    std::cout << "  finish batches answered in part: " << partial_finish_batches << " (" << unanswered_ends_applied
              << " unanswered finishes and releases applied, " << unanswered_ends_dropped << " never received)"
              << std::endl;
    if (replicated_histories > 0)
      std::cout << "  replicas = 1: " << replicated_histories << " histories on a primary with one replica, "
                << histories_with_lag << " with a lag (" << lags << " lags), " << histories_with_failover
                << " with a failover (" << failovers << " failovers); calls thrown as not_replicated: "
                << unreplicated_claims << " claim calls (their wins released), " << unreplicated_heartbeats
                << " heartbeat calls (renewals not counted), " << unreplicated_other
                << " triggers, pauses and resumes; " << unreplicated_finishes
                << " finishes recorded on the primary only, " << finishes_lost << " of them lost in a failover, "
                << accepted_reruns << " such runs started again (the accepted cost)" << std::endl;
  }
};

/// RapidCheck's default is 100 cases; this suite runs at least `cases` (1,000) unless
/// RC_PARAMS sets max_success itself.
template <class Testable>
void prop_1000(const std::string& description, Testable&& testable, int cases = 1000) {
  using namespace rc::detail;
  TestParams params = configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (env == nullptr || std::string(env).find("max_success") == std::string::npos)
    params.maxSuccess = std::max(params.maxSuccess, cases);
  TestMetadata meta;
  meta.id = description;
  meta.description = description;
  const TestResult result = checkTestable(std::forward<Testable>(testable), meta, params);
  std::ostringstream os;
  printResultMessage(result, os);
  std::cout << "- " << description << ": " << os.str() << std::endl;  // the distribution of cases
  INFO(os.str() << "\n(seed " << params.seed << "; replay with RC_PARAMS=\"seed=" << params.seed << "\")");
  CHECK(result.template is<SuccessResult>());
}

}  // namespace

/// Cuts the trigger listener of instance `who` (every instance's if `who`
/// is the count) for 0.1 to 5 s: well inside the 20 s in which an instance
/// with the job must answer a trigger.
template <class Sim>
void cut_trigger_listeners(Sim& sim, int who) {
  const duration d = ms(pick(100, 5000));
  for (std::size_t i = 0; i < sim.size(); ++i)
    if (static_cast<int>(i) == who || who == static_cast<int>(sim.size())) sim.cut_trigger_listener(i, d);
}

/// How far the store's clock may be stepped ahead in a history.
enum class store_steps {
  /// Up to the safety margin (lease / 10): harmless whatever the runners'
  /// heartbeats do. Among every other fault.
  within_margin,
  /// Up to lease − 2 × heartbeat: harmless only while each runner's next
  /// heartbeat reaches the store on time (doc/protocol.md §2), so the
  /// faults that make a heartbeat late or lost (freezes, slow, hung, delayed
  /// or failed store calls) are left out of these histories.
  within_heartbeat,
};

/// One random history: options, jobs, scripts, instances with skew, faults.
/// `long_jobs` picks intervals far longer than a lease, so that runs are not
/// overtaken by their next slot and the takeover deadline (I6) applies.
template <class Sim = lease::sim::cluster<>>
/// `losses`: every history's store notices a loss only beside its claims,
/// and one step in three is a loss followed by lost replies (case 30).
void random_history(coverage_counts& coverage, bool long_jobs, store_steps ahead = store_steps::within_margin,
                    bool losses = false) {
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  lease::options o;
  o.lease = ms(one_of(2000, 3000));
  o.max_attempts = static_cast<std::uint32_t>(pick(1, 4));
  o.catch_up = ms(one_of(0, 5000, 20000));
  o.max_late = ms(one_of(500, 3000));
  o.history_size = static_cast<std::uint32_t>(pick(1, 4));
  o.claim_jitter = ms(one_of(0, 100, 300));
  o.catch_up_jitter = ms(one_of(0, 500));
  o.stop_timeout = 1s;
  o.register_every = ms(one_of(1000, 5000, 60000));
  const int lease_ms = static_cast<int>(o.lease.count());

  Sim sim(seed, o);
  sim.announce_releases(pick(0, 3) != 0);  // a PushStore, mostly; sometimes a store that cannot push
  sim.announce_finished_runs(pick(0, 2) == 0);  // an EndPushStore (ours) or a plain PushStore (a user's)
  // Half the histories' store notices a loss of its state only by the
  // marker read beside its claims, as Redis does: a claim can win on the
  // forgotten state, and a lost reply loses the answer that hands it back.
  const bool loss_beside_claims = losses || pick(0, 2) == 0;
  sim.notice_losses_beside_claims(loss_beside_claims);
  // Half of those are Redis with `replicas = 1` over a primary and one
  // asynchronous replica: the replica lags now and then (case 36), and the
  // primary fails over to it or it catches up. Not where every heartbeat
  // must be on time: an unreplicated renewal does not count.
  const bool replicated = loss_beside_claims && ahead == store_steps::within_margin &&
                          std::is_same_v<typename Sim::store_type, lease::sim::store> && pick(0, 2) == 0;
  sim.wait_for_replica(replicated);
  coverage.replicated_histories += replicated ? 1 : 0;
  // Now and then two or three jobs alike, due together with one length
  // for every run: an instance that wins them in one claim batch ends
  // them together, and their finishes go in one batch too.
  const bool alike = pick(0, 3) == 0;
  const bool same_length = alike;
  const int jobs = alike ? pick(2, 4) : pick(1, 3);
  std::vector<duration> intervals;
  for (int j = 0; j < jobs; ++j) {
    const duration interval = alike && j > 0 ? intervals.front()
                              : long_jobs    ? ms(one_of(30000, 60000))
                                             : ms(one_of(1000, 2000, 5000, 15000));
    intervals.push_back(interval);
    // A few scripts per job; each attempt picks one from its token, so the
    // choice is as deterministic as the seed.
    std::vector<lease::sim::script> scripts;
    const int k = pick(1, 4);
    for (int i = 0; i < k; ++i) {
      lease::sim::script s;
      s.runs_for = ms(long_jobs ? pick(1000, 20000) : pick(50, 8000));
      if (same_length) s.runs_for = long_jobs ? 5s : 700ms;
      s.ends = pick(0, 5) == 0 ? lease::sim::script::ending::throws : lease::sim::script::ending::returns;
      if (pick(0, 3) != 0) s.honours_stop = ms(pick(0, 2000));
      s.on_stop = pick(0, 2) == 0 ? lease::sim::script::ending::returns : lease::sim::script::ending::throws;
      scripts.push_back(s);
    }
    sim.add_job("job" + std::to_string(j), lease::every(interval), [scripts](const lease::run_context& c) {
      return scripts[std::hash<std::string>{}(c.token) % scripts.size()];
    });
  }
  const int n = pick(3, 6);
  for (int i = 0; i < n; ++i) sim.add_instance("n" + std::to_string(i), ms(pick(-lease_ms, lease_ms + 1)));
  sim.start_all();

  const int steps = pick(3, 12);
  const int hb_ms = static_cast<int>(o.heartbeat_interval().count());
  // The safety margin is one budget (doc/protocol.md §5): a runner's
  // monotonic clock running slow uses (1 - rate) x lease of it, and a step
  // ahead of the store's clock the rest. CI found the two at once: a runner
  // at 92 % of real time (160 ms of a 2 s lease's 200 ms margin) and a 68 ms
  // step let a backup win 1 ms before the runner's late heartbeat was
  // refused (I9). With every heartbeat on time the lease is renewed long
  // before either matters, so only the margin's histories share it.
  const int margin_ms = std::min(lease_ms / 10, 5000);  // the scheduler's min(lease / 10, 5 s)
  int slow_share_ms = 0, stepped_ms = 0;
  // How far the store's clock may still be stepped ahead, and how much of
  // the margin slow clocks may take in all.
  const auto step_room = [&] { return ahead == store_steps::within_margin ? margin_ms - slow_share_ms : lease_ms - 2 * hb_ms; };
  const auto slow_room = [&] { return ahead == store_steps::within_margin ? margin_ms - stepped_ms : lease_ms; };
  bool stepped_ahead = false;
  // One history in four of the margin's steps the store's clock back too,
  // as often as it likes, and then never loses the store's state: a step
  // back alone only stretches leases, quarantines and retention in real
  // time; with a loss after it, it can run a slot twice (below).
  const bool steps_back = ahead == store_steps::within_margin && pick(0, 4) == 0;
  // The end of a lag: mostly a failover, which loses the writes since it
  // began (a loss, so never after a step of the store's clock back), or the
  // replica catches up.
  const auto end_lag = [&] {
    if (!steps_back && pick(0, 3) != 0 && sim.fail_over_to_replica()) return;
    sim.replica_catches_up();
  };
  for (int s = 0; s < steps; ++s) {
    const auto who = static_cast<std::size_t>(pick(0, n));
    int fault = losses && pick(0, 3) == 0 ? pick(30, 34) : pick(0, 36);
    if (replicated && pick(0, 5) == 0) fault = 36;
    if (pick(0, 16) == 0) fault = 37;
    if (pick(0, 16) == 0) fault = 38;
    if (pick(0, 12) == 0) fault = 39;
    if (pick(0, 16) == 0) fault = 40;
    if (pick(0, 10) == 0) fault = 41;
    const bool late_heartbeat = fault == 5 || fault == 7 || fault == 8 || fault == 9 || fault == 10 || fault == 13 ||
                                fault == 30 || fault == 34 || fault == 35 || fault == 37 || fault == 38;
    if (ahead == store_steps::within_heartbeat && late_heartbeat) fault = 28;
    if (steps_back && (fault == 12 || fault == 29 || fault == 30 || fault == 31 || fault == 32 || fault == 33))
      fault = 28;  // all lose the store's state
    switch (fault) {
      case 0: case 1: case 2: sim.run_for(ms(pick(100, long_jobs ? 20000 : 8000))); break;
      case 3: sim.crash(who); break;
      // (A process started while a loss of one job's state is unproven
      // could not tell: see case 33.)
      case 4:
        if (!sim.loss_unproven()) sim.restart(who);
        break;
      case 5: sim.freeze(who, ms(pick(500, 2 * lease_ms))); break;
      case 6: sim.stop(who, ms(pick(0, 2000))); break;
      case 7: sim.delay_store(who, ms(pick(100, 2 * lease_ms)), pick(1, 4)); break;
      case 8: sim.fail_store(who, lease::errc::unavailable, pick(1, 6)); break;
      case 9: sim.fail_store(who, lease::errc::outcome_unknown, pick(1, 3), pick(0, 2) == 1); break;
      // A hung call whose reply comes after the lease could have ended.
      case 10: sim.slow_store(who, ms(pick(100, 2 * lease_ms)), pick(1, 3), true); break;
      // NTP or an operator steps one instance's wall clock, either way.
      case 11: sim.step_clock(who, ms(one_of(-60000, -2 * lease_ms, -500, 500, 2 * lease_ms, 17000))); break;
      case 12: sim.lose_store_state(); break;
      case 13: sim.fail_store(who, lease::errc::unavailable, pick(1, 3), true); break;  // applied, reply lost
      case 14: sim.lose_announcements(pick(1, 4)); break;  // a dropped notification, a cut subscriber
      // A monotonic clock off by up to 8 %, slow or fast (the margin covers
      // a runner down to 90 %, less what a step of the store's clock took
      // of it; backups that run slow check later).
      case 15: {
        int permille = one_of(920, 960, 1040, 1080);
        if ((1000 - permille) * lease_ms / 1000 > slow_room()) permille = 2000 - permille;  // fast instead
        slow_share_ms = std::max(slow_share_ms, (1000 - permille) * lease_ms / 1000);
        sim.drift_clock(who, permille / 1000.0);
        break;
      }
      // An operator removes a job on one instance (its handler finishes, or
      // is handed over), and adds it back (or re-adds it: an upsert).
      case 16: sim.remove_job(who, "job" + std::to_string(pick(0, jobs)), pick(0, 3) == 0); break;
      case 17: sim.readd_job(who, "job" + std::to_string(pick(0, jobs))); break;
      // An operator pauses a job in the store (every instance at once), and
      // resumes it: no attempt is won while it is paused.
      case 18: case 19: sim.pause_job("job" + std::to_string(pick(0, jobs))); break;
      case 20: sim.resume_job("job" + std::to_string(pick(0, jobs))); break;
      // An operator triggers a run now: with the store from outside every
      // instance (leasectl), or through one instance's API.
      case 21: case 22: sim.trigger_job("job" + std::to_string(pick(0, jobs))); break;
      case 23: sim.trigger_on(who, "job" + std::to_string(pick(0, jobs))); break;
      // An operator stops a job (leasectl stop): paused, its runs in progress
      // handed over; their runners ask their handlers to stop. A resume
      // (case 20) lets a backup take each over as its next attempt.
      case 24: case 25: coverage.stops += sim.stop_job("job" + std::to_string(pick(0, jobs))) > 0 ? 1 : 0; break;
      // An operator resumes a job through one instance's API, asking it to
      // catch up the latest slot missed while paused (within catch_up).
      case 26: sim.resume_on(who, "job" + std::to_string(pick(0, jobs)), lease::missed_slots::catch_up_latest); break;
      // A trigger listener's connection drops (one instance's, or every
      // one's: the server restarted); pushes meanwhile are lost until it
      // reconnects and its instance polls.
      case 27: cut_trigger_listeners(sim, pick(0, 2) == 0 ? n : static_cast<int>(who)); break;
      // NTP or an operator steps the store's clock ahead, once per history
      // (steps ahead add up: within one heartbeat, two are one step of
      // their sum; a counterexample found three at one instant). Back only
      // in histories without a loss of state: the precondition excludes
      // it, and the sim showed why — a step back of 500 ms, then a loss of
      // the store's state: the slot won just before the step lay past the
      // loss's horizon on the stepped clock, and was won again after the
      // quarantine (I5: attempt 1 won twice).
      case 28:
        if (steps_back && pick(0, 2) == 0) {
          ++coverage.store_back_steps;
          sim.step_store_clock(-ms(one_of(200, 500, lease_ms, 60000)));
          break;
        }
        if (stepped_ahead || step_room() < 1) break;
        stepped_ahead = true;
        ++coverage.store_steps;
        stepped_ms = pick(1, step_room() + 1);
        sim.step_store_clock(ms(stepped_ms));
        break;
      // The store loses its state within a second before a slot, which an
      // instance whose clock runs ahead may have won early, and an operator
      // triggers the job in that slot's very millisecond: the manual run
      // must not take the forgotten scheduled run's key (rules::trigger_slot;
      // random histories found this once in thousands, so it is aimed at).
      case 29: {
        const int j = pick(0, jobs);
        const auto every = intervals[static_cast<std::size_t>(j)].count();
        const lease::time_point slot{duration{(sim.now().time_since_epoch().count() / every + 2) * every}};
        sim.run_until(slot - ms(pick(1, 1000)));
        sim.lose_store_state();
        sim.run_until(slot);
        ++coverage.aimed_loss_triggers;
        sim.trigger_job("job" + std::to_string(j));
        break;
      }
      // The store loses its state just before a slot, and every
      // instance's next call is applied and its reply lost: where the loss
      // is noticed only beside claims, the slot's claim won on the forgotten
      // state is left unchecked until its resend (a FLUSHALL, then a lost
      // reply: the fault of 1367506).
      case 30: {
        const auto every = intervals[static_cast<std::size_t>(pick(0, jobs))].count();
        const lease::time_point slot{duration{(sim.now().time_since_epoch().count() / every + 1) * every}};
        sim.run_until(slot - ms(pick(1, 500)));
        sim.lose_store_state();
        for (std::size_t i = 0; i < sim.size(); ++i) sim.fail_store(i, lease::errc::outcome_unknown, pick(1, 4), true);
        break;
      }
      // The store loses its state inside an instance's claim round trip,
      // between its pipelined commands, just before a slot (a FLUSHALL
      // from elsewhere): beside the claims, only a marker read after them
      // shows it. Read before them, it missed this one, and a claim of a
      // slot that already ran could win on the forgotten state unchecked.
      case 31: {
        const auto every = intervals[static_cast<std::size_t>(pick(0, jobs))].count();
        const lease::time_point slot{duration{(sim.now().time_since_epoch().count() / every + 1) * every}};
        sim.run_until(slot - ms(pick(1, 300)));
        sim.lose_store_state_inside_claims(who, static_cast<std::size_t>(pick(0, 3)));
        ++coverage.losses_inside_claims;
        break;
      }
      // A partial loss: the store comes back as a backup taken a moment
      // ago (restored; a failover to a replica that lacked the last
      // writes). Runs that were running then may have ended since, and
      // triggers pending then may have been answered: none runs again.
      // Half the time nothing notices the restore (a PostgreSQL database or
      // a Redis dump restored whole, its marker the backup's): only the
      // fences instances remember prove it, where detection can see it.
      case 32:
        sim.take_store_backup();
        sim.run_for(ms(pick(1, 15000)));
        // (Not while a request is in the network: one carrying a fence from
        // before the backup's proves nothing, and its win hides the loss from
        // every later proof — a finding, test/scheduler/late_faults.cpp.)
        if (pick(0, 2) == 0 && sim.late_copies_in_flight() == 0 && sim.restore_store_backup_unnoticed()) {
          ++coverage.unnoticed_restores;
        } else {
          sim.restore_store_backup();
        }
        ++coverage.restored_backups;
        break;
      // A loss of one job's state alone, unnoticed (a key evicted, a Redis
      // Cluster master failed over to a replica that lacked it): only a
      // fence an instance remembers proves it. Half the time it comes
      // after a loss the store noticed, with one instance frozen since
      // before that loss: its fence is from before it, and its first claim
      // after the freeze is of a slot the others ran since. That proof is
      // explained by the recorded loss, but the job's horizon must still be
      // the proof's moment: at the recorded loss, the slot would win again.
      case 33: {
        const int j = pick(0, jobs);
        const bool stale = ahead != store_steps::within_heartbeat && pick(0, 2) == 0;
        const auto every = intervals[static_cast<std::size_t>(j)].count();
        const lease::time_point thaw = sim.now() + ms(lease_ms + every + 1500);
        if (stale) {
          sim.freeze(who, thaw - sim.now());
          sim.run_for(ms(pick(1, 300)));
          sim.lose_store_state();
          const lease::time_point slot{duration{((sim.now().time_since_epoch().count() + lease_ms) / every + 1) * every}};
          sim.run_until(slot + ms(pick(50, 400)));
        }
        if (sim.late_copies_in_flight() == 0 && sim.lose_job_state("job" + std::to_string(j))) {
          ++coverage.partial_losses;
          if (stale) ++coverage.stale_partial_losses;
        }
        // The frozen instance thaws and claims: a freeze this long may not
        // outlast the history, whose checks hold every instance that was
        // up to "every slot says why".
        if (stale) sim.run_until(thaw + ms(100));
        break;
      }
      // Store calls that time out while their request is still in the
      // network, applied a moment or a few leases after the caller gave up
      // (before its resend after a backoff, 100 ms at first, or after it,
      // or after a new claim with a new token): a socket written, the
      // client reconnecting, the server reading the old connection late.
      // Claims, heartbeats, finishes, releases of one instance; or, half
      // the time, every instance's claims of the next slot.
      case 34: {
        const bool claims = pick(0, 2) == 0;
        if (claims) {
          const auto every = intervals[static_cast<std::size_t>(pick(0, jobs))].count();
          const lease::time_point slot{duration{(sim.now().time_since_epoch().count() / every + 1) * every}};
          sim.run_until(slot - ms(pick(1, 300)));
        }
        for (std::size_t i = 0; i < sim.size(); ++i) {
          if (!claims && i != who) continue;
          const int tier = pick(0, 3);
          const int later = tier == 0 ? pick(1, 100) : tier == 1 ? pick(100, 1000) : pick(1000, 3 * lease_ms);
          sim.late_copy_store(i, ms(pick(100, lease_ms)), ms(later), pick(1, 4),
                              pick(0, 3) == 0 ? lease::errc::outcome_unknown : lease::errc::unavailable, claims);
        }
        break;
      }
      // Every worker of an instance's executor busy: its next handler tasks
      // start late. Half the time around a slot whose claim the instance may
      // win, with its store calls hanging from just after that: its lease is
      // lost before its task starts, and the task must not call the handler.
      case 35: {
        const bool aimed = pick(0, 2) == 0;
        lease::time_point slot{};
        if (aimed) {
          const auto every = intervals[static_cast<std::size_t>(pick(0, jobs))].count();
          slot = lease::time_point{duration{(sim.now().time_since_epoch().count() / every + 1) * every}};
          sim.run_until(slot - ms(pick(1, 300)));
        }
        sim.delay_starts(who, ms(pick(100, 3 * lease_ms)), pick(1, 4));
        if (aimed) {
          sim.run_until(slot + o.claim_jitter + ms(pick(1, 300)));
          sim.hang_store(who, ms(pick(lease_ms, 2 * lease_ms)), pick(1, 3));
        }
        break;
      }
      // The replica lags (replicated histories): each call's WAIT after a
      // write of its connection falls short. Half the time just before a
      // slot, so that its claims meet it; the lag ends at once, after a
      // while, or at a later step (crashes, freezes and the rest meanwhile).
      case 36: {
        if (sim.replica_lagging()) {
          end_lag();
          break;
        }
        if (pick(0, 2) == 0) {
          const auto every = intervals[static_cast<std::size_t>(pick(0, jobs))].count();
          const lease::time_point slot{duration{(sim.now().time_since_epoch().count() / every + 1) * every}};
          sim.run_until(slot - ms(pick(1, 500)));
        }
        sim.replica_lags();
        ++coverage.lags;
        // (Mostly ended here: every claim during a lag is answered, released
        // and sent again, and long lags made the suite 10 % slower.)
        if (pick(0, 3) != 0) {
          sim.run_for(ms(pick(1, 2 * lease_ms)));
          end_lag();
        }
        break;
      }
      // A heartbeat batch answered in part (a Redis Cluster with one master
      // down): some renewals answered, the others failed, each applied with
      // its reply lost or never received. Half the time on the instance
      // running the most handlers now (a batch needs two renewals).
      case 37: {
        std::size_t target = who;
        if (pick(0, 2) == 0) {
          std::map<std::string, int> running;
          for (const auto& r : sim.recorded().handlers)
            if (!r.end) ++running[r.instance];
          int most = 0;
          for (std::size_t i = 0; i < sim.size(); ++i)
            if (running[sim.instance_at(i).instance()] > most) {
              most = running[sim.instance_at(i).instance()];
              target = i;
            }
        }
        const auto bits = static_cast<std::uint64_t>(*rc::gen::arbitrary<std::uint64_t>());
        sim.answer_heartbeats_in_part(target, pick(1, 5), bits);
        break;
      }
      // The ends of runs meet late copies: the instance running the most
      // handlers is stopped, or hands a job's runs over (remove), while
      // its next calls time out with their requests still in the network,
      // applied a moment after (mostly before the resend, 100 to 150 ms
      // on), their outcome unknown (read back first: not applied yet) or
      // unavailable (resent). A release or finish whose first copy applies
      // before its resend is refused under a run it ended itself: the
      // events must still say how the attempt ended (check_event_kinds).
      case 38: {
        std::size_t target = who;
        std::map<std::string, int> running;
        for (const auto& r : sim.recorded().handlers)
          if (!r.end) ++running[r.instance];
        int most = 0;
        for (std::size_t i = 0; i < sim.size(); ++i)
          if (running[sim.instance_at(i).instance()] > most) {
            most = running[sim.instance_at(i).instance()];
            target = i;
          }
        const int later = pick(0, 4) == 0 ? pick(100, 2 * lease_ms) : pick(1, 100);
        sim.late_copy_store(target, ms(pick(20, 400)), ms(later), pick(1, 4),
                            pick(0, 3) != 0 ? lease::errc::outcome_unknown : lease::errc::unavailable);
        if (pick(0, 2) == 0) {
          sim.stop(target, ms(pick(500, 3000)));
        } else {
          const std::string job = "job" + std::to_string(pick(0, jobs));
          sim.remove_job(target, job, true);
          sim.run_for(ms(pick(500, 3000)));
          sim.readd_job(target, job);
        }
        break;
      }
      // An operator's call in the very millisecond of one of a job's slots
      // on the instance's wall clock, before that millisecond's timers: the
      // job added again (an upsert), removed and added, or the process
      // started. The slot is due all the same (check_slots_accounted holds
      // a stretch's first millisecond too). Review findings F2 and F3 were
      // slots skipped or claimed twice at such an instant, found by reading
      // the code: the sim could not aim at it.
      case 39: {
        const std::string job = "job" + std::to_string(pick(0, jobs));
        const int call = pick(0, 3);
        const bool hand_over = pick(0, 2) == 0;
        if (call == 2) sim.crash(who);
        sim.first_at(sim.slot_time_on(who, job), [&] {
          if (call == 0) {
            sim.readd_job(who, job);
          } else if (call == 1) {
            sim.remove_job(who, job, hand_over);
            sim.readd_job(who, job);
          } else if (!sim.loss_unproven()) {
            sim.restart(who);
          }
        });
        ++coverage.aimed_slot_calls;
        break;
      }
      // A claim batch answered in part (a Redis Cluster with the master of
      // some jobs down): some claims answered, and acted on, the others
      // failed, each applied with its reply lost or never received, and
      // resent with its token.
      case 40: sim.answer_claims_in_part(who, pick(1, 5), *rc::gen::arbitrary<std::uint64_t>()); break;
      // A batch of finishes and releases answered in part: the answered
      // ones end their attempts, the others are read back (their reply
      // lost) or retried (never received) while their runs are renewed.
      case 41: sim.answer_finishes_in_part(who, pick(1, 5), *rc::gen::arbitrary<std::uint64_t>(), true); break;
    }
    sim.check_registrations_now();
    // Now and then a trigger right after another step (a run in progress, a
    // pause, a crash): the interesting answers are overlap and paused.
    if (pick(0, 4) == 0) sim.trigger_job("job" + std::to_string(pick(0, jobs)));
  }
  // A last trigger, with time for it: a trigger left pending while an
  // instance with the job runs unhindered is a violation. Now and then every
  // listener is cut when it is asked: only the reconnects' polls find it.
  if (sim.replica_lagging()) end_lag();
  if (pick(0, 4) == 0) cut_trigger_listeners(sim, n);
  sim.trigger_job("job" + std::to_string(pick(0, jobs)));
  sim.run_for(3 * o.lease + 20s);
  sim.check_registrations_now();
  if (!long_jobs) {
    // Every instance stops at the end, so that each slot due on it up to
    // then is held to "every slot says why", however late in the history.
    for (std::size_t i = 0; i < sim.size(); ++i) sim.stop(i, o.stop_timeout);
    sim.run_for(o.stop_timeout + 100ms);
  }
  const auto& h = sim.recorded();
  int takeovers = 0;
  for (const auto& r : h.handlers) takeovers += r.attempt > 1 ? 1 : 0;
  ++coverage.histories;
  coverage.with_takeover += takeovers > 0 ? 1 : 0;
  coverage.handlers += h.handlers.size();
  coverage.store_calls += h.ops.size();
  for (const auto& e : h.events) coverage.kinds[static_cast<std::size_t>(e.kind)]++;
  std::optional<lease::time_point> first_readd;
  for (const auto& [at, what] : h.faults) {
    coverage.removes += what.rfind("remove job", 0) == 0 ? 1 : 0;
    if (what.rfind("add job", 0) == 0) {
      ++coverage.readds;
      if (!first_readd) first_readd = at;
    }
  }
  for (const auto& r : h.handlers) coverage.runs_after_readd += first_readd && r.start > *first_readd ? 1 : 0;
  std::optional<lease::time_point> first_resume;
  for (const auto& p : h.pauses) {
    coverage.pauses += p.paused ? 1 : 0;
    if (!p.paused && !p.job.empty() && !first_resume) first_resume = p.at;
  }
  for (const auto& r : h.handlers) coverage.runs_after_resume += first_resume && r.start > *first_resume ? 1 : 0;
  for (const auto& e : h.events)  // a catch-up won after a resume (start()'s catch-ups come before any)
    coverage.resume_catch_ups += e.kind == lease::event_kind::catch_up && first_resume && e.at > *first_resume ? 1 : 0;
  coverage.triggers += h.triggers.size();
  for (const auto& t : h.triggers) {
    const lease::run_key key{t.job, t.slot};
    for (const auto& r : h.handlers)
      if (r.run == key) ++(r.attempt == 1 ? coverage.manual_started : coverage.manual_takeovers);
    for (const auto& e : h.events)
      if (e.run == key && (e.kind == lease::event_kind::skip || e.kind == lease::event_kind::paused)) {
        ++coverage.triggers_refused;
        break;
      }
  }
  coverage.trigger_polls += sim.trigger_polls();
  coverage.handed_back += sim.handed_back();
  coverage.fence_proofs += sim.fence_proofs();
  coverage.explained_proofs += sim.fence_proofs(true);
  coverage.stale_proofs += sim.stale_fence_proofs();
  coverage.resent_handed_back += sim.handed_back(true);
  coverage.unheard_triggers += sim.unheard_triggers();
  coverage.late_copies += sim.late_copies_applied();
  coverage.late_claim_wins += sim.late_copies_applied(true);
  coverage.late_starts += sim.late_starts();
  coverage.late_starts_refused += sim.late_starts(true);
  coverage.wins_answered_after_loss += sim.wins_answered_after_loss();
  coverage.outlived_lease += sim.outlived_lease();
  coverage.outlived_lease_returned += sim.outlived_lease(true);
  for (const auto& e : h.events)
    coverage.spared_claims += e.kind == lease::event_kind::skip &&
                              e.message.find("claim not sent: the store announced") != std::string::npos;
  for (std::size_t i = 0; i < sim.size(); ++i) coverage.registration_calls += sim.register_calls(i);
  for (const auto& op : h.ops)
    if (op.op == lease::sim::store_op::kind::claim && op.outcome == lease::claim_outcome::won &&
        op.reason == lease::claim_reason::takeover && op.after && op.after->handovers > 0)
      for (const auto& [at, what] : h.faults)
        if (what.rfind("stop job " + op.run.job, 0) == 0 && at <= op.at) {
          ++coverage.stopped_taken_over;
          break;
        }
  const auto bad = sim.violations();
  using unreplicated = typename Sim::unreplicated;
  coverage.histories_with_lag += std::any_of(h.faults.begin(), h.faults.end(), [](const auto& f) {
    return f.second.rfind("replica lags", 0) == 0;
  });
  coverage.failovers += sim.failovers();
  coverage.histories_with_failover += sim.failovers() > 0 ? 1 : 0;
  coverage.unreplicated_claims += sim.not_replicated(unreplicated::claims);
  coverage.unreplicated_heartbeats += sim.not_replicated(unreplicated::heartbeats);
  coverage.unreplicated_finishes += sim.not_replicated(unreplicated::finishes);
  coverage.unreplicated_other += sim.not_replicated(unreplicated::other);
  coverage.finishes_lost += sim.finishes_lost_in_failovers();
  coverage.accepted_reruns += sim.accepted_reruns();
  coverage.partial_batches += sim.partial_heartbeat_batches();
  coverage.unanswered_applied += sim.unanswered_renewals(true);
  coverage.unanswered_dropped += sim.unanswered_renewals(false);
  coverage.partial_refusals += sim.partial_refusals();
  coverage.partial_claim_batches += sim.partial_claim_batches();
  coverage.unanswered_claims_applied += sim.unanswered_claims(true);
  coverage.unanswered_claims_dropped += sim.unanswered_claims(false);
  coverage.partial_finish_batches += sim.partial_finish_batches();
  coverage.unanswered_ends_applied += sim.unanswered_ends(true);
  coverage.unanswered_ends_dropped += sim.unanswered_ends(false);
  coverage.timed_takeovers += sim.takeover_checks();
  coverage.slots_accounted += sim.slots_accounted();
  coverage.kinds_checked += sim.kinds_checked();
  if (!bad.empty()) RC_FAIL(sim.describe());
}

TEST_CASE("random histories of 3 to 5 instances with faults and clock skew satisfy every invariant") {
  coverage_counts coverage;
  prop_1000("invariants hold", [&] { random_history(coverage, false); });
  coverage.print();
  CHECK(coverage.manual_started > 0);  // triggers were actually run
  CHECK(coverage.unheard_triggers > 0);  // some were found only by a reconnect's poll
  CHECK(coverage.stops > 0);  // operators stopped runs in progress
  CHECK(coverage.resume_catch_ups > 0);  // resumes caught up a slot missed while paused
  CHECK(coverage.kinds[static_cast<std::size_t>(lease::event_kind::stopped)] > 0);
  CHECK(coverage.store_back_steps > 0);  // and back, in histories without a loss
  CHECK(coverage.handed_back > 0);  // claims won on a forgotten state were handed back
  CHECK(coverage.restored_backups > 0);
  CHECK(coverage.unnoticed_restores > 0);
  CHECK(coverage.partial_losses > 0);
  CHECK(coverage.stale_partial_losses > 0);
  CHECK(coverage.stale_proofs > 0);  // a fence from before a recorded loss proved a later loss of one job's state
  CHECK(coverage.late_claim_wins > 0);  // a claim's late copy won after its caller had given up on it
  CHECK(coverage.late_starts_refused > 0);  // a task taken after its lease was lost
  CHECK(coverage.outlived_lease_returned > 0);  // a handler that returned after its lease was lost
  CHECK(coverage.failovers > 0);  // a primary failed over to its lagging replica
  CHECK(coverage.unreplicated_claims > 0);  // wins released short of the replica
  CHECK(coverage.unreplicated_heartbeats > 0);  // renewals not counted
  CHECK(coverage.finishes_lost > 0);  // finishes on the primary only, lost in a failover
  CHECK(coverage.partial_batches > 0);  // heartbeat batches answered in part
  CHECK(coverage.unanswered_applied > 0);  // an unanswered renewal the store had applied
  CHECK(coverage.unanswered_dropped > 0);  // and one it never received
  CHECK(coverage.partial_claim_batches > 0);  // claim batches answered in part
  CHECK(coverage.unanswered_claims_applied > 0);  // an unanswered claim the store had applied
  CHECK(coverage.unanswered_claims_dropped > 0);  // and one it never received
  CHECK(coverage.partial_finish_batches > 0);  // finish batches answered in part
  CHECK(coverage.unanswered_ends_applied > 0);  // an unanswered finish or release the store had applied
  CHECK(coverage.unanswered_ends_dropped > 0);  // and one it never received
  CHECK(coverage.kinds_checked > 0);  // attempts' last events were held to the store's truth
}

TEST_CASE("random histories of a store that notices a loss only beside its claims, with lost replies, satisfy every invariant") {
  coverage_counts coverage;
  prop_1000("invariants hold (losses noticed beside claims, replies lost)",
            [&] { random_history(coverage, false, store_steps::within_margin, true); });
  coverage.print();
  CHECK(coverage.resent_handed_back > 0);  // a win on a forgotten state, its reply lost, was caught at its resend
}

TEST_CASE("random histories in buffer_one mode over a store that cannot push triggers satisfy every invariant") {
  coverage_counts coverage;
  prop_1000("invariants hold (buffer_one, triggers polled)",
            [&] { random_history<lease::sim::cluster<lease::buffer_one_t, lease::sim::polled_store>>(coverage, false); });
  coverage.print();
  CHECK(coverage.manual_started > 0);
}

TEST_CASE("random histories whose store's clock is stepped ahead by up to lease - 2 heartbeats, with every heartbeat on time, satisfy every invariant") {
  coverage_counts coverage;
  prop_1000("store clock steps within lease - 2 heartbeats",
            [&] { random_history(coverage, false, store_steps::within_heartbeat); });
  coverage.print();
  CHECK(coverage.store_steps > 0);
}

/// Liveness under skew (doc/invariants.md, "every slot runs while an
/// instance can claim it"): with no fault but skewed clocks, every slot
/// runs exactly once, on time by the store's clock (from 1 s before it to
/// max_late + claim_jitter + 1 s after it), and no `late`
/// event is told. Instances lead the store by up to a period less 2 s (a
/// lead of a period or more supersedes each waiting slot by the next, by
/// design) or trail it by up to max_late; one history in three has every
/// instance lead by more than max_late + the store's late tolerance, the
/// case in which a claim's deadline judged on the local clock dropped every
/// slot with a `late` event that contradicted itself.
void skewed_history(std::size_t& slots_checked, std::size_t& far_ahead) {
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  lease::options o;
  o.lease = ms(one_of(2000, 3000));
  o.max_late = ms(one_of(500, 3000));
  o.catch_up = 0ms;
  o.claim_jitter = ms(one_of(0, 100, 300));
  lease::sim::cluster<> sim(seed, o);
  const int interval_ms = one_of(5000, 15000, 30000, 60000);
  const int runs_ms = pick(50, interval_ms / 2);
  sim.add_job("job", lease::every(ms(interval_ms)),
              [runs_ms](const lease::run_context&) { return lease::sim::script{.runs_for = ms(runs_ms)}; });
  const int late_ms = static_cast<int>(o.max_late.count());
  const int far_ms = late_ms + static_cast<int>(lease::late_tolerance.count()) + 1;
  const bool all_far = interval_ms - 2000 > far_ms && pick(0, 3) == 0;
  far_ahead += all_far ? 1 : 0;
  const int n = pick(1, 4);
  int max_lead = 0;
  for (int i = 0; i < n; ++i) {
    const int skew = all_far ? pick(far_ms, interval_ms - 2000) : pick(-late_ms, interval_ms - 2000);
    max_lead = std::max(max_lead, skew);
    sim.add_instance("n" + std::to_string(i), ms(skew));
  }
  const lease::time_point begin = sim.now();
  sim.start_all();
  sim.run_for(ms(interval_ms) * pick(4, 9));
  const lease::time_point end = sim.now();
  sim.run_for(ms(interval_ms + 5000));  // the last slots' runs end
  const auto& h = sim.recorded();
  std::map<lease::time_point, std::vector<const lease::sim::handler_run*>> runs;
  for (const auto& r : h.handlers) runs[r.run.slot].push_back(&r);
  std::ostringstream why;
  // Slots no instance could have seen come due are left out: those before
  // the leading instance's first look (its clock was already past them).
  const lease::every slots(ms(interval_ms));
  for (lease::time_point s = slots.next(begin + ms(max_lead)); s <= end; s = slots.next(s)) {
    ++slots_checked;
    const auto it = runs.find(s);
    if (it == runs.end()) {
      why << "slot " << s.time_since_epoch().count() << " did not run\n";
      continue;
    }
    if (it->second.size() != 1) why << "slot " << s.time_since_epoch().count() << " ran " << it->second.size() << " times\n";
    for (const auto* r : it->second)
      // (An instance trailing by max_late claims that late, plus its jitter.)
      if (r->start < s - lease::early_tolerance || r->start > s + o.max_late + o.claim_jitter + 1s)
        why << "slot " << s.time_since_epoch().count() << " started at " << r->start.time_since_epoch().count() << "\n";
  }
  for (const auto& e : h.events)
    if (e.kind == lease::event_kind::late) why << "late: " << e.message << "\n";
  for (const auto& v : sim.violations()) why << v << "\n";
  if (!why.str().empty()) RC_FAIL(why.str() + sim.describe());
}

TEST_CASE("random histories of instances whose clocks lead the store by up to a period, or trail it by up to max_late, run every slot exactly once and on time") {
  std::size_t slots_checked = 0, far_ahead = 0;
  prop_1000("every slot runs once under skew", [&] { skewed_history(slots_checked, far_ahead); }, 300);
  std::cout << "  " << slots_checked << " slots checked; " << far_ahead << " histories with every instance ahead by more than max_late + 10 s\n";
  CHECK(far_ahead > 0);
}

/// Liveness of the late judgement (doc/protocol.md §2, "a claim sent too
/// late costs only the store's `late` answer; one dropped while the store
/// would still take it costs the run"): a scheduled claim whose call failed
/// is dropped only once the instance's estimate of the store's clock says
/// that a retry would come past its deadline. The oracle is the store's own
/// clock at the drop: a drop while a retry after the longest backoff
/// (1.5 heartbeats) would still come before slot + max_late + 10 s lost a
/// slot for nothing. Store calls of random instances hang across slots, and
/// clocks are stepped in the two ways a store's clock relates to an
/// instance's: on other hosts (instances skewed and stepped, the store's
/// clock not), or on one host (the store's clock and every instance's
/// stepped together, as with a SQLite file). Monotonic clocks are exact
/// here: with drift an estimate may run ahead by design. Each of the two
/// estimates alone fails this property: the wall clock plus the store's
/// lead after a step of an instance's clock, the monotonic time since the
/// answer after a step of the host's. Drops by an instance that has had no
/// claim answered yet are left out (its wall clock stands in, by design).
/// The job is paused and resumed through a random instance with
/// catch_up_latest, so catch-up claims (deadline slot + catch_up) are judged
/// the same way as scheduled ones (slot + max_late).
/// In buffer_one mode runs may outlast their period, and a buffered slot is
/// dropped when the run that blocked it ends only if the store's clock is
/// past its deadline then (no backoff there: 1 s of slack).
template <class Cluster = lease::sim::cluster<>>
void late_judgement_history(std::size_t& drops_checked, std::size_t& catch_up_drops, std::size_t& one_host_histories) {
  constexpr bool buffered = std::is_same_v<Cluster, lease::sim::cluster<lease::buffer_one_t>>;
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  lease::options o;
  o.lease = ms(one_of(2000, 3000));
  o.max_late = ms(one_of(1000, 5000));
  o.catch_up = ms(one_of(0, 5000, 20000));
  Cluster sim(seed, o);
  const int interval_ms = one_of(15000, 30000, 60000);
  const int runs_ms = buffered ? pick(interval_ms / 2, interval_ms + 20000) : pick(50, 2000);
  sim.add_job("job", lease::every(ms(interval_ms)),
              [runs_ms](const lease::run_context&) { return lease::sim::script{.runs_for = ms(runs_ms)}; });
  const bool one_host = pick(0, 2) == 0;
  one_host_histories += one_host ? 1 : 0;
  const int n = pick(1, 4);
  for (int i = 0; i < n; ++i)
    sim.add_instance("n" + std::to_string(i), one_host ? 0ms : ms(pick(-static_cast<int>(o.max_late.count()), 5000)));
  std::vector<std::pair<std::size_t, duration>> store_steps;  // (faults' size once it was made, step)
  sim.start_all();
  bool paused = false;
  const int turns = pick(8, 20);
  for (int t = 0; t < turns; ++t) {
    sim.run_for(ms(pick(500, interval_ms)));
    const auto i = static_cast<std::size_t>(pick(0, n));
    switch (pick(0, 4)) {
      case 0:
        sim.hang_store(i, ms(pick(100, 4000)), pick(1, 5));
        break;
      case 1: {
        const duration d = ms(one_of(-60000, -5000, 5000, 17000, 60000));
        if (one_host) {
          sim.step_store_clock(d);
          store_steps.emplace_back(sim.recorded().faults.size(), d);
          for (int k = 0; k < n; ++k) sim.step_clock(static_cast<std::size_t>(k), d);
        } else {
          sim.step_clock(i, d);
        }
        break;
      }
      case 2:  // an operator pauses the job, or resumes it catching up its latest missed slot, whose claim hangs
        if (paused) {
          sim.resume_on(i, "job", lease::missed_slots::catch_up_latest);
          sim.hang_store(i, ms(pick(1000, 8000)), pick(1, 5));
        } else {
          sim.pause_job("job");
        }
        paused = !paused;
        break;
      default:
        break;  // only time passes
    }
  }
  sim.run_for(ms(interval_ms));
  const auto& h = sim.recorded();
  std::ostringstream why;
  const duration longest_backoff = o.heartbeat_interval() * 3 / 2;
  for (std::size_t k = 0; k < h.events.size(); ++k) {
    const auto& e = h.events[k];
    if (e.kind != lease::event_kind::late) continue;
    const bool catch_up = e.message.rfind("catch-up claim dropped: the store did not answer before the deadline", 0) == 0;
    const bool claim_dropped =
        catch_up || e.message.rfind("scheduled claim dropped: the store did not answer before the deadline", 0) == 0;
    const bool buffer_dropped = e.message.rfind("buffered slot dropped: the blocking run ended after its deadline", 0) == 0;
    if (!claim_dropped && !buffer_dropped) continue;
    const auto& mark = h.event_marks[k];
    const bool answered_before = std::any_of(h.ops.begin(), h.ops.begin() + static_cast<std::ptrdiff_t>(mark.ops),
                                             [&](const lease::sim::store_op& op) {
                                               return op.op == lease::sim::store_op::kind::claim && op.instance == e.instance;
                                             });
    if (!answered_before) continue;
    ++drops_checked;
    duration store_lead{0};
    for (const auto& [after, d] : store_steps)
      if (mark.faults >= after) store_lead += d;
    const lease::time_point store_now = e.at + store_lead;  // history times are real time
    const lease::time_point refused_from = e.run.slot + (catch_up ? o.catch_up : o.max_late) + lease::late_tolerance;
    catch_up_drops += catch_up ? 1 : 0;
    if (store_now + (claim_dropped ? longest_backoff : 0ms) + 1s < refused_from)
      why << e.instance << " dropped slot " << e.run.slot.time_since_epoch().count() << " at store time "
          << store_now.time_since_epoch().count() << ", " << (refused_from - store_now).count()
          << " ms before the store would refuse it: " << e.message << "\n";
  }
  if (!why.str().empty()) RC_FAIL(why.str() + sim.describe());
}

TEST_CASE("random histories of hung store calls and clock steps drop a claim as late only when the store would refuse it") {
  std::size_t drops_checked = 0, catch_up_drops = 0, one_host = 0;
  prop_1000("a slot is dropped as late only past its deadline by the store's clock",
            [&] { late_judgement_history(drops_checked, catch_up_drops, one_host); });
  std::cout << "  " << drops_checked << " drops judged (" << catch_up_drops << " of catch-up claims); " << one_host
            << " histories on one host\n";
  CHECK(drops_checked > 0);  // the judgement was actually put to the test
  CHECK(catch_up_drops > 0);
  CHECK(one_host > 0);
  std::size_t buffered_drops = 0, buffered_catch_up_drops = 0, buffered_one_host = 0;
  prop_1000("a buffered slot is dropped as late only past its deadline by the store's clock",
            [&] {
              late_judgement_history<lease::sim::cluster<lease::buffer_one_t>>(buffered_drops, buffered_catch_up_drops,
                                                                                buffered_one_host);
            },
            500);
  std::cout << "  buffer_one: " << buffered_drops << " drops judged; " << buffered_one_host << " histories on one host\n";
  CHECK(buffered_drops > 0);
}

TEST_CASE("random histories of long-interval jobs take over every dead or released run in time") {
  coverage_counts coverage;
  prop_1000("takeovers are timely", [&] { random_history(coverage, true); });
  coverage.print();
  CHECK(coverage.timed_takeovers > 0);  // the deadline was actually put to the test
}


// The scenarios below start their cluster 1 ms after slot 1 h, not at the
// sim's default start, that slot's very millisecond: a slot due at the
// instant of start() is due and runs at once (scenarios.cpp), and they are
// written for a first slot one period after 1 h (catch_up 0 leaves 1 h).
static const lease::time_point sim_start = lease::time_point{} + 1h + 1ms;

TEST_CASE("the simulation runs a crashed runner's slot on a backup and records a sound history") {
  lease::options o;
  o.lease = 3s;
  o.catch_up = 0ms;  // start with no missed slot
  lease::sim::cluster<> sim(42, o, sim_start);
  sim.add_job("report", lease::every(10s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 5s}; });
  for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i), ms(150 * i));
  sim.start_all();
  sim.run_for(10s + 500ms);  // slot 1 h + 10 s is running
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 1);
  const std::string runner = h.handlers[0].instance;
  for (std::size_t i = 0; i < sim.size(); ++i)
    if (sim.instance_at(i).instance() == runner) sim.crash(i);
  sim.run_for(3s + 2 * 500ms + 100ms);  // lease + 2 × heartbeat
  INFO(sim.describe());
  REQUIRE(h.handlers.size() == 2);
  CHECK(h.handlers[1].run == h.handlers[0].run);
  CHECK(h.handlers[1].attempt == 2);
  CHECK(h.handlers[1].instance != runner);
  CHECK(h.handlers[0].ended == "crashed");
  CHECK(sim.violations().empty());
}

TEST_CASE("the simulation's history shows a stop hand-over and the backup's takeover") {
  lease::options o;
  o.lease = 3s;
  o.catch_up = 0ms;  // start with no missed slot
  lease::sim::cluster<> sim(7, o, sim_start);
  sim.add_job("report", lease::every(20s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 10s, .honours_stop = 100ms, .on_stop = lease::sim::script::ending::throws};
  });
  for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i));
  sim.start_all();
  sim.run_for(20s + 500ms);
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 1);
  for (std::size_t i = 0; i < sim.size(); ++i)
    if (sim.instance_at(i).instance() == h.handlers[0].instance) sim.stop(i, 2s);
  sim.run_for(1s + 100ms);  // released at once; a backup checks within 2 heartbeats
  INFO(sim.describe());
  REQUIRE(h.handlers.size() == 2);
  CHECK(h.handlers[0].ended == "threw");
  CHECK(h.handlers[1].attempt == 2);
  CHECK(sim.backing_store().get(h.handlers[1].run)->handovers == 1);
  CHECK(sim.violations().empty());
}

/// Histories built to put I6 to the test many times: one long run per job,
/// its runner hit again and again (crash, freeze, stop, a hung store), with
/// clean backups around it. Each hit ends a lease that a backup must take
/// over within lease + 2 × heartbeat, and within heartbeat / 4 of the lease
/// end when a clean backup had read that end (protocol §6).
TEST_CASE("dead, frozen, stopped and cut-off runners are taken over within lease + 2 heartbeats, 500+ times") {
  std::size_t checked = 0, aimed = 0, histories = 0;
  prop_1000("the takeover bound holds", [&] {
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    lease::options o;
    o.lease = ms(one_of(2000, 3000));
    o.max_attempts = 20;  // attempts never run out here: every lease end must be taken over
    o.catch_up = 0ms;
    o.claim_jitter = ms(one_of(0, 100));
    o.stop_timeout = ms(one_of(0, 500));
    lease::sim::cluster<> sim(seed, o);
    sim.announce_releases(pick(0, 2) == 0);
    sim.announce_finished_runs(pick(0, 2) == 0);
    sim.add_job("job", lease::every(120s), [](const lease::run_context&) {
      return lease::sim::script{.runs_for = 100s, .honours_stop = 0ms, .on_stop = lease::sim::script::ending::throws};
    });
    const int n = pick(3, 6);
    for (int i = 0; i < n; ++i) sim.add_instance("n" + std::to_string(i), ms(pick(-300, 301)));
    // Sometimes one host's monotonic clock runs slow or fast: as a backup it
    // checks later (the bound is 2 × heartbeat of its own time), as a runner
    // the margin covers it.
    if (pick(0, 3) == 0) sim.drift_clock(static_cast<std::size_t>(pick(0, n)), one_of(920, 960, 1080) / 1000.0);
    sim.start_all();
    sim.run_for(120s + 500ms);
    const int hits = pick(3, 7);
    for (int k = 0; k < hits; ++k) {
      const auto& hs = sim.recorded().handlers;
      if (hs.empty() || hs.back().end) break;
      std::size_t runner = 0;
      for (std::size_t i = 0; i < sim.size(); ++i)
        if (sim.instance_at(i).instance() == hs.back().instance) runner = i;
      switch (pick(0, 4)) {
        case 0: sim.crash(runner); break;
        case 1: sim.freeze(runner, 3 * o.lease); break;
        case 2: sim.stop(runner, o.stop_timeout); break;
        case 3: sim.hang_store(runner, 2 * o.lease, 10); break;
      }
      if (pick(0, 3) == 0) sim.lose_announcements(1);
      sim.run_for(o.lease + 3 * *o.validated().heartbeat + ms(pick(0, 2000)));
      if (sim.instance_at(runner).stopped() || pick(0, 2) == 0) sim.restart(runner);  // back as a clean backup
    }
    sim.run_for(2 * o.lease);
    const auto bad = sim.violations();
    checked += sim.takeover_checks();
    aimed += sim.aimed_takeover_checks();
    ++histories;
    if (!bad.empty()) RC_FAIL(sim.describe());
  }, 400);  // about 2 lease ends each: ~900 per run
  std::cout << "  coverage: " << histories << " histories, " << checked
            << " lease ends held to the takeover deadline (I6), " << aimed
            << " of them to the aimed check's (lease end + heartbeat / 4)" << std::endl;
  CHECK(checked >= 500);
  CHECK(aimed >= 250);
}

TEST_CASE("the simulation's history shows an operator's stop: the handler asked to stop, no takeover while paused, a takeover after the resume") {
  lease::options o;
  o.lease = 3s;
  o.catch_up = 0ms;  // start with no missed slot
  o.register_every = 5s;
  lease::sim::cluster<> sim(11, o, sim_start);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 30s, .honours_stop = 200ms, .on_stop = lease::sim::script::ending::throws};
  });
  for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i));
  sim.start_all();
  sim.run_for(60s + 500ms);
  const auto& h = sim.recorded();
  REQUIRE(h.handlers.size() == 1);
  REQUIRE(sim.stop_job("report") == 1);
  sim.run_for(10s);  // the runner hears it at its next heartbeat; backups are answered paused
  INFO(sim.describe());
  REQUIRE(h.handlers.size() == 1);
  CHECK(h.handlers[0].observed_stop);
  CHECK(h.handlers[0].ended == "threw");
  std::size_t stopped = 0;
  for (const auto& e : h.events) stopped += e.kind == lease::event_kind::stopped ? 1 : 0;
  CHECK(stopped == 1);
  sim.resume_job("report");
  sim.run_for(2 * 500ms + 100ms);  // a backup's next check
  REQUIRE(h.handlers.size() == 2);
  CHECK(h.handlers[1].attempt == 2);
  CHECK(h.handlers[1].run == h.handlers[0].run);
  sim.check_registrations_now();
  CHECK(sim.violations().empty());
  for (std::size_t i = 0; i < sim.size(); ++i) CHECK(sim.register_calls(i) >= 14);  // at start, then every 5 s for 71 s
}

/// A winner whose claim waited behind its own slow call, nested in
/// another instance's slow calls, longer than lease − margin gives the run
/// up with `lost` without starting it. The backup's takeover is then no
/// sign of a healthy runner taken over, though the wait began more than two
/// leases before the win. (Found by the long-interval property, seed
/// 5095281193748700627, shrunk to this.)
TEST_CASE("a winner whose claim waited behind slow calls gives it up with lost, and its takeover is no violation") {
  lease::options o;
  o.lease = 3s;
  o.catch_up = 0ms;
  lease::sim::cluster<> sim(5, o);
  sim.add_job("report", lease::every(60s), [](const lease::run_context&) { return lease::sim::script{.runs_for = 1s}; });
  for (int i = 0; i < 2; ++i) sim.add_instance("n" + std::to_string(i));
  sim.start_all();
  sim.run_for(1s);
  // n0 claims the trigger first: its call is slow by only 100 ms, but n1's
  // claim, made meanwhile, hangs for more than two leases, and n0's call
  // returns only after it (the simulation's blocked calls nest).
  sim.slow_store(0, 100ms, 2);
  sim.hang_store(1, 6100ms, 1);
  sim.trigger_on(0, "report");
  sim.run_for(20s);
  INFO(sim.describe());
  const auto& h = sim.recorded();
  bool lost = false;
  for (const auto& e : h.events) lost |= e.kind == lease::event_kind::lost;
  CHECK(lost);
  bool taken_over = false;
  for (const auto& r : h.handlers) taken_over |= r.attempt == 2;
  CHECK(taken_over);
  CHECK(sim.violations().empty());
}

/// Histories built around heartbeat batches answered in part (a Redis
/// Cluster with one master down): three jobs due together, long runs, so
/// that an instance renews several in one batch; its batches are answered
/// in part again and again, while operators stop jobs (their runs' next
/// renewals refused, answered or not) and resume them, and runners freeze.
/// What a user relies on, checked on every history: a runner whose renewal
/// was answered keeps its lease (check_healthy_kept: a partial batch
/// excuses only the runs it left unanswered); a runner whose renewal was
/// refused stops at once (I2: its handler's stop requested in the loop turn
/// that had the answer); an unanswered renewal, applied by the store or not,
/// never counts as renewed (check_lease_answered); and no run executes twice.
TEST_CASE("heartbeat batches answered in part: answered runs kept, refused ones stopped, 300+ batches") {
  std::uint64_t batches = 0, applied = 0, dropped = 0, refusals = 0;
  prop_1000("partial heartbeat batches", [&] {
    const auto seed = *rc::gen::arbitrary<std::uint64_t>();
    lease::options o;
    o.lease = ms(one_of(2000, 3000));
    o.max_attempts = 20;
    o.catch_up = 0ms;
    o.claim_jitter = ms(one_of(0, 100));
    o.stop_timeout = ms(one_of(0, 500));
    lease::sim::cluster<> sim(seed, o);
    sim.wait_for_replica(pick(0, 3) == 0);  // renewals short of the replica beside refusals fail in part too
    const int jobs = 3;
    for (int j = 0; j < jobs; ++j)
      sim.add_job("job" + std::to_string(j), lease::every(60s), [](const lease::run_context&) {
        return lease::sim::script{.runs_for = 40s, .honours_stop = 0ms, .on_stop = lease::sim::script::ending::throws};
      });
    const int n = pick(2, 4);
    for (int i = 0; i < n; ++i) sim.add_instance("n" + std::to_string(i), ms(pick(-300, 301)));
    sim.start_all();
    sim.run_for(60s + 200ms);
    const int steps = pick(4, 12);
    for (int k = 0; k < steps; ++k) {
      // The instance renewing the most runs now.
      std::map<std::string, int> running;
      for (const auto& r : sim.recorded().handlers)
        if (!r.end) ++running[r.instance];
      std::size_t busiest = static_cast<std::size_t>(pick(0, n));
      for (std::size_t i = 0; i < sim.size(); ++i)
        if (running[sim.instance_at(i).instance()] > running[sim.instance_at(busiest).instance()]) busiest = i;
      sim.answer_heartbeats_in_part(busiest, pick(1, 4), *rc::gen::arbitrary<std::uint64_t>());
      switch (pick(0, 6)) {
        case 0: {  // an operator's stop: the runner's next renewal is refused
          const std::string job = "job" + std::to_string(pick(0, jobs));
          sim.stop_job(job);
          sim.run_for(ms(pick(100, 2000)));
          sim.resume_job(job);
          break;
        }
        case 1: sim.freeze(static_cast<std::size_t>(pick(0, n)), ms(pick(500, 2 * static_cast<int>(o.lease.count())))); break;
        case 2:
          if (sim.replica_lagging()) sim.replica_catches_up();
          else sim.replica_lags();
          break;
        default: break;
      }
      sim.run_for(ms(pick(200, 4000)));
    }
    if (sim.replica_lagging()) sim.replica_catches_up();
    sim.run_for(2 * o.lease);
    batches += sim.partial_heartbeat_batches();
    applied += sim.unanswered_renewals(true);
    dropped += sim.unanswered_renewals(false);
    refusals += sim.partial_refusals();
    const auto bad = sim.violations();
    if (!bad.empty()) RC_FAIL(sim.describe());
  }, 300);
  std::cout << "  coverage: " << batches << " heartbeat batches answered in part, " << applied
            << " unanswered renewals applied, " << dropped << " never received, " << refusals
            << " refusals answered in a batch that failed in part" << std::endl;
  CHECK(batches >= 300);
  CHECK(applied > 0);
  CHECK(dropped > 0);
  CHECK(refusals > 0);
}
