// lease/options.hpp — an instance's timing and limits, validated at construction.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "lease/time.hpp"

namespace lease {

/// Settings of one scheduler instance. All instances of a cluster should use
/// the same values for a job (they agree on slots, leases and retention).
///
/// `heartbeat` left unset means min(5 s, lease / 6). Call `validated()` (the
/// scheduler does) to fill in defaults and reject impossible settings with a
/// `std::invalid_argument` that names the option and the rule.
struct options {
  duration lease{30'000};                ///< how long a runner is presumed alive after a heartbeat
  std::optional<duration> heartbeat{};   ///< renewal interval; must be < lease / 2
  std::uint32_t max_attempts = 3;        ///< starts of one run when runners die (≥ 1)
  duration catch_up{300'000};            ///< on start, claim the latest slot due less than this ago
  duration max_late{30'000};             ///< a new run may start until slot + max_late (store clock)
  std::uint32_t history_size = 10;       ///< ended runs per job the store keeps, at least
  duration claim_jitter{250};            ///< random delay after a slot before claiming
  duration catch_up_jitter{2'000};       ///< random delay before a catch-up claim
  duration stop_timeout{10'000};         ///< how long stop() waits for handlers
  std::string instance{};                ///< this instance's id; empty means hostname:pid
  std::uint64_t seed = 0;                ///< random seed for jitter and tokens; 0 means random

  /// The heartbeat interval in force: the one set, or min(5 s, lease / 6).
  [[nodiscard]] duration heartbeat_interval() const {
    if (heartbeat) return *heartbeat;
    return std::min(duration{5'000}, lease / 6);
  }

  /// A copy with defaults filled in; throws std::invalid_argument naming the
  /// option and the rule it breaks.
  [[nodiscard]] options validated() const {
    auto ms = [](duration d) { return std::to_string(d.count()) + " ms"; };
    auto fail = [](const std::string& what) { throw std::invalid_argument("lease::options: " + what); };
    if (lease <= duration::zero())
      fail("lease must be positive (it is " + ms(lease) + "): a zero lease expires at once");
    options o = *this;
    o.heartbeat = heartbeat_interval();
    if (*o.heartbeat <= duration::zero())
      fail("heartbeat must be positive (it is " + ms(*o.heartbeat) + "; lease " + ms(lease) +
           " is too short for the default lease / 6)");
    if (*o.heartbeat * 2 >= lease)
      fail("heartbeat (" + ms(*o.heartbeat) + ") must be under half of lease (" + ms(lease) +
           "), so a runner can miss a heartbeat without losing its run");
    if (max_attempts < 1) fail("max_attempts must be at least 1 (it is 0): no run could ever start");
    if (catch_up < duration::zero()) fail("catch_up must not be negative (it is " + ms(catch_up) + ")");
    if (max_late < duration::zero()) fail("max_late must not be negative (it is " + ms(max_late) + ")");
    if (claim_jitter < duration::zero() || catch_up_jitter < duration::zero())
      fail("claim_jitter and catch_up_jitter must not be negative");
    if (stop_timeout < duration::zero()) fail("stop_timeout must not be negative (it is " + ms(stop_timeout) + ")");
    return o;
  }
};

}  // namespace lease
