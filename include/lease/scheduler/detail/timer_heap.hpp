// lease/scheduler/detail/timer_heap.hpp — the scheduler's timers: a binary
// min-heap of (time, sequence, action), so each due event costs O(log timers).
// The scheduler keeps two: slot timers on wall time (which slot is due) and
// every other timer on monotonic time (intervals: lease/time.hpp says why).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "lease/time.hpp"

namespace lease::detail {

/// What a timer does when it fires; `job`, `slot` and `id` are its arguments.
enum class timer_kind : std::uint8_t {
  slot,           ///< claim the job's slot (scheduled); the only wall-time timer
  claim,          ///< (re)send a pending scheduled or catch-up claim `id`
  backup,         ///< re-check the watched run (job, slot) of generation `id`
  heartbeat,      ///< renew every running attempt of the instance
  lease_check,    ///< self-abort attempt `id` if no heartbeat was acked for a lease
  finish_retry,   ///< resend attempt `id`'s finish or release
  recover,        ///< start()'s catch-up for the job
  stop_deadline,  ///< abandon handlers still running
  trigger_poll,   ///< ask a TriggerStore for pending triggers (id 0: the periodic poll; 1: a retry)
};

template <class TimePoint>
struct basic_timer {
  TimePoint at{};
  std::uint64_t seq = 0;  ///< ties fire in the order they were set
  timer_kind kind = timer_kind::slot;
  std::uint32_t job = 0;
  time_point slot{};
  std::uint64_t id = 0;
};

/// Timers are never removed early: a timer whose target is gone (a stale
/// generation, an ended attempt) is recognised and ignored when it fires.
/// That keeps cancellation O(1) and the heap a plain priority_queue.
template <class TimePoint>
class timer_heap {
 public:
  using timer = basic_timer<TimePoint>;
  void push(timer t) {
    t.seq = next_seq_++;
    heap_.push(t);
  }
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] const timer& top() const { return heap_.top(); }
  timer pop() {
    timer t = heap_.top();
    heap_.pop();
    return t;
  }
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }

 private:
  struct later {
    bool operator()(const timer& a, const timer& b) const noexcept {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  std::priority_queue<timer, std::vector<timer>, later> heap_;
  std::uint64_t next_seq_ = 0;
};

/// Timers on monotonic time (intervals) and on wall time (slots).
using timer = basic_timer<steady_point>;
using slot_timer = basic_timer<time_point>;

}  // namespace lease::detail
