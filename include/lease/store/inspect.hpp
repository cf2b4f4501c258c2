// lease/store/inspect.hpp — what an operator reads from a store: the jobs it
// holds state for, and a job's runs. Read-only; never part of the protocol
// (no instance decides anything from these answers), so a listing may be a
// little stale and may cost more than one round trip.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lease/run.hpp"
#include "lease/store/concept.hpp"

namespace lease {

/// One job as the store holds it.
struct stored_job {
  std::string name;
  /// The last won attempt's fence (0: no attempt won since the store was
  /// created or lost its state).
  std::uint64_t fence = 0;
  bool paused = false;                  ///< an operator's pause (PauseStore)
  /// An operator's trigger not answered yet: the slot of the manual run it
  /// asks for (TriggerStore).
  std::optional<time_point> trigger;
  std::optional<run_record> last_run;   ///< its run with the newest slot, if any has state
  friend bool operator==(const stored_job&, const stored_job&) = default;
};

/// A store an operator can look into (leasectl jobs, leasectl runs JOB):
///
///   s.list_jobs()             every job the store holds state for (a fence,
///                             a pause, a pending trigger or a run), ordered
///                             by name;
///   s.list_runs(job, limit)   the job's runs with state, newest slot first,
///                             at most `limit` of them.
///
/// Both answer exactly as rules::list_jobs / rules::list_runs would on the
/// same state (the conformance suite checks it).
template <class S>
concept InspectStore = Store<S> && requires(S& s, std::string_view job, std::size_t limit) {
  { s.list_jobs() } -> std::same_as<std::vector<stored_job>>;
  { s.list_runs(job, limit) } -> std::same_as<std::vector<run_record>>;
};

}  // namespace lease
