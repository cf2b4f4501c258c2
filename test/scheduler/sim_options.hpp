// test/scheduler/sim_options.hpp — the simulated cluster's start and
// options that the fault scenarios on lease::sim share.
#pragma once

#include "lease/options.hpp"
#include "lease/time.hpp"

namespace test {

using namespace std::chrono_literals;

/// The simulated cluster starts 1 ms after slot 1 h, not at the sim's
/// default start, that slot's very millisecond: a slot due at the instant of
/// start() is due and runs at once (scenarios.cpp), and these scenarios are
/// written for a first slot at 1 h + 60 s (catch_up 0 leaves slot 1 h).
inline const lease::time_point sim_start = lease::time_point{} + 1h + 1ms;

inline lease::options sim_options() {
  lease::options o;
  o.lease = 3s;  // heartbeat 500 ms, safety margin 300 ms
  o.catch_up = 0ms;  // start with no missed slot
  o.claim_jitter = 0ms;
  o.max_attempts = 3;
  return o;
}

}  // namespace test
