// lease/options.hpp — an instance's timing and limits, validated at construction.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "lease/time.hpp"

namespace lease {

/// Settings of one scheduler instance. All instances of a cluster should use
/// the same values for a job (they agree on slots, leases and retention).
///
/// `heartbeat` left unset means min(5 s, lease / 6). Call `validated()` (the
/// scheduler does) to fill in defaults and reject impossible settings with a
/// `std::invalid_argument` that names the option and the rule.
///
/// Limits (all durations are also checked not negative; lease and heartbeat
/// positive):
///
///   lease                                ≤ 1 day       (lease_limit)
///   heartbeat                            < lease / 2   (so ≤ 12 h)
///   catch_up, max_late                   ≤ 366 days    (window_limit)
///   claim_jitter, catch_up_jitter,
///   stop_timeout                         ≤ 1 day       (delay_limit)
///   trigger_poll                         > 0 and ≤ 1 day
///   register_every                       ≥ 1 s and ≤ 1 day
///
/// They are far above any sensible setting (a yearly job can still catch up
/// or be late by a year) and far below overflow: every sum the scheduler, the
/// rules and the stores form from options — now + lease, slot + max_late +
/// late_tolerance, slot + catch_up + late_tolerance, retain = max(max_late,
/// catch_up) + late_tolerance added to a slot, heartbeat × 2, now + backoff,
/// now + stop_timeout, slot + jitter — stays under about 2.6 × 10^14 ms for
/// any time in the years 1970–9999, where int64 milliseconds overflow only at
/// 9.2 × 10^18. (Without them, `lease = duration::max()` made the lease end
/// negative and a huge max_late made every claim late.)
struct options {
  duration lease{30'000};                ///< how long a runner is presumed alive after a heartbeat
  std::optional<duration> heartbeat{};   ///< renewal interval; must be < lease / 2
  std::uint32_t max_attempts = 3;        ///< starts of one run when runners die (≥ 1)
  duration catch_up{300'000};            ///< on start, claim the latest slot due less than this ago
  duration max_late{30'000};             ///< a new run may start until slot + max_late (store clock)
  std::uint32_t history_size = 10;       ///< ended runs per job the store keeps, at least
  duration claim_jitter{250};            ///< random delay after a slot before claiming (the last winner: first quarter)
  duration catch_up_jitter{2'000};       ///< random delay before a catch-up claim
  duration stop_timeout{10'000};         ///< how long stop() waits for handlers
  std::string instance{};                ///< this instance's id; empty means hostname:pid
  std::uint64_t seed = 0;                ///< random seed for jitter and tokens; 0 means random
  /// How often an instance asks a TriggerStore that cannot push
  /// (not a PushTriggerStore, e.g. SQLite) for operators' pending triggers of
  /// its jobs: one store call per instance per interval, even when idle, and
  /// a trigger is picked up within it. A store that pushes is never polled.
  duration trigger_poll{1'000};
  /// How often an instance registers its jobs with a RegistryStore (which
  /// instances have which job, and when each was last seen: leasectl jobs):
  /// one register_jobs call per instance per interval, even when idle, plus
  /// one at start() and after each add() at run time. An operator's purge
  /// --unseen-for must be well above it (several intervals: 10 min against
  /// the default 60 s), or a job an instance still has could be purged
  /// between two of its registrations.
  duration register_every{60'000};

  /// Largest lease validated() accepts: 1 day.
  static constexpr duration lease_limit{86'400'000};
  /// Largest catch_up and max_late validated() accepts: 366 days.
  static constexpr duration window_limit{366 * 86'400'000LL};
  /// Largest claim_jitter, catch_up_jitter and stop_timeout validated() accepts: 1 day.
  static constexpr duration delay_limit{86'400'000};

  /// The heartbeat interval in force: the one set, or min(5 s, lease / 6).
  [[nodiscard]] duration heartbeat_interval() const {
    if (heartbeat) return *heartbeat;
    return std::min(duration{5'000}, lease / 6);
  }

  /// A copy with defaults filled in; throws std::invalid_argument naming the
  /// option, the rule it breaks and the limit (see the limits above).
  [[nodiscard]] options validated() const {
    auto ms = [](duration d) { return std::to_string(d.count()) + " ms"; };
    auto fail = [](const std::string& what) { throw std::invalid_argument("lease::options: " + what); };
    // One range check per duration, before anything is computed from it.
    auto in_range = [&](const char* name, duration d, duration limit, const char* limit_text, const char* why) {
      if (d < duration::zero()) fail(std::string(name) + " must not be negative (it is " + ms(d) + ")");
      if (d > limit)
        fail(std::string(name) + " must be at most " + limit_text + " (" + ms(limit) + "; it is " + ms(d) +
             "): " + why);
    };
    if (lease <= duration::zero())
      fail("lease must be positive (it is " + ms(lease) + "): a zero lease expires at once");
    in_range("lease", lease, lease_limit, "1 day",
             "a runner that stops heartbeating would block its job that long; keep it a few heartbeats long");
    options o = *this;
    o.heartbeat = heartbeat_interval();
    if (*o.heartbeat <= duration::zero())
      fail("heartbeat must be positive (it is " + ms(*o.heartbeat) +
           (heartbeat ? std::string(")") : "; lease " + ms(lease) + " is too short for the default lease / 6)"));
    // heartbeat * 2 >= lease, without forming heartbeat * 2 (both are positive).
    if (*o.heartbeat >= lease - *o.heartbeat)
      fail("heartbeat (" + ms(*o.heartbeat) + ") must be under half of lease (" + ms(lease) +
           "), so a runner can miss a heartbeat without losing its run");
    if (max_attempts < 1) fail("max_attempts must be at least 1 (it is 0): no run could ever start");
    const char* retained = "stores keep every ended run for max(catch_up, max_late) after its slot";
    in_range("catch_up", catch_up, window_limit, "366 days", retained);
    in_range("max_late", max_late, window_limit, "366 days", retained);
    in_range("claim_jitter", claim_jitter, delay_limit, "1 day", "it delays every claim by up to that much");
    in_range("catch_up_jitter", catch_up_jitter, delay_limit, "1 day",
             "it delays every catch-up claim by up to that much");
    in_range("stop_timeout", stop_timeout, delay_limit, "1 day", "stop() may block that long");
    if (trigger_poll <= duration::zero())
      fail("trigger_poll must be positive (it is " + ms(trigger_poll) +
           "): it is how often a store that cannot push is asked for pending triggers");
    in_range("trigger_poll", trigger_poll, delay_limit, "1 day",
             "an operator's trigger may wait that long before an instance picks it up");
    if (register_every < duration{1'000})
      fail("register_every must be at least 1 s (it is " + ms(register_every) +
           "): it is how often every instance writes its registrations to the store, even when idle");
    in_range("register_every", register_every, delay_limit, "1 day",
             "a job's last_seen may be that old while an instance still has it, so purge --unseen-for would "
             "have to wait longer still");
    return o;
  }
};

// The limits keep every sum listed above far from overflow: the first
// millisecond after 9999, plus twice each limit, is still under half of the range.
static_assert(time_point{std::chrono::sys_days{std::chrono::year{10000} / 1 / 1}}.time_since_epoch() +
                      2 * (options::lease_limit + options::window_limit + options::delay_limit) <
                  duration::max() / 2,
              "the options' limits leave room for any time up to the year 9999");

}  // namespace lease
