// lease/sim/cluster.hpp — lease::sim::cluster, a seeded, single-threaded
// simulation of several scheduler instances over one memory_store.
//
// Each instance has its own clock, skewed from the store's fake_clock; each
// handler is a script (how long it runs, how it ends, whether and how fast it
// honours its stop token). Faults: crash (no release), freeze for a duration
// (GC pause, stalled VM: neither the loop nor the handlers move), stop() with
// any handler behaviour, delayed store calls, failing store calls (before or
// after applying: a lost reply), slow store calls that block the calling
// instance's loop while the rest of the world goes on (its handlers and its
// watchdog too), store calls that time out while their request is still in
// the network and is applied later (late_copy_store), an executor whose busy
// workers start handler tasks late (delay_starts), heartbeat and claim
// batches answered in part (answer_heartbeats_in_part,
// answer_claims_in_part), wall-clock steps of one instance, a monotonic
// clock that runs slow or fast (drift_clock), a store that loses its
// state, a store whose clock is stepped ahead or back, lost announcements of
// a release (push hand-over), and a trigger listener cut for a while (pushes
// lost until it reconnects). Everything is
// recorded in a lease::sim::history, and the invariants of doc/invariants.md
// are checked on it, including I9: no two handlers of one run
// execute at overlapping times on the simulation's global clock.
//
// The same seed and the same calls give the same history, so a failing
// property test replays exactly. Users can run their own job settings
// through it: add_job() takes any Schedule and a script per run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lease/clock/concept.hpp"
#include "lease/clock/fake.hpp"
#include "lease/options.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/concept.hpp"
#include "lease/scheduler.hpp"
#include "lease/scheduler/detail/any_schedule.hpp"
#include "lease/sim/executor.hpp"
#include "lease/sim/history.hpp"
#include "lease/sim/script.hpp"
#include "lease/sim/store.hpp"

namespace lease::sim {

/// Several instances over one store, driven in simulated time. Not
/// thread-safe. `St`: each instance's handle, lease::sim::store (it pushes
/// triggers) or lease::sim::polled_store (it cannot: the instances poll).
template <OverlapPolicy P = skip_t, class St = store>
class cluster {
 public:
  using clock_type = skewed_clock<fake_clock>;
  using store_type = St;
  using scheduler_type = scheduler<St, clock_type, executor, P>;
  /// Chooses the script of one attempt (called at dispatch).
  using planner = std::function<script(const run_context&)>;

  /// `opts` is every instance's options (instance and seed are filled in per
  /// instance from `seed`); the store's clock starts at `start`.
  explicit cluster(std::uint64_t seed, options opts = {}, time_point start = time_point{} + std::chrono::hours{1})
      : seed_(seed),
        opts_(opts.validated()),
        world_(std::make_shared<world>(fake_clock{start}, opts_, P{}.mode() == overlap_mode::skip ||
                                                                     P{}.mode() == overlap_mode::buffer_one)) {
    world_->block = [this](const std::string& who, time_point until) { run_blocked(who, until); };
    world_->steady_of = [this](const std::string& who) -> std::optional<steady_point> {
      const instance* in = named(who);
      if (in == nullptr) return std::nullopt;
      return in->clock->steady();
    };
  }
  cluster(const cluster&) = delete;  // the world calls back into this object
  cluster& operator=(const cluster&) = delete;
  ~cluster() {
    world_->block = nullptr;
    world_->steady_of = nullptr;
  }

  /// Adds a job to every instance (before their start()).
  template <Schedule S>
  void add_job(std::string name, S schedule, planner plan) {
    detail::any_schedule slots(schedule);
    jobs_.push_back({std::move(name), [s = std::move(schedule)](scheduler_type& sch, const std::string& n,
                                                                 typename scheduler_type::handler h) {
                       sch.add(n, s, std::move(h));
                     },
                     std::move(plan), std::move(slots)});
  }

  /// Adds an instance named `name` whose clock reads the store's plus `skew`;
  /// returns its index. It is started by start(i).
  std::size_t add_instance(std::string name, duration skew = duration::zero()) {
    instances_.push_back(std::make_unique<instance>());
    instance& in = *instances_.back();
    in.name = std::move(name);
    in.clock = std::make_unique<clock_type>(world_->clock, skew);
    build(in);
    return instances_.size() - 1;
  }

