// lease/scheduler/registry.hpp — what an operator sees of this instance in
// the store (doc/protocol.md §20, "Registration and stop"):
//
// * Registration (RegistryStore): every job of this instance is registered —
//   (job, instance id, schedule as text, zone) — in one register_jobs call at
//   start(), after an add() at run time of a job new here, and every
//   options.register_every. So an idle instance costs one round trip per
//   register_every, and `leasectl jobs` lists who has a job and when each
//   was last seen; a removed job is simply no longer registered (its
//   last_seen ages until `leasectl purge --unseen-for` may delete it). A
//   failed call is a store_error event (rate-limited as any store fault) and
//   is retried at the next interval: it never blocks a claim.
// * An operator's stop (StopStore, leasectl stop): the store pauses the job
//   and hands over its runs in progress as their runners' release() would.
//   The runner learns it from its next heartbeat, refused: it reads the run
//   back (get, one round trip, only after a refusal) and, seeing its own
//   token with `released` set by no release of its own, asks the handler to
//   stop (as for a lost lease) and says why in a `stopped` event — not a
//   generic `lost`. So does a runner whose handler had ended, its finish or
//   release being retried when the stop came (a release: only if the job is
//   paused, since its own release, applied late, reads back the same way:
//   refused_because). It then watches the run as a
//   backup: while the job is paused every takeover check is answered
//   `paused`; after a resume one instance takes it over as the next attempt
//   (a hand-over does not count against max_attempts).
#pragma once

#include <string>
#include <vector>

#include "lease/scheduler.hpp"
#include "lease/store/inspect.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::start_registry() {
  if constexpr (RegistryStore<S>) push_after(duration::zero(), {{}, 0, detail::timer_kind::registration, 0, {}, 0});
}

/// After an add() of a job new here: one registration in this loop turn
/// (adds in the same turn share it); the periodic one goes on as before.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::register_soon() {
  if constexpr (RegistryStore<S>) {
    if (register_armed_) return;
    register_armed_ = true;
    push_after(duration::zero(), {{}, 0, detail::timer_kind::registration, 0, {}, 1});
  }
}

/// `once` 0: the periodic registration (re-armed every register_every,
/// whatever it answered: a failure is retried then). 1: the one after an add.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_registration(std::uint64_t once) {
  if constexpr (RegistryStore<S>) {
    if (once == 0) {
      push_after(opts_.register_every, {{}, 0, detail::timer_kind::registration, 0, {}, 0});
    } else if (!register_armed_) {
      return;  // the periodic one came first (a loop held up): it registered the added jobs
    }
    register_armed_ = false;
    std::vector<job_registration> regs;
    for (const job& jb : jobs_)
      if (!jb.removed) regs.push_back({jb.name, opts_.instance, jb.schedule.registered(), jb.schedule.zone(), {}});
    if (regs.empty()) return;  // nothing to say: an instance without jobs costs nothing
    try {
      store_.register_jobs(std::span<const job_registration>(regs));
      store_answered();
    } catch (const store_error& e) {
      store_failed("registration of this instance's " + std::to_string(regs.size()) +
                       " jobs (retried every register_every; leasectl jobs may show them as last seen earlier)",
                   {}, e);
    } catch (const std::exception& e) {  // not a store_error (law L6): retried all the same
      store_failed("registration of this instance's jobs", {},
                   store_error(make_error_code(errc::unavailable),
                               std::string("register_jobs threw something other than a store_error: ") + e.what()));
    }
  } else {
    (void)once;
  }
}

