// lease/event.hpp — lease::event and lease::event_kind: what an instance tells
// its user about each run it touched, and why.
//
// Every outcome of a claim, a handler or a store failure is an event on the
// instance concerned, so a user can answer "why did this slot not run here?"
// from the events alone (overlap, late, superseded, attempts used up, lost).
// The message is a sentence for a tired on-call engineer, not a code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lease/run.hpp"
#include "lease/time.hpp"

namespace lease {

/// The kinds of event (doc/protocol.md says when each happens).
enum class event_kind : std::uint8_t {
  won,          ///< this instance won a scheduled claim, or a manual one (an operator's trigger: the message says "manual run"), and starts the handler
  backup,       ///< another instance runs it; this one watches the lease
  skip,         ///< not started: an earlier run of the job holds a live lease (overlap; a trigger: dropped in skip mode, waits in buffer_one), or it already ended
  late,         ///< not started: the claim reached the store after deadline + 10 s, or could not be sent in time
  superseded,   ///< not started: a newer run of the job already has state
  takeover,     ///< this instance won the next attempt of a run whose runner stopped renewing
  lost,         ///< this instance no longer owns its attempt (heartbeat or finish refused, or no ack for a lease)
  success,      ///< the handler returned and the store recorded success
  failed,       ///< the handler threw and the store recorded failed (never retried)
  handed_over,  ///< stop(): the handler threw after its stop request; the run was released to a backup
  interrupted,  ///< a watched run ended interrupted (attempts used up, or a newer run started first)
  abandoned,    ///< stop(): the handler was still running at the timeout; heartbeats stopped
  catch_up,     ///< this instance won the claim of a missed slot (reason catch-up): on start, or on a resume(job, missed_slots::catch_up_latest)
  store_error,  ///< a store call failed; the message says what the scheduler does about it
  early,        ///< not started yet: the slot is still in the store's future (this instance's clock runs ahead); claimed again at the store's time
  store_notice, ///< the store said something an operator should know (durability settings, a detected loss of state)
  paused,       ///< not started: the job is paused in the store (an operator's pause); it runs again from the first slot after a resume (a trigger is dropped)
  stopped,      ///< an operator stopped the job (leasectl stop) while this instance ran it: the run was handed over, the handler asked to stop; it stays stopped until a resume
};

[[nodiscard]] constexpr std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::won: return "won";
    case event_kind::backup: return "backup";
    case event_kind::skip: return "skip";
    case event_kind::late: return "late";
    case event_kind::superseded: return "superseded";
    case event_kind::takeover: return "takeover";
    case event_kind::lost: return "lost";
    case event_kind::success: return "success";
    case event_kind::failed: return "failed";
    case event_kind::handed_over: return "handed_over";
    case event_kind::interrupted: return "interrupted";
    case event_kind::abandoned: return "abandoned";
    case event_kind::catch_up: return "catch_up";
    case event_kind::store_error: return "store_error";
    case event_kind::early: return "early";
    case event_kind::store_notice: return "store_notice";
    case event_kind::paused: return "paused";
    case event_kind::stopped: return "stopped";
  }
  return "?";
}

/// One thing that happened to one run on one instance.
///
/// Besides its sentence, an event carries stable fields for a log pipeline,
/// a tracer or a metrics exporter (lease/event/json.hpp writes them all; the
/// optional component lease::prometheus counts them). A field that does not
/// apply to the event, or that the instance does not know, keeps its
/// "unknown" value: 0 for attempt and fence, empty for strings, nullopt for
/// the rest. A run is identified by (run.job, run.slot), one attempt of it by
/// (run.job, run.slot, attempt), and fence is unique per won attempt of a job.
///
/// Fields are only ever added, at the end: code that reads events keeps
/// working. (Code that builds events with positional braces should name the
/// fields it sets, since later fields may be added.)
struct event {
  event_kind kind = event_kind::won;
  run_key run;                ///< job and slot; both empty for an event about the store as a whole
  std::uint32_t attempt = 0;  ///< the attempt concerned, 0 when none is known
  std::uint64_t fence = 0;    ///< that attempt's fence, 0 when none is known
  std::string instance;       ///< the instance that emits the event
  time_point at{};            ///< the emitting instance's clock
  std::string message;        ///< a sentence saying why

  /// The instance that runs or ran the attempt concerned, as the store
  /// recorded it: this instance for its own attempts (won, takeover,
  /// catch_up, success, failed, handed_over, abandoned, lost, stopped), the other
  /// runner for backup, interrupted and a skip of a run that already ended.
  std::string runner;
  /// success, failed, handed_over, abandoned, lost, stopped: how long the handler ran,
  /// on the instance's monotonic clock, from when it was handed to the
  /// executor until the loop saw it end — or until this event, if it had not
  /// ended (abandoned, lost while running). nullopt when no handler started.
  std::optional<duration> handler_duration;
  /// takeover: store time from the end of the previous attempt's lease to
  /// the store's answer to this takeover claim. The lease end is the last one
  /// this instance read in the store's answers while it watched the run (a
  /// backup checks more often than a lease lasts, so it has read the final
  /// one unless its checks failed). nullopt when it never read one, or when
  /// the run ended before that lease end (a hand-over).
  std::optional<duration> takeover_latency;
  /// The claim's round trip on the instance's monotonic clock, from sending
  /// it to its answer, resolution of an unknown outcome included: on events
  /// that answer a claim (won, takeover, catch_up, backup, skip, late,
  /// superseded, interrupted, early, and lost when the answer came too late).
  std::optional<duration> claim_round_trip;
  /// late, when this instance's loop fell behind: how many slots it did not
  /// claim (counted up to 10,000).
  std::optional<std::uint64_t> skipped_slots;
};

}  // namespace lease
