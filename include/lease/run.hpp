// lease/run.hpp — the vocabulary of runs: keys, records, claims and their answers.
//
// These are plain values shared by the rules, every store and the scheduler.
// Field names are defined in doc/protocol.md §1 (Words); they are part of the
// public contract.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lease/time.hpp"

namespace lease {

/// One run of one job: the job's name and the slot (scheduled time) it is for.
struct run_key {
  std::string job;
  time_point slot{};

  friend bool operator==(const run_key&, const run_key&) = default;
  friend auto operator<=>(const run_key&, const run_key&) = default;
};

/// The stored status of a run. "Expired" is not a status: it is a `running`
/// run whose lease end is in the past on the store's clock.
enum class run_status : std::uint8_t { running, success, failed, interrupted };

/// Why an instance sends a claim. `manual`: an operator's trigger (a
/// TriggerStore's pending request, whose slot is the request's time); it wins
/// only while that request is pending, so exactly one instance runs it.
enum class claim_reason : std::uint8_t { scheduled, catch_up, takeover, manual };

/// What a claim does about an earlier run of the same job that holds a live lease.
/// `skip` refuses the new run (answer `overlap`); `allow` ignores earlier runs;
/// `buffer_one` answers like `skip` in the store (the scheduler re-claims the
/// skipped slot once the blocking run ends); `replace` marks the live run
/// `interrupted` and starts the new one (its runner is fenced at its next heartbeat).
enum class overlap_mode : std::uint8_t { skip, allow, buffer_one, replace };

/// Everything the store records about one run (its latest attempt).
struct run_record {
  std::string job;
  time_point slot{};
  std::uint32_t attempt = 0;   ///< 1 for the first won claim, +1 per takeover
  std::string token;           ///< the current attempt's client-made token
  /// Grows with every won attempt of the job and never repeats, even after
  /// the store lost its state: a won attempt's fence is max(previous + 1,
  /// store-now in ms since the epoch), so it only needs a store clock that
  /// does not go back (and fewer than one won attempt per ms per job).
  std::uint64_t fence = 0;
  std::string runner;          ///< instance id of the current attempt
  run_status status = run_status::running;
  time_point lease_end{};      ///< store clock; live while store-now < lease_end
  bool released = false;       ///< the current attempt handed the run over (stop())
  std::uint32_t handovers = 0; ///< releases so far; they do not count against max_attempts
  /// Made by an operator's trigger (claim_reason::manual), not by the schedule.
  bool manual = false;

