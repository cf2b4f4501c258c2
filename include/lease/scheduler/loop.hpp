// lease/scheduler/loop.hpp — the scheduler's loop: one turn takes a stop
// request and finished handlers, then fires due timers one at a time, and
// looks at the inbox again between two timers.
//
// Fairness (why the inbox is read between timers): once the loop falls behind
// — thousands of slots due, a slow store — firing every due timer before
// looking at completions kept renewing runs that had finished (so their next
// slots were skipped as overlaps) and kept stop() waiting for tens of
// seconds. A finished handler's finish, and a stop request, are handled
// before the next timer. Interval timers (heartbeats, self-abort checks,
// backups) go before slot timers that are due at the same moment.
#pragma once

#include <algorithm>
#include <mutex>

#include "lease/scheduler.hpp"
#include "lease/scheduler/detail/slot_span.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::start() {
  if (phase_ != phase::idle) throw std::logic_error("lease::scheduler::start: already started");
  phase_ = phase::running;
  const time_point now = wall();
  for (std::uint32_t j = 0; j < jobs_.size(); ++j) {
    if (jobs_[j].removed) continue;
    push_after(duration::zero(), {{}, 0, detail::timer_kind::recover, j, {}, jobs_[j].life});
    arm_slot(j, first_slot_from(jobs_[j].schedule, now));
  }
  if constexpr (EndPushStore<S>) {
    // The listener runs on the store's thread: it only posts to the inbox,
    // which it keeps alive itself (the store may call it once more while
    // listen_ends({}) is on its way).
    store_.listen_ends([in = inbox_](std::string_view job, std::optional<time_point> finished) {
      in->post_release(job, finished);
    });
    listening_ = true;
  } else if constexpr (PushStore<S>) {
    store_.listen_releases([in = inbox_](std::string_view job) { in->post_release(job); });  // as listen_ends
    listening_ = true;
  }
  start_triggers();
  start_registry();
  if constexpr (!is_manual_clock<C>) {
    guard_.run(steady_);
    loop_ = std::jthread([this] { run_loop(); });
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::stop(duration timeout) {
  if (phase_ == phase::idle) {
    phase_ = phase::stopped;
    inbox_->close();
    inbox_->drained();
    return;
  }
  inbox_->request_stop(timeout);
  if (loop_.joinable()) loop_.join();
  guard_.halt();
  stop_listening();
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::stop_listening() {
  if constexpr (PushTriggerStore<S>) {
    if (std::exchange(listening_triggers_, false)) {
      try {
        store_.listen_triggers({});
      } catch (...) {
        // As for listen_releases below: the listener only posts to the inbox.
      }
    }
  }
  if constexpr (PushStore<S>) {
    if (!std::exchange(listening_, false)) return;
    try {
      if constexpr (EndPushStore<S>) store_.listen_ends({});
      else store_.listen_releases({});
    } catch (...) {
      // Nothing to do about a store that fails to stop a subscription: the
      // listener only posts to an inbox it keeps alive.
    }
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
std::optional<time_point> scheduler<S, C, E, P>::next_wakeup() const {
  if (phase_ == phase::stopped || phase_ == phase::idle) return std::nullopt;
  const time_point now = wall();
  if (inbox_->has_work()) return now;
  std::optional<time_point> at;
  if (!timers_.empty()) at = now + std::max(timers_.top().at - steady(), duration::zero());
  if (!slot_timers_.empty() && (!at || slot_timers_.top().at < *at)) at = slot_timers_.top().at;
  return at;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::run_loop() {
  // A wall-clock step changes when a slot is due but is not seen by a wait
  // on monotonic time: a wait for a slot is cut into pieces of at most this.
  constexpr duration max_slot_wait{1'000};
  loop_thread_ = std::this_thread::get_id();
  for (;;) {
    poll_once();
    if (phase_ == phase::stopped) {
      // Calls posted meanwhile are still run (a caller of jobs() waits for
      // its answer; an add or remove finds the instance stopped).
      for (auto& fn : inbox_->close()) fn();
      inbox_->drained();
      return;
    }
    std::unique_lock lock(inbox_->mutex);
    auto woken = [&] { return inbox_->waiting(); };
    if (woken()) continue;
    std::optional<duration> wait;
    if (!timers_.empty()) wait = timers_.top().at - steady();
    if (!slot_timers_.empty()) {
      const duration w = std::min(slot_timers_.top().at - wall(), max_slot_wait);
      if (!wait || w < *wait) wait = w;
    }
    if (!wait)
      inbox_->ready.wait(lock, woken);
    else if (*wait > duration::zero())
      inbox_->ready.wait_for(lock, *wait, woken);
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
std::size_t scheduler<S, C, E, P>::poll_once() {
  std::size_t handled = 0;
  // In deterministic mode there is no watchdog thread: do its work first.
  if constexpr (is_manual_clock<C>) check_leases();
  while (phase_ != phase::idle && phase_ != phase::stopped) {
    handled += take_inbox();
    if (phase_ == phase::stopped) break;
    std::optional<detail::timer> t = pop_due();
    if (!t) {
      if (!end_batch_.empty() || !claim_batch_.empty()) {
        flush_turn();  // their answers may have armed timers that are due now
        continue;
      }
      if (inbox_->posted.load()) continue;  // an inline executor finished a task meanwhile
      break;
    }
    shielded({t->job < jobs_.size() ? jobs_[t->job].name : std::string{}, t->slot}, [&] { fire(*t); });
    ++handled;
  }
  if constexpr (NoticeStore<S>)
    for (std::string& n : store_.take_notices()) emit(event_kind::store_notice, {}, 0, 0, std::move(n));
  return handled;
}

/// Runs one step of the loop. A store must report failures as
/// lease::store_error (Store law L6); anything else is a bug in it, but must
/// not kill the instance, nor drop the steps after this one.
template <Store S, Clock C, Executor E, OverlapPolicy P>
template <class F>
void scheduler<S, C, E, P>::shielded(const run_key& where, F&& step, std::string_view origin) {
  try {
    step();
  } catch (const std::exception& e) {
    emit(event_kind::store_error, where, 0, 0,
         "unexpected exception " + std::string(origin) + " (not a store_error): " + e.what() +
             " (stores must throw lease::store_error); this step is skipped");
  }
}

/// Takes a stop request and the finished handlers, if any were posted.
template <Store S, Clock C, Executor E, OverlapPolicy P>
std::size_t scheduler<S, C, E, P>::take_inbox() {
  if (!inbox_->posted.load()) return 0;
  std::vector<detail::completion> done;
  std::optional<duration> stop_request;
  std::vector<detail::inbox::announced> released;
  std::vector<std::string> triggered;
  std::vector<std::function<void()>> calls;
  {
    std::scoped_lock lock(inbox_->mutex);
    inbox_->posted.store(false);
    done.swap(inbox_->done);
    released.swap(inbox_->released);
    triggered.swap(inbox_->triggered);
    calls.swap(inbox_->calls);
    stop_request = std::exchange(inbox_->stop_request, std::nullopt);
  }
  // Adds and removes before a stop request: they were posted before it.
  for (auto& fn : calls) shielded({}, fn, "in a call posted to the loop (add, remove, trigger, jobs)");
  if (stop_request && phase_ == phase::running) begin_stop(*stop_request);
  for (auto& c : done) shielded({}, [&] { on_completion(c); });
  for (const auto& a : released) {
    shielded({a.job, {}}, [&] {
      recheck_watches(a.job, a.finished);
      if (a.finished) note_announced_end(a.job, *a.finished);
    });
  }
  if (!triggered.empty() && phase_ == phase::running) {
    // One poll for every job announced in this turn; "" (the store may have
    // missed pushes) polls all of them. A failed poll is retried: the store
    // will not push those triggers again.
    std::sort(triggered.begin(), triggered.end());
    triggered.erase(std::unique(triggered.begin(), triggered.end()), triggered.end());
    if (triggered.front().empty()) triggered.clear();
    if (!poll_triggers(triggered)) push_after(backoff(trigger_tries_++, opts_.heartbeat_interval()),
                                              {{}, 0, detail::timer_kind::trigger_poll, 0, {}, 1});
  }
  return done.size() + released.size() + calls.size() + triggered.size();
}

/// The next due timer: interval timers first, then slots. The clocks are
/// read every time: a store call may take a while (in a simulation, a slow
/// call moves the clock).
template <Store S, Clock C, Executor E, OverlapPolicy P>
std::optional<detail::timer> scheduler<S, C, E, P>::pop_due() {
  if (!timers_.empty() && timers_.top().at <= steady()) return timers_.pop();
  if (!slot_timers_.empty() && slot_timers_.top().at <= wall()) {
    const detail::slot_timer s = slot_timers_.pop();
    return detail::timer{{}, 0, s.kind, s.job, s.slot, s.id};
  }
  return std::nullopt;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::fire(const detail::timer& t) {
  using detail::timer_kind;
  const bool claiming = phase_ == phase::running;  // nothing new once stopping
  switch (t.kind) {
    case timer_kind::slot: if (claiming) on_slot(t.job, t.slot, t.id); break;
    case timer_kind::claim: if (claiming) send_pending(t.id); break;
    case timer_kind::backup: if (claiming) on_backup(t.job, t.slot, t.id); break;
    case timer_kind::recover: if (claiming) on_recover(t.job, t.id); break;
    case timer_kind::heartbeat: on_heartbeat(duration{static_cast<duration::rep>(t.id)}); break;
    case timer_kind::lease_check: on_lease_check(t.id); break;
    case timer_kind::finish_retry: on_finish_retry(t.id); break;
    case timer_kind::stop_deadline: on_stop_deadline(); break;
    case timer_kind::trigger_poll: if (claiming) on_trigger_poll(t.id); break;
    case timer_kind::registration: if (claiming) on_registration(t.id); break;
  }
}

// ---- jobs at run time ------------------------------------------------------

/// An add, on the loop (or before start()). A new name is set up as start()
/// sets up each job; an existing one gets the new schedule, handler and
/// settings, and its slot timer is re-armed on the new schedule.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::apply_add(std::string name, detail::any_schedule sch, std::shared_ptr<const handler> fn,
                                      job_settings cfg, time_point asked) {
  if (phase_ != phase::idle && phase_ != phase::running) return;  // posted before a stop
  auto [at, fresh] = job_index_.try_emplace(name, static_cast<std::uint32_t>(jobs_.size()));
  const std::uint32_t j = at->second;
  if (fresh) jobs_.push_back(job{std::move(name), sch, fn, cfg, time_point::max(), time_point::min(), std::nullopt, false, 0, 0, std::nullopt, std::nullopt, std::nullopt});
  job& jb = jobs_[j];
  const bool was_removed = !fresh && jb.removed;
  const time_point armed = jb.next_slot;
  jb.schedule = std::move(sch);
  jb.fn = std::move(fn);
  if (jb.cfg.overlap != cfg.overlap && jb.buffered)
    emit(event_kind::late, {jb.name, *std::exchange(jb.buffered, std::nullopt)}, 0, 0,
         "buffered slot dropped: the job was added again with another overlap mode while the run it waited "
         "for was still going");
  jb.cfg = cfg;
  jb.removed = false;
  ++jb.gen;
  if (phase_ != phase::running) return;
  const time_point now = wall();
  const time_point from = std::min(asked, now);  // slots after the add() call are this instance's to claim
  // The new schedule's first slot at or after the add, as for a new job (a
  // slot at its very millisecond is due: next(from) skipped it without a
  // word), but never one whose timer already fired here: it was claimed.
  const time_point first = jb.schedule.next(std::max(from - duration{1}, jb.fired));
  if (fresh || was_removed) {
    register_soon();  // a job new here is listed as this instance's at once, not at the next interval
    push_after(duration::zero(), {{}, 0, detail::timer_kind::recover, j, {}, jb.life});
    arm_slot(j, first);
    return;
  }
  // A slot already due (waiting out its claim jitter, or the loop is behind)
  // stays armed when the new schedule has a slot due since: its timer then
  // claims the latest one and names any skipped, as it would have without the
  // add. An upsert with the same schedule thus loses no slot.
  if (armed <= now && jb.schedule.latest(now) >= armed) {
    arm_slot(j, armed);
    return;
  }
  if (armed <= now)
    emit(event_kind::late, {jb.name, armed}, 0, 0,
         "slot not claimed: it was due, and the job was added again with a schedule that has no slot due "
         "since; the new schedule's next slot, " + detail::fmt(first) + ", is claimed instead");
  arm_slot(j, first);
}

/// A remove, on the loop (or before start()): the job's timers become stale,
/// its pending claims and watches are dropped; its attempts run on.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::apply_remove(const std::string& name, bool hand_over) {
  auto at = job_index_.find(name);
  if (at == job_index_.end() || jobs_[at->second].removed) return;
  const std::uint32_t j = at->second;
  job& jb = jobs_[j];
  // Every slot says why: one that is due (its timer has not fired yet) and
  // the claims not answered yet are given up here, and each says so.
  if (const time_point now = wall(); phase_ == phase::running && jb.next_slot <= now) {
    const auto span = detail::slot_span::of(jb.schedule, jb.next_slot, now + duration{1});
    emit(event_kind::late, {jb.name, jb.next_slot}, 0, 0,
         span.not_claimed() + ": due, but the job was removed from this instance first; another instance may "
                              "run them",
         {.skipped_slots = span.count});
  }
  for (const auto& [id, pc] : pending_)
    if (pc.job == j)
      emit(event_kind::late, pc.req.run, 0, 0,
           std::string(to_string(pc.req.reason)) +
               " claim not sent: the job was removed from this instance while it was still pending (" +
               pc.state() + "); this instance does not run the slot, another instance may");
  jb.removed = true;
  ++jb.gen;
  ++jb.life;
  jb.next_slot = time_point::max();
  if (jb.buffered)
    emit(event_kind::late, {jb.name, *std::exchange(jb.buffered, std::nullopt)}, 0, 0,
         "buffered slot dropped: the job was removed from this instance while the run it waited for was still "
         "going");
  if (jb.manual_buffered)
    emit(event_kind::late, {jb.name, std::exchange(jb.manual_buffered, std::nullopt)->first}, 0, 0,
         "manual run not claimed here any more: the job was removed from this instance while its trigger waited "
         "for the earlier run to end; the trigger stays pending in the store for another instance that has the job");
  pending_.erase_job(j);
  std::erase_if(watches_, [&](const auto& w) { return w.second.job == j; });
  std::erase_if(claim_batch_, [&](const batched_claim& b) { return b.backup && b.job == j; });
  recover_tries_.erase(j);
  recount();
  if (hand_over)
    for (auto& [id, a] : attempts_)
      if (a.job == j && a.at == step::running) {
        a.removed_hand_over = true;
        a.lease->request_stop();
      }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
std::vector<job_info> scheduler<S, C, E, P>::describe_jobs() const {
  std::vector<job_info> out;
  for (std::uint32_t j = 0; j < jobs_.size(); ++j) {
    const job& jb = jobs_[j];
    if (jb.removed) continue;
    job_info info{jb.name, jb.schedule.text(), jb.cfg, std::nullopt, 0, 0};
    if (phase_ == phase::idle) info.next_slot = first_slot_from(jb.schedule, wall());
    else if (phase_ == phase::running && jb.next_slot != time_point::max()) info.next_slot = jb.next_slot;
    for (const auto& [id, a] : attempts_) info.running += a.job == j ? 1 : 0;
    for (const auto& [run, w] : watches_) info.watching += w.job == j ? 1 : 0;
    out.push_back(std::move(info));
  }
  return out;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
std::vector<job_info> scheduler<S, C, E, P>::jobs() const {
  if constexpr (!is_manual_clock<C>) {
    if (phase_ != phase::idle && loop_thread_.load() != std::this_thread::get_id()) {
      auto answer = std::make_shared<std::promise<std::vector<job_info>>>();
      std::future<std::vector<job_info>> got = answer->get_future();
      if (inbox_->post_call([this, answer] { answer->set_value(describe_jobs()); })) return got.get();
      // The loop is exiting: once it has run the calls left (a remove
      // writes the jobs), its state is final and no longer written.
      inbox_->wait_drained();
    }
  }
  return describe_jobs();
}

// ---- helpers ---------------------------------------------------------------

template <Store S, Clock C, Executor E, OverlapPolicy P>
duration scheduler<S, C, E, P>::jitter(duration max) {
  if (max <= duration::zero()) return duration::zero();
  return duration{std::uniform_int_distribution<duration::rep>{0, max.count()}(rng_)};
}

/// Retry delay after `tries` failures: 100 ms doubling, capped at `cap` (the
/// job's heartbeat: a job with a short lease is retried as often as it is
/// renewed), plus up to 50% jitter so instances don't retry in step.
template <Store S, Clock C, Executor E, OverlapPolicy P>
duration scheduler<S, C, E, P>::backoff(std::uint32_t tries, duration cap) {
  duration d{100};
  for (std::uint32_t i = 0; i < tries && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  return d + jitter(d / 2);
}

/// A store call failed: one event when a fault starts, then a summary every
/// few seconds while it lasts (store_faults.hpp).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::store_failed(std::string_view op, const run_key& run, const store_error& e) {
  if (std::optional<std::string> text = faults_.failed(op, e, steady()))
    emit(event_kind::store_error, run, 0, 0, std::move(*text));
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::store_answered() {
  if (!faults_.ongoing()) return;
  if (std::optional<std::string> text = faults_.succeeded(steady()))
    emit(event_kind::store_error, {}, 0, 0, std::move(*text));
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::emit(event_kind k, run_key run, std::uint32_t attempt_no, std::uint64_t fence,
                                 std::string message, detail::event_facts facts) {
  if (sinks_.empty()) return;
  // The kinds that are about this instance's own attempt name it as the runner.
  const bool own = k == event_kind::won || k == event_kind::takeover || k == event_kind::catch_up ||
                   k == event_kind::success || k == event_kind::failed || k == event_kind::handed_over ||
                   k == event_kind::abandoned || k == event_kind::lost || k == event_kind::stopped;
  event ev;
  ev.kind = k;
  ev.run = std::move(run);
  ev.attempt = attempt_no;
  ev.fence = fence;
  ev.instance = opts_.instance;
  ev.at = wall();
  ev.message = std::move(message);
  ev.runner = facts.runner.empty() && own ? opts_.instance : std::move(facts.runner);
  ev.handler_duration = facts.handler_duration;
  ev.takeover_latency = facts.takeover_latency;
  ev.claim_round_trip = facts.claim_round_trip;
  ev.skipped_slots = facts.skipped_slots;
  for (auto& [kind, fn] : sinks_) {
    if (kind && *kind != k) continue;
    try {
      fn(ev);
    } catch (...) {
      // A sink's failure must not stop the instance (see on()).
    }
  }
}

}  // namespace lease
