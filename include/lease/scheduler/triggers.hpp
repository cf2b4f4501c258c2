// lease/scheduler/triggers.hpp — an operator's "trigger now" (doc/protocol.md,
// "Trigger now"): a pending trigger in a TriggerStore is picked up by every
// instance that has the job and claimed like a slot, with reason `manual`;
// the store's rules let exactly one claim win it.
//
// * Picked up: a PushTriggerStore calls our listener (posted to the inbox,
//   like a release) and the loop polls triggers() for those jobs in its next
//   turn; f("") (it may have missed pushes) and start() poll all of them once.
//   Another TriggerStore is polled for all jobs every options.trigger_poll:
//   one store call per instance per interval, the idle cost of the feature.
// * Claimed as any run: the job's lease, overlap mode, attempts; batched
//   with the other claims of the loop turn; a store error is retried with
//   the same token (never dropped: a manual claim has no deadline). A win
//   runs the handler (run_context::manual); `running` makes this instance a
//   backup of the manual run; `overlap` in skip mode and `paused` drop the
//   trigger with an event saying why; in buffer_one mode it waits for the
//   blocking run to end and is claimed again; `none`: another instance
//   answered it first (silent); early and quarantined: claimed again later.
// * Outside the schedule: a manual claim never drops, and is never dropped
//   by, the claims of the job's slots, and the slots are armed as before. A
//   slot before the trigger that is due here and not yet answered is claimed
//   first (so the manual run does not make it `superseded`).
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "lease/scheduler.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
time_point scheduler<S, C, E, P>::trigger(std::string_view name) {
  static_assert(TriggerStore<S>,
                "lease::scheduler::trigger needs a store that models lease::TriggerStore (trigger(job) and "
                "triggers(jobs), lease/store/concept.hpp): this store cannot keep an operator's trigger");
  std::string job(name);
  refuse_once_stopping("trigger", job);
  {
    std::scoped_lock lock(names_mutex_);
    if (!names_.contains(name))
      throw std::invalid_argument("lease::scheduler::trigger: this instance has no job named \"" + std::string(name) +
                                  "\" (add() it first, or trigger it with the store: leasectl)");
  }
  return on_loop<time_point>("trigger", job, [this, job](bool looping) {
    // A step of the loop asks the store and claims at once. Before start()
    // nothing is claimed: start()'s first poll picks it up (or the first
    // push, which the store sends anyway). Deterministic mode (the caller is
    // the loop's thread) or an event sink: the store is asked now, the claim
    // goes at the next poll().
    if (looping) return apply_trigger(job);
    time_point slot{};
    if constexpr (TriggerStore<S>) slot = store_.trigger(job);
    if (phase_ != phase::idle)
      inbox_->post_call([this, job, slot] {
        if (auto it = job_index_.find(job); it != job_index_.end()) take_trigger(it->second, {job, slot});
      });
    return slot;
  });
}

