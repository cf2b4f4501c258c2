// lease/schedule/every.hpp — lease::every, a fixed interval anchored so all
// instances agree on the slots.
#pragma once

#include <stdexcept>
#include <string>

#include "lease/schedule/concept.hpp"

namespace lease {

/// Slots at anchor + k × interval for every integer k. The anchor (default:
/// the Unix epoch) is what makes every instance compute the same slots,
/// whenever each was started.
class every {
 public:
  /// Throws std::invalid_argument if `interval` is not positive.
  explicit every(duration interval, time_point anchor = time_point{}) : interval_(interval), anchor_(anchor) {
    if (interval_ <= duration::zero())
      throw std::invalid_argument("lease::every: the interval must be positive (it is " +
                                  std::to_string(interval_.count()) + " ms)");
  }

  [[nodiscard]] time_point latest(time_point t) const {
    auto k = floor_div((t - anchor_).count(), interval_.count());
    return anchor_ + interval_ * k;
  }
  [[nodiscard]] time_point next(time_point t) const { return latest(t) + interval_; }
  [[nodiscard]] duration interval() const noexcept { return interval_; }

 private:
  static constexpr long long floor_div(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  duration interval_;
  time_point anchor_;
};

static_assert(Schedule<every>);

}  // namespace lease
