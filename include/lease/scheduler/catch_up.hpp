// lease/scheduler/catch_up.hpp — start(): for each job, what was left running
// and what was missed while no instance of this process ran.
//
// Unfinished runs: live → this instance becomes a backup (also of a run that
// an earlier process with the same instance id started: that process is
// gone, and its lease must run out before anyone takes over); expired and
// still the latest → taken over now; expired with a newer slot due → left to
// the newer run's claim, which marks it interrupted. Then the latest slot due
// less than catch_up ago, if it has no state, is claimed (reason catch-up)
// after a random catch_up_jitter. Only the latest slot, never a queue. A
// slot due at the very millisecond of start() is not missed: the slot timer
// claims it (scheduler.hpp, first_slot_from).
#pragma once

#include "lease/scheduler.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_recover(std::uint32_t j, std::uint64_t life) {
  job& jb = jobs_[j];
  if (jb.removed || life != jb.life) return;  // removed (and perhaps added again, with a catch-up of its own)
  std::vector<run_record> open;
  std::optional<run_record> missed;
  time_point store_now{};
  const time_point now = wall();
  const time_point latest = jb.schedule.latest(now);
  // A slot at or after the one the slot timer is armed for is that timer's
  // to claim, as a slot of the schedule (start() arms the slot due at its
  // very millisecond; the loop may reach this step after that slot too):
  // caught up as well, it would be claimed twice by this instance. So is a
  // slot whose timer already fired (this step retried after a failed read):
  // it is claimed, or was given up with an event.
  const bool in_window = latest < jb.next_slot && latest > jb.fired && now - latest < jb.cfg.catch_up;
  // Read everything first, act after: a failed read retries the whole step
  // without having half-acted.
  try {
    open = store_.unfinished(jb.name);
    store_now = store_.now();
    if (in_window) missed = store_.get({jb.name, latest});
    store_answered();
  } catch (const store_error& e) {
    const duration wait = backoff(recover_tries_[j]++, jb.cfg.heartbeat);
    store_failed("catch-up read", {jb.name, latest}, e);
    push_after(wait, {{}, 0, detail::timer_kind::recover, j, {}, life});
    return;
  }
  for (const run_record& r : open) {
    if (own_attempt(r.key())) continue;  // re-added while this instance runs it: nothing to recover
    if (r.live(store_now)) {
      const bool mine = r.runner == opts_.instance;
      emit(event_kind::backup, r.key(), r.attempt, r.fence,
           "on start: attempt " + std::to_string(r.attempt) +
               (mine ? " was started by an earlier process with this instance's id (" + r.runner +
                           "), which is gone; its lease is still live, so this instance waits for it to run out "
                           "and then takes the run over as a backup"
                     : " runs on " + r.runner + " with a live lease; this instance is its backup"),
           {.runner = r.runner});
      watch_run(j, r.key(), false, lease_seen{r.lease_end, store_now});
      if (auto w = watches_.find(r.key()); w != watches_.end()) w->second.told_on_start = r.attempt;
    } else if (r.slot >= latest) {
      watch_run(j, r.key(), true, lease_seen{r.lease_end, store_now});  // dead and still the latest: take it over now
    }
    // dead with a newer slot due: left alone; the next run's claim marks it interrupted
  }
  if (in_window && !missed) new_claim(j, latest, claim_reason::catch_up, std::max(jitter(opts_.catch_up_jitter), duration{1}));
}

}  // namespace lease