  void start(std::size_t i) {
    fault(i, "start");
    instances_.at(i)->sched->start();
  }
  void start_all() {
    for (std::size_t i = 0; i < instances_.size(); ++i) start(i);
  }
  /// The process dies: no release, its handlers vanish, it is never polled again.
  void crash(std::size_t i) {
    instance& in = *instances_.at(i);
    if (in.crashed) return;
    fault(i, "crash");
    in.crashed = true;
    for (auto& r : in.running) end_handler(r, "crashed");
    in.running.clear();
    in.queued.clear();  // tasks the executor had not taken yet vanish with it
  }
  /// A crashed or stopped instance comes back as a new process (same name and
  /// skew, a fresh scheduler) and starts: catch-up runs again. Not while a
  /// loss is unproven (loss_unproven()): a new process remembers no fence,
  /// so its claims could win slots the loss forgot, beyond what detection
  /// can see — a history that does so is told, as a violation.
  void restart(std::size_t i) {
    instance& in = *instances_.at(i);
    if (!in.crashed && !in.sched->stopped()) return;
    if (loss_unproven())
      world_->violation("the history restarted " + in.name +
                        " while a loss of state was unproven: outside what detection can see");
    fault(i, "restart");
    for (auto& r : in.running) end_handler(r, "crashed");
    in.running.clear();
    in.queued.clear();
    in.start_delays.clear();  // a new process, a new pool
    in.crashed = false;
    in.frozen_until.reset();
    ++in.generation;
    build(in);
    in.sched->start();
  }
  /// Neither the loop nor the handlers of instance `i` move for `d`.
  void freeze(std::size_t i, duration d) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.frozen_until) return;
    fault(i, "freeze " + std::to_string(d.count()) + " ms");
    in.frozen_until = now() + d;
    for (auto& r : in.running) {
      r.natural_end += d;
      observe(r, in);  // executing until now; nothing while frozen
    }
  }
  /// Instance `i`'s wall clock is stepped by `d` (forwards or back, as NTP or
  /// an operator would); its monotonic clock and everyone else's are unchanged.
  void step_clock(std::size_t i, duration d) {
    instance& in = *instances_.at(i);
    fault(i, "step clock " + std::to_string(d.count()) + " ms");
    in.clock->step(d);
  }
  /// Instance `i`'s monotonic clock runs at `rate` × real time from now on
  /// (a slow or fast oscillator; its wall clock is unchanged). Its leases,
  /// heartbeats and backup checks are timed on it. The safety margin covers
  /// a runner whose clock runs down to 1 − margin / lease (0.9 for leases
  /// up to 50 s, where the margin is lease / 10), less what a step ahead of the store's
  /// clock spends of it; a slower one can still be executing when the
  /// store hands its run to a backup.
  void drift_clock(std::size_t i, double rate) {
    instance& in = *instances_.at(i);
    fault(i, "monotonic clock at " + std::to_string(static_cast<int>(rate * 1000 + 0.5) / 10.0).substr(0, 5) +
                 " % of");
    in.clock->run_at(rate);
    slowest_ppm_ = std::min(slowest_ppm_, in.clock->rate_ppm());
  }
  /// Instance `i`'s next `calls` store calls block its loop for `d` each,
  /// while the other instances, its handlers and its watchdog go on. The call
  /// reaches the store at the end (`applied_first` false: a slow network on
  /// the way there) or is applied at once and its reply is late (a stalled
  /// reply, a long GC in the client library).
  void slow_store(std::size_t i, duration d, int calls, bool applied_first = false) {
    fault(i, "slow " + std::to_string(calls) + " store calls by " + std::to_string(d.count()) + " ms");
    world_->slow[instances_.at(i)->name].push_back({d, calls, applied_first, false});
  }
  /// Instance `i`'s next `calls` store calls hang for `d` each and then fail
  /// as unavailable, never applied: a black-holed connection with a timeout.
  /// Queued after any slow calls already set for it.
  void hang_store(std::size_t i, duration d, int calls) {
    fault(i, "hang " + std::to_string(calls) + " store calls for " + std::to_string(d.count()) + " ms");
    world_->slow[instances_.at(i)->name].push_back({d, calls, false, true});
  }
  /// Instance `i`'s next `calls` claims, heartbeats, finishes or releases
  /// (one call each, a batch too) time out: each blocks its loop for
  /// `timeout`, as a hung call does, and fails with `code` — but its request
  /// is still in the network, and the store applies it `later` after the
  /// failure, recorded then (a request written to a socket, the client
  /// timing out and reconnecting, the server reading the old connection
  /// late). By then the instance may have sent it again, with the same token
  /// or a new one, or crashed; nothing reads the reply. Other calls (reads,
  /// triggers, registrations) pass the fault by, and with `claims_only`
  /// every call but a claim. Queued after any late copies already set for it.
  void late_copy_store(std::size_t i, duration timeout, duration later, int calls, errc code = errc::unavailable,
                       bool claims_only = false) {
    fault(i, "hang " + std::to_string(calls) + (claims_only ? " claim calls" : " store calls") + " for " +
                 std::to_string(timeout.count()) + " ms, each applied " + std::to_string(later.count()) +
                 " ms after it fails, of");
    world_->late_copy_faults[instances_.at(i)->name].push_back({timeout, later, calls, code, claims_only});
  }
  /// Instance `i`'s next `batches` heartbeat batches of two or more
  /// renewals are answered only in part, as by a Redis Cluster with one
  /// master down or cut off: some renewals answered (true or false), the
  /// others failed, each of those applied by the store with its reply lost
  /// or never received — by the bits of `pattern` (world::partial_answers).
  /// The call throws partial_batch_error<bool>. Queued after any such
  /// batches already set for it.
  void answer_heartbeats_in_part(std::size_t i, int batches, std::uint64_t pattern) {
    // Worded so that it names no instance at its end: the batches it
    // answers in part are the faults, each of the runs it left unanswered.
    world_->hist.faults.push_back({now(), "heartbeat batches of " + instances_.at(i)->name + " to be answered in part (" +
                                              std::to_string(batches) + ")"});
    world_->partial_heartbeat_faults[instances_.at(i)->name].push_back({batches, pattern});
  }
  /// Instance `i`'s next `batches` claim batches of two or more claims are
  /// answered only in part, as by a Redis Cluster with the master of some
  /// of their jobs down or cut off: the others answered, each unanswered
  /// one applied with its reply lost or never received, by the bits of
  /// `pattern` (world::partial_answers). The call throws
  /// partial_batch_error<claim_result>. Queued after any such batches
  /// already set for it.
  void answer_claims_in_part(std::size_t i, int batches, std::uint64_t pattern) {
    world_->hist.faults.push_back({now(), "claim batches of " + instances_.at(i)->name + " to be answered in part (" +
                                              std::to_string(batches) + ")"});
    world_->partial_claim_faults[instances_.at(i)->name].push_back({batches, pattern});
  }
  /// Instance `i`'s next `batches` batches of two or more finishes and
  /// releases are answered only in part, as by a Redis Cluster with the
  /// master of some of their jobs down or cut off: the others answered,
  /// each unanswered one applied with its reply lost or never received, by
  /// the bits of `pattern` (world::partial_answers). The call throws
  /// partial_batch_error<bool>. Queued after any such batches already set
  /// for it. `varies`: each batch by the pattern rotated further (other
  /// elements fail), not by the same one.
  void answer_finishes_in_part(std::size_t i, int batches, std::uint64_t pattern, bool varies = false) {
    world_->hist.faults.push_back({now(), "finish batches of " + instances_.at(i)->name + " to be answered in part (" +
                                              std::to_string(batches) + ")"});
    world_->partial_finish_faults[instances_.at(i)->name].push_back({batches, pattern, varies});
  }
  /// Finish batches answered in part, and of their unanswered finishes and
  /// releases, those the store applied (`applied`) or never received.
  [[nodiscard]] std::uint64_t partial_finish_batches() const noexcept { return world_->partial_finish_batches; }
  [[nodiscard]] std::uint64_t unanswered_ends(bool applied) const noexcept {
    return applied ? world_->unanswered_ends_applied : world_->unanswered_ends_dropped;
  }
  /// Claim batches answered in part, and of their unanswered claims, those
  /// the store applied (`applied`) or never received.
  [[nodiscard]] std::uint64_t partial_claim_batches() const noexcept { return world_->partial_claim_batches; }
  [[nodiscard]] std::uint64_t unanswered_claims(bool applied) const noexcept {
    return applied ? world_->unanswered_claims_applied : world_->unanswered_claims_dropped;
  }
  /// Heartbeat batches answered in part (partial_batch_error thrown), and
  /// of their unanswered renewals, those the store applied (`applied`) or
  /// never received.
  [[nodiscard]] std::uint64_t partial_heartbeat_batches() const noexcept { return world_->partial_batches; }
  [[nodiscard]] std::uint64_t unanswered_renewals(bool applied) const noexcept {
    return applied ? world_->unanswered_applied : world_->unanswered_dropped;
  }
  /// Refusals answered in a heartbeat batch that failed in part (answered
  /// in part, or renewals short of the replica beside them).
  [[nodiscard]] std::uint64_t partial_refusals() const noexcept { return world_->partial_refusals; }
  /// Requests still in the network (late_copy_store): each carries the
  /// fence its handle knew when it was sent, which may prove no loss.
  [[nodiscard]] std::size_t late_copies_in_flight() const noexcept { return world_->in_flight.size(); }
  /// Requests applied after their caller had given up on them, and of
  /// those, claims that won an attempt (late_copy_store).
  [[nodiscard]] std::uint64_t late_copies_applied(bool wins = false) const noexcept {
    return wins ? world_->late_claim_wins : world_->late_copies_applied;
  }
  /// Instance `i`'s executor takes its next `tasks` handler tasks `d` after
  /// they were dispatched: every worker busy (a pool too small for its
  /// load, a long handler ahead in the queue), so a handler may begin only
  /// after its attempt's lease was lost, a backup running the run by then.
  /// The task checks lease_held() before it calls the handler (attempts.hpp):
  /// a task taken after the loss must not call it, which the simulation
  /// checks (a violation, I9: it would run beside the backup). A frozen
  /// instance takes no task until it thaws; a crash loses the queue.
  void delay_starts(std::size_t i, duration d, int tasks) {
    fault(i, "executor busy: the next " + std::to_string(tasks) + " handler tasks start " + std::to_string(d.count()) +
                 " ms after dispatch, of");
    instances_.at(i)->start_delays.push_back({d, tasks});
  }
  /// Handler tasks the executors took late (delay_starts), and of those,
  /// the ones taken after their lease was lost (not started).
  [[nodiscard]] std::uint64_t late_starts(bool after_loss = false) const noexcept {
    return after_loss ? late_starts_refused_ : late_starts_;
  }
  /// Handlers that ran on past their lease's loss (frozen, never checking
  /// it, slow to honour their stop) and ended after it; of those, the ones
  /// that returned (their success then sent to a store that may have
  /// handed the run over).
  [[nodiscard]] std::uint64_t outlived_lease(bool returned = false) const noexcept {
    return returned ? outlived_lease_returned_ : outlived_lease_;
  }
  /// Wins whose reply reached their instance after the store lost the
  /// run's state: dispatched, and held to I5 by the win (take_dispatched).
  [[nodiscard]] std::uint64_t wins_answered_after_loss() const noexcept { return wins_answered_after_loss_; }
  /// The store loses every run and fence (a restart without persistence, a
  /// FLUSHALL) and notices it: claims are quarantined for a lease
  /// (rules::lose_state) — at once, or, after notice_losses_beside_claims,
  /// only when an instance's claim reply brings the marker's answer.
  void lose_store_state() { world_->lose_state(); }
  /// A backup of the store is taken now; restore_store_backup() brings the
  /// store back to it (a partial loss: a restored backup, a failover to a
  /// replica that lacked the last writes), noticed at once.
  void take_store_backup() { world_->take_backup(); }
  void restore_store_backup() { world_->restore_backup(); }
  /// The same, noticed by nothing but the fences instances remember, as a
  /// PostgreSQL database or a Redis dump restored whole (its marker is the
  /// backup's). Detection can see it only where every job that changed
  /// since the backup has won an attempt since, and every instance that is
  /// up remembers a fence of it above the backup's counter: the first claim
  /// or refused heartbeat of that job then proves the loss. A job whose
  /// only change was a run's end, a pause or an answered trigger proves
  /// nothing (doc/protocol.md §15, "What detection cannot see"). So this
  /// lands only then, with no loss noticed since the backup nor one
  /// unproven; until a fence proves it, a history must not restart an
  /// instance (loss_unproven()). Returns whether it landed.
  bool restore_store_backup_unnoticed() {
    const std::optional<rules::run_table>& b = world_->backup;
    if (!b || !world_->unproven.empty() || world_->marker_gone) return false;
    const rules::run_table t = world_->mem.snapshot();
    if (t.lost_at != b->lost_at || t.purged != b->purged) return false;
    for (const std::string& job : world_->changed_since_backup()) {
      const auto now = t.jobs.find(job);
      const auto then = b->jobs.find(job);
      const std::uint64_t before = then == b->jobs.end() ? 0 : then->second.fence;
      if (now == t.jobs.end() || now->second.fence <= before) return false;
      for (const auto& p : instances_)
        if (!p->crashed && !p->sched->stopped() && world_->fence_seen(p->name, job) <= before) return false;
    }
    world_->restore_backup(false);
    return true;
  }
  /// The store is Redis with `replicas = 1` over a primary and one
  /// asynchronous replica (world::replicas): while the replica keeps up,
  /// nothing differs; see replica_lags() and fail_over_to_replica().
  void wait_for_replica(bool on) { world_->replicas = on; }
  /// The replica lags from now on: writes apply on the primary only, and
  /// each call whose WAIT then falls short does what redis_store does — a
  /// won claim is released and the call throws not_replicated (no handler
  /// starts), a heartbeat throws and its renewal does not count (the runner
  /// stops at its self-abort deadline; refusals beside it in its batch are
  /// answered: partial_batch_error), a finish stays recorded on the
  /// primary and the handle tells it in a store_notice.
  void replica_lags() { world_->replica_lags(); }
  [[nodiscard]] bool replica_lagging() const { return world_->lagging(); }
  /// The replica catches up: nothing is lost.
  void replica_catches_up() { world_->replica_catches_up(); }
  /// The primary dies and the lagging replica is promoted: every write since
  /// the lag began is lost, noticed by nothing but a fence a handle saw
  /// since (the marker key came back with the replica; world::fail_over).
  /// After a loss of state since the lag began the replica catches up
  /// instead; returns whether the failover landed.
  bool fail_over_to_replica() { return world_->fail_over(); }
  /// Calls thrown as not_replicated: claims, heartbeats, or (`what` other)
  /// triggers, pauses, resumes, stops and purges; and finishes recorded on
  /// the primary only.
  enum class unreplicated { claims, heartbeats, finishes, other };
  [[nodiscard]] std::uint64_t not_replicated(unreplicated what) const noexcept {
    switch (what) {
      case unreplicated::claims: return world_->unreplicated_claims;
      case unreplicated::heartbeats: return world_->unreplicated_heartbeats;
      case unreplicated::finishes: return world_->unreplicated_finishes;
      case unreplicated::other: return world_->unreplicated_other;
    }
    return 0;
  }
  /// Failovers that landed, and the finishes they lost in all.
  [[nodiscard]] std::size_t failovers() const noexcept { return world_->failovers.size(); }
  [[nodiscard]] std::size_t finishes_lost_in_failovers() const noexcept {
    std::size_t n = 0;
    for (const auto& f : world_->failovers) n += f.lost_finishes.size();
    return n;
  }
  /// Runs started again after a failover that lost their finish: the cost
  /// the design accepts (and tells), counted by the last violations() call.
  [[nodiscard]] std::size_t accepted_reruns() const noexcept { return accepted_reruns_; }

  /// `job`'s state alone is lost, unnoticed (world::lose_job_state): only a
  /// fence an instance remembers proves it. A handle that remembers none
  /// (a process started since) cannot tell its slots ran (doc/protocol.md
  /// §15, "What detection cannot see"), so this lands only when every
  /// instance that is up remembers one, the job has run, and no loss of a
  /// job is still unproven; until a fence proves it, a history must not
  /// restart an instance (loss_unproven()). Returns whether it landed.
  bool lose_job_state(const std::string& job) {
    if (!world_->unproven.empty()) return false;
    const rules::run_table t = world_->mem.snapshot();
    const auto j = t.jobs.find(job);
    if (j == t.jobs.end() || j->second.fence == 0) return false;
    for (const auto& p : instances_)
      if (!p->crashed && !p->sched->stopped() && world_->fence_seen(p->name, job) == 0) return false;
    world_->lose_job_state(job);
    return true;
  }
  /// Whether a loss of one job's state has not been proved yet.
  [[nodiscard]] bool loss_unproven() const { return !world_->unproven.empty(); }
  /// Losses proved by a fence an instance remembered, and of those, the
  /// ones the recorded loss explained (world::record_proof).
  [[nodiscard]] std::uint64_t fence_proofs(bool explained = false) const {
    return explained ? world_->explained_proofs : world_->proofs;
  }
  /// Losses of one job's state first proved by a fence won before an
  /// earlier, recorded loss (world::stale_proofs).
  [[nodiscard]] std::uint64_t stale_fence_proofs() const { return world_->stale_proofs; }
  /// The store loses its state inside instance `i`'s next claim round trip,
  /// after `after` of its claims ran (a FLUSHALL from elsewhere between the
  /// pipelined commands). At once the loss is noticed there or not at all;
  /// beside the claims, only a marker read after them shows it.
  void lose_store_state_inside_claims(std::size_t i, std::size_t after) {
    fault(i, "loss of the store's state inside the next claim round trip, after " + std::to_string(after) +
                 " claim(s) of");
    world_->loss_inside_claims[instances_.at(i)->name] = after;
  }
  /// Whether the store notices a loss only by a marker read beside its
  /// claims, as Redis does (world::loss_beside_claims): a claim can then win
  /// on the forgotten state and be handed back when its reply arrives, and
  /// a lost reply leaves the win in the store, unchecked, for a resend.
  void notice_losses_beside_claims(bool on) { world_->loss_beside_claims = on; }
  /// The store's clock is stepped by `d`, ahead or back (NTP or an operator
  /// on the store's host; on SQLite, the one host's wall clock). Real time,
  /// on which the history and I9 are checked, goes on unchanged, and so do
  /// the instances' clocks. A step ahead of S ends every lease S early in
  /// real time: harmless up to lease − 2 × heartbeat while each runner's next
  /// heartbeat reaches the store on time, but only up to the safety margin
  /// for a runner whose next heartbeat is late or lost, less what the
  /// runner's slow monotonic clock (`drift_clock`) spends of that margin
  /// (doc/protocol.md §2).
  /// A step back breaks the store's precondition too: with a loss of the
  /// store's state after it, a slot won just before the step can be won
  /// again (I5 says so; doc/protocol.md §2).
  /// The checks of takeover times (I6) and registrations compare the store's
  /// times with real ones: I6 checks only lease ends whose deadline comes
  /// before the first step, and registrations are not checked within
  /// register_every of a step (and are read through the steps before it).
  void step_store_clock(duration d) {
    world_->hist.faults.push_back({now(), "step store clock " + std::to_string(d.count()) + " ms"});
    world_->store_clock.step(d);
    world_->store_steps.push_back({now(), d});
  }
  /// Every store call from now on takes `rt` (half on the way there, half
  /// back) during which the caller's loop waits: a real network, and with
  /// enough work an overloaded instance. Blocked calls nest: while one
  /// instance waits, another's call runs inside that wait and the first
  /// resumes only once the second returned; with several busy instances
  /// they hold each other up far more than real ones would. Model overload
  /// with one instance.
  void store_round_trip(duration rt) { world_->round_trip = rt; }
  /// Whether the store announces releases and ends of runs to the backups
  /// (PushStore, on by default, as PostgreSQL and Redis do); off, backups
  /// find a hand-over only at their periodic checks.
  void announce_releases(bool on) { world_->pushes = on; }
  /// Whether an announced finish names its run (on by default, as every
  /// store we ship; off, a plain PushStore: the job only, and backups check
  /// each run).
  void announce_finished_runs(bool on) { world_->names_finished = on; }
  /// The next `n` announcements of a release or an end reach no instance
  /// (a dropped notification, a subscriber connection that was down).
  void lose_announcements(int n) {
    world_->hist.faults.push_back({now(), std::to_string(n) + " announcement(s) will be lost"});
    world_->lost_announcements += n;
  }
  /// Instance `i`'s trigger listener loses its connection for `d`
  /// (PushTriggerStore): every trigger pushed meanwhile is lost to it; then
  /// it reconnects and calls f(""), and the instance must poll the triggers
  /// it missed. (Nothing else of the instance is hindered: the checks still
  /// hold it to answer a trigger in time.)
  void cut_trigger_listener(std::size_t i, duration d) {
    const std::string& name = instances_.at(i)->name;
    world_->hist.faults.push_back({now(), "trigger listener of " + name + " cut for " + std::to_string(d.count()) + " ms"});
    time_point& until = world_->trigger_cut_until[name];
    until = std::max(until, now() + d);
  }
  /// stop(timeout) on instance `i`; the simulation carries it out.
  void stop(std::size_t i, duration timeout) {
    instance& in = *instances_.at(i);
    if (in.crashed) return;
    fault(i, "stop " + std::to_string(timeout.count()) + " ms");
    in.sched->stop(timeout);
  }
  /// Instance `i` removes job `name` while it runs (scheduler::remove;
  /// `hand_over`: its running handler is stopped as on stop()). Recorded as a
  /// fault of the instance: it no longer backs up that job's runs.
  void remove_job(std::size_t i, const std::string& name, bool hand_over = false) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.sched->stopped()) return;
    fault(i, "remove job " + name + (hand_over ? " handing over" : ""));
    in.sched->remove(name, hand_over);
  }
  /// Instance `i` adds job `name` (one given to add_job) again while it runs:
  /// an upsert, or a new start of it after remove_job.
  void readd_job(std::size_t i, const std::string& name) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.sched->stopped()) return;
    for (const auto& j : jobs_) {
      if (j.name != name) continue;
      fault(i, "add job " + name);
      try {
        j.install(*in.sched, j.name, handler_of(in));
      } catch (const std::logic_error&) {
        // stopping: add() is refused, as it should be
      }
    }
  }

  /// An operator pauses job `name` in the store (PauseStore), from outside
  /// every instance: no claim of it wins until resume_job(); runs in
  /// progress go on. Checked by violations(): no attempt is won while paused.
  void pause_job(const std::string& name) { world_->set_paused(name, true); }
  void resume_job(const std::string& name) { world_->set_paused(name, false); }
  /// An operator stops job `name` in the store (StopStore, leasectl stop),
  /// from outside every instance: a pause that hands over its runs in
  /// progress; each runner learns it at its next heartbeat and asks its
  /// handler to stop. Returns how many runs were handed over.
  std::size_t stop_job(const std::string& name) { return world_->stop(name); }
  /// An operator purges job `name` (RegistryStore, leasectl purge).
  purge_result purge_job(const std::string& name, duration unseen_for) { return world_->purge(name, unseen_for); }
  /// Holds the cluster to "every up instance's jobs are registered, last
  /// seen within register_every + slack" now (violations() checks it at the
  /// end; a history whose instances all stop at the end calls this before).
  void check_registrations_now() {
    std::vector<std::string> out;
    check_registrations(out);
    for (auto& v : out) world_->violation(std::move(v));
    ++registration_checks_;
  }
  [[nodiscard]] std::size_t registration_checks() const noexcept { return registration_checks_; }
  /// register_jobs calls instance `i` made so far.
  [[nodiscard]] std::uint64_t register_calls(std::size_t i) const {
    auto it = world_->register_calls.find(instances_.at(i)->name);
    return it == world_->register_calls.end() ? 0 : it->second;
  }

  /// An operator triggers job `name` from outside every instance (the
  /// store's trigger(), as leasectl): one manual run, now (TriggerStore).
  /// Checked by violations(): no trigger runs twice, and each one runs or
  /// has an event saying why not (or is still pending where no instance
  /// could take it).
  void trigger_job(const std::string& name) {
    world_->trigger(name, "operator");
    // An operator's tool reads the marker after its trigger too.
    if (world_->marker_gone) world_->trigger_after_notice(name, "operator");
  }
  /// An operator triggers job `name` through instance `i`'s API
  /// (scheduler::trigger()), unless it is down (crashed, frozen, stopped or in
  /// a store call: it would not answer). A refusal or a store error is
  /// recorded; the operator does not retry.
  void trigger_on(std::size_t i, const std::string& name) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.frozen_until || in.blocked > 0 || in.sched->stopped()) return;
    try {
      in.sched->trigger(name);
    } catch (const std::exception& e) {
      world_->hist.faults.push_back({now(), "trigger of job " + name + " refused (" + e.what() + ")"});
    }
  }

  /// An operator resumes job `name` through instance `i`'s API
  /// (scheduler::resume(), with `missed`: catch_up_latest claims the latest
  /// slot missed while paused, if within catch_up), unless the instance is
  /// down (as trigger_on). A refusal or a store error is recorded; the
  /// operator does not retry.
  void resume_on(std::size_t i, const std::string& name, lease::missed_slots missed) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.frozen_until || in.blocked > 0 || in.sched->stopped()) return;
    try {
      in.sched->resume(name, missed);
    } catch (const std::exception& e) {
      world_->hist.faults.push_back({now(), "resume of job " + name + " refused (" + e.what() + ")"});
    }
  }

  /// Instance `i`'s next `calls` store calls reach the store `d` late: its
  /// loop waits in each call meanwhile, the rest of the world goes on.
  void delay_store(std::size_t i, duration d, int calls) { slow_store(i, d, calls, false); }

  /// Instance `i`'s next `calls` store calls fail with `code`: before being
  /// applied, or (`applied`) after, as when a reply is lost.
  void fail_store(std::size_t i, errc code, int calls, bool applied = false) {
    fault(i, "fail " + std::to_string(calls) + " store calls" + (applied ? " after applying" : ""));
    world_->failures[instances_.at(i)->name] = {code, calls, applied};
  }

  /// Runs the simulation until the store's clock reads `t`.
  void run_until(time_point t) {
    for (;;) {
      settle();
      std::optional<time_point> next = next_event();
      if (!next || *next > t) break;
      if (*next > now()) world_->clock.set(*next);
    }
    if (t > now()) world_->clock.set(t);
    settle();
  }
  void run_for(duration d) { run_until(now() + d); }
  /// The store time at which instance `i`'s wall clock reads job `name`'s
  /// first slot after it reads now (its skew and steps; drift moves only
  /// its monotonic clock).
  [[nodiscard]] time_point slot_time_on(std::size_t i, const std::string& name) const {
    const duration off = instances_.at(i)->clock->offset();
    for (const job_spec& j : jobs_)
      if (j.name == name) return j.slots.next(now() + off) - off;
    throw std::logic_error("slot_time_on: no job " + name);
  }
  /// Runs until the millisecond before `t`, sets the store's clock to `t`
  /// and calls `f` before anything due at `t` happens: an operator's call
  /// that comes first in its millisecond, ahead of that millisecond's
  /// timers (a real loop takes the two in either order; run_until takes the
  /// timers first).
  template <class F>
  void first_at(time_point t, F&& f) {
    if (t > now()) run_until(t - std::chrono::milliseconds{1});
    // (A slow store call run meanwhile may have carried the clock past `t`:
    // never set it back. The call comes late then, as it would.)
    if (t > now()) world_->clock.set(t);
    f();
    settle();
  }

  /// The store's clock.
  [[nodiscard]] time_point now() const { return world_->clock.now(); }
  [[nodiscard]] const history& recorded() const { return world_->hist; }
  [[nodiscard]] std::size_t size() const { return instances_.size(); }
  [[nodiscard]] scheduler_type& instance_at(std::size_t i) { return *instances_.at(i)->sched; }
  /// The shared store (e.g. to inspect runs).
  [[nodiscard]] memory_store<skewed_clock<fake_clock>>& backing_store() { return world_->mem; }

  /// Every invariant violation found (empty when the history is sound): the
  /// store-side checks made during the run, plus the history checks below.
  [[nodiscard]] std::vector<std::string> violations() const {
    std::vector<std::string> out = world_->hist.violations;
    // I5: a handler runs only for a won attempt, at most once per (run, attempt).
    std::set<std::pair<run_key, std::uint32_t>> seen;
    for (const handler_run& h : world_->hist.handlers)
      if (!seen.insert({h.run, h.attempt}).second)
        out.push_back("I5: " + to_text(h.run) + " attempt " + std::to_string(h.attempt) + " started twice");
    check_takeover_time(out);
    check_no_win_while_paused(out);
    check_no_overlap(out);
    check_no_start_across_loss(out);
    check_rerun_after_failover(out);
    check_registrations(out);
    check_registration_cost(out);
    check_healthy_kept(out);
    check_slots_accounted(out);
    check_triggers(out);
    check_store_clock_notices(out);
    check_event_kinds(out);
    return out;
  }

  /// How many events of an attempt's end (success, failed, handed_over,
  /// stopped, lost) the last violations() call held to the store's truth.
  [[nodiscard]] std::size_t kinds_checked() const noexcept { return kinds_checked_; }

  /// Event kind accuracy: what an event says about how an attempt ended is
  /// what the store's truth and the operators' actions show. The attempt is
  /// the claim won with the event's fence (its token); "before the event"
  /// is by the order of store calls and faults (event_mark), not by time.
  ///
  /// * success / failed: a finish of that token with that status applied
  ///   before it (its own call, a batch's, or a late copy's).
  /// * handed_over: a release of that token applied before it, or an
  ///   operator's stop handed the run over under that token (the release's
  ///   purpose, done by the stop: a read-back cannot tell the two apart).
  /// * stopped: an operator's stop handed the run over under that token
  ///   before it; or the attempt's own release applied and the job was
  ///   paused by then (the runner, handing the run over, read it back
  ///   released and its job paused: which of the two released it, no read
  ///   can tell, and either way it stays stopped until a resume). A release
  ///   of its own alone is a hand-over, not an operator's stop.
  /// * lost after a refusal that reached the runner (a heartbeat, finish or
  ///   release refused): the store's record after that refusal is gone or
  ///   under another token (taken over, a newer attempt, a loss of state),
  ///   or was ended or released under this token by something that was
  ///   not this attempt's own finish or release nor an operator's stop
  ///   (a quarantine's hand-back, an interrupt). Our own end applied, or a
  ///   stop, make `lost` false ("another instance took the run over") —
  ///   unless the runner's read-back of the refused run failed (a failed or
  ///   hung call of its own between the refusal and the event): it cannot
  ///   tell then, and says the generic `lost`.
  /// * lost with no refusal heard (the self-abort: no renewal acknowledged
  ///   for lease − margin, or a claim's answer later than that): not before
  ///   the send of the last renewal answered true + lease − margin, on the
  ///   runner's monotonic clock (world::renewed_until). The claim's own
  ///   share is not checked: the scheduler counts it from when the claim
  ///   was made ready, a moment the store cannot see (earlier than the send
  ///   when the batch left after other calls of that loop turn), so the
  ///   sim has no exact bound to hold it to.
  ///
  /// Not checked: abandoned (it says only what stop() did), and whether a
  /// hand-over's message says a backup takes the run over while the job is
  /// paused.
  void check_event_kinds(std::vector<std::string>& out) const {
    kinds_checked_ = 0;
    const history& h = world_->hist;
    std::size_t won_at = 0;  // the winning claim's index in h.ops, set by token_of
    // The event's instance's win: after a loss of the store's state, another
    // instance can win the same run again as attempt 1, with the same fence
    // when both fall in one ms of the store's clock (a property run found
    // one instance's `lost` judged by the other's finish).
    auto token_of = [&](const event& e) -> std::optional<std::string> {
      for (std::size_t i = h.ops.size(); i-- > 0;) {  // the latest such win
        const store_op& op = h.ops[i];
        if (op.op == store_op::kind::claim && op.outcome == claim_outcome::won && op.run == e.run && op.after &&
            op.after->fence == e.fence && op.after->attempt == e.attempt && op.instance == e.instance) {
          won_at = i;
          return op.token;
        }
      }
      return std::nullopt;
    };
    // The first op after the attempt's win (won_at) and before `before` that
    // applied an end of `token`: a finish (of `status`, or any) or a
    // release. (A token may win several attempts: a claim resent with its
    // token after its win was handed back, short of a replica, wins the
    // next attempt.)
    auto own_end = [&](const std::string& token, std::size_t before, store_op::kind k,
                       std::optional<run_status> status = std::nullopt) -> std::optional<std::size_t> {
      for (std::size_t i = won_at + 1; i < before && i < h.ops.size(); ++i) {
        const store_op& op = h.ops[i];
        if (op.op != k || op.token != token || !op.accepted) continue;
        if (status && (!op.after || op.after->token != token || op.after->status != *status)) continue;
        return i;
      }
      return std::nullopt;
    };
    // An operator's stop handed `run` over under `token`: before the event
    // (fault index < faults), and before op `before_op` if given.
    auto stopped_under = [&](const run_key& run, const std::string& token, std::size_t faults,
                             std::size_t before_op = std::numeric_limits<std::size_t>::max()) {
      for (const auto& st : world_->stops)
        if (st.fault < faults && st.before_op <= before_op)
          for (const auto& [k, t] : st.runs)
            if (k == run && t == token) return true;
      return false;
    };
    // `job` was paused at some point from before op `from` until op `to`.
    auto paused_from = [&](const std::string& job, std::size_t from, std::size_t to) {
      bool paused = false;
      for (const pause_change& p : h.pauses) {
        if (p.before_op > to) break;
        // Paused when the window opened (a later change, a loss of the
        // job's state say, undid it only after: that pause counts).
        if (paused && p.before_op >= from) return true;
        if (p.job.empty() || p.job == job) paused = p.paused && !p.job.empty();
        if (paused && p.before_op >= from) return true;
      }
      return paused;
    };
    for (std::size_t k = 0; k < h.events.size() && k < h.event_marks.size(); ++k) {
      const event& e = h.events[k];
      const event_mark& m = h.event_marks[k];
      if (e.kind != event_kind::success && e.kind != event_kind::failed && e.kind != event_kind::handed_over &&
          e.kind != event_kind::stopped && e.kind != event_kind::lost)
        continue;
      const std::string what = std::string(to_string(e.kind)) + " of " + to_text(e.run) + " attempt " +
                               std::to_string(e.attempt) + " on " + e.instance + " (at " +
                               std::to_string(e.at.time_since_epoch().count()) + ")";
      const std::optional<std::string> token = token_of(e);
      if (!token) {
        out.push_back("event kind: " + what + " names an attempt no claim won (fence " + std::to_string(e.fence) + ")");
        continue;
      }
      ++kinds_checked_;
      switch (e.kind) {
        case event_kind::success:
        case event_kind::failed: {
          const run_status st = e.kind == event_kind::success ? run_status::success : run_status::failed;
          if (!own_end(*token, m.ops, store_op::kind::finish, st))
            out.push_back("event kind: " + what + ", but no finish of that attempt with that status applied before it");
          break;
        }
        case event_kind::handed_over:
          if (!own_end(*token, m.ops, store_op::kind::release) && !stopped_under(e.run, *token, m.faults))
            out.push_back("event kind: " + what + ", but no release of that attempt applied before it and no "
                          "operator's stop handed the run over");
          break;
        case event_kind::stopped: {
          if (stopped_under(e.run, *token, m.faults)) break;
          const std::optional<std::size_t> rel = own_end(*token, m.ops, store_op::kind::release);
          if (rel && paused_from(e.run.job, *rel, m.ops)) break;
          out.push_back("event kind: " + what + " (\"an operator stopped the job\"), but no operator's stop handed "
                        "that attempt's run over" +
                        (rel ? std::string(": its own release applied (at " +
                                           std::to_string(h.ops[*rel].at.time_since_epoch().count()) +
                                           ") and the job was not paused")
                             : std::string{}));
          break;
        }
        default: {  // lost
          // The last thing the runner learned of the run before it said so:
          // a refusal or a read-back (none: the self-abort).
          const history::run_news* news = nullptr;
          for (const history::run_news& n : h.news)
            if (n.events <= k && n.ops > won_at && n.instance == e.instance && n.run == e.run) news = &n;
          // (Its token and fence: a token may have won an earlier attempt too.)
          const bool mine = news && news->record && news->record->token == *token && news->record->fence == e.fence;
          const bool current = mine && news->record->status == run_status::running && !news->record->released;
          if (!news || current) {
            const auto it = world_->renewed_until.find(*token);
            if (it != world_->renewed_until.end() && m.steady < it->second)
              out.push_back("event kind: " + what + " at " + std::to_string(m.steady.time_since_epoch().count()) +
                            " on its monotonic clock, with the run still its own as far as it knew, before its "
                            "self-abort deadline (" + std::to_string(it->second.time_since_epoch().count()) +
                            ": the send of a renewal answered true + lease - margin)");
            break;
          }
          // At or after its self-abort deadline, `lost` is what the runner
          // must say, whatever it read before (a catch-up read of a job
          // added again reads the run too, and need not act on it).
          if (const auto it = world_->renewed_until.find(*token);
              it != world_->renewed_until.end() && !(m.steady < it->second))
            break;
          // Its own finish or release applied before that news (and no
          // loss of the job's state forgot it since): the attempt ended as
          // it asked, whatever the run shows now (a release's run may have
          // been taken over since: the hand-over it asked for). Or the run
          // is still under its token, handed over by an operator's stop.
          // (Calls before it: those before the refused call, or before the read.)
          const std::size_t before = news->refusal ? *news->refusal : news->ops;
          // Indices into h.ops, `none` for no such call (a plain index, not
          // an optional: g++ 12 -O1 with TSan warns an optional's value may
          // be read uninitialized here).
          constexpr std::size_t none = static_cast<std::size_t>(-1);
          std::size_t fin = own_end(*token, before, store_op::kind::finish).value_or(none);
          std::size_t rel = own_end(*token, before, store_op::kind::release).value_or(none);
          auto forgotten = [&](std::size_t& end) {
            if (end == none) return;
            for (std::size_t f = 0; f < m.faults && f < h.faults.size(); ++f)
              if (h.faults[f].first >= h.ops[end].at && world::lost_state_of(h.faults[f].second, e.run.job)) {
                end = none;
                return;  // (h.ops[none] is past the end: UBSan found it, after two losses of the job's state)
              }
          };
          forgotten(fin);
          forgotten(rel);
          // Released, then gone or past the next attempt (that one ended
          // too): a read cannot tell its own release from its lease running
          // out, and `lost` is all it can say. Right after it, one more
          // hand-over than when it was won tells it.
          if (rel != none && !mine && (!news->record || news->record->attempt != e.attempt + 1)) rel = none;
          if (fin != none && !news->record) fin = none;  // deleted since (retention): nothing to read
          // (A stopped run ended since, interrupted say, is no longer its own.)
          const bool stop = mine && news->record->status == run_status::running &&
                            stopped_under(e.run, *token, m.faults, before);
          if (fin == none && rel == none && !stop) break;  // taken over, superseded, forgotten, or ended by something else
          // After a refusal, its read-back of the run failed: it cannot tell.
          bool unread = false;
          if (news->refusal) {
            const time_point from = h.ops[*news->refusal].at;
            for (std::size_t f = 0; f < m.faults && f < h.faults.size(); ++f) {
              const auto& [at, fw] = h.faults[f];
              if (at < from || at > e.at) continue;
              const bool about = fw.size() > e.instance.size() &&
                                 fw.compare(fw.size() - e.instance.size() - 1, std::string::npos, " " + e.instance) == 0;
              if (about && (fw.rfind("failed call", 0) == 0 || fw.rfind("hung call", 0) == 0)) unread = true;
            }
          }
          if (unread) break;
          const std::string how = !news->refusal ? "read back"
                                  : h.ops[*news->refusal].op == store_op::kind::heartbeat ? "heartbeat was refused"
                                  : h.ops[*news->refusal].op == store_op::kind::finish    ? "finish was refused"
                                                                                           : "release was refused";
          out.push_back("event kind: " + what + " (\"no longer owns its attempt\") after its " + how + ", but " +
                        (fin != none   ? "its own finish had applied (at " + std::to_string(h.ops[fin].at.time_since_epoch().count()) + ")"
                         : rel != none ? "its own release had applied (at " + std::to_string(h.ops[rel].at.time_since_epoch().count()) + ")"
                               : std::string("the run was still under its token, handed over by an operator's stop")));
          break;
        }
      }
    }
  }

  /// A notice that the store's clock was stepped is true: steps that way
  /// happened before it, adding up to at least what the notice says (two
  /// answers can straddle several). Without a step it is a false alarm
  /// (drift, freezes, slow calls and wall-clock steps of instances must not
  /// raise one).
  void check_store_clock_notices(std::vector<std::string>& out) const {
    for (const event& e : world_->hist.events) {
      if (e.kind != event_kind::store_notice) continue;
      duration ahead{0}, back{0};  // the steps each way made before the notice
      for (const auto& [at, d] : world_->store_steps)
        if (at <= e.at) (d > duration::zero() ? ahead : back) += d > duration::zero() ? d : -d;
      for (const auto& [prefix, total] : {std::pair<std::string, duration>{"the store's clock was stepped ahead by at least ", ahead},
                                            std::pair<std::string, duration>{"the store's clock was stepped back by at least ", back}}) {
        if (e.message.rfind(prefix, 0) != 0) continue;
        const long long said = std::atoll(e.message.c_str() + prefix.size());  // "<n> ms: …"
        if (total == duration::zero())
          out.push_back("false alarm: " + e.instance + " said \"" + e.message.substr(0, 60) + "…\" though the store's clock was never stepped that way");
        else if (said > total.count())
          out.push_back("store clock notice overstated: " + e.instance + " said \"" + e.message.substr(0, 70) +
                        "…\" but the steps that way add up to " + std::to_string(total.count()) + " ms");
      }
    }
  }

  /// How many triggers the last violations() call held to "run once, or say why".
  [[nodiscard]] std::size_t triggers_checked() const noexcept { return triggers_checked_; }
  /// Triggers whose push reached no listener (every one cut): only a poll
  /// after a reconnect could find them.
  [[nodiscard]] std::uint64_t unheard_triggers() const noexcept { return world_->unheard_triggers; }
  /// triggers() calls the instances made (their polls).
  [[nodiscard]] std::uint64_t trigger_polls() const noexcept { return world_->trigger_polls; }
  /// Answers that would have started a handler, handed back by the marker's
  /// answer beside them (notice_losses_beside_claims); `resent`: of those,
  /// resent claims answered `running` with their own token.
  [[nodiscard]] std::uint64_t handed_back(bool resent = false) const noexcept {
    return resent ? world_->resent_handed_back : world_->handed_back;
  }

  /// How many (instance, slot) pairs the last violations() call held to
  /// "every slot that does not run says why".
  [[nodiscard]] std::size_t slots_accounted() const noexcept { return slots_accounted_; }

  /// How many claim_many calls the instances made (each one round trip).
  [[nodiscard]] std::uint64_t claim_batches() const noexcept { return world_->claim_batches; }

  /// How many lease ends the last violations() call could hold to I6.
  [[nodiscard]] std::size_t takeover_checks() const noexcept { return takeover_checks_; }
  /// Of those, how many were held to the aimed check's deadline too (the
  /// lease end + heartbeat / 4: a clean backup had read that end).
  [[nodiscard]] std::size_t aimed_takeover_checks() const noexcept { return aimed_checks_; }

  /// The history as readable text, for a failing test's message.
  [[nodiscard]] std::string describe(std::size_t max_lines = 200) const {
    std::vector<std::pair<time_point, std::string>> lines;
    const history& h = world_->hist;
    for (const auto& [at, what] : h.faults) lines.push_back({at, "FAULT " + what});
    static constexpr const char* op_names[] = {"claim", "heartbeat", "finish", "release", "unfinished", "get"};
    for (const auto& op : h.ops)
      lines.push_back({op.at, "store " + op.instance + " " + op_names[static_cast<int>(op.op)] + " " + to_text(op.run) +
                                  " token " + op.token.substr(0, 6) +
                                  (op.op == store_op::kind::claim ? " → " + std::string(to_string(op.outcome))
                                                                  : (op.accepted ? " → accepted" : " → refused"))});
    for (const auto& e : h.events)
      lines.push_back({e.at, "event " + std::string(to_string(e.kind)) + " " + e.instance + " " + to_text(e.run) +
                                 " #" + std::to_string(e.attempt) + ": " + e.message});
    for (const auto& r : h.handlers)
      lines.push_back({r.start, "handler " + r.instance + " " + to_text(r.run) + " #" + std::to_string(r.attempt) +
                                    " fence " + std::to_string(r.fence) + " token " + r.token.substr(0, 6) +
                                    " ended " + (r.ended.empty() ? "-" : r.ended) + " at " +
                                    (r.end ? std::to_string(r.end->time_since_epoch().count()) : "-")});
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::ostringstream os;
    for (const auto& v : violations()) os << "VIOLATION " << v << '\n';
    std::size_t n = 0;
    for (const auto& [at, text] : lines) {
      if (++n > max_lines) {
        os << "… (" << lines.size() - max_lines << " more)\n";
        break;
      }
      os << at.time_since_epoch().count() << ' ' << text << '\n';
    }
    return os.str();
  }

 private:
  struct job_spec {
    std::string name;
    std::function<void(scheduler_type&, const std::string&, typename scheduler_type::handler)> install;
    planner plan;
    detail::any_schedule slots;
  };
  struct running_handler {
    task t;
    script sc;
    time_point natural_end{};
    std::optional<time_point> stop_seen;
    std::size_t record = 0;  // index into history.handlers
    bool held_at_start = false;  // the task's own lease check, as made when the handler began
  };
  struct instance {
    std::string name;
    std::unique_ptr<clock_type> clock;  // its skewed wall clock; copies share the offset
    int blocked = 0;                    // depth of slow store calls it waits in
    std::uint32_t generation = 0;
    std::unique_ptr<scheduler_type> sched;
    executor exec;
    std::vector<running_handler> running;
    /// Dispatched tasks the busy executor has not taken yet, in dispatch
    /// order (delay_starts).
    struct queued_task {
      time_point at;                  ///< when the executor takes it
      task t;
      std::size_t faults_at_win;  ///< history::faults' size at its win
    };
    std::vector<queued_task> queued;
    std::deque<std::pair<duration, int>> start_delays;  // (delay, tasks left) of delay_starts, in order
    bool probing = false;  // a task taken after its lease was lost is being run: it must not call the handler
    bool crashed = false;
    std::optional<time_point> frozen_until;
    bool throw_next = false;  // how the handler being run now ends
    time_point held_until{};  // the end of its latest freeze or slow store call (its loop could not move)
    std::vector<std::pair<time_point, time_point>> waits;  // [from, until] of each store call it waited in
  };

  void build(instance& in) {
    options o = opts_;
    o.instance = in.name;
    o.seed = seed_ * 1'000'003ULL + in.generation * 104'729ULL + 1;  // the scheduler mixes in the name
    in.exec = executor{};
    in.sched = std::make_unique<scheduler_type>(St(world_, in.name), *in.clock, in.exec, P{}, o);
    in.sched->on_event([w = world_.get(), c = *in.clock, self = &in](const event& e) {
      event copy = e;
      copy.at = e.at - c.offset();  // history times are real time (the fake clock's), as the steps' are
      w->hist.events.push_back(std::move(copy));
      w->hist.event_marks.push_back({self->clock->steady(), w->hist.ops.size(), w->hist.faults.size()});
    });
    for (const auto& j : jobs_) j.install(*in.sched, j.name, handler_of(in));
  }
  typename scheduler_type::handler handler_of(instance& in) {
    return [in = &in, w = world_.get()](run_context& c) {
      if (in->probing)
        w->violation("I9: " + in->name + "'s executor took the task of " + to_text(c.run()) + " attempt " +
                     std::to_string(c.attempt) + " after its lease was lost, and it called the handler");
      if (in->throw_next) throw std::runtime_error("scripted failure");
    };
  }

  [[nodiscard]] time_point end_of(const running_handler& r) const {
    time_point end = r.natural_end;
    if (r.stop_seen && r.sc.honours_stop) end = std::min(end, *r.stop_seen + *r.sc.honours_stop);
    return end;
  }

  /// The next moment something is due anywhere: an instance's wakeup, a
  /// handler's end, a self-abort deadline, the end of a freeze, a trigger
  /// listener's reconnect.
  [[nodiscard]] std::optional<time_point> next_event() const {
    std::optional<time_point> next;
    auto consider = [&](time_point x) {
      if (!next || x < *next) next = x;
    };
    if (auto r = world_->next_reconnect()) consider(*r);
    if (auto c = world_->next_late_copy()) consider(*c);
    for (const auto& p : instances_) {
      const instance& in = *p;
      if (in.crashed) continue;
      if (in.frozen_until) {
        consider(*in.frozen_until);
        continue;
      }
      if (in.blocked == 0)
        if (auto w = in.sched->next_wakeup()) consider(now() + wakeup_delay(in, *w - in.clock->offset() - now()));
      for (const auto& q : in.queued) consider(q.at);
      const steady_point own = in.clock->steady();
      for (const auto& r : in.running) {
        consider(end_of(r));
        if (const auto& l = r.t.context().lease_state; l && !r.stop_seen && l->deadline() > own)
          consider(now() + real_time_for(in, l->deadline() - own));
      }
    }
    return next;
  }

  /// The instance called `name` (nullptr if none).
  [[nodiscard]] instance* named(std::string_view name) const {
    for (const auto& p : instances_)
      if (p->name == name) return p.get();
    return nullptr;
  }

  /// The real time instance `in`'s monotonic clock takes to move by `d`.
  [[nodiscard]] static duration real_time_for(const instance& in, duration d) {
    const std::int64_t ppm = in.clock->rate_ppm();
    if (ppm == clock_type::ppm_one || d <= duration::zero()) return d;
    // The least x with scaled(x) >= d (skewed_clock rounds down).
    duration x{(d.count() * clock_type::ppm_one + ppm - 1) / ppm};
    while (clock_type::scaled(x, ppm) < d) ++x;
    return x;
  }
  /// How long until instance `in` is due to poll, given `d`, its own
  /// estimate (next_wakeup() mixes wall-clock slots and monotonic timers, so
  /// a drifting clock's estimate is not exact): never later than either
  /// reading, so a poll may come early (it finds nothing due and the next
  /// estimate is closer) but never late.
  [[nodiscard]] static duration wakeup_delay(const instance& in, duration d) {
    return std::min(d, real_time_for(in, d));
  }

  /// Instance `who` waits in a store call until `until`: the world goes on
  /// without polling it (its handlers run, its watchdog checks their leases).
  void run_blocked(const std::string& who, time_point until) {
    instance* in = named(who);
    if (in == nullptr) return;
    const time_point from = now();
    ++in->blocked;
    run_until(until);
    --in->blocked;
    in->waits.emplace_back(from, now());
    in->held_until = std::max(in->held_until, now());
  }

  /// Polls and completes everything due now, until nothing is.
  void settle() {
    for (bool progressed = true; progressed;) {
      progressed = world_->deliver_reconnects();
      progressed = store::deliver_late_copies(world_) || progressed;
      for (auto& p : instances_) {
        instance& in = *p;
        if (in.crashed) continue;
        if (in.frozen_until) {
          if (*in.frozen_until > now()) continue;
          in.held_until = std::max(in.held_until, *in.frozen_until);
          in.frozen_until.reset();
        }
        if (in.blocked > 0) {
          in.sched->check_leases();  // the watchdog thread is not blocked
        } else if (auto w = in.sched->next_wakeup(); w && *w - in.clock->offset() <= now()) {
          in.sched->poll();
          progressed = true;
          if (in.crashed) continue;
        }
        take_dispatched(in);
        progressed = take_queued(in) || progressed;
        if (in.blocked == 0) {
          check_fenced(in);  // a blocked loop has not had the refusal yet
          check_lease_answered(in);
        }
        for (std::size_t k = 0; k < in.running.size();) {
          running_handler& r = in.running[k];
          observe(r, in);
          if (end_of(r) > now()) {
            ++k;
            continue;
          }
          const bool early = r.stop_seen && r.sc.honours_stop && end_of(r) < r.natural_end;
          const bool throws = (early ? r.sc.on_stop : r.sc.ends) == script::ending::throws;
          in.throw_next = throws;
          running_handler done = std::move(r);
          in.running.erase(in.running.begin() + static_cast<std::ptrdiff_t>(k));
          // The task checks lease_held() before it calls the handler: in a
          // process, when the handler begins. Here the task is run at the
          // handler's end, when its lease may be lost by now, and it then
          // posted "not started" for a handler that ran, as a hand-over,
          // whatever its script said: a handler that returns after its
          // lease ran out (its result then refused or recorded by the
          // store) was never simulated. The task's check sees the answer
          // it had at the start. (The context is the task's own, not const:
          // only the accessor is.)
          if (done.held_at_start && !done.t.context().lease_held()) {
            ++outlived_lease_;
            outlived_lease_returned_ += !throws;
            const_cast<run_context&>(done.t.context()).lease_state.reset();
          }
          done.t();  // posts the completion; the next poll picks it up
          end_handler(done, throws ? "threw" : "returned");
          progressed = true;
        }
      }
    }
  }

  /// A running handler looks at its stop token, and (script::checks_lease)
  /// its lease, before each side effect: until it sees either, it is
  /// executing (I9). Called only while its instance is not frozen.
  void observe(running_handler& r, const instance& in) {
    (void)in;
    handler_run& h = world_->hist.handlers.at(r.record);
    if (h.observed_stop) return;
    const run_context& c = r.t.context();
    if (c.stop.stop_requested() || (r.sc.checks_lease && !c.lease_held())) {
      h.observed_stop = true;
      if (!r.stop_seen) r.stop_seen = now();
      return;
    }
    h.active_until = now();
  }

  void take_dispatched(instance& in) {
    for (task& t : *in.exec.dispatched) {
      const run_context& c = t.context();
      // I5: only the current winner runs. Checked at dispatch, by the win: a
      // win's reply may come late (slow, or resent after it was lost), and
      // a task the executor takes late may meet a store that lost its state
      // meanwhile, while its lease is still held. The loss forgot the run,
      // and its quarantine and horizon keep every other instance off it,
      // which check_no_start_across_loss holds them to, by the same win.
      const auto win = world_->faults_at_win.find(c.token);
      const std::size_t won_at = win == world_->faults_at_win.end() ? world_->hist.faults.size() : win->second;
      std::optional<run_record> rec = world_->mem.get(c.run());
      if (!rec || rec->token != c.token) {
        if (lost_since(won_at, c.run().job))
          ++wins_answered_after_loss_;
        else
          world_->violation("I5: " + in.name + " dispatched " + to_text(c.run()) + " without holding its current attempt");
      }
      if (!in.start_delays.empty()) {
        auto& [d, left] = in.start_delays.front();
        in.queued.push_back({now() + d, std::move(t), won_at});
        ++late_starts_;
        if (--left <= 0) in.start_delays.pop_front();
        continue;
      }
      begin_handler(in, std::move(t), won_at);
    }
    in.exec.dispatched->clear();
  }

  /// The busy executor takes the queued tasks whose time has come, in
  /// dispatch order. The task's body checks lease_held() first, so one taken
  /// after its lease was lost is run at once (it posts its completion
  /// without calling the handler; handler_of tells if it does call it);
  /// otherwise the handler starts now, and the task is run at its end.
  /// Whether the store lost `job`'s state (every job's, or its alone)
  /// after history::faults held `from` faults.
  [[nodiscard]] bool lost_since(std::size_t from, const std::string& job) const {
    const auto& faults = world_->hist.faults;
    for (std::size_t i = from; i < faults.size(); ++i)
      if (world::lost_state_of(faults[i].second, job)) return true;
    return false;
  }

  bool take_queued(instance& in) {
    bool any = false;
    for (std::size_t k = 0; k < in.queued.size();) {
      if (in.queued[k].at > now()) {
        ++k;
        continue;
      }
      task t = std::move(in.queued[k].t);
      const std::size_t won_at = in.queued[k].faults_at_win;
      in.queued.erase(in.queued.begin() + static_cast<std::ptrdiff_t>(k));
      any = true;
      if (t.context().lease_held()) {
        begin_handler(in, std::move(t), won_at);
        continue;
      }
      ++late_starts_refused_;
      world_->hist.faults.push_back({now(), "executor of " + in.name + " took the task of " + to_text(t.context().run()) +
                                                " after its lease was lost"});
      in.probing = true;
      in.throw_next = false;
      t();
      in.probing = false;
    }
    return any;
  }

  /// The handler of task `t` starts now; the task is run when its script
  /// ends. `won_at`: history::faults' size when its attempt won.
  void begin_handler(instance& in, task t, std::size_t won_at) {
    const run_context& c = t.context();
    handler_run h{in.name, c.run(), c.attempt, c.token, c.fence, now(), std::nullopt, {}};
    h.active_until = now();
    h.faults_before = world_->hist.faults.size();
    h.faults_at_win = won_at;
    world_->hist.handlers.push_back(h);
    running_handler r{std::move(t), script{}, now(), std::nullopt, world_->hist.handlers.size() - 1};
    r.held_at_start = r.t.context().lease_held();
    for (const auto& j : jobs_)
      if (j.name == r.t.context().job) r.sc = j.plan(r.t.context());
    r.natural_end = now() + r.sc.runs_for;
    in.running.push_back(std::move(r));
  }

  /// I6: a run whose lease ran out while still running (runner dead, frozen,
  /// abandoned, or released) is taken over or ended within 2 × heartbeat of
  /// the lease end (measured on the slowest monotonic clock of the cluster) — checked only where the rule applies cleanly: an instance
  /// became its backup before the lease end and had no fault (crash, stop,
  /// freeze, restart, failed store call) until the deadline, no store call of
  /// anyone was delayed meanwhile, and no newer slot of the job falls before
  /// the deadline (plus the largest skew, a lease).
  void check_takeover_time(std::vector<std::string>& out) const {
    takeover_checks_ = 0;
    aimed_checks_ = 0;
    // Lease ends are on the store's clock, op times on real time: the same
    // until the store's clock is first stepped, so only lease ends set
    // before that, whose deadline also falls before it, are checked. (A
    // release just after a step back sets an end that reads as long past.)
    const time_point stepped_at = world_->store_steps.empty() ? time_point::max() : world_->store_steps.front().first;
    const history& h = world_->hist;
    const duration hb = *opts_.heartbeat;
    // 2 × heartbeat on the backups' monotonic clocks: longer in real time
    // when one of them ran slow (drift_clock).
    const duration backup_window{(2 * hb.count() * clock_type::ppm_one + slowest_ppm_ - 1) / slowest_ppm_};
    std::map<run_key, std::vector<const store_op*>> by_run;
    for (const store_op& op : h.ops) by_run[op.run].push_back(&op);
    for (const auto& [run, ops] : by_run) {
      const job_spec* spec = nullptr;
      for (const auto& j : jobs_)
        if (j.name == run.job) spec = &j;
      if (spec == nullptr) continue;
      std::map<std::string, std::pair<time_point, std::string>> lease_end;  // token → (end, runner)
      std::map<std::string, time_point> set_at;  // token → when its lease got that end
      for (const store_op* op : ops) {
        if (!op->after || op->after->token != op->token) continue;
        const bool extends = (op->op == store_op::kind::claim && op->outcome == claim_outcome::won) ||
                             ((op->op == store_op::kind::heartbeat || op->op == store_op::kind::release) && op->accepted);
        if (extends) {
          lease_end[op->token] = {op->after->lease_end, op->instance};
          set_at[op->token] = op->at;
        }
      }
      for (const auto& [token, end_runner] : lease_end) {
        const auto& [end, runner] = end_runner;
        const time_point deadline = end + backup_window + duration{1};
        if (deadline > now() || deadline >= stepped_at || set_at[token] >= stepped_at) continue;
        std::optional<run_record> at_end = record_at(ops, end);
        if (!at_end || at_end->token != token || at_end->status != run_status::running) continue;
        if (spec->slots.next(run.slot) <= deadline + opts_.lease) continue;
        if (paused_during(run.job, end, deadline)) continue;  // a paused job's run waits for a resume
        if (!has_clean_backup(run, runner, end, deadline)) continue;
        ++takeover_checks_;
        std::optional<run_record> later = record_at(ops, deadline);
        if (later && later->token == token && later->status == run_status::running)
          out.push_back("I6: " + to_text(run) + " attempt " + std::to_string(at_end->attempt) + "'s lease ended at " +
                        std::to_string(end.time_since_epoch().count()) + " but nobody took it over within 2 heartbeats");
        else
          check_aimed_takeover(run, ops, token, end, set_at[token], runner, out);
      }
    }
  }

  /// I6, tighter (protocol §6): a backup whose takeover check was answered
  /// `running` with this lease end (after the lease got it, before it
  /// ended) aims its next check at the end + [0, heartbeat / 4] of its own
  /// monotonic time. If one such backup was clean from that answer on (no
  /// fault of its own, nobody's store call slow or hung, the store kept its
  /// state), the run is taken over or ended by then.
  void check_aimed_takeover(const run_key& run, const std::vector<const store_op*>& ops, const std::string& token,
                            time_point end, time_point set_at, const std::string& runner,
                            std::vector<std::string>& out) const {
    const duration aim = *opts_.heartbeat / 4;
    std::optional<time_point> deadline;
    std::string reader;
    for (const store_op* op : ops) {
      if (op->at >= end) break;
      if (op->at < set_at) continue;  // an earlier lease end of the same value, renewed since
      if (op->op != store_op::kind::claim || op->reason != claim_reason::takeover ||
          op->outcome != claim_outcome::running || op->instance == runner || !op->after ||
          op->after->token != token || op->after->lease_end != end)
        continue;
      const instance* b = named(op->instance);
      if (b == nullptr) continue;
      // A slow clock fires the aimed check later in real time; a fast one
      // earlier, answered `running` and aimed again, closer each time, until
      // one lands after the end, at most heartbeat / 4 of its time after it.
      const time_point by = std::max(op->at + real_time_for(*b, end - op->at + aim), end + aim) + duration{2};
      if (by > now() || (deadline && by >= *deadline)) continue;
      // Anyone's slow or hung call holds up the world's clock in the sim
      // (blocked calls nest): the aimed time is not owed across one.
      if (!clean_between(op->instance, run, op->at, by, true)) continue;
      deadline = by;
      reader = op->instance;
    }
    if (!deadline) return;
    ++aimed_checks_;
    std::optional<run_record> later = record_at(ops, *deadline);
    if (later && later->token == token && later->status == run_status::running)
      out.push_back("I6: " + to_text(run) + "'s lease ended at " + std::to_string(end.time_since_epoch().count()) +
                    "; " + reader + " read that end before it and had no fault, but nobody took the run over by " +
                    std::to_string(deadline->time_since_epoch().count()) + " (the end + heartbeat / 4)");
  }

  /// Paused jobs: no attempt (new run or takeover) is won while its job is
  /// paused in the store, counted in store calls: a pause applies from the
  /// first call after it; a loss of the store's state forgets every pause.
  void check_no_win_while_paused(std::vector<std::string>& out) const {
    const history& h = world_->hist;
    std::set<std::string> paused;
    std::size_t next = 0;
    for (std::size_t i = 0; i < h.ops.size(); ++i) {
      for (; next < h.pauses.size() && h.pauses[next].before_op <= i; ++next) {
        const pause_change& p = h.pauses[next];
        if (p.job.empty()) paused.clear();
        else if (p.paused) paused.insert(p.job);
        else paused.erase(p.job);
      }
      const store_op& op = h.ops[i];
      if (op.op == store_op::kind::claim && op.outcome == claim_outcome::won && paused.count(op.run.job) != 0)
        out.push_back("paused job run: " + to_text(op.run) + " was won by " + op.instance + " (" +
                      std::string(to_string(op.reason)) + ") at " + std::to_string(op.at.time_since_epoch().count()) +
                      " while its job was paused in the store");
    }
  }

  /// Whether `job` was paused at some moment of [from, to] (store clock).
  [[nodiscard]] bool paused_during(const std::string& job, time_point from, time_point to) const {
    bool paused = false;
    for (const pause_change& p : world_->hist.pauses) {
      if (p.at > to) break;
      if (p.at >= from && paused) return true;
      if (p.job.empty() || p.job == job) paused = p.paused && !p.job.empty();
      if (p.at >= from && paused) return true;
    }
    return paused;
  }

  /// I5 across a loss of the store's state: a run whose attempt was
  /// won before the loss (and started, then or later) is never won and
  /// started again after it, in any attempt. (Both sides go by the win: an
  /// attempt won before the loss whose reply came after it, or whose task a
  /// busy executor takes after it, its lease still held, is a start from before
  /// the loss — not a start the loss allowed, and not one the check may
  /// leave out of "before": a later win of its run is a second run.) The loss
  /// forgot the run, and a slot inside the loss's horizon (every slot that
  /// could have started before it) is never started anew nor taken over
  /// (rules::claim) — which a store that notices the loss only beside its
  /// claims must uphold for wins its script made before it noticed.
  void check_no_start_across_loss(std::vector<std::string>& out) const {
    const history& h = world_->hist;
    for (std::size_t i = 0; i < h.faults.size(); ++i) {
      const auto& [at, what] = h.faults[i];
      if (!world::is_loss(what)) continue;
      const bool all = what == world::lost_every_job_fault;  // or one job's alone
      // Before or after by the order things happened, not by time: a start
      // in the loss's very millisecond is on one side of it.
      std::set<run_key> before;
      for (const handler_run& r : h.handlers)
        if (r.faults_at_win <= i && (all || what == world::lost_job_fault(r.run.job))) before.insert(r.run);
      for (const handler_run& r : h.handlers)
        if (r.faults_at_win > i && before.count(r.run) != 0)
          out.push_back("I5: " + to_text(r.run) + " started before the store lost its state at " +
                        std::to_string(at.time_since_epoch().count()) + " and was won again after it (attempt " +
                        std::to_string(r.attempt) + " on " + r.instance + ")");
    }
  }

  /// I5 across a failover to a lagging replica (world::fail_over): a run
  /// whose finish the store had accepted before the failover never starts
  /// again after it — unless the failover lost that very finish (applied on
  /// the primary during the lag, told in a notice): the one second run the
  /// `replicas = N` design accepts, counted in accepted_reruns(). Every
  /// other write a failover loses was refused to its caller (not_replicated),
  /// so nothing else may run twice; I5 and I9 hold as everywhere.
  void check_rerun_after_failover(std::vector<std::string>& out) const {
    const history& h = world_->hist;
    accepted_reruns_ = 0;
    // The runs whose end the store holds at each failover: finishes accepted
    // before it, less those an earlier failover lost and no finish recorded
    // again since (a run brought back as running by one failover is not
    // "finished before" the next one: CI found its accepted rerun reported
    // at the second of two failovers).
    std::set<run_key> finished;
    std::size_t k = 0;
    for (const auto& f : world_->failovers) {
      for (; k < f.ops && k < h.ops.size(); ++k)
        if (h.ops[k].op == store_op::kind::finish && h.ops[k].accepted) finished.insert(h.ops[k].run);
      std::set<run_key> told;
      for (const handler_run& r : h.handlers) {
        if (r.faults_before <= f.faults || finished.count(r.run) == 0 || !told.insert(r.run).second) continue;
        if (f.lost_finishes.count(r.run) != 0) {
          ++accepted_reruns_;
          continue;
        }
        out.push_back("I5: " + to_text(r.run) + " finished before the failover at " +
                      std::to_string(f.at.time_since_epoch().count()) + " and started again after it (attempt " +
                      std::to_string(r.attempt) + " on " + r.instance + ")");
      }
      for (const run_key& run : f.lost_finishes) finished.erase(run);
    }
  }

  /// I9: no two handlers of one run execute at overlapping times — each is
  /// executing from its start until it sees its stop or the loss of its
  /// lease (handler_run::active_until), on the simulation's global clock.
  void check_no_overlap(std::vector<std::string>& out) const {
    const auto& hs = world_->hist.handlers;
    std::map<run_key, std::vector<const handler_run*>> by_run;
    for (const handler_run& h : hs) by_run[h.run].push_back(&h);
    for (const auto& [run, list] : by_run)
      for (std::size_t a = 0; a < list.size(); ++a)
        for (std::size_t b = a + 1; b < list.size(); ++b) {
          const handler_run& x = *list[a];
          const handler_run& y = *list[b];
          if (x.start < y.active_until && y.start < x.active_until)
            out.push_back("I9: " + to_text(run) + " attempt " + std::to_string(x.attempt) + " on " + x.instance +
                          " (executing " + std::to_string(x.start.time_since_epoch().count()) + "–" +
                          std::to_string(x.active_until.time_since_epoch().count()) + ") and attempt " +
                          std::to_string(y.attempt) + " on " + y.instance + " (" +
                          std::to_string(y.start.time_since_epoch().count()) + "–" +
                          std::to_string(y.active_until.time_since_epoch().count()) + ") executed at once");
        }
  }

  /// Registration (RegistryStore): every instance that is up (not crashed,
  /// stopped or frozen) has each of its jobs registered with a last_seen no
  /// older than register_every (on its monotonic clock, so up to 9 % more
  /// of store time) plus one second of slack — unless something happened
  /// to it meanwhile (a fault naming it: a start, a clock change, failing
  /// calls), its loop was held within that bound (frozen, waiting in a slow
  /// call), or the store lost its state.
  void check_registrations(std::vector<std::string>& out) const {
    const duration bound = opts_.register_every + opts_.register_every * 9 / 100 + std::chrono::seconds{1};
    const time_point from = now() - bound;
    // last_seen is on the store's clock, `from` on real time: with no step
    // of the store's clock within the bound, every last_seen written since
    // `from` is real time + the steps before it (one written before a step
    // back may look fresher than it is: a violation missed, never a false
    // one).
    duration store_offset{0};
    for (const auto& [at, d] : world_->store_steps) {
      if (at >= from) return;
      store_offset += d;
    }
    bool lost = false;
    for (const auto& [at, what] : world_->hist.faults)
      if (at >= from && world::is_loss(what)) lost = true;
    if (lost) return;
    const std::vector<stored_job> stored = world_->mem.list_jobs();
    for (const auto& inp : instances_) {
      const instance& in = *inp;
      if (in.crashed || in.frozen_until || in.blocked > 0 || in.sched->stopped()) continue;
      // Stopping (a handler still running within its stop timeout): it
      // claims nothing more, and registers no more either (the soak found
      // one stopping for 2.6 s with register_every 1 s).
      bool stopping = false;
      for (const auto& [at, what] : world_->hist.faults)
        if (what.size() > in.name.size() &&
            what.compare(what.size() - in.name.size() - 1, std::string::npos, " " + in.name) == 0) {
          if (what.rfind("stop ", 0) == 0) stopping = true;
          if (what.rfind("start ", 0) == 0 || what.rfind("restart ", 0) == 0) stopping = false;
        }
      if (stopping) continue;
      bool excused = in.held_until >= from;  // its loop was held (frozen, in a slow call) within the bound
      for (const auto& [at, what] : world_->hist.faults)
        if (at >= from && what.size() > in.name.size() &&
            what.compare(what.size() - in.name.size() - 1, std::string::npos, " " + in.name) == 0)
          excused = true;
      if (excused) continue;
      for (const job_info& j : in.sched->jobs()) {
        const job_registration* reg = nullptr;
        for (const stored_job& sj : stored)
          if (sj.name == j.name)
            for (const job_registration& r : sj.instances)
              if (r.instance == in.name) reg = &r;
        if (reg == nullptr)
          out.push_back("registration: " + in.name + " has job " + j.name + " but the store has no registration of it");
        else if (reg->last_seen - store_offset < from)
          out.push_back("registration: " + in.name + "'s job " + j.name + " was last seen at " +
                        std::to_string(reg->last_seen.time_since_epoch().count()) + ", more than register_every + " +
                        "slack before " + std::to_string(now().time_since_epoch().count()));
      }
    }
  }

  /// Registration's idle cost: two register_jobs calls of one instance less
  /// than register_every apart (allowing a monotonic clock 8 % fast) only
  /// after a start, restart or add of a job on it since the registration
  /// before them — each adds one call.
  void check_registration_cost(std::vector<std::string>& out) const {
    std::map<std::string, std::vector<time_point>> by;
    for (const auto& [at, who] : world_->registered_at) by[who].push_back(at);
    const duration min_gap = opts_.register_every * 92 / 100;
    for (const auto& [who, times] : by)
      for (std::size_t k = 1; k < times.size(); ++k) {
        const time_point t1 = times[k - 1], t2 = times[k];
        if (t2 - t1 >= min_gap) continue;
        // An add since the registration before t1 excuses one of t1, t2 (its
        // own call may have been held up by a slow store call meanwhile, so
        // t1 - register_every is not far back enough).
        const time_point before = k >= 2 ? times[k - 2] : time_point::min();
        bool excused = false;
        for (const auto& [at, what] : world_->hist.faults) {
          if (at < before || at > t2) continue;
          const bool names = what.size() > who.size() &&
                             what.compare(what.size() - who.size() - 1, std::string::npos, " " + who) == 0;
          if (names && (what.rfind("start", 0) == 0 || what.rfind("restart", 0) == 0 || what.rfind("add job", 0) == 0))
            excused = true;
        }
        if (!excused)
          out.push_back("registration cost: " + who + " registered at " + std::to_string(t1.time_since_epoch().count()) +
                        " and again at " + std::to_string(t2.time_since_epoch().count()) +
                        ", less than register_every apart, with no start or add between (the one before: " +
                        (k >= 2 ? std::to_string(before.time_since_epoch().count()) : std::string("none")) + ")");
      }
  }

  /// The start of the back-to-back store calls `who` waited in up to `at`
  /// (`at` itself when it was not waiting then): in the simulation time
  /// moves within a loop turn only while the instance waits on the store.
  time_point waited_since(const std::string& who, time_point at) const {
    const instance* in = named(who);
    if (in == nullptr) return at;
    for (bool moved = true; moved;) {
      moved = false;
      for (const auto& [from, until] : in->waits)
        if (from < at && until >= at) {
          at = from;
          moved = true;
        }
    }
    return at;
  }

  /// A runner with no fault (no crash, freeze, stop, restart, slow, delayed
  /// or failed store call, no loss of the store's state) from its win to a
  /// takeover of its run was healthy: its heartbeats were acknowledged in
  /// time, so it must never be taken over. A wall-clock step is no excuse.
  void check_healthy_kept(std::vector<std::string>& out) const {
    const history& h = world_->hist;
    std::map<std::pair<run_key, std::uint32_t>, const store_op*> won;
    for (const store_op& op : h.ops) {
      if (op.op != store_op::kind::claim || op.outcome != claim_outcome::won || !op.after) continue;
      won[{op.run, op.after->attempt}] = &op;
      if (op.reason != claim_reason::takeover) continue;
      auto prev = won.find({op.run, op.after->attempt - 1});
      if (prev == won.end()) continue;
      const store_op& first = *prev->second;
      if (op.after->handovers > first.after->handovers) continue;  // released: a hand-over, not a takeover
      bool excused = false;
      // From when the winner could have counted its claim sent: its first
      // send (a resent claim keeps its token and counts from there), or
      // earlier, as the claim was queued in a loop turn that then waited
      // in other store calls, each slow, each waiting for other instances'
      // slow calls meanwhile. No bound on that wait holds, so the window
      // opens where the winner's back-to-back waits that end at the first
      // send began (a slow call's fault is recorded when it starts waiting).
      time_point sent = first.at;
      if (auto s = world_->claim_first_sent.find(first.token); s != world_->claim_first_sent.end()) sent = s->second;
      const time_point from = std::min(first.at - 2 * opts_.lease, waited_since(first.instance, sent));
      for (std::size_t f = 0; f < h.faults.size(); ++f) {
        const auto& [at, what] = h.faults[f];
        if (at < from || at > op.at) continue;
        const bool about = what.size() > first.instance.size() &&
                           what.compare(what.size() - first.instance.size() - 1, std::string::npos,
                                        " " + first.instance) == 0;
        // A stepped wall clock or a drifting monotonic one (within the
        // margin's bound) leaves a runner healthy: it must keep its run.
        const bool step = what.rfind("step clock", 0) == 0 || what.rfind("monotonic clock", 0) == 0;
        // A heartbeat batch answered in part hinders only the runs whose
        // renewal it left unanswered: one answered true keeps its lease.
        const auto part = world_->unanswered_in.find(f);
        const bool answered = part != world_->unanswered_in.end() && part->second.count(first.token) == 0;
        if ((about && !step && !answered) || world::lost_state_of(what, op.run.job)) excused = true;
      }
      if (!excused)
        out.push_back("healthy runner taken over: " + to_text(op.run) + " attempt " +
                      std::to_string(first.after->attempt) + " on " + first.instance + " (won at " +
                      std::to_string(first.at.time_since_epoch().count()) + ") had no fault, yet " + op.instance +
                      " took it over at " + std::to_string(op.at.time_since_epoch().count()));
    }
  }

  /// Every slot says why (doc/invariants.md): an instance that has a job
  /// while one of its slots comes due has an event about that slot — it ran
  /// it, backed it up, or says why not (a `late` naming a range of skipped
  /// slots counts for each). Checked over each stretch in which the instance
  /// ran with the job registered, up to a stop() (every slot due before it),
  /// a crash, a remove or the end of the history (every slot due at least
  /// `settle` before it: time for jitter, retries and slow store calls).
  /// An instance whose wall clock was stepped is not checked: its slots are
  /// due at store times this check does not follow.
  void check_slots_accounted(std::vector<std::string>& out) const {
    slots_accounted_ = 0;
    const history& h = world_->hist;
    const duration settle = std::chrono::seconds{40};
    for (const auto& inp : instances_) {
      const instance& in = *inp;
      const std::string suffix = " " + in.name;
      std::vector<std::pair<time_point, std::string>> mine;
      bool stepped = false;
      for (const auto& [at, what] : h.faults)
        if (what.size() > suffix.size() && what.compare(what.size() - suffix.size(), suffix.size(), suffix) == 0) {
          mine.push_back({at, what.substr(0, what.size() - suffix.size())});
          stepped = stepped || what.rfind("step clock", 0) == 0;
        }
      if (stepped) continue;
      const duration off = in.clock->offset();
      for (const job_spec& js : jobs_) {
        std::set<time_point> told;
        for (const event& e : h.events) {
          if (e.instance != in.name || e.run.job != js.name) continue;
          told.insert(e.run.slot);
          if (e.kind == event_kind::late && e.skipped_slots) {
            time_point s = e.run.slot;
            for (std::uint64_t k = 1; k < *e.skipped_slots; ++k) told.insert(s = js.slots.next(s));
          }
        }
        // Stretches [from, to) in which the instance ran with the job; `to`
        // counts every slot due before it when the stretch ended in a stop.
        std::optional<time_point> from;
        bool running = false, has_job = true;
        time_point frozen_until = time_point::min();  // the end of its latest freeze (this process's)
        auto check = [&](time_point to, bool stopped) {
          if (!from) return;
          const time_point last_due = stopped ? to : to - settle;
          // From the stretch's first millisecond: a slot due at the very
          // instant of a start or an add is due (doc/protocol.md).
          for (time_point s = js.slots.next(*from + off - std::chrono::milliseconds{1}); s - off < last_due;
               s = js.slots.next(s)) {
            ++slots_accounted_;
            if (told.count(s) == 0)
              out.push_back("a slot without a word: " + to_text({js.name, s}) + " came due on " + in.name +
                            " (store time " + std::to_string((s - off).time_since_epoch().count()) +
                            "), which had the job and was running, and no event of it names that slot");
          }
          from.reset();
        };
        for (std::size_t f = 0; f < mine.size(); ++f) {
          const auto& [at, what] = mine[f];
          if (what == "start" || what == "restart") {
            running = true;
            has_job = true;  // a new process registers every job
            if (!from) from = at;
          } else if (what == "add job " + js.name) {
            if (running && !has_job) from = at;
            has_job = true;
          } else if (what.rfind("remove job " + js.name, 0) == 0 &&
                     (what.size() == 11 + js.name.size() || what[11 + js.name.size()] == ' ')) {
            if (has_job) check(at, false);
            has_job = false;
          } else if (what == "crash") {
            check(at, false);
            running = false;
            frozen_until = time_point::min();
          } else if (what.rfind("freeze ", 0) == 0) {
            frozen_until = std::max(frozen_until, at + duration{std::stoll(what.substr(7))});
          } else if (what.rfind("stop ", 0) == 0 && running) {
            // A crash in the same instant, or while a freeze that began then
            // or before lasts, comes before the loop has taken the stop.
            bool crashed_at_once = false;
            time_point until = std::max(at, frozen_until);
            for (std::size_t g = f + 1; g < mine.size() && mine[g].first <= until && !crashed_at_once; ++g) {
              const std::string& next = mine[g].second;
              crashed_at_once = next == "crash";
              if (next.rfind("freeze ", 0) == 0 && mine[g].first == at)
                until = std::max(until, at + duration{std::stoll(next.substr(7))});
            }
            check(at, !crashed_at_once);
            running = false;
          }
        }
        if (running && has_job) check(now(), false);
      }
    }
  }

  /// Triggers (doc/invariants.md): a manual run is won only as the answer
  /// to a trigger, never twice (one first attempt per trigger; later ones
  /// only as takeovers, I5 holds them to one each); and every trigger made
  /// was started, or an event of some instance names its run (why not: a
  /// skip, a pause, a claim given up), or its run had state already (a slot
  /// of that very millisecond), or the store forgot it (a loss of state) —
  /// or it is still pending at the end, which is allowed only if no
  /// instance ran with the job, unhindered, for `settle` (20 s) after it:
  /// time for a poll, claim retries, a blocking run in buffer_one mode to end
  /// (and for the store's clock to make up a step back after it).
  void check_triggers(std::vector<std::string>& out) const {
    triggers_checked_ = 0;
    const history& h = world_->hist;
    // A win that a failover to the lagging replica forgot (replicas = 1),
    // with no handler started on it — handed back short of the replica, or
    // a late copy nobody waited for — lets the same trigger be won again as
    // a new run. That is not a second run.
    auto forgotten = [&](std::size_t k, const std::string& token) {
      const bool in_lag = std::any_of(world_->failovers.begin(), world_->failovers.end(),
                                      [&](const auto& f) { return f.lag_ops <= k && k < f.ops; });
      return in_lag && std::none_of(h.handlers.begin(), h.handlers.end(),
                                    [&](const handler_run& r) { return r.token == token; });
    };
    std::map<run_key, int> first_wins;
    for (std::size_t k = 0; k < h.ops.size(); ++k) {
      const store_op& op = h.ops[k];
      if (op.op != store_op::kind::claim || op.outcome != claim_outcome::won || !op.after || !op.after->manual)
        continue;
      if (forgotten(k, op.token)) continue;
      const bool asked = std::any_of(h.triggers.begin(), h.triggers.end(), [&](const trigger_request& t) {
        return t.job == op.run.job && t.slot == op.run.slot;
      });
      if (!asked) out.push_back("manual run without a trigger: " + to_text(op.run) + " won by " + op.instance);
      if (op.after->attempt == 1 && ++first_wins[op.run] > 1)
        out.push_back("trigger run twice: " + to_text(op.run) + " was won as a new run more than once");
    }
    const duration settle = std::chrono::seconds{20};
    const std::vector<std::string> names{[&] {
      std::vector<std::string> v;
      for (const auto& j : jobs_) v.push_back(j.name);
      return v;
    }()};
    const std::vector<run_key> pending = world_->mem.triggers(names);
    for (const trigger_request& t : h.triggers) {
      ++triggers_checked_;
      const run_key key{t.job, t.slot};
      const bool claimed = std::any_of(h.ops.begin(), h.ops.end(), [&](const store_op& op) {
        return op.op == store_op::kind::claim && op.run == key &&
               (op.outcome == claim_outcome::won || op.outcome == claim_outcome::running ||
                op.outcome == claim_outcome::finished);
      });
      const bool told = std::any_of(h.events.begin(), h.events.end(), [&](const event& e) { return e.run == key; });
      const bool forgotten = std::any_of(h.faults.begin(), h.faults.end(), [&](const auto& f) {
        return f.first >= t.at && world::lost_state_of(f.second, t.job);
      });
      if (claimed || told || forgotten) continue;
      const bool still = std::find(pending.begin(), pending.end(), key) != pending.end();
      if (!still) {
        out.push_back("a trigger without a word: " + to_text(key) + " (asked by " + t.by +
                      ") is no longer pending, yet it was not started and no event names it");
        continue;
      }
      // The store's clock stepped back after the trigger was asked puts its
      // slot ahead of that clock: its claim is early until the clock has
      // made up the step (it waits behind the job's earlier slot, whose
      // `early` event says when it is claimed again), so the instances get
      // that much longer.
      time_point until = t.at + settle;
      for (const auto& [at, d] : world_->store_steps)
        if (at >= t.at && at < until && d < duration::zero()) until -= d;
      if (until > now()) continue;  // recent: instances may still be on it
      for (const auto& inp : instances_)
        if (up_with_job(*inp, t.job, t.at, until))
          out.push_back("a trigger left pending: " + to_text(key) + " (asked by " + t.by + ") is still pending, "
                        "though " + inp->name + " ran with the job, unhindered, for " +
                        std::to_string((until - t.at).count()) + " ms after it");
    }
  }

  /// Whether instance `in` ran with job `job` throughout [from, to] with no
  /// fault of its own (no crash, stop, freeze, slow or failed call, remove…)
  /// and no loss of the store's state.
  [[nodiscard]] bool up_with_job(const instance& in, const std::string& job, time_point from, time_point to) const {
    bool up = false, has_job = true;
    const std::string suffix = " " + in.name;
    for (const auto& [at, what] : world_->hist.faults) {
      if (at > to) break;
      const bool mine = what.size() > suffix.size() &&
                        what.compare(what.size() - suffix.size(), suffix.size(), suffix) == 0;
      if (!mine) {
        if (world::lost_state_of(what, job) && at >= from) return false;
        continue;
      }
      const std::string w = what.substr(0, what.size() - suffix.size());
      if (at >= from && w.rfind("step clock", 0) != 0 && w.rfind("monotonic clock", 0) != 0 &&
          w.rfind("add job", 0) != 0)
        return false;  // hindered within the window
      if (w == "start" || w == "restart") {
        up = true;
        has_job = true;
      } else if (w == "crash" || w.rfind("stop ", 0) == 0) {
        up = false;
      } else if (w.rfind("remove job " + job, 0) == 0 &&
                 (w.size() == 11 + job.size() || w[11 + job.size()] == ' ')) {
        has_job = false;
      } else if (w == "add job " + job) {
        has_job = true;
      }
    }
    return up && has_job;
  }

  [[nodiscard]] bool has_clean_backup(const run_key& run, const std::string& runner, time_point end,
                                      time_point deadline) const {
    for (const event& e : world_->hist.events)
      if (e.kind == event_kind::backup && e.run == run && e.instance != runner && e.at <= end &&
          clean_between(e.instance, run, e.at, deadline, false))
        return true;
    return false;
  }

  /// Whether instance `who` stayed a clean backup of `run` over [from, to]:
  /// it did not run the run itself (won, took over, caught up), had no fault
  /// of its own but clock drift (the deadlines allow for drift), and the
  /// store kept its state; with `no_slow_calls`, nobody's store call was
  /// slow or hung either.
  [[nodiscard]] bool clean_between(const std::string& who, const run_key& run, time_point from, time_point to,
                                   bool no_slow_calls) const {
    const history& h = world_->hist;
    for (const event& o : h.events)
      if (o.instance == who && o.run == run && o.at >= from && o.at <= to &&
          (o.kind == event_kind::won || o.kind == event_kind::takeover || o.kind == event_kind::catch_up))
        return false;
    for (const auto& [at, what] : h.faults) {
      if (at < from || at > to) continue;
      const bool about_it =
          what.size() > who.size() && what.compare(what.size() - who.size() - 1, std::string::npos, " " + who) == 0;
      const bool drift = what.rfind("monotonic clock", 0) == 0;
      const bool slow = what.rfind("slow", 0) == 0 || what.rfind("hung", 0) == 0 || what.rfind("hang", 0) == 0;
      if ((about_it && !drift) || (no_slow_calls && slow) || world::lost_state_of(what, run.job)) return false;
    }
    return true;
  }

  /// The run's record after the last of `ops` (its store calls, in order) made by `t`.
  [[nodiscard]] static std::optional<run_record> record_at(const std::vector<const store_op*>& ops, time_point t) {
    std::optional<run_record> rec;
    for (const store_op* op : ops) {
      if (op->at > t) break;
      rec = op->after;
    }
    return rec;
  }

  /// I2: a runner whose heartbeat was refused has its stop token aborted
  /// before its next heartbeat tick (checked right after the poll that saw it).
  void check_fenced(instance& in) {
    for (const auto& r : in.running)
      if (world_->refused.count(r.t.context().token) != 0 && !r.t.context().stop.stop_requested())
        world_->violation("I2: " + in.name + "'s heartbeat for " + to_text(r.t.context().run()) +
                          " was refused but its handler's stop token was not aborted");
  }

  /// A runner counts only what the store answered: its self-abort deadline
  /// never lies past the send of its claim or of a renewal the store
  /// answered true (and that reached it, replicated where asked) + lease −
  /// safety margin (world::acked_until). Past it, the runner counted a
  /// renewal that was not answered (a partial batch's failed element, a
  /// lost reply, one short of the replica): if that renewal never reached
  /// the store, the store's lease ends before the runner stops.
  void check_lease_answered(const instance& in) {
    for (const auto& r : in.running) {
      const run_context& c = r.t.context();
      if (!c.lease_state || c.stop.stop_requested() || unanswered_reported_.count(c.token) != 0) continue;
      const auto it = world_->acked_until.find(c.token);
      if (it != world_->acked_until.end() && c.lease_state->deadline() <= it->second) continue;
      unanswered_reported_.insert(c.token);
      world_->violation("unanswered renewal counted: " + in.name + "'s self-abort deadline for " + to_text(c.run()) +
                        " attempt " + std::to_string(c.attempt) + " is " +
                        std::to_string(c.lease_state->deadline().time_since_epoch().count()) +
                        " on its monotonic clock, past what the store's answers allow (" +
                        (it == world_->acked_until.end()
                             ? std::string("no answer")
                             : std::to_string(it->second.time_since_epoch().count())) +
                        ": the last acknowledged send + lease − margin)");
    }
  }

  void end_handler(const running_handler& r, std::string how) {
    handler_run& h = world_->hist.handlers.at(r.record);
    h.end = now();
    h.ended = std::move(how);
  }

  void fault(std::size_t i, const std::string& what) {
    world_->hist.faults.push_back({now(), what + " " + instances_.at(i)->name});
  }

  std::uint64_t seed_;
  options opts_;
  mutable std::size_t slots_accounted_ = 0;
  mutable std::size_t accepted_reruns_ = 0;  // check_rerun_after_failover
  std::shared_ptr<world> world_;
  std::vector<job_spec> jobs_;
  std::vector<std::unique_ptr<instance>> instances_;
  mutable std::size_t takeover_checks_ = 0;
  mutable std::size_t aimed_checks_ = 0;
  mutable std::size_t triggers_checked_ = 0;
  mutable std::size_t kinds_checked_ = 0;  // check_event_kinds
  std::size_t registration_checks_ = 0;
  std::int64_t slowest_ppm_ = clock_type::ppm_one;  // the slowest monotonic clock any instance had
  std::uint64_t late_starts_ = 0, late_starts_refused_ = 0;  // delay_starts: tasks taken late, and after the loss
  std::uint64_t outlived_lease_ = 0, outlived_lease_returned_ = 0;  // handlers that ended after their lease's loss
  std::uint64_t wins_answered_after_loss_ = 0;                // take_dispatched: wins whose reply came after a loss of their state
  std::set<std::string> unanswered_reported_;  // tokens check_lease_answered told of (once each)
};

}  // namespace lease::sim
