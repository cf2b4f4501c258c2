// cluster_demo/protocol.hpp — the demo's settings and the line protocol
// between an instance process and the orchestrator.
//
// An instance writes one line per event (and per handler start/end) to its
// stdout, a pipe read by the orchestrator. Fields are tab-separated so that
// the event messages (sentences) need no quoting; a line is written with one
// write(2) call, so lines from the scheduler's loop thread and from handler
// threads never interleave.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <lease/time.hpp>

namespace demo {

using namespace std::chrono_literals;

// The cluster's settings (the issue's): a job every 2 s, lease 3 s, heartbeat 500 ms.
inline constexpr const char* job_name = "report";
inline constexpr lease::duration interval = 2s;
inline constexpr lease::duration lease_time = 3s;
inline constexpr lease::duration heartbeat = 500ms;
inline constexpr std::uint32_t max_attempts = 3;
// Small jitters keep the demo short; they are what real instances use to spread their claims.
// The claim jitter is also the demo's margin: a runner killed right after its
// claim at slot + j has its lease run out at slot + j + 3 s, and the backups
// (checking every 0.5-1 s) must get there before the next-but-one slot's claim
// at slot + 4 s + j'. With j <= 100 ms both backups would have to draw their
// longest intervals to lose that race (well under 1 in 1000); if they do, the
// demo says so (doc/protocol.md §10: the "next slot comes first" order) instead of failing.
inline constexpr lease::duration claim_jitter = 100ms;
inline constexpr lease::duration catch_up_jitter = 300ms;
inline constexpr lease::duration stop_timeout = 2s;
// The handler: 12 steps of 100 ms of "work". Steps, not wall time, so a
// runner frozen mid-run still has work left when it is resumed.
inline constexpr int handler_steps = 12;
inline constexpr lease::duration step_time = 100ms;

/// One line from an instance.
///   E  an event: `what` is the event kind, `message` its sentence
///   H  a handler: `what` is start or end; `token` the attempt's token
///   F  fence probe: after `lost`, the instance tries to finish the attempt
///      with its old token; `what` is refused or accepted
///   R  the instance is up (`what` = ready) or leaving (`what` = stopping)
struct line {
  char kind = 'E';
  lease::time_point at{};  ///< the instance's wall clock (the host clock, like the store's)
  std::string instance;
  std::string what;
  std::string job;
  lease::time_point slot{};
  std::uint32_t attempt = 0;
  std::uint64_t fence = 0;
  std::string token;
  std::string message;
};

/// The line as text, newline-terminated; tabs and newlines inside fields become spaces.
std::string format(const line& l);
/// Parses what format() wrote; nullopt for anything else (e.g. a stray diagnostic).
std::optional<line> parse(std::string_view text);

/// "20:01:04" (UTC) — how the demo shows a slot.
std::string hms(lease::time_point t);

}  // namespace demo
