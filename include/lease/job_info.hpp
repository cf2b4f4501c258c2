// lease/job_info.hpp — one line of scheduler::jobs(): a job as this instance
// sees it now (no store call is made for it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lease/job_options.hpp"
#include "lease/time.hpp"

namespace lease {

struct job_info {
  std::string name;
  /// The schedule as registered: `cron "0 3 * * *" Europe/Paris`,
  /// `every 1m` (lease::every::text()), or a custom schedule's own text() (else "custom schedule").
  std::string schedule;
  job_settings settings;  ///< in force for its next claims
  /// The next slot this instance will claim (its wall clock; the claim is
  /// sent up to claim_jitter later); nullopt if the schedule has none, or
  /// once stop() was taken (an instance that is stopping claims nothing).
  std::optional<time_point> next_slot;
  std::size_t running = 0;   ///< attempts of the job this instance runs now
  std::size_t watching = 0;  ///< runs of the job this instance backs up now
};

}  // namespace lease
