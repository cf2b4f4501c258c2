// lease/schedule/every.hpp — lease::every, a fixed interval anchored so all
// instances agree on the slots.
#pragma once

#include <stdexcept>
#include <string>

#include "lease/schedule/concept.hpp"

namespace lease {

/// Slots at anchor + k × interval for every integer k. The anchor (default:
/// the Unix epoch) is what makes every instance compute the same slots,
/// whenever each was started: `every(30s)` runs at :00 and :30 of each minute
/// (UTC), `every(24h)` at UTC midnight. Unlike lease::cron, no time zone or
/// DST is involved: the interval between slots is always exactly `interval`.
///
///   lease::every(std::chrono::minutes{5})                           // :00, :05, :10, …
///   lease::every(std::chrono::hours{1}, lease::time_point{std::chrono::minutes{15}})  // :15 each hour
///
/// A small value; its const members are safe to call concurrently, read no
/// clock and do not throw.
class every {
 public:
  /// Throws std::invalid_argument if `interval` is not positive.
  explicit every(duration interval, time_point anchor = time_point{}) : interval_(interval), anchor_(anchor) {
    if (interval_ <= duration::zero())
      throw std::invalid_argument("lease::every: the interval must be positive (it is " +
                                  std::to_string(interval_.count()) + " ms)");
  }

  /// The last slot at or before `t`.
  [[nodiscard]] time_point latest(time_point t) const noexcept {
    auto k = floor_div((t - anchor_).count(), interval_.count());
    return anchor_ + interval_ * k;
  }
  /// The first slot strictly after `t`.
  [[nodiscard]] time_point next(time_point t) const noexcept { return latest(t) + interval_; }
  /// The distance between slots.
  [[nodiscard]] duration interval() const noexcept { return interval_; }
  /// The slot every other slot is counted from.
  [[nodiscard]] time_point anchor() const noexcept { return anchor_; }
  /// The schedule as text, as an operator reads it (leasectl jobs):
  /// "every 30s", "every 5m", "every 1h", "every 1500ms" — the largest unit
  /// that divides the interval — and, when the anchor is not the epoch,
  /// " anchored 15m after 1970-01-01 00:00 UTC" (the anchor, in the same way).
  [[nodiscard]] std::string text() const {
    std::string out = "every " + amount(interval_);
    if (anchor_ != time_point{}) {
      const duration a = anchor_.time_since_epoch();
      out += a < duration::zero() ? " anchored " + amount(-a) + " before 1970-01-01 00:00 UTC"
                                  : " anchored " + amount(a) + " after 1970-01-01 00:00 UTC";
    }
    return out;
  }
  /// Intervals have no time zone: "" (lease::cron's zone() names its zone).
  [[nodiscard]] std::string zone() const { return {}; }

 private:
  static std::string amount(duration d) {
    const long long ms = d.count();
    if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
    if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
    if (ms % 1'000 == 0) return std::to_string(ms / 1'000) + "s";
    return std::to_string(ms) + "ms";
  }
  // Rounds toward minus infinity, so times before the anchor land on the grid too.
  static constexpr long long floor_div(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  duration interval_;
  time_point anchor_;
};

static_assert(Schedule<every>);

}  // namespace lease
