// lease/run_context.hpp — lease::run_context, what a handler is given for one attempt.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>

#include "lease/run.hpp"
#include "lease/time.hpp"

namespace lease {

/// What a handler gets for one attempt of one run.
///
/// `stop` is requested when the attempt must end early: stop() was called on
/// the instance (throw to hand the run over, or return to finish it), or the
/// attempt was lost (fenced: another instance owns the run now). Check it
/// before side effects; pass `fence` to downstream writes so they can refuse
/// a stale runner (the fence grows with every won attempt of the job).
struct run_context {
  std::string job;
  time_point slot{};
  std::uint32_t attempt = 0;
  claim_reason reason = claim_reason::scheduled;
  std::string token;
  std::uint64_t fence = 0;
  std::stop_token stop;

  [[nodiscard]] run_key run() const { return {job, slot}; }
};

}  // namespace lease
