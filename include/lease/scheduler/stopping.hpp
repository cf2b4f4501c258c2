// lease/scheduler/stopping.hpp — stop(): claim nothing more, ask every handler
// to stop, hand over the runs whose handlers throw, abandon the rest at the
// timeout (their leases run out and backups take over).
#pragma once

#include "lease/scheduler.hpp"
#include "lease/scheduler/detail/slot_span.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::begin_stop(duration timeout) {
  phase_ = phase::stopping;
  // Claims not answered yet (waiting out their jitter, the store's clock, or
  // a retry) and buffered slots are not sent: each says so, since another
  // instance may run the slot, or none if all of them are stopping.
  for (const auto& [id, pc] : pending_)
    emit(event_kind::late, pc.req.run, 0, 0,
         std::string(to_string(pc.req.reason)) + " claim not sent: stop() was called while it was still pending (" +
             pc.state() + "); this instance does not run the " +
             (pc.req.reason == claim_reason::manual ? "manual run; its trigger stays pending in the store for "
                                                      "another instance that has the job"
                                                    : "slot, another instance may"));
  const time_point now = wall();
  for (const job& jb : jobs_) {
    if (jb.removed || jb.next_slot > now) continue;
    // Its timer is due but has not fired (the loop got the stop first, or is
    // behind by several slots): every slot due since is named.
    const auto span = detail::slot_span::of(jb.schedule, jb.next_slot, now + duration{1});
    emit(event_kind::late, {jb.name, jb.next_slot}, 0, 0,
         span.not_claimed() + ": due, but stop() was taken first; this instance does not run them, another "
                              "instance may",
         {.skipped_slots = span.count});
  }
  for (job& jb : jobs_)
    if (jb.manual_buffered && !jb.removed)
      emit(event_kind::late, {jb.name, std::exchange(jb.manual_buffered, std::nullopt)->first}, 0, 0,
           "manual run not claimed here any more: stop() was called while its trigger waited for the earlier run "
           "to end; the trigger stays pending in the store for another instance that has the job");
  for (job& jb : jobs_)
    if (jb.buffered && !jb.removed)
      emit(event_kind::late, {jb.name, *std::exchange(jb.buffered, std::nullopt)}, 0, 0,
           "buffered slot dropped: stop() was called while the run it waited for was still going; this instance "
           "does not run it, another instance may");
  pending_.clear();
  retired_tokens_.clear();
  claim_batch_.clear();
  watches_.clear();
  recount();
  for (auto& [id, a] : attempts_) a.lease->request_stop();
  push_after(timeout, {{}, 0, detail::timer_kind::stop_deadline});
  if (attempts_.empty()) phase_ = phase::stopped;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_stop_deadline() {
  flush_ends();  // handlers that ended in this very turn are recorded, not abandoned
  for (auto it = attempts_.begin(); it != attempts_.end(); it = drop_attempt(it)) {
    const attempt& a = it->second;
    guard_.remove(a.lease.get());
    emit(event_kind::abandoned, a.run, a.number, a.fence,
         a.at == step::running
             ? "stopping: the handler was still running at the stop timeout; heartbeats stop and a backup "
               "takes the run over once its lease runs out"
         : a.end_in_doubt
             // Its finish or release may have applied, its reply lost (a review
             // found this said as "did not accept").
             ? std::string("stopping: the store's answer to this attempt's ") +
                   (a.at == step::releasing ? "release" : "finish") +
                   " was lost and no read-back answered before the stop timeout: it may have been recorded "
                   "(the job's history shows it); if not, a backup takes the run over once its lease runs out"
             : "stopping: the store did not accept the result before the stop timeout; a backup takes the "
               "run over once its lease runs out",
         {.handler_duration = a.handler_time(steady())});
  }
  recount();
  phase_ = phase::stopped;
}

}  // namespace lease
