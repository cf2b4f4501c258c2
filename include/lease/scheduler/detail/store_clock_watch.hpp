// lease/scheduler/detail/store_clock_watch.hpp — notices a step of the
// store's clock from the claim answers that carry it.
//
// A claim answer carries the store's clock, read while the request was on
// its way: after its send and before its arrival, on this instance's
// monotonic clock. So between two answers the store's clock can have moved
// by at most the monotonic time from the first one's send to the second
// one's arrival, and by at least the time from the first one's arrival to
// the second one's send — in real time, at most 1/0.9 of the first and at
// least 1/1.1 of the second, for a monotonic clock that runs 10 % slow or
// fast (a worse one is beyond what the safety margin covers anyway).
// Outside that range by more than 1 s, the store's clock was stepped — if the answer after it agrees. One answer alone is
// not believed: a claim resolved by reading its run back may carry the time
// it was first applied, and on a Redis Cluster each master answers with its
// own clock; either would otherwise read as a step and its return. So a step
// is said at the second answer that shows it against the last answer
// before it, and an answer that the next one contradicts is dropped.
//
// Leases are on the store's clock, so a step ahead ends every lease early
// by as much (doc/protocol.md §2). The scheduler says so (a store_notice).
#pragma once

#include <algorithm>
#include <optional>
#include <utility>

#include "lease/time.hpp"

namespace lease::detail {

class store_clock_watch {
 public:
  /// One answer: its request's send and arrival here, and the store's clock
  /// in it. Returns the step, when this answer confirms one (ahead:
  /// positive; back: negative): the smaller of what the two answers showed.
  std::optional<duration> observe(steady_point sent, steady_point arrived, time_point store_now) {
    const reading now{store_now, sent, arrived};
    if (!base_) {
      base_ = now;
      return std::nullopt;
    }
    const std::optional<duration> step = step_between(*base_, now);
    std::optional<duration> confirmed;
    if (step && suspect_ && (*step > duration::zero()) == (suspect_->second > duration::zero()))
      confirmed = *step > duration::zero() ? std::min(*step, suspect_->second) : std::max(*step, suspect_->second);
    if (step && !suspect_) {
      suspect_ = {now, *step};  // the baseline stays until the next answer agrees
      return std::nullopt;
    }
    base_ = now;  // confirmed, contradicted, or no step at all: this answer is the new baseline
    suspect_.reset();
    return confirmed;
  }

 private:
  struct reading {
    time_point store_now;
    steady_point sent, arrived;
  };
  /// How far the store's clock moved from `a` to `b` beyond what the real
  /// time between them allows, if by more than 1 s. What is returned is
  /// no more than the step: the notice says "at least" that much.
  static std::optional<duration> step_between(const reading& a, const reading& b) {
    const duration moved = b.store_now - a.store_now;
    const duration mono_most = b.arrived - a.sent;
    const duration mono_least = b.sent > a.arrived ? b.sent - a.arrived : duration::zero();
    // Rounded so that the size said stays within the step: `most` up,
    // `least` down.
    const duration most = mono_most + (mono_most + duration{8}) / 9;      // real time, on a clock 10 % slow
    const duration least = mono_least - (mono_least + duration{10}) / 11;  // real time, on a clock 10 % fast
    constexpr duration jitter{1000};
    if (moved > most + jitter) return moved - most;
    if (moved < least - jitter) return moved - least;
    return std::nullopt;
  }
  std::optional<reading> base_;  ///< the last answer believed
  std::optional<std::pair<reading, duration>> suspect_;  ///< an answer that showed a step, and the step
};

}  // namespace lease::detail
