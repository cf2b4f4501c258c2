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
//   release being retried when the stop came. It then watches the run as a
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

/// After a refused heartbeat, finish or release: was the run handed over by
/// an operator's stop? Only a StopStore can do that; the run read back still
/// carries this attempt's token, released, and this instance released
/// nothing (its handler is still running, or it ended and its finish or
/// release is being retried: a review found such a stop reported `lost`,
/// "another instance took the run over", and the stopped run not watched).
/// A failed read says no: the generic `lost`.
template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::stopped_by_operator(const attempt& a) {
  if constexpr (StopStore<S>) {
    // A release whose outcome is unknown may have applied, its reply lost:
    // then the run reads back released under this token by this instance,
    // not by an operator. Its read-back says which it was (handed_over).
    // Once a read-back answered, every send since was refused or not
    // applied, so a release under this token is someone else's: the stop.
    if (a.at == step::releasing && a.end_in_doubt) return false;
    try {
      std::optional<run_record> rec = store_.get(a.run);
      store_answered();
      return rec && rec->token == a.token && rec->released && rec->status == run_status::running;
    } catch (const store_error& e) {
      store_failed("read-back of a refused heartbeat's run", a.run, e);
      return false;
    } catch (const std::exception&) {
      return false;
    }
  } else {
    (void)a;
    return false;
  }
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
             "; its release was being retried after a store error): the operator's stop released the run first, so "
             "this instance's release is not needed and nothing more is sent for attempt " +
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
