// lease/clock/fake.hpp — lease::fake_clock, time that moves only when told.
//
// A public reference model, not a test helper: users drive their own
// schedules and jobs with it. Copies share one time (it is a handle), so one
// fake_clock can be given to a store and to several instances.
#pragma once

#include <atomic>
#include <memory>

#include "lease/clock/concept.hpp"

namespace lease {

/// Manual wall time. Starts at `start` (default: the epoch) and changes only by
/// set() or advance(). Thread-safe; copies share their time.
class fake_clock {
 public:
  explicit fake_clock(time_point start = time_point{})
      : ms_(std::make_shared<std::atomic<std::int64_t>>(start.time_since_epoch().count())) {}

  [[nodiscard]] time_point now() const noexcept { return time_point{duration{ms_->load()}}; }
  /// Jumps to `t` (backwards too: a clock may be stepped by NTP).
  void set(time_point t) noexcept { ms_->store(t.time_since_epoch().count()); }
  /// Moves forward (or back, for a negative `d`) by `d`.
  void advance(duration d) noexcept { ms_->fetch_add(d.count()); }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> ms_;
};

static_assert(Clock<fake_clock>);
static_assert(Clock<skewed_clock<fake_clock>>);

}  // namespace lease
