// lease/store/concept.hpp — the Store policy: the shared record of runs, and
// the only place where "who runs this slot" is decided.
//
// Minimal definition (each operation atomic, all times on the store's clock):
//   s.claim(claim_request)                 -> claim_result
//   s.heartbeat(run_key, token, duration)  -> bool
//   s.finish(run_key, token, run_status)   -> bool
//   s.release(run_key, token)              -> bool
//   s.unfinished(job)                      -> std::vector<run_record>, oldest first
//   s.get(run_key)                         -> std::optional<run_record>
//   s.now()                                -> time_point (the store's clock)
// Optional (detected with requires-expressions, never with a flag):
//   s.heartbeat_many(span<const heartbeat_request>) -> std::vector<bool>, in order
//   s.claim_many(span<const claim_request>) -> std::vector<claim_result>, in
//       order: claims sent in one round trip, each its own atomic claim.
//   s.finish_many(span<const finish_request>) -> std::vector<bool>, in order:
//       finishes and releases sent in one round trip, each its own atomic
//       finish() or release().
//   s.take_notices() -> std::vector<std::string>: what the store learnt that an
//       operator should know (its durability settings at connect, a loss of
//       state it detected); each is emitted once as a store_notice event.
//   s.listen_releases(release_listener) -> void: push the end or release of
//       a run to the instances watching it (PushStore below).
//   s.pause(job) -> bool, s.resume(job) -> bool, s.paused(job) -> bool: an
//       operator's durable, cluster-wide pause of one job (PauseStore below);
//       s.stop(job) -> size_t: a pause that also hands over the job's runs in
//       progress (StopStore).
//   s.register_jobs(span<const job_registration>), s.purge(job, unseen_for):
//       which instances have which jobs, and an operator's removal of a job
//       none has any more (RegistryStore, store/inspect.hpp).
//   s.trigger(job) -> time_point, s.triggers(span<const std::string>) ->
//       std::vector<run_key>: an operator's "run it now" (TriggerStore below),
//       and s.listen_triggers(trigger_listener) to push it (PushTriggerStore).
//   s.list_jobs() -> std::vector<stored_job>, s.list_runs(job, limit) ->
//       std::vector<run_record>: what an operator's tool reads (InspectStore,
//       store/inspect.hpp).
// The optional capabilities, by concept: BatchHeartbeatStore, BatchClaimStore,
// BatchFinishStore, NoticeStore, PushStore, PauseStore, StopStore,
// TriggerStore, PushTriggerStore (here), InspectStore, RegistryStore
// (store/inspect.hpp).
//
// Laws — every store answers exactly as the pure rules in lease/rules.hpp do
// (test/laws/store_conformance.hpp checks this for every model):
//   L1  A claim for a run with no state wins (attempt 1, fence + 1, lease end
//       = now + lease) unless it is a takeover (none), late (now > deadline +
//       10 s), early (slot > now + 1 s), superseded (a newer run has state),
//       in skip mode overlaps a live run of the job, or falls in the
//       quarantine after a detected loss of state; winning marks older
//       expired running runs interrupted (doc/store-rules.md has every case).
//   L2  A heartbeat extends the lease only with the current token, only while
//       the run is running and not released.
//   L3  A claim on an expired running run wins the next attempt, unless a newer
//       run has state or attempt − handovers ≥ max_attempts: then the run is
//       marked interrupted and the answer is finished.
//   L4  finish and release act only with the current token of a running,
//       unreleased run; release ends the lease now and counts a handover.
//   L5  Pruning keeps history_size ended runs per job and never deletes a run
//       before slot + retain + 10 s on the store's clock.
//   L6  A failure to complete is a lease::store_error whose code equals a
//       lease::errc; losing a race is an outcome, never an error.
//
// Models: memory_store (store/memory.hpp), sqlite_store (store/sqlite.hpp),
//         redis_store (store/redis.hpp), postgres_store (store/postgres.hpp).
// Thread-safety: a store object is used by one thread at a time unless the
// model says otherwise; the scheduler calls it only from its loop thread.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lease/run.hpp"

