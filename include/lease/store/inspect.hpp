// lease/store/inspect.hpp — what an operator reads from a store: the jobs it
// holds state for, and a job's runs. Read-only; never part of the protocol
// (no instance decides anything from these answers), so a listing may be a
// little stale and may cost more than one round trip.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lease/run.hpp"
#include "lease/store/concept.hpp"

namespace lease {

/// One instance's registration of a job (RegistryStore): what the job looks
/// like there, and when that instance last said it still has it.
struct job_registration {
  std::string job;
  std::string instance;  ///< the instance's id (options::instance_id)
  std::string schedule;  ///< the schedule as text, as the instance has it ("*/5 * * * *", "every 30s")
  std::string zone;      ///< the time zone its slots are computed in ("UTC", "Europe/Paris"; "" for intervals)
  time_point last_seen{};  ///< store clock of its newest registration (set by the store)
  friend bool operator==(const job_registration&, const job_registration&) = default;
};

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
  /// The instances that registered the job (RegistryStore), by instance id.
  std::vector<job_registration> instances;
  friend bool operator==(const stored_job&, const stored_job&) = default;
};

/// A store an operator can look into (leasectl jobs, leasectl runs JOB):
///
///   s.list_jobs()             every job the store holds state for (a fence,
///                             a pause, a pending trigger, a run or a
///                             registration), ordered by name;
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

/// What purge() did, or why it did not.
enum class purge_outcome : std::uint8_t {
  purged,     ///< every trace of the job is gone: runs, fence, pause, trigger, registrations
  not_found,  ///< the store holds nothing for the job
  /// An instance registered the job within `unseen_for`: it may still have
  /// it (`instance` and `last_seen` say which and when). Nothing was changed.
  registered,
  /// A run of the job holds a live lease (`run`). Nothing was changed.
  running,
  /// The job's last attempt was won in this very millisecond of the store's
  /// clock, or later (fences must keep growing after the job is gone: a new
  /// attempt's fence is at least store-now in ms). Nothing was changed; a
  /// purge a moment later can succeed.
  too_soon,
};

struct purge_result {
  purge_outcome outcome = purge_outcome::not_found;
  std::optional<job_registration> instance;  ///< registered: the newest registration
  std::optional<run_record> run;             ///< running: the live run
  friend bool operator==(const purge_result&, const purge_result&) = default;
};

[[nodiscard]] constexpr std::string_view to_string(purge_outcome o) noexcept {
  switch (o) {
    case purge_outcome::purged: return "purged";
    case purge_outcome::not_found: return "not_found";
    case purge_outcome::registered: return "registered";
    case purge_outcome::running: return "running";
    case purge_outcome::too_soon: return "too_soon";
  }
  return "?";
}

/// A store that knows which instances have which jobs (doc/store-rules.md,
/// "Registration and purge"), so an operator can see them and remove a job
/// that no instance has any more:
///
///   s.register_jobs(regs)     upserts each (job, instance) registration with
///                             its schedule and zone, last_seen = store-now;
///                             one call for all of an instance's jobs;
///   s.purge(job, unseen_for)  deletes every trace of `job` (runs, fence,
///                             pause, trigger, registrations) unless an
///                             instance registered it within `unseen_for` or
///                             a run of it is live. Nothing is ever purged
///                             implicitly: only this call deletes a job.
///
/// Fences stay unique after a purge: a new attempt's fence is at least the
/// store's clock in ms (run_record::fence), and a job is purged only once
/// that clock is past its last fence (else `too_soon`).
template <class S>
concept RegistryStore = InspectStore<S> &&
    requires(S& s, std::span<const job_registration> regs, std::string_view job, duration unseen_for) {
      { s.register_jobs(regs) } -> std::same_as<void>;
      { s.purge(job, unseen_for) } -> std::same_as<purge_result>;
    };

}  // namespace lease
