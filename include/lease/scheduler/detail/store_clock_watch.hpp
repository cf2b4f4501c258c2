// lease/scheduler/detail/store_clock_watch.hpp — notices a step of the
// store's clock from the claim answers that carry it.
//
// A claim answer carries the store's clock, read while the request was on
// its way: after its send and before its arrival, on this instance's
// monotonic clock. So between two answers the store's clock can have moved
// by at most the monotonic time from the first one's send to the second
// one's arrival, and by at least the time from the first one's arrival to
// the second one's send. Outside that range by more than a tolerance (1 s,
// plus 10 % of the interval for clocks that run fast or slow), the store's
// clock was stepped. Leases are on the store's clock, so a step ahead ends
// every lease early by as much (doc/protocol.md §2). Nothing can undo that
// here; the scheduler says it (a store_notice), so that whoever reads the
// events next to an overlap knows why.
#pragma once

#include <optional>

#include "lease/time.hpp"

namespace lease::detail {

class store_clock_watch {
 public:
  /// One answer: its request's send and arrival here, and the store's clock
  /// in it. Returns the step seen since the previous answer, at least as
  /// large as this (ahead: positive; back: negative), if there was one.
  std::optional<duration> observe(steady_point sent, steady_point arrived, time_point store_now) {
    std::optional<duration> step;
    if (last_) {
      const duration moved = store_now - last_->store_now;
      const duration most = arrived - last_->sent;
      const duration least = sent > last_->arrived ? sent - last_->arrived : duration::zero();
      const duration tolerance = duration{1000} + most / 10;
      if (moved > most + tolerance) step = moved - most;
      else if (moved < least - tolerance) step = moved - least;
    }
    last_ = reading{store_now, sent, arrived};
    return step;
  }

 private:
  struct reading {
    time_point store_now;
    steady_point sent, arrived;
  };
  std::optional<reading> last_;
};

}  // namespace lease::detail