namespace lease {

template <class S>
concept Store = std::move_constructible<S> &&
    requires(S& s, const claim_request& req, const run_key& run, std::string_view token,
             duration lease, run_status status, std::string_view job) {
      { s.claim(req) } -> std::same_as<claim_result>;
      { s.heartbeat(run, token, lease) } -> std::same_as<bool>;
      { s.finish(run, token, status) } -> std::same_as<bool>;
      { s.release(run, token) } -> std::same_as<bool>;
      { s.unfinished(job) } -> std::same_as<std::vector<run_record>>;
      { s.get(run) } -> std::same_as<std::optional<run_record>>;
      { s.now() } -> std::same_as<time_point>;
    };

/// A store that renews many leases in one round trip.
template <class S>
concept BatchHeartbeatStore = Store<S> && requires(S& s, std::span<const heartbeat_request> batch) {
  { s.heartbeat_many(batch) } -> std::same_as<std::vector<bool>>;
};

/// A store that sends many claims in one round trip (pipelined scripts, one
/// transaction). Each claim is still its own atomic operation with its own
/// answer, exactly as claim() would give in that order; a store_error means
/// the outcome of every claim in the batch is unknown (the scheduler resends
/// each with its token, as after a failed claim()). A batch that failed only
/// in part (a Redis Cluster with one master down) throws
/// partial_batch_error<claim_result>: the answered claims are acted on, the
/// others resent.
template <class S>
concept BatchClaimStore = Store<S> && requires(S& s, std::span<const claim_request> batch) {
  { s.claim_many(batch) } -> std::same_as<std::vector<claim_result>>;
};

/// A store that ends many runs in one round trip: each element is exactly
/// finish(run, token, *status) — or release(run, token) when status is
/// nullopt — in that order, each its own atomic operation with its own answer.
/// A store_error means the outcome of every element is unknown (the scheduler
/// reads each run back, as after a failed finish()). A batch that failed
/// only in part (a Redis Cluster with one master down) throws
/// partial_batch_error<bool>: the answered ends are acted on, the others
/// handled as the error's code says (outcome_unknown: read back). A PushStore announces
/// each ended run as its single calls would. Without it, a burst of handlers
/// that end together, and stop()'s hand-over, cost one round trip per run.
template <class S>
concept BatchFinishStore = Store<S> && requires(S& s, std::span<const finish_request> batch) {
  { s.finish_many(batch) } -> std::same_as<std::vector<bool>>;
};

/// A store that tells the instance what it learnt about itself: sentences
/// for an operator (what its settings mean for exactly-once, a loss of state
/// it detected and what it does about it). The scheduler drains them after
/// every loop turn and emits each as an event_kind::store_notice.
template <class S>
concept NoticeStore = Store<S> && requires(S& s) {
  { s.take_notices() } -> std::same_as<std::vector<std::string>>;
};

/// Called by a PushStore when a run of `job` ended or was released, from a
/// thread of the store's own. It must be quick and must not call the store:
/// the scheduler only posts "re-check the runs of `job`" to its loop.
using release_listener = std::function<void(std::string_view job)>;

/// A store that pushes the end of a lease to the instances watching it
/// (PostgreSQL LISTEN/NOTIFY, Redis pub/sub), so a backup re-checks a released
/// run in milliseconds instead of at its next periodic check (up to
/// 2 × heartbeat later). A lost or late notification costs time, never
/// safety: the periodic checks stay, and a re-check is an ordinary claim.
///
///   s.listen_releases(f)   from now on, call f(job) after any instance's
///                          release() or finish() of a run of any job (an
///                          announcement may also come for nothing: the
///                          scheduler re-checks and finds the run alive);
///   s.listen_releases({})  stop; returns only after the last call of the
///                          previous listener has returned, so the scheduler
///                          can be destroyed after it.
template <class S>
concept PushStore = Store<S> && requires(S& s, release_listener f) {
  { s.listen_releases(std::move(f)) } -> std::same_as<void>;
};

/// Called by an EndPushStore for each announcement: `finished` is the slot
/// of the run of `job` that a finish() ended, or nullopt for a release (a
/// hand-over, an operator's stop) or an announcement that does not say.
using end_listener = std::function<void(std::string_view job, std::optional<time_point> finished)>;

/// A PushStore whose announcement of a finish names the run it ended. A
/// backup watching that run ends its watch on the announcement, without the
/// takeover check that would only be answered `finished`: one claim less per
/// backup per run; and an instance that has not yet claimed that slot (its
/// claim jitter) does not claim it. Sound because a finish is announced only once the store
/// accepted it, and a finished run is final (nothing ever runs it again).
///
///   s.listen_ends(f)    from now on, call f(job, finished) for every
///                       announcement listen_releases would make;
///   s.listen_ends({})   stop, as listen_releases({}).
/// The scheduler uses one of the two, never both.
template <class S>
concept EndPushStore = PushStore<S> && requires(S& s, end_listener f) {
  { s.listen_ends(std::move(f)) } -> std::same_as<void>;
};

/// A store that keeps an operator's pause of a job (doc/store-rules.md,
/// "Pause and resume"), durably and for every instance at once, because the
/// claim itself checks it:
///
///   s.pause(job)    from now on, every claim of `job` that would win (a new
///                   run, or the next attempt of an expired one) is answered
///                   claim_outcome::paused and changes nothing; runs in
///                   progress continue (heartbeat, finish, release as ever).
///                   A job that never ran can be paused. Returns whether it
///                   was not paused before (idempotent).
///   s.resume(job)   lifts it; returns whether it was paused (idempotent).
///   s.paused(job)   whether it is paused.
///
/// Each is atomic with respect to the job's claims. A store without it never
/// answers `paused`. The pause is stored data: a store that lost its state
/// lost its pauses too (rules::lose_state).
template <class S>
concept PauseStore = Store<S> && requires(S& s, std::string_view job) {
  { s.pause(job) } -> std::same_as<bool>;
  { s.resume(job) } -> std::same_as<bool>;
  { s.paused(job) } -> std::same_as<bool>;
};

/// A PauseStore that can also stop a job's runs in progress (leasectl stop):
///
///   s.stop(job)   pauses `job` (as pause()) and, in the same atomic step,
///                 hands over every running, unreleased run of it as its
///                 runner's release() would (released, a handover counted)
///                 but keeps its lease end. Returns how many runs it handed
///                 over. Each runner learns it at its next heartbeat (refused:
///                 the run is released) and stops its handler; until the
///                 lease ends the run is live and no attempt starts beside
///                 that handler. No backup takes a run over while the job is
///                 paused, so the runs stay stopped until a resume, after
///                 which a takeover wins each as its next attempt (a handover
///                 does not count against max_attempts).
template <class S>
concept StopStore = PauseStore<S> && requires(S& s, std::string_view job) {
  { s.stop(job) } -> std::same_as<std::size_t>;
};

/// A store that keeps an operator's request to run a job now (doc/store-rules.md,
/// "Trigger now"), for every instance at once:
///
///   s.trigger(job)      asks for one manual run of `job` at slot = store-now,
///                       unless one is pending already; returns the pending
///                       request's slot (idempotent while it is pending). A
///                       job that never ran can be triggered.
///   s.triggers(jobs)    the pending requests among `jobs`, as run keys, in
///                       the order asked: what an instance polls for.
///
/// An instance that has the job claims the run key with claim_reason::manual.
/// Such a claim wins only while the request is pending, and the first claim
/// that answers it (won, overlap in skip mode, paused, or a run already at
/// that slot) ends it: exactly one instance runs a trigger, and every other
/// instance's claim of it is answered as for that run (running, finished) or
/// `none`. A manual run is never late and never superseded; it keeps its own
/// history entry (run_record::manual). A store without it never holds a manual
/// run and answers a manual claim as an ordinary one, so the scheduler sends
/// none to it. A store that lost its state lost its pending triggers too.
template <class S>
concept TriggerStore = Store<S> && requires(S& s, std::string_view job, std::span<const std::string> jobs) {
  { s.trigger(job) } -> std::same_as<time_point>;
  { s.triggers(jobs) } -> std::same_as<std::vector<run_key>>;
};

/// Called by a PushTriggerStore when any instance or tool triggered `job`,
/// from a thread of the store's own; like release_listener, it must be quick
/// and must not call the store.
using trigger_listener = std::function<void(std::string_view job)>;

/// A TriggerStore that pushes a new trigger to every instance (Redis pub/sub,
/// PostgreSQL NOTIFY), so it is picked up in milliseconds; without it an
/// instance polls triggers() at its trigger poll interval. A lost push costs
/// time, never the run: whenever the store may have missed pushes (its
/// listening connection was lost and is back), it calls f("") and the
/// instance polls triggers() once for all its jobs.
///
///   s.listen_triggers(f)   from now on, call f(job) after any trigger(job)
///                          (possibly also for nothing: the poll finds none);
///   s.listen_triggers({})  stop; returns only after the last call of f.
template <class S>
concept PushTriggerStore = TriggerStore<S> && requires(S& s, trigger_listener f) {
  { s.listen_triggers(std::move(f)) } -> std::same_as<void>;
};

}  // namespace lease
