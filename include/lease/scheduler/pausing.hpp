// lease/scheduler/pausing.hpp — an operator's pause and resume through an
// instance's API, and what a resume asked to catch up claims.
//
// The pause itself is the store's (PauseStore): every claim of a paused job
// is answered `paused` on every instance, so an instance learns of a pause
// or a resume only through its claims — none of them is told. A resume with
// missed_slots::catch_up_latest is therefore carried out by the instance it
// is asked of: after the store lifted the pause, it claims the job's latest
// slot, if that is less than catch_up old, with reason catch-up, exactly as
// start() claims a slot missed while no instance ran (catch_up.hpp). The
// claim is an ordinary one: it loses to a run the slot already has (it ran
// before the pause), is `superseded` once a newer slot has a run, and
// another instance's resume with catch-up of the same slot wins nothing.
#pragma once

#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "lease/scheduler.hpp"

namespace lease {

/// pause(), resume() and trigger() are refused once stop() was called.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::refuse_once_stopping(const char* what, const std::string& job) {
  std::scoped_lock lock(names_mutex_);
  if (phase_ == phase::stopping || phase_ == phase::stopped || inbox_->stop_was_asked())
    throw std::logic_error(std::string("lease::scheduler::") + what + ": stop() was called on this instance; " + what +
                           " job \"" + job + "\" from a running instance or with the store (leasectl " + what + ")");
}

/// Runs `fn` where the store object may be used: real mode, on the loop
/// thread (the caller waits for its current step and the call); before
/// start(), in deterministic mode, or from an event sink (already the loop's
/// thread), on the caller's. fn(true) means it runs as a step of the loop,
/// so it may claim at once; fn(false), that it must post a claim instead.
template <Store S, Clock C, Executor E, OverlapPolicy P>
template <class T, class F>
T scheduler<S, C, E, P>::on_loop(const char* what, const std::string& job, F fn) {
  refuse_once_stopping(what, job);
  if constexpr (!is_manual_clock<C>) {
    if (phase_ != phase::idle && loop_thread_.load() != std::this_thread::get_id()) {
      auto answer = std::make_shared<std::promise<T>>();
      std::future<T> got = answer->get_future();
      if (!inbox_->post_call([answer, fn]() mutable {
            try {
              answer->set_value(fn(true));
            } catch (...) {
              answer->set_exception(std::current_exception());
            }
          }))
        throw std::logic_error(std::string("lease::scheduler::") + what + ": the instance has stopped; " + what +
                               " job \"" + job + "\" from a running instance or with the store (leasectl " + what + ")");
      return got.get();
    }
  }
  return fn(false);
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::pause(std::string_view name) {
  static_assert(PauseStore<S>,
                "lease::scheduler::pause needs a store that models lease::PauseStore (pause, resume and paused, "
                "lease/store/concept.hpp): this store cannot keep an operator's pause");
  std::string job(name);
  return on_loop<bool>("pause", job, [this, job](bool) {
    if constexpr (PauseStore<S>) {
      const bool changed = store_.pause(job);
      store_answered();
      return changed;
    } else {
      return false;
    }
  });
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::resume(std::string_view name, missed_slots missed) {
  static_assert(PauseStore<S>,
                "lease::scheduler::resume needs a store that models lease::PauseStore (pause, resume and paused, "
                "lease/store/concept.hpp): this store cannot keep an operator's pause");
  std::string job(name);
  refuse_once_stopping("resume", job);
  if (missed == missed_slots::catch_up_latest) {
    std::scoped_lock lock(names_mutex_);
    if (!names_.contains(name))
      throw std::invalid_argument("lease::scheduler::resume: this instance has no job named \"" + job +
                                  "\", so it cannot catch up its latest slot (resume it through an instance that has "
                                  "it, or resume it with the store and let the slots missed while paused go)");
  }
  return on_loop<bool>("resume", job, [this, job, missed](bool looping) { return apply_resume(job, missed, looping); });
}

/// Lifts the pause in the store; a catch-up is claimed now (`claim_now`: we
/// are a step of the loop) or posted to the loop (deterministic mode, an
/// event sink). Before start() nothing is claimed: start() catches up the
/// latest slot within catch_up anyway.
template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::apply_resume(const std::string& name, missed_slots missed, bool claim_now) {
  bool was_paused = false;
  if constexpr (PauseStore<S>) {
    was_paused = store_.resume(name);
    store_answered();
  }
  if (!was_paused || missed != missed_slots::catch_up_latest || phase_ == phase::idle) return was_paused;
  const auto claim = [this, name] {
    if (auto it = job_index_.find(name); it != job_index_.end()) catch_up_after_resume(it->second);
  };
  if (claim_now) claim();
  else inbox_->post_call(claim);
  return was_paused;
}

/// The latest slot of job `j`, if it is less than catch_up old: claimed with
/// reason catch-up unless this instance claims, runs or watches it already,
/// or its slot timer is still to claim it.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::catch_up_after_resume(std::uint32_t j) {
  job& jb = jobs_[j];
  if (jb.removed || phase_ != phase::running) return;
  const time_point now = wall();
  const time_point latest = jb.schedule.latest(now);
  if (!(now - latest < jb.cfg.catch_up)) {
    emit(event_kind::late, {jb.name, latest}, 0, 0,
         "resumed with catch-up, but the latest slot of job " + jb.name + " (" + detail::fmt(latest) +
             ") is older than its catch_up (" + detail::fmt(jb.cfg.catch_up) +
             "), so it is not claimed now (if it did not run before the pause, it stays not run); the next slot runs as usual");
    return;
  }
  // A slot at or after the one the slot timer is armed for is due and that
  // timer's to claim, as a slot of the schedule (a resume in its claim
  // jitter): caught up too, it was claimed twice by this instance.
  if (latest >= jb.next_slot) return;
  const run_key run{jb.name, latest};
  for (const auto& [id, pc] : pending_)
    if (pc.job == j && pc.req.run.slot == latest) return;  // being claimed already
  for (const auto& [id, a] : attempts_)
    if (a.job == j && a.run == run) return;
  if (watches_.contains(run)) return;
  new_claim(j, latest, claim_reason::catch_up);
}

}  // namespace lease
