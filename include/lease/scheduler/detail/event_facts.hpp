// lease/scheduler/detail/event_facts.hpp — the structured fields an emission
// site knows besides kind, run, attempt, fence and message (lease/event.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lease/time.hpp"

namespace lease::detail {

/// Passed to scheduler::emit with designated initializers, so each site names
/// only what it knows; everything else stays "unknown".
struct event_facts {
  std::string runner{};  ///< empty: this instance for its own attempts' kinds, else unknown
  std::optional<duration> handler_duration{};
  std::optional<duration> takeover_latency{};
  std::optional<duration> claim_round_trip{};
  std::optional<std::uint64_t> skipped_slots{};
};

}  // namespace lease::detail
