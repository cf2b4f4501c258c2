// lease/clock/skewed.hpp — lease::skewed_clock<C>, another clock seen from a
// host whose clocks are off: a wall clock with an offset that can be stepped,
// and a monotonic clock whose rate can drift.
//
// Tests and lease::sim give each instance one, so that a property can put a
// cluster through what real hosts do: wall clocks that disagree and are
// stepped by NTP or an operator (which must never change an interval), and
// monotonic clocks that run slow or fast (an oscillator off by far more than
// the ppm NTP would slew, a VM whose clock source drifts). The second is what
// the runner's safety margin exists for: a runner measures its own lease on
// its own monotonic clock, and if that clock runs slow, it believes its lease
// lasts longer than the store does.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lease/clock/concept.hpp"
#include "lease/time.hpp"

namespace lease {

/// Reads another clock's wall time plus an offset, and (when the base is a
/// MonotonicClock) its monotonic time at a rate. step() moves the offset;
/// run_at() changes the rate from now on. Copies share both, so a test can
/// hand one to a scheduler and keep one to drive it.
template <Clock C>
class skewed_clock {
 public:
  skewed_clock(C base, duration offset) : base_(std::move(base)), s_(std::make_shared<shared>(offset)) {}

  [[nodiscard]] time_point now() const { return base_.now() + offset(); }
  /// Monotonic time: the base's, or since run_at(), the base's elapsed time
  /// scaled by the rate. Never goes back (L3): each rate change starts from
  /// the time this clock read at the change.
  [[nodiscard]] steady_point steady() const
    requires MonotonicClock<C>
  {
    const steady_point base = base_.steady();
    if (!s_->drifts.load(std::memory_order_acquire)) return base;
    // The mutex is taken only once a drift was set (tests and simulations);
    // an uncontended lock does not fail in practice, and steady() promises
    // not to throw, as std::chrono's clocks do.
    std::scoped_lock lock(s_->mutex);
    return s_->own_at + scaled(base - s_->base_at, s_->rate_ppm);
  }
  [[nodiscard]] duration offset() const { return duration{s_->offset.load()}; }
  /// Steps this clock's wall time by `d` (forwards or back); steady() is unchanged.
  void step(duration d) noexcept { s_->offset.fetch_add(d.count()); }

  /// From now on, monotonic time runs at `rate` × the base's: 0.95 loses
  /// 3 s a minute, 1.0 is the base's rate again. `rate` must be in (0, 10].
  void run_at(double rate)
    requires MonotonicClock<C>
  {
    if (!(rate > 0.0 && rate <= 10.0))
      throw std::invalid_argument("skewed_clock::run_at: the rate must be in (0, 10], got " + std::to_string(rate));
    const steady_point mine = steady();
    std::scoped_lock lock(s_->mutex);
    s_->own_at = mine;
    s_->base_at = base_.steady();
    s_->rate_ppm = static_cast<std::int64_t>(rate * 1e6 + 0.5);
    s_->drifts.store(true, std::memory_order_release);
  }
  /// The monotonic rate, in millionths of the base's (1,000,000: none).
  [[nodiscard]] std::int64_t rate_ppm() const {
    if (!s_->drifts.load(std::memory_order_acquire)) return ppm_one;
    std::scoped_lock lock(s_->mutex);
    return s_->rate_ppm;
  }
  [[nodiscard]] const C& base() const noexcept { return base_; }

  static constexpr std::int64_t ppm_one = 1'000'000;

  /// `d` of the base's time at `ppm`, rounded down (no overflow for any
  /// elapsed time under 290 years at rates up to 10).
  [[nodiscard]] static duration scaled(duration d, std::int64_t ppm) noexcept {
    const auto n = d.count();
    return duration{(n / ppm_one) * ppm + (n % ppm_one) * ppm / ppm_one};
  }

 private:
  struct shared {
    explicit shared(duration o) : offset(o.count()) {}
    std::atomic<duration::rep> offset;
    std::atomic<bool> drifts{false};
    std::mutex mutex;  // guards the three below
    steady_point own_at{};
    steady_point base_at{};
    std::int64_t rate_ppm = ppm_one;
  };
  C base_;
  std::shared_ptr<shared> s_;
};

}  // namespace lease
