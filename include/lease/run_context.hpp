// lease/run_context.hpp — lease::run_context, what a handler is given for one attempt.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "lease/run.hpp"
#include "lease/scheduler/detail/attempt_lease.hpp"
#include "lease/time.hpp"

namespace lease {

/// What a handler gets for one attempt of one run.
///
/// `stop` is requested when the attempt must end early: stop() was called on
/// the instance (throw to hand the run over, or return to finish it), the
/// attempt was lost (fenced: another instance owns the run now), or its lease
/// may be about to end (no heartbeat acknowledged for lease − margin: the
/// instance's watchdog requests it then, even while the loop is stuck in a
/// store call). Before a side effect, check `lease_held()`: it reads the
/// clock itself, so a handler resumed from a freeze sees the loss at once,
/// before any other thread has run. Pass `fence` to downstream writes so they
/// can refuse a stale runner (it grows with every won attempt of the job and
/// never repeats).
struct run_context {
  std::string job;
  time_point slot{};
  std::uint32_t attempt = 0;
  claim_reason reason = claim_reason::scheduled;
  std::string token;
  std::uint64_t fence = 0;
  std::stop_token stop;
  /// The attempt's lease as this instance sees it (set by the scheduler).
  std::shared_ptr<const detail::attempt_lease> lease_state{};
  /// A manual run: an operator's trigger asked for it ("trigger now"), not
  /// the schedule. Also true for a later attempt of it (a takeover, whose
  /// `reason` is takeover); `slot` is then the trigger's time.
  bool manual = false;

  [[nodiscard]] run_key run() const { return {job, slot}; }
  /// Whether this attempt is of a manual run (see `manual`).
  [[nodiscard]] bool is_manual() const noexcept { return manual; }
  /// True while this attempt's lease is certainly still held: less than
  /// lease − margin of monotonic time has passed since the send of its last
  /// acknowledged heartbeat (or of its claim), and the store has not refused
  /// it. Answers at the moment of the call; false also requests `stop`.
  /// (A stop() of the instance leaves the lease held: the handler may still
  /// finish or hand over; `stop` says to wrap up.)
  [[nodiscard]] bool lease_held() const noexcept { return !lease_state || lease_state->held(); }
};

}  // namespace lease
