// lease/clock/fake.hpp — lease::fake_clock, time that moves only when told.
//
// A public reference model, not a test helper: users drive their own
// schedules and jobs with it. Copies share their time (it is a handle), so
// one fake_clock can be given to a store and to several instances.
#pragma once

#include <atomic>
#include <memory>

#include "lease/clock/concept.hpp"

namespace lease {

/// Manual wall and monotonic time. Starts with both reading `start` (default:
/// the epoch). Time passes by advance() (both move); the wall clock alone is
/// stepped by step() or a set() into the past. Thread-safe; copies share.
class fake_clock {
 public:
  explicit fake_clock(time_point start = time_point{}) : t_(std::make_shared<times>(start)) {}

  [[nodiscard]] time_point now() const noexcept { return time_point{duration{t_->wall.load()}}; }
  [[nodiscard]] steady_point steady() const noexcept { return steady_point{duration{t_->steady.load()}}; }

  /// Time passes: both clocks move forward by `d`. A negative `d` is a step
  /// of the wall clock back (as step(d)): monotonic time never goes back.
  void advance(duration d) noexcept {
    t_->wall.fetch_add(d.count());
    if (d > duration::zero()) t_->steady.fetch_add(d.count());
  }
  /// Time passes until the wall clock reads `t`; a `t` in the past is a step
  /// of the wall clock back (NTP, an operator) and leaves monotonic time alone.
  void set(time_point t) noexcept { advance(t - now()); }
  /// The wall clock alone jumps by `d`, forwards or back; no time passes.
  void step(duration d) noexcept { t_->wall.fetch_add(d.count()); }

 private:
  struct times {
    explicit times(time_point start)
        : wall(start.time_since_epoch().count()), steady(start.time_since_epoch().count()) {}
    std::atomic<duration::rep> wall;
    std::atomic<duration::rep> steady;
  };
  std::shared_ptr<times> t_;
};

static_assert(MonotonicClock<fake_clock>);
static_assert(MonotonicClock<skewed_clock<fake_clock>>);

}  // namespace lease
