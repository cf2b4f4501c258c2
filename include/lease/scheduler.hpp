// lease/scheduler.hpp — lease::scheduler, one instance of a cluster that runs
// recurring jobs: it claims slots, runs handlers, renews leases, backs up
// other instances' runs, and hands its runs over on stop().
//
// How to read it: this file is the class — its public interface, then its
// state. Each concern of the protocol lives in its own header under
// lease/scheduler/, named after it, and defines the members that carry it out:
//
//   scheduler/loop.hpp       the loop: timers, completions, stop requests, fairness
//   scheduler/claims.hpp     slots and claims: latest only, never early, every answer
//   scheduler/backups.hpp    watching other instances' runs and taking them over
//   scheduler/catch_up.hpp   start(): what was missed or left running
//   scheduler/attempts.hpp   running an attempt: heartbeats, self-abort, finish
//   scheduler/stopping.hpp   stop(): hand-over, abandon at the timeout
//   scheduler/triggers.hpp   an operator's "trigger now": picked up, claimed as manual
//   scheduler/registry.hpp   registering this instance's jobs; an operator's stop of a run
//   scheduler/lease_guard.hpp     the watchdog that stops a handler on time
//   scheduler/store_faults.hpp    store faults as episodes, not floods
//
// All store calls happen on one thread (the loop thread in real mode, the
// caller of poll() in deterministic mode); handlers report back through
// detail::inbox, so the scheduler's state needs no lock. Two kinds of time
// (lease/time.hpp): slots are due on the clock's wall time, every interval
// is timed on its monotonic time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lease/clock/concept.hpp"
#include "lease/detail/string_hash.hpp"
#include "lease/error.hpp"
#include "lease/event.hpp"
#include "lease/executor/concept.hpp"
#include "lease/job_info.hpp"
#include "lease/job_options.hpp"
#include "lease/missed_slots.hpp"
#include "lease/options.hpp"
#include "lease/overlap/concept.hpp"
#include "lease/run.hpp"
#include "lease/run_context.hpp"
#include "lease/schedule/concept.hpp"
#include "lease/scheduler/detail/any_schedule.hpp"
#include "lease/scheduler/detail/attempt_lease.hpp"
#include "lease/scheduler/detail/event_facts.hpp"
#include "lease/scheduler/detail/format.hpp"
#include "lease/scheduler/detail/inbox.hpp"
#include "lease/scheduler/detail/pending_claims.hpp"
#include "lease/scheduler/detail/run_key_hash.hpp"
#include "lease/scheduler/detail/instance_id.hpp"
#include "lease/scheduler/detail/store_clock_watch.hpp"
#include "lease/scheduler/detail/timer_heap.hpp"
#include "lease/scheduler/job_name.hpp"
#include "lease/scheduler/lease_guard.hpp"
#include "lease/scheduler/live_counts.hpp"
#include "lease/scheduler/manual_time.hpp"
#include "lease/scheduler/store_faults.hpp"
#include "lease/store/concept.hpp"
#include "lease/token.hpp"

namespace lease {

/// One instance of a cluster running recurring jobs over a shared `Store`.
///
/// Two modes, chosen by the clock:
/// * **deterministic** (`is_manual_clock<Clock>`, e.g. fake_clock, with
///   manual_executor or inline_executor): start() launches no thread; the
///   caller calls poll() whenever the clock reaches next_wakeup() (or a task
///   finished), and poll() does everything due. stop() only requests the
///   stop; poll() carries it out (handlers still running are abandoned when
///   the clock passes the timeout).
/// * **real** (e.g. system_clock + thread_pool): start() launches the
///   scheduler's loop thread and its watchdog; stop(timeout) blocks for at
///   most the timeout plus one store round trip.
///
/// Thread-safety: on() and on_event() before start() only; start() and
/// stop() from one controlling thread, never from a handler or an event sink
/// (stop() joins the loop thread that runs the sinks); add(), remove() and
/// jobs() from the controlling thread before start(), from any thread after
/// it (they are posted to the loop: real mode, the loop thread carries them
/// out at once; deterministic mode, the next poll() does); poll(), next_wakeup()
/// and check_leases() only in deterministic mode, from one thread. Event
/// sinks and store calls run on the loop thread (deterministic: the caller of
/// poll()); handlers on the executor. Not copyable or movable.
template <Store S, Clock C, Executor E, OverlapPolicy P>
class scheduler {
 public:
  using handler = std::function<void(run_context&)>;
  using sink = std::function<void(const event&)>;
  using store_type = S;
  using clock_type = C;
  using executor_type = E;
  using overlap_type = P;

