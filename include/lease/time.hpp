// lease/time.hpp — the library's one notion of time.
//
// Two kinds of time, never mixed:
// * wall time (time_point): whole milliseconds since the Unix epoch, UTC. It
//   says which slot is due, and it is what stores record. It can be stepped
//   (NTP, an operator, a VM resumed) forwards or backwards.
// * monotonic time (steady_point): milliseconds since an arbitrary origin,
//   never stepped. Every interval an instance waits for — heartbeats, backup
//   checks, the self-abort, retries, stop() — is measured on it, so a wall
//   clock step can neither delay a heartbeat nor hasten a takeover.
// Lease expiry itself is decided on the *store's* clock (store/concept.hpp).
#pragma once

#include <chrono>

namespace lease {

/// Wall time, milliseconds since the Unix epoch, UTC.
using time_point = std::chrono::sys_time<std::chrono::milliseconds>;

/// All library durations are milliseconds.
using duration = std::chrono::milliseconds;

/// Monotonic time, milliseconds since an arbitrary origin (see above). The
/// steady_clock parameter only names the kind of time: a fake clock's
/// monotonic reading has the same type.
using steady_point = std::chrono::time_point<std::chrono::steady_clock, duration>;

}  // namespace lease