  [[nodiscard]] run_key key() const { return {job, slot}; }
  /// Live on the store's clock `now`: running and lease end still ahead.
  [[nodiscard]] bool live(time_point now) const {
    return status == run_status::running && now < lease_end;
  }
  friend bool operator==(const run_record&, const run_record&) = default;
};

/// One claim, as an instance sends it to the store.
struct claim_request {
  run_key run;
  std::string runner;       ///< this instance's id
  std::string token;        ///< fresh, made by the client for this claim only
  claim_reason reason = claim_reason::scheduled;
  duration lease{30'000};
  std::uint32_t max_attempts = 3;
  /// Latest store time at which a *new* run may start; the store answers
  /// `late` when its clock is past deadline + late_tolerance.
  time_point deadline{};
  overlap_mode overlap = overlap_mode::skip;
  /// Ended runs of the job to keep (the newest ones) when pruning.
  std::uint32_t history_size = 10;
  /// How long after its slot a new claim for a run may still arrive
  /// (max(max_late, catch_up)); a run is never pruned before
  /// slot + retain + late_tolerance on the store's clock.
  duration retain{300'000};
};

/// The store's answer to a claim.
enum class claim_outcome : std::uint8_t {
  won,         ///< this request's token is now the run's current attempt
  running,     ///< the run has a live lease: become a backup
  overlap,     ///< skip mode: an earlier run of the job holds a live lease
  late,        ///< store-now > deadline + tolerance: a stale claim, refused
  superseded,  ///< a newer run of the job already has state
  finished,    ///< the run has ended (possibly just now: marked interrupted)
  none,        ///< takeover of a run that has no state: nothing was created
  /// The slot is still in the store's future (store-now < slot − early_tolerance):
  /// the claimer's clock runs ahead of the store's. Nothing was created; claim
  /// again once the store's clock reaches the slot (`store_now` says how far).
  early,
  /// The store lost its state (restart without persistence, eviction, failover
  /// to a lagging replica, a replaced file) and refuses to start any attempt
  /// until one lease has passed since it noticed, so that every runner of a
  /// forgotten run has stopped first. `record.lease_end` is when the
  /// quarantine ends (store clock); time_point::max() for a new run of a slot
  /// that could have had state before the loss (slot ≤ loss + early
  /// tolerance): it may have run already, so it never starts. Nothing was created.
  quarantined,
  /// The job is paused in the store (an operator's pause, until a resume):
  /// this claim would have won (a new run, or the next attempt of an expired
  /// one) and did not. Nothing changed; the record carries only the
  /// request's key.
  paused,
};

/// A claim's answer, the record it concerns, and the store's clock when it answered.
struct claim_result {
  claim_outcome outcome = claim_outcome::none;
  /// won: the new attempt; running: the live run; overlap: the blocking run;
  /// finished: the ended run; late/superseded/none/early/paused: the
  /// request's key only (quarantined: and the quarantine's end).
  run_record record;
  time_point store_now{};
};

/// Whether an answer starts a handler on the instance that claimed: a win,
/// or `running` with the claim's own token and runner, not released (a
/// resent claim whose first copy won while its reply was lost). The
/// scheduler starts handlers by this test, and a store that checks a win
/// after its claim ran (Redis reads its loss marker beside the claim
/// script) holds exactly these answers to that check.
[[nodiscard]] inline bool starts_handler(const claim_request& req, const claim_result& res) {
  return res.outcome == claim_outcome::won ||
         (res.outcome == claim_outcome::running && res.record.token == req.token &&
          res.record.runner == req.runner && !res.record.released);
}

/// One element of a batched heartbeat.
struct heartbeat_request {
  run_key run;
  std::string token;
  duration lease{30'000};
};

/// One element of a batched end of runs (BatchFinishStore::finish_many): the
/// run's result, or no result for a release (a hand-over, as release()).
struct finish_request {
  run_key run;
  std::string token;
  std::optional<run_status> status;  ///< nullopt: release the run
};

/// Tolerance added to a claim's deadline, and to retention, on the store's clock.
inline constexpr duration late_tolerance{10'000};

/// How far ahead of the store's clock a slot may be and still be claimed: a
/// claimer whose clock runs ahead by more is answered `early` (no slot starts
/// early by the store's clock beyond this).
inline constexpr duration early_tolerance{1'000};

[[nodiscard]] constexpr std::string_view to_string(run_status s) noexcept {
  switch (s) {
    case run_status::running: return "running";
    case run_status::success: return "success";
    case run_status::failed: return "failed";
    case run_status::interrupted: return "interrupted";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(claim_reason r) noexcept {
  switch (r) {
    case claim_reason::scheduled: return "scheduled";
    case claim_reason::catch_up: return "catch-up";
    case claim_reason::takeover: return "takeover";
    case claim_reason::manual: return "manual";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(claim_outcome o) noexcept {
  switch (o) {
    case claim_outcome::won: return "won";
    case claim_outcome::running: return "running";
    case claim_outcome::overlap: return "overlap";
    case claim_outcome::late: return "late";
    case claim_outcome::superseded: return "superseded";
    case claim_outcome::finished: return "finished";
    case claim_outcome::none: return "none";
    case claim_outcome::early: return "early";
    case claim_outcome::quarantined: return "quarantined";
    case claim_outcome::paused: return "paused";
  }
  return "?";
}

[[nodiscard]] constexpr std::string_view to_string(overlap_mode m) noexcept {
  switch (m) {
    case overlap_mode::skip: return "skip";
    case overlap_mode::allow: return "allow";
    case overlap_mode::buffer_one: return "buffer_one";
    case overlap_mode::replace: return "replace";
  }
  return "?";
}

}  // namespace lease
