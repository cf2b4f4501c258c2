// lease/scheduler/detail/attempt_lease.hpp — one attempt's lease as its runner
// sees it: a self-abort deadline on monotonic time and the handler's stop source.
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <stop_token>

#include "lease/time.hpp"

namespace lease::detail {

/// Reads an instance's monotonic time; callable from any thread.
using steady_reader = std::function<steady_point()>;

/// Shared by the loop thread (which moves the deadline on every acknowledged
/// heartbeat), the watchdog (which requests the stop at the deadline) and the
/// handler (run_context::lease_held()), so each reads it without waiting for
/// the others.
///
/// The deadline is the send time of the last acknowledged renewal (or of the
/// claim) + lease − margin. The store set the lease end from its clock when
/// that request *arrived*, which is no earlier than its send, so before the
/// deadline no other instance can have been let in (the margin covers the
/// rate difference between the two clocks and the handler's reaction time).
class attempt_lease {
 public:
  attempt_lease(std::shared_ptr<const steady_reader> now, steady_point deadline)
      : now_(std::move(now)), deadline_(deadline.time_since_epoch().count()) {}

  /// True while the lease is certainly held: monotonic now < the deadline.
  /// Reads the clock at the call, so a thread resumed from a freeze sees the
  /// loss before its next side effect. Requests the stop when it finds the
  /// deadline passed (whoever gets there first: handler, watchdog or loop).
  [[nodiscard]] bool held() const noexcept {
    if ((*now_)() < deadline()) return true;
    expire();
    return false;
  }
  [[nodiscard]] steady_point deadline() const noexcept { return steady_point{duration{deadline_.load()}}; }
  /// Moves the deadline later (an acknowledged renewal); never earlier.
  void extend(steady_point d) noexcept {
    auto cur = deadline_.load();
    const auto want = d.time_since_epoch().count();
    while (cur < want && !deadline_.compare_exchange_weak(cur, want)) {
    }
  }
  /// Requests the stop if the deadline has passed at `now`; true if it has.
  bool expire_if_due(steady_point now) const noexcept {
    if (now < deadline()) return false;
    expire();
    return true;
  }
  /// The store refused the attempt (fenced): the lease is gone now.
  void revoke() const noexcept {
    deadline_.store(std::numeric_limits<duration::rep>::min());
    expire();
  }
  /// True once the stop was requested because the deadline passed.
  [[nodiscard]] bool expired() const noexcept { return expired_.load(); }
  /// Requests the handler's stop (stop(), a refused renewal, the deadline).
  void request_stop() const noexcept { stop_.request_stop(); }
  [[nodiscard]] std::stop_token token() const noexcept { return stop_.get_token(); }

 private:
  void expire() const noexcept {
    expired_.store(true);
    stop_.request_stop();
  }
  std::shared_ptr<const steady_reader> now_;
  mutable std::atomic<duration::rep> deadline_;
  mutable std::atomic<bool> expired_{false};
  mutable std::stop_source stop_;
};

}  // namespace lease::detail
