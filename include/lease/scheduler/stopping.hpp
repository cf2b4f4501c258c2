// lease/scheduler/stopping.hpp — stop(): claim nothing more, ask every handler
// to stop, hand over the runs whose handlers throw, abandon the rest at the
// timeout (their leases run out and backups take over).
#pragma once

#include "lease/scheduler.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::begin_stop(duration timeout) {
  phase_ = phase::stopping;
  pending_.clear();
  watches_.clear();
  recount();
  for (auto& [id, a] : attempts_) a.lease->request_stop();
  push_after(timeout, {{}, 0, detail::timer_kind::stop_deadline});
  if (attempts_.empty()) phase_ = phase::stopped;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_stop_deadline() {
  flush_ends();  // handlers that ended in this very turn are recorded, not abandoned
  for (auto it = attempts_.begin(); it != attempts_.end(); it = attempts_.erase(it)) {
    const attempt& a = it->second;
    guard_.remove(a.lease.get());
    emit(event_kind::abandoned, a.run, a.number, a.fence,
         a.at == step::running
             ? "stopping: the handler was still running at the stop timeout; heartbeats stop and a backup "
               "takes the run over once its lease runs out"
             : "stopping: the store did not accept the result before the stop timeout; a backup takes the "
               "run over once its lease runs out",
         {.handler_duration = a.handler_time(steady())});
  }
  recount();
  phase_ = phase::stopped;
}

}  // namespace lease
