// lease/job_options.hpp — one job's own settings: the instance's options are
// the defaults, a job overrides the ones it sets.
//
// Why per job: a nightly report wants a long lease and catch-up, a
// once-a-minute ping wants a short lease and no catch-up; one instance runs
// both. Every instance of a cluster should give a job the same settings (they
// go into every claim, and the store applies them there).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "lease/options.hpp"
#include "lease/run.hpp"

namespace lease {

/// A job's settings in force: the instance's options with the job's
/// overrides applied, validated (scheduler::jobs() shows them).
struct job_settings {
  duration lease{};
  duration heartbeat{};
  std::uint32_t max_attempts = 0;
  overlap_mode overlap = overlap_mode::skip;
  duration catch_up{};
  duration max_late{};
  std::uint32_t history_size = 0;
  friend bool operator==(const job_settings&, const job_settings&) = default;
};

/// What `scheduler::add(name, schedule, handler, job_options)` overrides; a
/// field left unset takes the instance's value (options, and the scheduler's
/// compile-time OverlapPolicy for `overlap`). One exception: `heartbeat` left
/// unset when `lease` is set is the default for the job's lease,
/// min(5 s, lease / 6), not the instance's heartbeat (which may not suit a
/// shorter lease). The limits are those of lease::options.
struct job_options {
  std::optional<duration> lease{};
  std::optional<duration> heartbeat{};
  std::optional<std::uint32_t> max_attempts{};
  std::optional<overlap_mode> overlap{};
  std::optional<duration> catch_up{};
  std::optional<duration> max_late{};
  std::optional<std::uint32_t> history_size{};

  /// The settings of job `job` over the instance's validated options
  /// `defaults` and overlap mode. Throws std::invalid_argument with a sentence
  /// naming the job and the option, e.g. `lease::job_options of job "report":
  /// heartbeat (20000 ms) must be under half of lease (30000 ms), …`.
  [[nodiscard]] job_settings resolve(const options& defaults, overlap_mode default_overlap,
                                     std::string_view job) const {
    options o = defaults;
    if (lease) {
      o.lease = *lease;
      o.heartbeat = std::nullopt;  // the default for this lease, unless set below
    }
    if (heartbeat) o.heartbeat = *heartbeat;
    if (max_attempts) o.max_attempts = *max_attempts;
    if (catch_up) o.catch_up = *catch_up;
    if (max_late) o.max_late = *max_late;
    if (history_size) o.history_size = *history_size;
    const std::string who = "lease::job_options of job \"" + std::string(job) + "\": ";
    try {
      o = o.validated();
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      if (constexpr std::string_view prefix = "lease::options: "; what.starts_with(prefix))
        what.erase(0, prefix.size());
      throw std::invalid_argument(who + what);
    }
    const overlap_mode mode = overlap.value_or(default_overlap);
    switch (mode) {
      case overlap_mode::skip:
      case overlap_mode::allow:
      case overlap_mode::buffer_one:
      case overlap_mode::replace: break;
      default:
        throw std::invalid_argument(who + "overlap must be skip, allow, buffer_one or replace (it is " +
                                    std::to_string(static_cast<int>(mode)) + ")");
    }
    return {o.lease, *o.heartbeat, o.max_attempts, mode, o.catch_up, o.max_late, o.history_size};
  }
};

}  // namespace lease