/// On the loop: asks the store, then claims the trigger at once (with or
/// without a push, this instance does not wait for its own poll).
template <Store S, Clock C, Executor E, OverlapPolicy P>
time_point scheduler<S, C, E, P>::apply_trigger(const std::string& name) {
  if constexpr (TriggerStore<S>) {
    const time_point slot = store_.trigger(name);
    store_answered();
    if (auto it = job_index_.find(name); it != job_index_.end()) take_trigger(it->second, {name, slot});
    return slot;
  } else {
    return time_point{};
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::start_triggers() {
  if constexpr (PushTriggerStore<S>) {
    // As listen_releases: the listener only posts to an inbox it keeps alive.
    store_.listen_triggers([in = inbox_](std::string_view job) { in->post_trigger(job); });
    listening_triggers_ = true;
    push_after(duration::zero(), {{}, 0, detail::timer_kind::trigger_poll, 0, {}, 1});  // one poll: triggers asked before
  } else if constexpr (TriggerStore<S>) {
    push_after(duration::zero(), {{}, 0, detail::timer_kind::trigger_poll, 0, {}, 0});
  }
}

/// `retry` 0: the periodic poll of a store that cannot push (re-armed every
/// trigger_poll, whatever it answered). 1: a one-off poll of a
/// PushTriggerStore (at start, or after a failed poll), retried until it works.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_trigger_poll(std::uint64_t retry) {
  const bool ok = poll_triggers({});
  if (retry == 0)
    push_after(opts_.trigger_poll, {{}, 0, detail::timer_kind::trigger_poll, 0, {}, 0});
  else if (!ok)
    push_after(backoff(trigger_tries_++, opts_.heartbeat_interval()), {{}, 0, detail::timer_kind::trigger_poll, 0, {}, 1});
}

/// One triggers() call for the jobs `only` (empty: every job of this
/// instance); each pending trigger found is claimed. False if the store failed.
template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::poll_triggers(const std::vector<std::string>& only) {
  if constexpr (TriggerStore<S>) {
    // Looked up by name, never searched: an operator may trigger every job
    // at once, and `only` then names thousands.
    std::vector<std::string> names;
    if (only.empty()) {
      for (const job& jb : jobs_)
        if (!jb.removed) names.push_back(jb.name);
    } else {
      for (const std::string& name : only)
        if (auto it = job_index_.find(name); it != job_index_.end() && !jobs_[it->second].removed) names.push_back(name);
    }
    if (names.empty()) return true;
    std::vector<run_key> found;
    try {
      found = store_.triggers(std::span<const std::string>(names));
      store_answered();
    } catch (const store_error& e) {
      store_failed("trigger poll", {}, e);
      return false;
    } catch (const std::exception& e) {  // not a store_error (law L6): polled again all the same
      store_failed("trigger poll", {},
                   store_error(make_error_code(errc::unavailable),
                               std::string("triggers() threw something other than a store_error: ") + e.what()));
      return false;
    }
    trigger_tries_ = 0;
    for (const run_key& k : found)
      if (auto it = job_index_.find(k.job); it != job_index_.end()) take_trigger(it->second, k);
    // A job pushed to us whose trigger is no longer pending was answered by
    // another instance first: read its runs, to back up the manual run that
    // instance started (as every instance that claims a slot backs it up).
    if (only.empty()) return true;
    std::unordered_set<std::string_view> answered;
    for (const run_key& k : found) answered.insert(k.job);
    for (const std::string& name : only)
      if (!answered.contains(name)) follow_manual_runs(name);
    return true;
  } else {
    (void)only;
    return true;
  }
}

/// After a push for job `name` that found no pending trigger: its live
/// manual runs this instance neither runs nor watches are watched (a backup),
/// so a runner that dies is taken over. One read, only after a push.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::follow_manual_runs(const std::string& name) {
  auto it = job_index_.find(name);
  if (it == job_index_.end() || jobs_[it->second].removed) return;
  const std::uint32_t j = it->second;
  std::vector<run_record> open;
  time_point store_now{};
  try {
    open = store_.unfinished(name);
    store_now = store_.now();
    store_answered();
  } catch (const store_error& e) {
    store_failed("read of a triggered job's runs", {name, {}}, e);  // costs a backup, never a run
    return;
  }
  for (const run_record& r : open) {
    if (!r.manual || !r.live(store_now) || own_attempt(r.key()) || watches_.contains(r.key())) continue;
    if (std::any_of(pending_.begin(), pending_.end(), [&](const auto& p) { return p.second.req.run == r.key(); }))
      continue;  // our claim of it is on its way: its answer makes us a backup
    emit(event_kind::backup, r.key(), r.attempt, r.fence,
         "manual run of job " + name + " (an operator's trigger of " + detail::fmt(r.slot) + "): attempt " +
             std::to_string(r.attempt) + " runs on " + r.runner + " with a live lease; this instance is its backup",
         {.runner = r.runner});
    watch_run(j, r.key(), false, lease_seen{r.lease_end, store_now});
  }
}

