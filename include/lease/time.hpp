// lease/time.hpp — the library's one notion of time.
//
// Every time the library stores or compares is wall time in whole
// milliseconds since the Unix epoch (UTC). Which clock produced a value
// matters more than its type: lease expiry is always decided on the
// *store's* clock (see store/concept.hpp), slots on the instance's.
#pragma once

#include <chrono>

namespace lease {

/// Wall time, milliseconds since the Unix epoch, UTC.
using time_point = std::chrono::sys_time<std::chrono::milliseconds>;

/// All library durations are milliseconds.
using duration = std::chrono::milliseconds;

}  // namespace lease