/// After a refused heartbeat, finish or release: why? The run is read back
/// (get, one round trip, only after a refusal):
///
/// * Under this attempt's token, ended with the result its finish sends, or
///   released while it was handing the run over: its own finish or release
///   had applied — an earlier copy whose reply was lost, or one that applied
///   late, after a read-back had found it not applied (PostgreSQL commits a
///   transaction its client gave up on; end_in_doubt was cleared by then).
///   `ended`: the attempt ended as it asked.
/// * Released under this token while it was not handing the run over (its
///   handler still running, or its finish being retried): only an
///   operator's stop does that (StopStore): `stopped` (a review found such
///   a stop reported `lost`, "another instance took the run over", and the
///   stopped run not watched). While it was handing the run over, its own
///   release and a stop both read back so: a stop pauses the job, so a
///   paused job is `stopped` (it stays so until a resume, whichever of the
///   two released it), a job not paused `ended` (review finding F1: a
///   release applied late was said as an operator's stop, "stays stopped
///   until leasectl resume", and the run watched as paused).
/// * Under a later attempt's token, while it was handing the run over,
///   with more hand-overs since this attempt was won than the later
///   attempts alone can have made (one each at most, the current one only
///   if it is released itself): this attempt was released (by its own
///   release applied late, or by a stop and a resume), then taken over —
///   the hand-over it asked for: `ended`. With no more than those, the
///   later attempts may have made them all, this one having expired: `lost`.
///   (A property found the next attempt's winner handing it back at once,
///   short of a replica, before the resend: counting only "one more
///   hand-over, one attempt later" said that `lost`.)
/// * Anything else (gone, another attempt's, ended by someone else): `lost`.
///   A failed read: `unread`.
///
/// Without a StopStore, a refused heartbeat of a handler still running can
/// only be `lost`: no read is made.
template <Store S, Clock C, Executor E, OverlapPolicy P>
typename scheduler<S, C, E, P>::refusal scheduler<S, C, E, P>::refused_because(attempt& a) {
  if constexpr (!StopStore<S>)
    if (a.at == step::running) return refusal::lost;
  std::optional<run_record> rec;
  try {
    rec = store_.get(a.run);
    store_answered();
  } catch (const store_error& e) {
    store_failed("read-back of a refused call's run", a.run, e);
    return refusal::unread;
  } catch (const std::exception& e) {  // a store's bug (law L6): nothing is known either
    store_failed("read-back of a refused call's run", a.run,
                 store_error(make_error_code(errc::outcome_unknown),
                             std::string("get threw something other than a store_error: ") + e.what()));
    return refusal::unread;
  }
  a.end_in_doubt = false;  // answered: whatever it says, the outcome is known
  const bool releasing = a.at == step::releasing;
  if (!rec) return refusal::lost;
  // This attempt's record: its token and its fence. A token may have won an
  // earlier attempt too (a claim resent with it after that win was handed
  // back, short of a replica): a store restored to that earlier attempt
  // reads back under the same token, released, and lost this one.
  if (rec->token != a.token || rec->fence != a.fence) {
    if (!releasing || rec->attempt <= a.number || rec->handovers < a.handovers) return refusal::lost;
    const std::uint32_t later = rec->attempt - a.number;  // attempts won after this one
    const std::uint32_t by_later = later - 1 + (rec->released ? 1 : 0);
    return rec->handovers - a.handovers > by_later ? refusal::ended : refusal::lost;
  }
  if (a.at == step::finishing && rec->status == a.result) return refusal::ended;
  if (releasing && rec->released) {
    if constexpr (StopStore<S>) {
      try {
        const bool paused = store_.paused(a.run.job);
        store_answered();
        if (paused) return refusal::stopped;
      } catch (const store_error& e) {  // the release applied, by whichever hand: a hand-over
        store_failed("read of a job's pause after a refused release", a.run, e);
      } catch (const std::exception&) {
      }
    }
    return refusal::ended;
  }
  if constexpr (StopStore<S>)
    if (rec->released && rec->status == run_status::running) return refusal::stopped;
  return refusal::lost;
}

/// The run of attempt `it` was stopped by an operator: its handler is asked
/// to stop, nothing more is sent for the attempt, and this instance watches
/// the run (a backup, told `paused` until a resume).
template <Store S, Clock C, Executor E, OverlapPolicy P>
template <class It>
void scheduler<S, C, E, P>::operator_stopped(It it) {
  attempt& a = it->second;
  a.lease->revoke();  // requests the handler's stop token, as for a lost lease
  guard_.remove(a.lease.get());
  const std::string until = "; the run stays stopped until `leasectl resume " + a.run.job +
                            "`, after which a backup takes it over as its next attempt";
  if (a.at == step::releasing)
    // The stop did what the release was for: the run is handed over, and
    // not counted against max_attempts. Said as the stop it was: the job is
    // paused, so no backup takes the run over before a resume.
    emit(event_kind::stopped, a.run, a.number, a.fence,
         "job " + a.run.job + " slot " + detail::fmt(a.run.slot) + ": stopped by an operator (leasectl stop) "
         "while this instance was handing the run over (" +
             (a.started ? std::string("its handler had stopped") : std::string("its handler was never started")) +
             (a.why.empty() ? std::string{} : ": " + a.why) +
             "; its release was being retried after a store error): the run is released under this attempt's "
             "token and the job is paused in the store, so nothing more is sent for attempt " +
             std::to_string(a.number) + until,
         {.handler_duration = a.handler_time(steady())});
  else if (a.at == step::finishing)
    emit(event_kind::stopped, a.run, a.number, a.fence,
         "job " + a.run.job + " slot " + detail::fmt(a.run.slot) + ": stopped by an operator (leasectl stop) "
         "after its handler had ended (" + std::string(to_string(a.result)) +
             (a.why.empty() ? std::string{} : ": " + a.why) +
             ") but before the store recorded that result (its finish was being retried): the result is not "
             "recorded and nothing more is sent for attempt " + std::to_string(a.number) + until +
             " (the handler runs again)",
         {.handler_duration = a.handler_time(steady())});
  else
    emit(event_kind::stopped, a.run, a.number, a.fence,
         "job " + a.run.job + " slot " + detail::fmt(a.run.slot) + ": stopped by an operator (leasectl stop): the "
         "handler was asked to stop (its stop token is requested; nothing more is sent for attempt " +
             std::to_string(a.number) + ")" + until,
         {.handler_duration = a.handler_time(steady())});
  const std::uint32_t j = a.job;
  const run_key run = a.run;
  drop_attempt(it);
  after_attempt(j);
  // This instance may be the job's only one: it backs the run up too, so a
  // resume gets it taken over even then.
  if (phase_ == phase::running && !jobs_[j].removed) watch_run(j, run, false);
}

}  // namespace lease