/// A pending trigger of job `j`: claimed, unless this instance is on it already.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::take_trigger(std::uint32_t j, const run_key& run) {
  job& jb = jobs_[j];
  if (phase_ != phase::running || jb.removed) return;
  for (const auto& [id, pc] : pending_)
    if (pc.job == j && pc.req.reason == claim_reason::manual && pc.req.run == run) return;  // being claimed
  // Running here, or watched here as its backup (a claim of it answered
  // `running` already): a claim now would be answered the same.
  if (own_attempt(run) || watches_.contains(run)) return;
  if (jb.manual_buffered && jb.manual_buffered->first == run.slot) {
    const run_key& blocking = jb.manual_buffered->second;
    if (watches_.contains(blocking) || own_attempt(blocking)) return;  // waits for that run's end
    jb.manual_buffered.reset();  // no longer followed here (its watch ended): claim again now
  }
  new_claim(j, run.slot, claim_reason::manual);
}

/// Whether a manual claim waits a moment: a claim of a slot of the job at or
/// before the trigger is pending here, not answered yet (send_pending makes
/// the claim of such a slot that is due first). Claimed first, the slot has
/// state when the manual run wins (a manual run that started first would
/// make that slot's claims `superseded`).
template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::defer_manual(const pending_claim& pc) const {
  const time_point slot = pc.req.run.slot;
  for (const auto& [id, other] : pending_)
    if (other.job == pc.job && other.req.reason != claim_reason::manual && other.req.run.slot <= slot) return true;
  return false;
}

/// The manual claims of job `j` parked by defer_manual are sent again, each
/// by a timer due now (never from within the answer or drop that woke them):
/// one that must still wait is parked again. A parked claim has no timer, and
/// a woken one is no longer parked, so each has at most one timer at a time.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::wake_manual(std::uint32_t j) {
  std::vector<std::uint64_t>& parked = jobs_[j].parked_manual;
  if (parked.empty()) return;
  for (const std::uint64_t id : parked)
    if (auto it = pending_.find(id); it != pending_.end())
      push_after(duration::zero(), {{}, 0, detail::timer_kind::claim, j, it->second.req.run.slot, id});
  parked.clear();
}

/// A manual claim answered `overlap` (skip or buffer_one: allow and replace
/// never are): skip drops the trigger (the store did too), buffer_one waits
/// for the blocking run, watched here, to end.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::manual_overlap(std::uint32_t j, const claim_request& req, const claim_result& res) {
  job& jb = jobs_[j];
  const run_record& blocking = res.record;
  const std::string earlier = "the earlier run " + detail::fmt(blocking.slot) + " (attempt " +
                              std::to_string(blocking.attempt) + " on " + blocking.runner + ") still holds a live lease";
  watch_run(j, blocking.key(), false, lease_seen{blocking.lease_end, res.store_now});
  if (req.overlap == overlap_mode::skip) {
    emit(event_kind::skip, req.run, 0, 0,
         "manual run of job " + req.run.job + " not run: " + earlier + " and the job's overlap mode is skip, so "
         "the trigger of " + detail::fmt(req.run.slot) + " is dropped (trigger again once that run ended)",
         answer_facts());
    return;
  }
  // buffer_one: the store keeps the trigger pending; claimed again when the
  // blocking run ends (release_manual). Not watched under its own key: a
  // takeover claim is no way to start a manual run.
  jb.manual_buffered = {req.run.slot, blocking.key()};
  if (jb.manual_told != req.run.slot) {
    jb.manual_told = req.run.slot;
    emit(event_kind::skip, req.run, 0, 0,
         "manual run of job " + req.run.job + " waits: " + earlier + " and the job's overlap mode is buffer_one, so "
         "the trigger of " + detail::fmt(req.run.slot) + " is claimed again when that run ends",
         answer_facts());
  }
}

/// A run of job `j` ended (or is gone): a manual run waiting for it is claimed
/// again (the store decides; it may be blocked again by a newer run).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::release_manual(std::uint32_t j) {
  job& jb = jobs_[j];
  if (!jb.manual_buffered || phase_ != phase::running || jb.removed) return;
  const time_point slot = std::exchange(jb.manual_buffered, std::nullopt)->first;
  new_claim(j, slot, claim_reason::manual);
}

}  // namespace lease
