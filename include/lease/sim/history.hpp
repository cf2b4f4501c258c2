// lease/sim/history.hpp — what a simulation records: every store operation,
// every handler's start and end, every event, every fault, and the invariant
// violations found while it ran (doc/invariants.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lease/event.hpp"
#include "lease/run.hpp"
#include "lease/time.hpp"

namespace lease::sim {

/// One store call as the store saw it (store clock).
struct store_op {
  enum class kind : unsigned char { claim, heartbeat, finish, release, unfinished, get };
  time_point at{};
  std::string instance;
  kind op = kind::claim;
  run_key run;
  std::string token;
  claim_reason reason = claim_reason::scheduled;  ///< claims only
  claim_outcome outcome = claim_outcome::none;    ///< claims only
  std::uint64_t batch = 0;  ///< sent by claim_many (claims) or finish_many (finishes, releases): that call's number, from 1
  bool accepted = false;                          ///< heartbeat, finish, release
  std::optional<run_record> after;                ///< the run's record after the call
};

/// One handler invocation (simulated time of the store's clock).
struct handler_run {
  std::string instance;
  run_key run;
  std::uint32_t attempt = 0;
  std::string token;
  std::uint64_t fence = 0;
  time_point start{};
  std::optional<time_point> end;
  std::string ended;  ///< "returned", "threw", "crashed", or empty while running
  /// The last moment it was executing (I9): before it saw its stop requested
  /// or its lease not held, ended, crashed or froze (a frozen handler does
  /// nothing; on waking it checks run_context::lease_held() first).
  time_point active_until{};
  bool observed_stop = false;  ///< it saw its stop requested or its lease gone
  /// How many faults history::faults held when it started: orders it against
  /// a fault in the same millisecond (a start and a loss at one store time).
  std::size_t faults_before = 0;
  /// The same when its attempt won in the store: earlier than
  /// faults_before when the win's reply came late or a busy executor took
  /// the task late (delay_starts).
  std::size_t faults_at_win = 0;
};

/// An operator's pause or resume of a job in the store (or, with an empty
/// job, the store's loss of state, which forgets every pause).
struct pause_change {
  time_point at{};         ///< store clock
  std::size_t before_op = 0;  ///< index into history::ops of the first call after it
  std::string job;
  bool paused = false;
};

/// An operator's trigger that made a new pending request (a request while
/// one was pending asks nothing more and is not recorded again).
struct trigger_request {
  time_point at{};      ///< store clock
  std::string job;
  time_point slot{};    ///< the manual run's slot (= `at`)
  std::string by;       ///< the instance whose trigger() asked, or "operator" (the store, from outside)
};

/// Where one event falls among the rest of the history: the emitting
/// instance's monotonic clock when it was told, and how many store calls
/// and faults the history held then (an event and a call in one
/// millisecond are ordered by these, not by time).
struct event_mark {
  steady_point steady{};
  std::size_t ops = 0;     ///< history::ops' size when the event was told
  std::size_t faults = 0;  ///< history::faults' size then
};

/// Everything one simulation recorded.
struct history {
  std::vector<store_op> ops;
  std::vector<handler_run> handlers;
  std::vector<event> events;
  std::vector<event_mark> event_marks;  ///< one per event, same index
  std::vector<std::pair<time_point, std::string>> faults;  ///< (store time, "crash n1"), …
  std::vector<std::string> violations;  ///< invariant breaches found, each a sentence
  std::vector<pause_change> pauses;     ///< pauses, resumes and losses of them, in order
  std::vector<trigger_request> triggers;  ///< operators' triggers, in order
  /// What an instance learned of one run from the store: a refusal of its
  /// heartbeat, finish or release whose answer reached it (a late copy's
  /// and a lost reply's refusal reached no one), or a read of the run (get)
  /// whose answer did. In order.
  struct run_news {
    std::size_t events = 0;  ///< events' size when it reached the instance: it came before events[events] on
    std::size_t ops = 0;     ///< ops' size then
    std::string instance;
    run_key run;
    std::optional<std::size_t> refusal;  ///< the refused call's index in `ops`; none for a read
    std::optional<run_record> record;    ///< the run as the answer showed it (after the refused call)
  };
  std::vector<run_news> news;
};

/// "report@60000" — a run as text (slot in ms since the epoch).
inline std::string to_text(const run_key& k) {
  return k.job + "@" + std::to_string(k.slot.time_since_epoch().count());
}

}  // namespace lease::sim
