// lease/scheduler/manual_time.hpp — lease::is_manual_clock, which clocks put a
// scheduler in deterministic mode. It is defined beside the Clock policy
// (clock/concept.hpp), whose steady_now() reads it too; this header stays
// for code that includes it.
#pragma once

#include "lease/clock/concept.hpp"  // IWYU pragma: export
