// test/chaos/audit.hpp — the audit log of the chaos suite: what an instance
// process writes (one line per thing that happened, one write(2) each, to a
// file opened O_APPEND) and what the driver reads back.
//
// A line is tab-separated:
//   mono_us wall_ms instance type kind job slot_ms attempt fence token message
// `mono_us` is CLOCK_MONOTONIC in µs: every process on this machine reads the
// same clock, and a fault that steps the wall clock (libfaketime) or freezes
// a process does not move it — it is what the checker compares. `wall_ms` is
// the process's own wall clock (faked in a faketime instance), for humans.
// Types: ready, bye (process), start, step, end (a handler), event (a
// lease::event; kind is its event_kind). For start `kind` is the claim
// reason, for step the step number, for end how it ended: returned, stopped.
#pragma once

#include <time.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace chaos {

/// The job set every instance runs (the driver counts slots from it too).
struct job_spec {
  const char* name;
  std::int64_t every_ms;  ///< lease::every(every_ms)
  int steps;              ///< handler steps of step_ms each
};
// "b" runs 3.5 s, longer than a lease: the faults hit its runner, so a
// backup takes over while the old handler would still be running unless the
// scheduler stops it. "a" is short and frequent: the cluster's pulse.
inline constexpr job_spec jobs[] = {{"a", 2000, 50}, {"b", 4000, 175}};
inline constexpr int step_ms = 20;

/// Timing shared by the instances (short, so a test takes seconds).
inline constexpr std::int64_t lease_ms = 2500;
inline constexpr std::int64_t heartbeat_ms = 400;

/// CLOCK_MONOTONIC in µs (comparable across processes on one machine).
inline std::int64_t mono_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

/// One parsed audit line.
struct line {
  std::int64_t mono = 0;  ///< µs, CLOCK_MONOTONIC
  std::int64_t wall = 0;  ///< ms, the writer's wall clock
  std::string instance, type, kind, job;
  std::int64_t slot = 0;  ///< ms since the epoch
  std::uint32_t attempt = 0;
  std::uint64_t fence = 0;
  std::string token, message;
};

/// Tabs and newlines would break the format: replaced by spaces.
inline std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

inline std::string format(const line& l) {
  std::ostringstream o;
  o << l.mono << '\t' << l.wall << '\t' << clean(l.instance) << '\t' << l.type << '\t' << clean(l.kind) << '\t'
    << clean(l.job) << '\t' << l.slot << '\t' << l.attempt << '\t' << l.fence << '\t' << clean(l.token) << '\t'
    << clean(l.message) << '\n';
  return o.str();
}

/// Parses one line (without its newline); nullopt for a torn or foreign line.
inline std::optional<line> parse(const std::string& text) {
  std::vector<std::string> f;
  std::string::size_type from = 0;
  for (;;) {
    const auto tab = text.find('\t', from);
    f.push_back(text.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
    if (tab == std::string::npos) break;
    from = tab + 1;
  }
  if (f.size() != 11) return std::nullopt;
  try {
    line l;
    l.mono = std::stoll(f[0]);
    l.wall = std::stoll(f[1]);
    l.instance = f[2];
    l.type = f[3];
    l.kind = f[4];
    l.job = f[5];
    l.slot = std::stoll(f[6]);
    l.attempt = static_cast<std::uint32_t>(std::stoul(f[7]));
    l.fence = std::stoull(f[8]);
    l.token = f[9];
    l.message = f[10];
    return l;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace chaos
