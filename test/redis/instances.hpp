// test/redis/instances.hpp — the settings and handler of the instances in
// the redis tests that start two schedulers on one store and watch one hand
// a run over to the other (or spare a claim the other's finish made moot).
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "lease/options.hpp"
#include "lease/run_context.hpp"

namespace lease::testing {

/// An instance named `name` with a lease of `lease`, claiming each slot up
/// to `claim_jitter` after it is due and catching up slots missed within
/// `catch_up` when it starts (2 h: the hourly slot just past; 0: none, so
/// a second instance starts as the first one's backup), with no catch-up
/// jitter.
inline lease::options instance_options(std::string name, lease::duration lease, lease::duration claim_jitter,
                                       lease::duration catch_up) {
  lease::options o;
  o.lease = lease;
  o.claim_jitter = claim_jitter;
  o.catch_up = catch_up;
  o.catch_up_jitter = lease::duration{0};
  o.instance = std::move(name);
  return o;
}

/// A handler that runs until its stop token is requested, then throws: the
/// stop of its instance hands its run over to a backup.
inline void run_until_stopped(lease::run_context& ctx) {
  while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds{5});
  throw std::runtime_error("stopping");
}

}  // namespace lease::testing