  /// Validates `opts` (std::invalid_argument naming the option) and fills in
  /// its defaults: heartbeat, instance (hostname:pid), seed (random device).
  scheduler(S store, C clock, E executor, P overlap, options opts = {})
      : store_(std::move(store)),
        clock_(std::move(clock)),
        executor_(std::move(executor)),
        overlap_(std::move(overlap)),
        opts_(opts.validated()),
        margin_(abort_margin(opts_)),
        steady_(std::make_shared<const detail::steady_reader>([c = clock_] { return steady_now(c); })),
        inbox_(std::make_shared<detail::inbox>()) {
    if (opts_.instance.empty()) opts_.instance = detail::default_instance_id();
    if (opts_.seed == 0) opts_.seed = (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    // Tokens must differ between instances even when a cluster is configured
    // with one seed for all (reproducible jitter): a shared token would let
    // two instances each believe they hold the same attempt.
    rng_.seed(opts_.seed ^ std::hash<std::string>{}(opts_.instance));
  }
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;
  /// Real mode: stop(options.stop_timeout) if still running.
  ~scheduler() {
    if (loop_.joinable()) stop(opts_.stop_timeout);
    stop_listening();
  }

  /// Adds a job with the instance's settings; see the overload below.
  template <Schedule Sch>
  void add(std::string name, Sch schedule, handler fn) {
    add(std::move(name), std::move(schedule), std::move(fn), job_options{});
  }

  /// Adds a job with its own settings (`settings` overrides the instance's
  /// options, job_options.hpp). `name` must be valid (validate_job_name);
  /// `schedule` models lease::Schedule. Throws std::invalid_argument for a bad
  /// name, an empty handler or invalid settings (a sentence naming the job and
  /// the option), std::logic_error once stop() was called.
  ///
  /// Before start(), a name added twice is a mistake (std::invalid_argument).
  /// After start(), add() is an upsert by name: a new job starts as at
  /// start() (catch-up, then its slots); an existing one gets the new
  /// schedule, handler and settings for its future slots and claims (an
  /// attempt already running keeps its lease and heartbeat). Takes effect
  /// on the loop (deterministic mode: at the next poll()).
  template <Schedule Sch>
  void add(std::string name, Sch schedule, handler fn, const job_options& settings) {
    if (phase_ == phase::stopping || phase_ == phase::stopped)
      throw std::logic_error("lease::scheduler::add: stop() was called; no job can be added any more");
    validate_job_name(name);
    if (!fn) throw std::invalid_argument("lease: job \"" + name + "\" has an empty handler");
    job_settings cfg = settings.resolve(opts_, overlap_.mode(), name);
    auto sch = detail::any_schedule(std::move(schedule));
    auto h = std::make_shared<const handler>(std::move(fn));
    std::scoped_lock lock(names_mutex_);
    if (phase_ == phase::idle) {
      if (names_.contains(name)) throw std::invalid_argument("lease: job name \"" + name + "\" is already added");
      names_.insert(name);
      apply_add(std::move(name), std::move(sch), std::move(h), cfg, wall());
      return;
    }
    // Posted while names_mutex_ is held: the loop applies adds and removes in
    // the order their callers saw them. Its slots count from now, not from
    // when a busy loop gets to it: a slot due meanwhile is claimed (or named
    // in a late event), never silently passed over.
    const time_point asked = wall();
    if (!inbox_->post_add([this, name, sch = std::move(sch), h = std::move(h), cfg, asked]() mutable {
          apply_add(std::move(name), std::move(sch), std::move(h), cfg, asked);
        }))
      throw std::logic_error("lease::scheduler::add: stop() was called; no job can be added any more");
    names_.insert(std::move(name));  // only once accepted: a refused add() registers nothing
  }

  /// Removes job `name`: no slot of it is claimed any more and this
  /// instance stops backing up its runs. An attempt of it running here goes
  /// on to its end and its result is recorded (a removal never kills a
  /// handler); with `hand_over`, its stop token is requested, as on stop(),
  /// and a handler that then throws hands the run over to a backup. Returns
  /// whether a job of that name was added (and not removed since). Before
  /// start(), the job is simply dropped. Thread-safety: as add().
  bool remove(std::string_view name, bool hand_over = false) {
    std::scoped_lock lock(names_mutex_);
    auto it = names_.find(name);
    if (it == names_.end()) return false;
    names_.erase(it);
    if (phase_ == phase::idle) {
      apply_remove(std::string(name), hand_over);
      return true;
    }
    inbox_->post_call([this, n = std::string(name), hand_over] { apply_remove(n, hand_over); });
    return true;
  }

  /// An operator's "trigger now" (doc/protocol.md "Trigger now"): asks the
  /// store for one manual run of job `name` now, outside its schedule, and
  /// returns that run's slot (the store's clock at the request; while a
  /// trigger of the job is pending, the pending one's: a second call asks
  /// nothing more). The run is claimed like a slot, with reason `manual`, by
  /// every instance that has the job, this one at once: exactly one of them
  /// runs it, subject to the job's overlap mode, and a pause drops it. Its
  /// handler sees run_context::manual; its history entry run_record::manual.
  /// Needs a store that models TriggerStore (a compile-time error
  /// otherwise); an operator's tool without an instance calls the store's
  /// trigger(job) itself. Throws std::invalid_argument if this instance has
  /// no job `name`, std::logic_error once stop() was called, and the store's
  /// store_error if the request failed (then nothing may have been asked:
  /// calling again is safe, a pending trigger is not doubled). Real mode: the
  /// loop thread asks the store (the caller waits, at most its current step
  /// and one round trip); deterministic mode: the caller does, and the next
  /// poll() claims it. Thread-safety: as add().
  time_point trigger(std::string_view name);

  /// An operator's pause of job `name` in the store (doc/protocol.md
  /// "Pause and resume"), for every instance at once and across restarts:
  /// from now on every claim of it is answered `paused` (one `paused` event
  /// per slot an instance did not start); runs in progress go on. Returns
  /// whether it was not paused before. The job need not be one of this
  /// instance's. Needs a PauseStore (a compile-time error otherwise); throws
  /// std::logic_error once stop() was called and the store's store_error if
  /// the call failed (calling again is safe). Threads and modes: as trigger().
  bool pause(std::string_view name);

  /// Lifts the pause of job `name` (doc/protocol.md "Pause and resume");
  /// returns whether it was paused. `missed` says what happens to the slots
  /// that came due meanwhile: `skip` (default), none of them runs;
  /// `catch_up_latest`, the latest of them runs now if it is less than the
  /// job's catch_up old and has no run yet — this instance claims it at once
  /// (reason catch-up; exactly one instance can win it, by the store's
  /// rules), so it must have job `name` (std::invalid_argument otherwise).
  /// Nothing is caught up when the job was not paused. Errors, threads and
  /// modes: as pause().
  bool resume(std::string_view name, missed_slots missed = missed_slots::skip);

  /// This instance's own view of its jobs, in the order added: schedule as
  /// registered, settings in force, next slot, attempts running and runs
  /// watched here now. No store call. Real mode: the loop thread answers
  /// (the caller waits for its current step, at most one store round trip;
  /// an event sink, on the loop thread, is answered at once). Deterministic
  /// mode: adds and removes after start() show after the next poll().
  [[nodiscard]] std::vector<job_info> jobs() const;

  /// Calls `fn` for every event of kind `k` (on the loop thread). An
  /// exception from a sink is swallowed: a sink must not stop the scheduler.
  void on(event_kind k, sink fn) { sinks_.push_back({k, std::move(fn)}); }
  /// Calls `fn` for every event.
  void on_event(sink fn) { sinks_.push_back({std::nullopt, std::move(fn)}); }

  /// Starts the instance: catch-up per job, then its slots. Real mode:
  /// launches the loop thread and the watchdog. Throws std::logic_error if
  /// called twice.
  void start();

  /// Stops with options.stop_timeout; see stop(duration).
  void stop() { stop(opts_.stop_timeout); }
  /// Requests every running handler's stop token and claims nothing more. A
  /// handler that then throws is released (handed over to a backup at its
  /// next check), one that returns is finished as success, one still running
  /// at `timeout` is abandoned (its lease runs out; a backup takes over).
  /// Real mode: blocks until done (≤ timeout + one store round trip).
  /// Deterministic mode: returns at once; poll() carries the stop out.
  void stop(duration timeout);

  /// Deterministic mode: does everything due at the clock's now (timers,
  /// handler completions, a stop request). Returns how many timers and
  /// completions it handled. Throws std::logic_error while a loop thread runs.
  std::size_t poll() {
    if (loop_.joinable()) throw std::logic_error("lease::scheduler::poll: the loop thread polls in real mode");
    return poll_once();
  }

  /// Deterministic mode: what the watchdog thread does in real mode —
  /// requests the stop of every handler whose self-abort deadline has passed
  /// on the clock's monotonic time. A simulation calls it while this
  /// instance's loop is blocked in a slow store call. Thread-safe.
  void check_leases() const { guard_.check(steady_now(clock_)); }

  /// When poll() should next be called (wall time): now if a completion or a
  /// stop request waits, else the earliest timer; nullopt if nothing is pending.
  [[nodiscard]] std::optional<time_point> next_wakeup() const;

  /// True once stop() has been carried out (every handler ended or abandoned).
  [[nodiscard]] bool stopped() const noexcept { return phase_ == phase::stopped; }
  /// Attempts this instance is running (handler running or its finish pending). Thread-safe.
  [[nodiscard]] std::size_t running() const noexcept { return counts_->running.load(std::memory_order_relaxed); }
  /// Runs this instance watches as a backup. Thread-safe.
  [[nodiscard]] std::size_t watching() const noexcept { return counts_->watching.load(std::memory_order_relaxed); }
  /// running() and watching() as a shared object, for a reader that may
  /// outlive the scheduler (a metrics exporter). Thread-safe.
  [[nodiscard]] std::shared_ptr<const live_counts> counts() const noexcept { return counts_; }
  /// The validated options in force (instance id and seed filled in).
  [[nodiscard]] const options& settings() const noexcept { return opts_; }
  [[nodiscard]] const std::string& instance() const noexcept { return opts_.instance; }
  /// How long before its lease could end a runner stops its handler:
  /// min(lease / 10, 5 s), at least 1 ms, on its monotonic clock.
  [[nodiscard]] duration safety_margin() const noexcept { return margin_; }
  [[nodiscard]] S& store() noexcept { return store_; }
  [[nodiscard]] const C& clock() const noexcept { return clock_; }
  [[nodiscard]] E& executor() noexcept { return executor_; }

 private:
  enum class phase : std::uint8_t { idle, running, stopping, stopped };

  struct job {
    std::string name;
    detail::any_schedule schedule;
    std::shared_ptr<const handler> fn;  // shared with in-flight tasks
    job_settings cfg;
    time_point next_slot = time_point::max();  // the slot whose claim timer is armed
    /// The latest slot whose timer fired (claimed, or given up with an
    /// event): an add() with a new schedule arms the first slot after it and
    /// after the add, never this one again.
    time_point fired = time_point::min();
    std::optional<time_point> buffered;        // buffer_one: the newest skipped slot
    bool removed = false;  // kept (indices stay valid for timers and attempts), never claimed
    std::uint64_t gen = 0;  // bumped by every add and remove: older slot timers are stale
    /// Bumped by a remove only: a recover timer of an earlier life is stale.
    /// (Not by an upsert, which must not cancel the start's catch-up.)
    std::uint64_t life = 0;
    /// buffer_one: a manual run (its trigger's slot) refused as an overlap,
    /// and the run it waits for; claimed again when that run ends.
    std::optional<std::pair<time_point, run_key>> manual_buffered;
    std::optional<time_point> manual_told;  // the trigger whose wait was said (once, not at every re-claim)
    /// EndPushStore: the newest slot whose finish the store announced. Its
    /// claim, if this instance has not sent it yet, is not sent (claims.hpp).
    std::optional<time_point> end_announced;
    /// Who won the latest slot of the job this instance heard of: the winner
    /// claims the next slot early in the jitter window, the others late in it
    /// (claims.hpp, claim_delay).
    enum class last_win : std::uint8_t { unknown, this_instance, another } won_last = last_win::unknown;
    /// Manual claims (pending ids) waiting for a slot's claim of the job to
    /// go first (defer_manual), with no timer: wake_manual sends them again
    /// when a claim of the job's slots is answered or dropped. Never for the
    /// slot's timer: that is on wall time (send_pending claims a due slot
    /// at once instead).
    std::vector<std::uint64_t> parked_manual{};
  };
  /// A scheduled or catch-up claim, kept (same token) until answered or too late.
  struct pending_claim {
    std::uint32_t job = 0;
    claim_request req;
    std::uint32_t tries = 0;
    /// When this token was first sent: the earliest the store can have
    /// applied it, so the earliest its lease can have started.
    std::optional<steady_point> first_sent;
    /// Where it stands, for the event of a claim given up before its answer.
    [[nodiscard]] const char* state() const {
      return !first_sent ? "waiting out its claim jitter, or for the store's clock to reach its slot"
             : tries == 0 ? "queued for this loop turn's batch of claims"
                          : "sent, unanswered, and being retried after a store error; if the store applied it, its "
                            "lease runs out and a backup or the next slot deals with it";
    }
  };
  /// A run this instance backs up.
  struct watch {
    std::uint32_t job = 0;
    std::uint64_t gen = 0;  // identifies the one live backup timer
    /// A takeover claim whose answer never came: resent with the same token,
    /// so an attempt the store applied anyway is run, never left a phantom.
    std::optional<claim_request> in_doubt;
    steady_point in_doubt_sent{};
    std::optional<time_point> lease_end_seen{};  // the latest lease end the store answered (store clock)
    steady_point next_check{};                   // when the live backup timer fires
    bool paused_told = false;  // a takeover check was answered `paused` and said so once
    /// The attempt start() named in its `backup` event: a claim answered
    /// `running` by that attempt of this instance's id is not said again.
    std::uint32_t told_on_start = 0;
  };
  enum class step : std::uint8_t { running, finishing, releasing };
  /// One attempt this instance won and has not finished.
  struct attempt {
    std::uint32_t job = 0;
    run_key run;
    std::uint32_t number = 0;
    std::string token;
    std::uint64_t fence = 0;
    claim_reason reason = claim_reason::scheduled;
    std::shared_ptr<detail::attempt_lease> lease;  // self-abort deadline and stop source
    step at = step::running;
    run_status result = run_status::success;
    std::string why;  // the handler's exception message
    std::uint32_t tries = 0;
    bool checked = false;  // its lease_check timer is set
    /// Its finish or release may have been applied (outcome unknown) and no
    /// read-back has answered since: the next retry reads back, never resends.
    bool end_in_doubt = false;
    bool removed_hand_over = false;  // stop requested by remove(name, true)
    std::uint32_t handovers = 0;     // the run's hand-overs when this attempt was won
    duration lease_len{};  // the job's lease and heartbeat when the attempt began
    duration hb{};
    duration margin{};
    std::optional<steady_point> started{};  // handed to the executor (unset if it refused)
    std::optional<duration> ran{};           // the handler ended after this long
    /// For events: how long the handler ran, or has run so far.
    [[nodiscard]] std::optional<duration> handler_time(steady_point now) const {
      if (ran || !started) return ran;
      return now - *started;
    }
  };

  /// The first slot of `sch` at or after `t`, where start() and a new job's
  /// add() arm the slot timer: a slot at the very millisecond the instance
  /// starts is due then and runs as a slot of the schedule, as it would had
  /// it started 1 ms earlier. (Schedule::next is strictly after `t`: armed
  /// from it, with catch_up 0, such a slot was claimed by nothing and said
  /// by nothing.)
  static time_point first_slot_from(const detail::any_schedule& sch, time_point t) { return sch.next(t - duration{1}); }

  static duration abort_margin(const options& o) { return abort_margin(o.lease); }
  // At least 1 ms: a lease under 10 ms would otherwise have none, and its
  // runner's deadline would be the very millisecond a backup may win.
  static duration abort_margin(duration lease) {
    return std::max(std::min(lease / 10, duration{5'000}), duration{1});
  }

  // jobs: add, remove and jobs() carried out on the loop (loop.hpp)
  void apply_add(std::string name, detail::any_schedule sch, std::shared_ptr<const handler> fn, job_settings cfg,
                 time_point asked);
  void apply_remove(const std::string& name, bool hand_over);
  [[nodiscard]] std::vector<job_info> describe_jobs() const;

  // loop.hpp
  void run_loop();
  std::size_t poll_once();
  template <class F>
  void shielded(const run_key& where, F&& step, std::string_view origin = "from the store");
  std::size_t take_inbox();
  void recheck_watches(std::string_view job, std::optional<time_point> finished = std::nullopt);
  void note_announced_end(std::string_view job, time_point slot);
  bool announced_ended(std::uint32_t j, const claim_request& req);
  void stop_listening();
  std::optional<detail::timer> pop_due();
  void fire(const detail::timer& t);
  void push(detail::timer t) { timers_.push(t); }
  void push_after(duration d, detail::timer t) {
    t.at = steady() + d;
    timers_.push(t);
  }
  [[nodiscard]] time_point wall() const { return clock_.now(); }
  /// The store's clock now, as far as this instance can tell without
  /// asking, for one use only: dropping a claim or a slot as too late to
  /// send. Two estimates from the last claim answer, and the earlier one:
  /// the store's clock then plus the monotonic time since (blind to a step
  /// of this instance's wall clock), and this wall clock now plus the store's
  /// lead then (which follows a step of the store's clock when it is this
  /// host's wall clock, as SQLite's is). Each alone dropped, after one kind
  /// of step, a claim the store would still take; a claim sent too late
  /// costs only the store's `late` answer. Before any answer: the wall clock.
  [[nodiscard]] time_point store_clock_estimate() const {
    if (!store_seen_) return wall();
    const store_seen& s = *store_seen_;
    return std::min(s.store_now + std::chrono::duration_cast<duration>(steady() - s.arrived),
                    wall() + (s.store_now - s.wall_then));
  }
  [[nodiscard]] steady_point steady() const { return steady_now(clock_); }

  // claims.hpp
  void arm_slot(std::uint32_t j, time_point slot);
  void on_slot(std::uint32_t j, time_point slot, std::uint64_t gen);
  void new_claim(std::uint32_t j, time_point slot, claim_reason reason, duration delay = duration::zero());
  void drop_older_claims(std::uint32_t j, time_point slot);
  claim_request make_request(std::uint32_t j, run_key run, claim_reason reason);
  void send_pending(std::uint64_t id);
  void claim_answered(std::uint64_t id, std::optional<claim_result> res);
  void backup_answered(std::uint32_t j, const claim_request& req, steady_point sent, std::optional<claim_result> res);
  void flush_claims();
  /// The ends, then the claims gathered in this turn, each kind in one
  /// round trip: a run that ended frees its job for its next slot's claim.
  /// Also when a full claim batch goes out mid-turn (a review found a
  /// full batch sent before a finish of the same turn: the next slot was
  /// skipped as an overlap of the run that had ended).
  void flush_turn() {
    flush_ends();
    flush_claims();
  }
  std::optional<claim_result> try_claim(const claim_request& req);
  duration claim_delay(std::uint32_t j);
  void note_winner(std::uint32_t j, const claim_request& req, const claim_result& res, bool ours);
  void on_claim(std::uint32_t j, const claim_request& req, const claim_result& res, steady_point sent);
  void not_yet(std::uint32_t j, const claim_request& req, const claim_result& res);
  std::string interrupted_why(std::uint32_t j, const run_record& rec) const;

  // backups.hpp
  /// A lease as a store answer showed it: its end and the store's clock then.
  struct lease_seen {
    time_point end;
    time_point store_now;
  };
  void watch_run(std::uint32_t j, const run_key& run, bool check_now, std::optional<lease_seen> lease = std::nullopt);
  void unwatch(const run_key& run) {
    watches_.erase(run);
    recount();
  }
  bool own_attempt(const run_key& run) const;
  void on_backup(std::uint32_t j, time_point slot, std::uint64_t gen);

  // catch_up.hpp
  void on_recover(std::uint32_t j, std::uint64_t life);

  // attempts.hpp
  void begin_attempt(std::uint32_t j, const claim_request& req, const run_record& rec, steady_point sent,
                     std::optional<duration> takeover_latency = std::nullopt);
  void dispatch(std::uint32_t j, std::uint64_t id, run_context ctx);
  void on_heartbeat(duration interval);
  void on_lease_check(std::uint64_t id);
  template <class It>
  void lose(It it, const std::string& why);
  attempt& add_attempt(std::uint64_t id, const run_key& run);
  typename std::map<std::uint64_t, attempt>::iterator drop_attempt(typename std::map<std::uint64_t, attempt>::iterator it);
  void on_completion(const detail::completion& c);
  void on_finish_retry(std::uint64_t id);
  void send_end(std::uint64_t id);
  void flush_ends();
  void end_failed(std::uint64_t id, const store_error& e, bool reported);
  void end_answered(std::uint64_t id, bool ok);
  std::optional<bool> read_back(attempt& a);
  void after_attempt(std::uint32_t j);
  void release_buffer(std::uint32_t j);

  // triggers.hpp
  time_point apply_trigger(const std::string& name);
  void start_triggers();
  void on_trigger_poll(std::uint64_t retry);
  bool poll_triggers(const std::vector<std::string>& only);
  void take_trigger(std::uint32_t j, const run_key& run);
  void follow_manual_runs(const std::string& name);
  bool defer_manual(const pending_claim& pc) const;
  void wake_manual(std::uint32_t j);
  /// A pending claim of job `j` was answered or dropped: a manual claim
  /// parked behind it may go now.
  void claim_left(std::uint32_t j, claim_reason reason) {
    if (reason != claim_reason::manual) wake_manual(j);
  }
  void manual_overlap(std::uint32_t j, const claim_request& req, const claim_result& res);
  void release_manual(std::uint32_t j);

  // pausing.hpp
  void refuse_once_stopping(const char* what, const std::string& job);
  template <class T, class F>
  T on_loop(const char* what, const std::string& job, F fn);
  bool apply_resume(const std::string& name, missed_slots missed, bool claim_now);
  void catch_up_after_resume(std::uint32_t j);

  // registry.hpp
  void start_registry();
  void register_soon();
  void on_registration(std::uint64_t once);
  /// Why a heartbeat, finish or release of an attempt was refused, as its
  /// run reads back (registry.hpp, refused_because).
  enum class refusal : std::uint8_t {
    lost,     ///< the run is gone, another attempt's, or ended by someone else
    stopped,  ///< an operator's stop handed it over under this attempt's token
    ended,    ///< this attempt's own finish or release had applied (an earlier copy, late)
    unread,   ///< the read-back failed: nothing is known
  };
  refusal refused_because(attempt& a);
  template <class It>
  void operator_stopped(It it);

  // stopping.hpp
  void begin_stop(duration timeout);
  void on_stop_deadline();

  // helpers, defined in loop.hpp
  duration jitter(duration max);
  duration backup_delay(std::uint32_t j) {  // uniform in [1, 2] × the job's heartbeat
    const duration hb = jobs_[j].cfg.heartbeat;
    return hb + jitter(hb);
  }
  duration backoff(std::uint32_t tries, duration cap);
  void store_failed(std::string_view op, const run_key& run, const store_error& e);
  void store_answered();
  void observe_store_clock(steady_point sent, steady_point arrived, const run_key& run, time_point store_now);
  void emit(event_kind k, run_key run, std::uint32_t attempt_no, std::uint64_t fence, std::string message,
            detail::event_facts facts = {});
  /// The facts of an event that answers the claim being handled.
  [[nodiscard]] detail::event_facts answer_facts(std::string runner = {}) const {
    return {.runner = std::move(runner), .claim_round_trip = round_trip_};
  }
  void recount() noexcept {
    counts_->running.store(attempts_.size(), std::memory_order_relaxed);
    counts_->watching.store(watches_.size(), std::memory_order_relaxed);
  }

  S store_;
  C clock_;
  E executor_;
  [[no_unique_address]] P overlap_;
  options opts_;
  duration margin_;
  std::shared_ptr<const detail::steady_reader> steady_;
  std::mt19937_64 rng_;
  std::shared_ptr<detail::inbox> inbox_;
  bool listening_ = false;  // a PushStore calls our listener (start() to stop())
  bool listening_triggers_ = false;  // a PushTriggerStore calls our listener (start() to stop())
  std::uint32_t trigger_tries_ = 0;  // trigger polls failed in a row (a PushTriggerStore retries them)
  bool register_armed_ = false;  // a one-off registration (after an add) is due; more adds join it

  std::vector<job> jobs_;  // loop-owned after start(); a removed job stays, marked
  std::unordered_map<std::string, std::uint32_t, detail::string_hash, std::equal_to<>> job_index_;  // loop-owned: name → index in jobs_
  std::mutex names_mutex_;  // guards names_ (add and remove may come from any thread)
  std::set<std::string, std::less<>> names_;  // the jobs added and not removed, as callers see them
  std::vector<std::pair<std::optional<event_kind>, sink>> sinks_;
  detail::timer_heap<steady_point> timers_;    // intervals, on monotonic time
  detail::timer_heap<time_point> slot_timers_;  // slots, on wall time
  detail::pending_claims<pending_claim> pending_;
  /// BatchClaimStore: the claims due in this loop turn — pending scheduled
  /// and catch-up claims (by id) and backup checks — sent together when no
  /// timer is due any more, or the batch is full.
  struct batched_claim {
    bool backup = false;
    std::uint64_t pending_id = 0;  // a pending claim; its request is read at the send
    std::uint32_t job = 0;         // a backup check: its job, request and first send
    claim_request req;
    steady_point sent{};
  };
  std::vector<batched_claim> claim_batch_;
  std::vector<claim_request> claim_requests_spare_;  // flush_claims' array, kept between turns (empty)
  /// At most this many claims in one round trip: a loop far behind still
  /// sends its first claims without waiting for every due timer.
  static constexpr std::size_t max_claim_batch = 256;
  /// BatchFinishStore: the attempts whose finish or release is due in this
  /// loop turn, sent together (before the claims, so a run that ended frees
  /// its job for a claim in the same turn) — a burst of handlers that end
  /// together, or stop()'s hand-overs, cost one round trip, not one each.
  std::vector<std::uint64_t> end_batch_;
  std::map<run_key, watch> watches_;
  std::map<std::uint64_t, attempt> attempts_;  // changed only by add_attempt and drop_attempt
  // The runs of attempts_, counted: own_attempt() is asked for every claim
  // answered `running`, thousands a second at scale, and a scan of every
  // attempt for it was a seventh of the loop thread at 10,000 jobs/s.
  std::unordered_map<run_key, std::uint32_t, detail::run_key_hash> own_runs_;
  std::map<std::uint32_t, std::uint32_t> recover_tries_;
  detail::store_faults faults_;
  std::optional<time_point> quarantine_told_;  // the quarantine end already reported
  /// Runs claimed again with a new token after `early` or `quarantined`
  /// (claims.hpp, not_yet): the token they had before. A `running` answer
  /// with that token and this instance as runner is a delayed copy's win
  /// that nobody runs: released at once, so it costs neither a lease nor
  /// an attempt.
  std::map<run_key, std::string> retired_tokens_;
  std::optional<duration> round_trip_;  // of the claim whose answer is being handled (set by try_claim)
  detail::store_clock_watch store_clock_;  // the store's clock in claim answers, against steady()
  // The store's clock in the last claim answer, when (monotonic) that
  // answer arrived, and this instance's wall clock then. A slot's deadline
  // is on the store's clock (rules::claim), so whether a claim is too late
  // to send again is judged on it, not on a wall clock that may run minutes
  // ahead or behind, or be stepped (store_clock_estimate).
  struct store_seen {
    time_point store_now;
    steady_point arrived;
    time_point wall_then;
  };
  std::optional<store_seen> store_seen_;
  std::shared_ptr<live_counts> counts_ = std::make_shared<live_counts>();
  std::uint64_t next_id_ = 1;
  /// The next heartbeat tick of each interval in use by a running attempt:
  /// attempts with one heartbeat renew together, and every interval due at
  /// a tick goes in the same store call.
  std::map<duration, steady_point> hb_ticks_;
  std::atomic<std::thread::id> loop_thread_{};  // for jobs() called on the loop thread
  std::atomic<phase> phase_{phase::idle};
  mutable detail::lease_guard guard_;
  std::jthread loop_;  // last: joined before the members it uses are destroyed
};

}  // namespace lease

#include "lease/scheduler/attempts.hpp"
#include "lease/scheduler/backups.hpp"
#include "lease/scheduler/catch_up.hpp"
#include "lease/scheduler/claims.hpp"
#include "lease/scheduler/loop.hpp"
#include "lease/scheduler/pausing.hpp"
#include "lease/scheduler/registry.hpp"
#include "lease/scheduler/stopping.hpp"
#include "lease/scheduler/triggers.hpp"
