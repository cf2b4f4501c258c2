// lease/scheduler/lease_guard.hpp — the watchdog that stops a runner's handler
// at its self-abort deadline, whatever the loop thread is doing.
//
// Why a thread of its own: the loop thread makes every store call, and a
// store call can block (a black-holed connection, a stalled server) for
// longer than what is left of a lease. If the self-abort were only a loop
// timer it would fire late, after a backup may already have taken the run
// over: two handlers of one run at once. The watchdog waits for the earliest
// deadline among the running attempts and requests their stop tokens there.
//
// What it cannot do: if the whole host freezes (SIGSTOP, a paused VM), the
// watchdog freezes too, and on waking the handler's thread and the watchdog
// race. A handler that must not act after its lease calls
// run_context::lease_held() right before each side effect: that reads the
// monotonic clock itself and needs no other thread to have run. Writes fenced
// with run_context::fence are refused by a store that saw a newer attempt.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lease/scheduler/detail/attempt_lease.hpp"

namespace lease::detail {

class lease_guard {
 public:
  lease_guard() = default;
  lease_guard(const lease_guard&) = delete;
  lease_guard& operator=(const lease_guard&) = delete;
  ~lease_guard() { halt(); }

  /// Starts the watchdog thread (real mode), reading time with `now`.
  void run(std::shared_ptr<const steady_reader> now) {
    thread_ = std::jthread([this, now = std::move(now)](std::stop_token st) { watch(st, *now); });
  }
  /// Stops and joins the watchdog thread, if running.
  void halt() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    {
      std::scoped_lock lock(mutex_);
    }
    wake_.notify_all();
    thread_.join();
  }

  /// A new attempt's lease. The watchdog is woken only if this deadline
  /// comes before the wake-up it already planned: a lease's deadline is
  /// seconds away and the watchdog looks at least every max_sleep, so at
  /// thousands of attempts a second nearly none wakes it (each wake-up was
  /// a futex call and a context switch on the loop thread's path, and a
  /// scan of every running lease: 4 % of an instance's time at 10,000 fires
  /// a second under perf). Deadlines only move later (extend) or are
  /// revoked, which requests the stop itself: a planned wake-up is never
  /// too late.
  void add(std::shared_ptr<const attempt_lease> l) {
    bool wake = false;
    {
      std::scoped_lock lock(mutex_);
      wake = l->deadline() < planned_;
      leases_.push_back(std::move(l));
    }
    if (wake) wake_.notify_all();
  }
  void remove(const attempt_lease* l) {
    std::scoped_lock lock(mutex_);
    std::erase_if(leases_, [&](const auto& p) { return p.get() == l; });
  }
  /// Requests the stop of every attempt whose deadline has passed at `now`
  /// (deterministic mode calls this; the thread does the same on its own).
  void check(steady_point now) const {
    std::scoped_lock lock(mutex_);
    for (const auto& l : leases_) l->expire_if_due(now);
  }

 private:
  /// Longest sleep: bounds how late the watchdog notices a deadline when the
  /// condition variable's clock (CLOCK_MONOTONIC) and ours (CLOCK_BOOTTIME)
  /// part after a host suspend.
  static constexpr duration max_sleep{250};

  void watch(const std::stop_token& st, const steady_reader& now) {
    std::unique_lock lock(mutex_);
    while (!st.stop_requested()) {
      const steady_point t = now();
      steady_point next = t + max_sleep;
      for (const auto& l : leases_)
        if (!l->expire_if_due(t) && !l->expired()) next = std::min(next, l->deadline());
      planned_ = std::max(next, t + duration{1});
      wake_.wait_for(lock, planned_ - t);
      planned_ = steady_point::min();  // awake: the next add() finds the scan still to come
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<const attempt_lease>> leases_;
  /// When the sleeping watchdog wakes up next (min while it is awake or not
  /// running: every add() then notifies, which costs nothing without a waiter).
  steady_point planned_ = steady_point::min();
  std::jthread thread_;
};

}  // namespace lease::detail
