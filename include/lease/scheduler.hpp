// lease/scheduler.hpp — lease::scheduler, one instance of a cluster that runs
// recurring jobs: it claims slots, runs handlers, renews leases, backs up
// other instances' runs, and hands its runs over on stop() (DESIGN.md §4).
//
// How to read this file: the public interface comes first. The private part
// is organised by the timers of detail/timer_heap.hpp — every behaviour is
// one `on_<timer>` member, and every store answer goes through `on_claim`.
// All store calls happen on one thread (the loop thread in real mode, the
// caller of poll() in deterministic mode); handlers report back through
// detail::inbox, so the scheduler's state needs no lock.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lease/clock/concept.hpp"
#include "lease/error.hpp"
#include "lease/event.hpp"
#include "lease/executor/concept.hpp"
#include "lease/options.hpp"
#include "lease/overlap/concept.hpp"
#include "lease/run.hpp"
#include "lease/run_context.hpp"
#include "lease/schedule/concept.hpp"
#include "lease/scheduler/detail/any_schedule.hpp"
#include "lease/scheduler/detail/format.hpp"
#include "lease/scheduler/detail/inbox.hpp"
#include "lease/scheduler/detail/instance_id.hpp"
#include "lease/scheduler/detail/timer_heap.hpp"
#include "lease/scheduler/job_name.hpp"
#include "lease/scheduler/manual_time.hpp"
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
///   scheduler's loop thread; stop(timeout) blocks for at most the timeout
///   plus one store round trip.
///
/// Thread-safety: add(), on() and on_event() before start() only; start() and
/// stop() from one controlling thread, never from a handler or an event sink
/// (stop() joins the loop thread that runs the sinks); poll() and next_wakeup() only in
/// deterministic mode, from one thread. Event sinks and store calls run on
/// the loop thread (deterministic: the caller of poll()); handlers on the
/// executor. Not copyable or movable (the loop thread refers to it).
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
        hb_(*opts_.heartbeat),
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
  }

  /// Adds a job. `name` must be unique and valid (validate_job_name);
  /// `schedule` models lease::Schedule. Throws std::invalid_argument for a bad
  /// or duplicate name, std::logic_error after start().
  template <Schedule Sch>
  void add(std::string name, Sch schedule, handler fn) {
    if (phase_ != phase::idle) throw std::logic_error("lease::scheduler::add: add jobs before start()");
    validate_job_name(name);
    if (!names_.insert(name).second) throw std::invalid_argument("lease: job name \"" + name + "\" is already added");
    if (!fn) throw std::invalid_argument("lease: job \"" + name + "\" has an empty handler");
    jobs_.push_back(job{std::move(name), detail::any_schedule(std::move(schedule)),
                        std::make_shared<const handler>(std::move(fn)), time_point::max(), std::nullopt});
  }

  /// Calls `fn` for every event of kind `k` (on the loop thread). An
  /// exception from a sink is swallowed: a sink must not stop the scheduler.
  void on(event_kind k, sink fn) { sinks_.push_back({k, std::move(fn)}); }
  /// Calls `fn` for every event.
  void on_event(sink fn) { sinks_.push_back({std::nullopt, std::move(fn)}); }

  /// Starts the instance: catch-up per job (DESIGN.md §4), then its slots.
  /// Real mode: launches the loop thread. Throws std::logic_error if called twice.
  void start() {
    if (phase_ != phase::idle) throw std::logic_error("lease::scheduler::start: already started");
    phase_ = phase::running;
    const time_point now = clock_.now();
    for (std::uint32_t j = 0; j < jobs_.size(); ++j) {
      push({now, 0, detail::timer_kind::recover, j});
      arm_slot(j, jobs_[j].schedule.next(now));
    }
    if constexpr (!is_manual_clock<C>) loop_ = std::jthread([this] { run_loop(); });
  }

  /// Stops with options.stop_timeout; see stop(duration).
  void stop() { stop(opts_.stop_timeout); }
  /// Requests every running handler's stop token and claims nothing more. A
  /// handler that then throws is released (handed over to a backup at its
  /// next check), one that returns is finished as success, one still running
  /// at `timeout` is abandoned (its lease runs out; a backup takes over).
  /// Real mode: blocks until done (≤ timeout + one store round trip).
  /// Deterministic mode: returns at once; poll() carries the stop out.
  void stop(duration timeout) {
    if (phase_ == phase::idle) {
      phase_ = phase::stopped;
      return;
    }
    inbox_->request_stop(timeout);
    if (loop_.joinable()) loop_.join();
  }

  /// Deterministic mode: does everything due at the clock's now (timers,
  /// handler completions, a stop request). Returns how many timers and
  /// completions it handled. Throws std::logic_error while a loop thread runs.
  std::size_t poll() {
    if (loop_.joinable()) throw std::logic_error("lease::scheduler::poll: the loop thread polls in real mode");
    return poll_once();
  }

  /// When poll() should next be called: now if a completion or a stop request
  /// waits, else the earliest timer; nullopt if nothing is pending.
  [[nodiscard]] std::optional<time_point> next_wakeup() const {
    if (phase_ == phase::stopped || phase_ == phase::idle) return std::nullopt;
    if (inbox_->has_work()) return clock_.now();
    if (timers_.empty()) return std::nullopt;
    return timers_.top().at;
  }

  /// True once stop() has been carried out (every handler ended or abandoned).
  [[nodiscard]] bool stopped() const noexcept { return phase_ == phase::stopped; }
  /// Attempts this instance is running (handler running or its finish pending).
  [[nodiscard]] std::size_t running() const noexcept { return attempts_.size(); }
  /// Runs this instance watches as a backup. (running() and watching() read
  /// loop state: call them in deterministic mode, or after stop().)
  [[nodiscard]] std::size_t watching() const noexcept { return watches_.size(); }
  /// The validated options in force (instance id and seed filled in).
  [[nodiscard]] const options& settings() const noexcept { return opts_; }
  [[nodiscard]] const std::string& instance() const noexcept { return opts_.instance; }
  [[nodiscard]] S& store() noexcept { return store_; }
  [[nodiscard]] const C& clock() const noexcept { return clock_; }
  [[nodiscard]] E& executor() noexcept { return executor_; }

 private:
  enum class phase : std::uint8_t { idle, running, stopping, stopped };

  struct job {
    std::string name;
    detail::any_schedule schedule;
    std::shared_ptr<const handler> fn;  // shared with in-flight tasks
    time_point next_slot;               // the slot whose claim timer is armed
    std::optional<time_point> buffered; // buffer_one: the newest skipped slot
  };
  /// A scheduled or catch-up claim, kept (same token) until answered or too late.
  struct pending_claim {
    std::uint32_t job = 0;
    claim_request req;
    std::uint32_t tries = 0;
  };
  /// A run this instance backs up.
  struct watch {
    std::uint32_t job = 0;
    std::uint64_t gen = 0;  // identifies the one live backup timer
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
    std::stop_source stop;
    time_point last_ack_send{};  // instance clock: send time of the last acked renewal
    step at = step::running;
    run_status result = run_status::success;
    std::string why;  // the handler's exception message
    std::uint32_t tries = 0;
    bool checked = false;  // its lease_check timer is set
  };

  // ---- the loop ----------------------------------------------------------

  void run_loop() {
    for (;;) {
      poll_once();
      if (phase_ == phase::stopped) return;
      std::unique_lock lock(inbox_->mutex);
      auto woken = [&] { return !inbox_->done.empty() || inbox_->stop_request.has_value(); };
      if (woken()) continue;
      if (timers_.empty()) {
        inbox_->ready.wait(lock, woken);
      } else {
        const duration wait = timers_.top().at - clock_.now();
        if (wait > duration::zero()) inbox_->ready.wait_for(lock, wait, woken);
      }
    }
  }

  std::size_t poll_once() {
    std::size_t handled = 0;
    // Until nothing is due: a timer may complete a task at once (an inline
    // executor), and a completion may set a timer that is already due.
    for (std::size_t round = 1; round != 0 && phase_ != phase::idle && phase_ != phase::stopped;) {
      round = 0;
      std::vector<detail::completion> done;
      std::optional<duration> stop_request;
      {
        std::scoped_lock lock(inbox_->mutex);
        done.swap(inbox_->done);
        stop_request = std::exchange(inbox_->stop_request, std::nullopt);
      }
      if (stop_request && phase_ == phase::running) begin_stop(*stop_request);
      for (auto& c : done) {
        on_completion(c);
        ++round;
      }
      // The clock is re-read every time: a store call may take a while (and
      // in the simulation, a delayed call advances the clock).
      while (phase_ != phase::stopped && !timers_.empty() && timers_.top().at <= clock_.now()) {
        const detail::timer t = timers_.pop();
        try {
          fire(t);
        } catch (const std::exception& e) {
          // A store must report failures as lease::store_error (Store law L6);
          // anything else is a bug in it, but must not kill the instance.
          emit(event_kind::store_error, {t.job < jobs_.size() ? jobs_[t.job].name : std::string{}, t.slot}, 0, 0,
               std::string("unexpected exception from the store: ") + e.what() +
                   " (stores must throw lease::store_error); this step is skipped");
        }
        ++round;
      }
      handled += round;
    }
    if constexpr (NoticeStore<S>)
      for (std::string& n : store_.take_notices()) emit(event_kind::store_notice, {}, 0, 0, std::move(n));
    return handled;
  }

  void fire(const detail::timer& t) {
    using detail::timer_kind;
    const bool claiming = phase_ == phase::running;  // nothing new once stopping
    switch (t.kind) {
      case timer_kind::slot: if (claiming) on_slot(t.job, t.slot); break;
      case timer_kind::claim: if (claiming) send_pending(t.id); break;
      case timer_kind::backup: if (claiming) on_backup(t.job, t.slot, t.id); break;
      case timer_kind::recover: if (claiming) on_recover(t.job); break;
      case timer_kind::heartbeat: on_heartbeat(); break;
      case timer_kind::lease_check: on_lease_check(t.id); break;
      case timer_kind::finish_retry: on_finish_retry(t.id); break;
      case timer_kind::stop_deadline: on_stop_deadline(); break;
    }
  }

  // ---- slots and claims --------------------------------------------------

  void arm_slot(std::uint32_t j, time_point slot) {
    jobs_[j].next_slot = slot;
    push({slot + jitter(opts_.claim_jitter), 0, detail::timer_kind::slot, j, slot});
  }

  void on_slot(std::uint32_t j, time_point slot) {
    job& jb = jobs_[j];
    if (slot != jb.next_slot) return;
    // A loop that fell behind (frozen process, long store call) claims only
    // the latest due slot: catch-up is one run, never a queue.
    const time_point now = clock_.now();
    const time_point latest = jb.schedule.latest(now);
    if (latest > slot) {
      emit(event_kind::late, {jb.name, slot}, 0, 0,
           "slot not claimed: this instance's loop did not run from " + detail::fmt(slot) + " to " +
               detail::fmt(now) + " (frozen or overloaded); only the latest slot, " + detail::fmt(latest) +
               ", is claimed");
      slot = latest;
    }
    arm_slot(j, jb.schedule.next(slot));
    new_claim(j, slot, claim_reason::scheduled);
  }

  void new_claim(std::uint32_t j, time_point slot, claim_reason reason) {
    const std::uint64_t id = next_id_++;
    pending_claim& pc = pending_[id];
    pc.job = j;
    pc.req = make_request({jobs_[j].name, slot}, reason);
    send_pending(id);
  }

  claim_request make_request(run_key run, claim_reason reason) {
    claim_request req;
    req.run = std::move(run);
    req.runner = opts_.instance;
    req.token = make_token(rng_);
    req.reason = reason;
    req.lease = opts_.lease;
    req.max_attempts = opts_.max_attempts;
    req.deadline = req.run.slot + (reason == claim_reason::catch_up ? opts_.catch_up : opts_.max_late);
    req.overlap = overlap_.mode();
    req.history_size = opts_.history_size;
    req.retain = std::max(opts_.max_late, opts_.catch_up);
    return req;
  }

  /// Sends pending claim `id`; on a store error retries it (same token, so a
  /// claim that did apply is recognised) until its deadline has passed.
  void send_pending(std::uint64_t id) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    pending_claim& pc = it->second;
    const time_point sent = clock_.now();
    std::optional<claim_result> res = try_claim(pc.req);
    if (!res) {
      const duration wait = backoff(pc.tries++);
      if (clock_.now() + wait > pc.req.deadline + late_tolerance) {
        emit(event_kind::late, pc.req.run, 0, 0,
             std::string(to_string(pc.req.reason)) + " claim dropped: the store did not answer before the deadline " +
                 detail::fmt(pc.req.deadline) + " (+10 s); the run is not started by this instance");
        pending_.erase(it);
        return;
      }
      push({clock_.now() + wait, 0, detail::timer_kind::claim, pc.job, pc.req.run.slot, id});
      return;
    }
    const pending_claim done = std::move(pc);
    pending_.erase(it);
    on_claim(done.job, done.req, *res, sent);
  }

  /// One claim call. A store_error is reported; an outcome_unknown is
  /// resolved by reading the run back and comparing tokens (never a blind
  /// retry). Returns nullopt when the outcome is still not known.
  std::optional<claim_result> try_claim(const claim_request& req) {
    try {
      return store_.claim(req);
    } catch (const store_error& e) {
      if (e.code() == errc::outcome_unknown) {
        try {
          std::optional<run_record> rec = store_.get(req.run);
          if (rec && rec->token == req.token && rec->runner == req.runner) {
            claim_result r;
            r.outcome = claim_outcome::won;
            r.record = *rec;
            r.store_now = clock_.now();
            emit(event_kind::store_error, req.run, rec->attempt, rec->fence,
                 std::string("claim outcome unknown (") + e.what() +
                     "); read the run back: the stored token is ours, so this instance won");
            return r;
          }
        } catch (const store_error&) {
          // fall through: still unknown, retried with the same token
        }
      }
      emit(event_kind::store_error, req.run, 0, 0,
           std::string(to_string(req.reason)) + " claim failed: " + e.what() + " — " + advice(e) +
               "; retried with the same token");
      return std::nullopt;
    }
  }

  /// Every claim answer lands here.
  void on_claim(std::uint32_t j, const claim_request& req, const claim_result& res, time_point sent) {
    const run_record& rec = res.record;
    const bool ours = rec.token == req.token && rec.runner == req.runner;
    if (res.outcome == claim_outcome::won || (ours && res.outcome == claim_outcome::running)) {
      begin_attempt(j, req, rec, sent);
      return;
    }
    const std::string what = std::string(to_string(req.reason)) + " claim: ";
    switch (res.outcome) {
      case claim_outcome::won: break;
      case claim_outcome::running:
        if (req.reason != claim_reason::takeover && !own_attempt(rec.key()))
          emit(event_kind::backup, rec.key(), rec.attempt, rec.fence,
               what + "attempt " + std::to_string(rec.attempt) + " runs on " + rec.runner +
                   " with a live lease; this instance is its backup");
        watch_run(j, rec.key(), false);
        break;
      case claim_outcome::overlap:
        emit(event_kind::skip, req.run, 0, 0,
             what + "skipped as an overlap: the earlier run " + detail::fmt(rec.slot) + " (attempt " +
                 std::to_string(rec.attempt) + " on " + rec.runner + ") still holds a live lease" +
                 (overlap_.mode() == overlap_mode::buffer_one ? "; buffered until it ends" : ""));
        watch_run(j, rec.key(), false);
        watch_run(j, req.run, false);  // if the earlier run ends and someone claims this one
        if (overlap_.mode() == overlap_mode::buffer_one &&
            (!jobs_[j].buffered || *jobs_[j].buffered < req.run.slot))
          jobs_[j].buffered = req.run.slot;
        break;
      case claim_outcome::late:
        emit(event_kind::late, req.run, 0, 0,
             what + "refused as late: it reached the store at " + detail::fmt(res.store_now) +
                 ", after the deadline " + detail::fmt(req.deadline) + " + 10 s (store clock)");
        break;
      case claim_outcome::superseded:
        emit(event_kind::superseded, req.run, 0, 0,
             what + "a newer run of the job already started; runs start in slot order, so this one never will");
        break;
      case claim_outcome::finished:
        unwatch(rec.key());
        if (rec.status == run_status::interrupted)
          emit(event_kind::interrupted, rec.key(), rec.attempt, rec.fence, what + interrupted_why(rec));
        else if (req.reason != claim_reason::takeover)
          emit(event_kind::skip, req.run, rec.attempt, rec.fence,
               what + "the run already ended (" + std::string(to_string(rec.status)) + " on " + rec.runner + ")");
        release_buffer(j);
        break;
      case claim_outcome::none:
        unwatch(req.run);
        break;
      case claim_outcome::early:
      case claim_outcome::quarantined: {
        // Not yet: the store's clock has not reached the slot, or it lost
        // its state and waits a lease. Same token, sent again then.
        const time_point at = res.outcome == claim_outcome::early ? req.run.slot : res.record.lease_end;
        const duration wait = std::max(at - res.store_now, duration{1}) + jitter(opts_.claim_jitter);
        emit(res.outcome == claim_outcome::early ? event_kind::early : event_kind::store_error, req.run, 0, 0,
             what + (res.outcome == claim_outcome::early
                         ? "refused as early: the store's clock is " + detail::fmt(res.store_now) +
                               ", before the slot; this instance's clock runs ahead"
                         : "refused: the store lost its state and starts nothing until " +
                               detail::fmt(res.record.lease_end) + ", when every runner of a forgotten run has stopped") +
                 "; claimed again in " + detail::fmt(wait));
        const std::uint64_t id = next_id_++;
        pending_[id] = pending_claim{j, req, 0};
        push({clock_.now() + wait, 0, detail::timer_kind::claim, j, req.run.slot, id});
        break;
      }
    }
  }

  std::string interrupted_why(const run_record& rec) const {
    if (rec.attempt >= rec.handovers + opts_.max_attempts)
      return "marked interrupted: " + std::to_string(rec.attempt - rec.handovers) +
             " runner(s) died, max_attempts (" + std::to_string(opts_.max_attempts) + ") used up";
    return "marked interrupted: a newer run of the job started first, so this one is not retried";
  }

  // ---- backups -----------------------------------------------------------

  void watch_run(std::uint32_t j, const run_key& run, bool check_now) {
    if (own_attempt(run)) return;
    auto [it, fresh] = watches_.try_emplace(run, watch{j, 0});
    if (!fresh && !check_now) return;
    it->second.gen = next_id_++;
    const time_point at = check_now ? clock_.now() : clock_.now() + backup_delay();
    push({at, 0, detail::timer_kind::backup, j, run.slot, it->second.gen});
  }

  void unwatch(const run_key& run) { watches_.erase(run); }

  bool own_attempt(const run_key& run) const {
    for (const auto& [id, a] : attempts_)
      if (a.run == run) return true;
    return false;
  }

  /// A backup's re-check: a takeover claim, unless a newer slot of the job is
  /// due and not yet claimed — that claim goes first and, if the watched run
  /// is dead, marks it interrupted (the spec's "dead run vs next slot").
  void on_backup(std::uint32_t j, time_point slot, std::uint64_t gen) {
    const run_key run{jobs_[j].name, slot};
    auto it = watches_.find(run);
    if (it == watches_.end() || it->second.gen != gen) return;
    // The next check is set first: whatever this one answers (or throws), the
    // watch goes on until an answer ends it (unwatch makes the timer stale).
    it->second.gen = next_id_++;
    push({clock_.now() + backup_delay(), 0, detail::timer_kind::backup, j, slot, it->second.gen});
    const job& jb = jobs_[j];
    if (jb.next_slot > slot && jb.next_slot <= clock_.now()) return;  // the newer slot's claim goes first
    const claim_request req = make_request(run, claim_reason::takeover);
    const time_point sent = clock_.now();
    if (std::optional<claim_result> res = try_claim(req)) on_claim(j, req, *res, sent);
  }

  // ---- start(): catch-up -------------------------------------------------

  void on_recover(std::uint32_t j) {
    job& jb = jobs_[j];
    std::vector<run_record> open;
    std::optional<run_record> missed;
    time_point store_now{};
    const time_point now = clock_.now();
    const time_point latest = jb.schedule.latest(now);
    const bool in_window = now - latest < opts_.catch_up;
    // Read everything first, act after: a failed read retries the whole step
    // without having half-acted.
    try {
      open = store_.unfinished(jb.name);
      store_now = store_.now();
      if (in_window) missed = store_.get({jb.name, latest});
    } catch (const store_error& e) {
      const duration wait = backoff(recover_tries_[j]++);
      emit(event_kind::store_error, {jb.name, latest}, 0, 0,
           std::string("catch-up on start failed: ") + e.what() + " — " + advice(e) + "; retrying in " +
               detail::fmt(wait));
      push({now + wait, 0, detail::timer_kind::recover, j});
      return;
    }
    for (const run_record& r : open) {
      if (r.live(store_now)) {
        emit(event_kind::backup, r.key(), r.attempt, r.fence,
             "on start: attempt " + std::to_string(r.attempt) + " runs on " + r.runner +
                 " with a live lease; this instance is its backup");
        watch_run(j, r.key(), false);
      } else if (r.slot >= latest) {
        watch_run(j, r.key(), true);  // dead and still the latest: take it over now
      }
      // dead with a newer slot due: left alone; the next run's claim marks it interrupted
    }
    if (in_window && !missed) {
      const std::uint64_t id = next_id_++;
      pending_claim& pc = pending_[id];
      pc.job = j;
      pc.req = make_request({jb.name, latest}, claim_reason::catch_up);
      push({now + jitter(opts_.catch_up_jitter), 0, detail::timer_kind::claim, j, latest, id});
    }
  }

  // ---- running an attempt ------------------------------------------------

  void begin_attempt(std::uint32_t j, const claim_request& req, const run_record& rec, time_point sent) {
    unwatch(rec.key());
    const std::uint64_t id = next_id_++;
    attempt& a = attempts_[id];
    a.job = j;
    a.run = rec.key();
    a.number = rec.attempt;
    a.token = req.token;
    a.fence = rec.fence;
    a.reason = req.reason;
    // The store set lease_end from its clock when the claim arrived, which is
    // no earlier than our send: counting our lease from the send is safe.
    a.last_ack_send = sent;
    const event_kind kind = req.reason == claim_reason::takeover   ? event_kind::takeover
                            : req.reason == claim_reason::catch_up ? event_kind::catch_up
                                                                   : event_kind::won;
    emit(kind, a.run, a.number, a.fence,
         std::string(to_string(req.reason)) + " claim won: attempt " + std::to_string(a.number) + " of " +
             std::to_string(opts_.max_attempts) + ", fence " + std::to_string(a.fence) + "; starting the handler");
    if (!heartbeat_armed_) {
      heartbeat_armed_ = true;
      push({clock_.now() + hb_, 0, detail::timer_kind::heartbeat});
    }

    run_context ctx{a.run.job, a.run.slot, a.number, a.reason, a.token, a.fence, a.stop.get_token()};
    try {
      dispatch(j, id, std::move(ctx));
    } catch (const std::exception& e) {
      // The handler never started: hand the run over rather than lose it.
      a.at = step::releasing;
      a.why = std::string("the executor refused the task: ") + e.what();
      on_finish_retry(id);
    }
  }

  void dispatch(std::uint32_t j, std::uint64_t id, run_context ctx) {
    executor_.execute(task(std::move(ctx), [fn = jobs_[j].fn, box = inbox_, id](run_context& c) {
      detail::completion done{id, false, {}};
      try {
        (*fn)(c);
      } catch (const std::exception& e) {
        done.threw = true;
        done.what = e.what();
      } catch (...) {
        done.threw = true;
        done.what = "a non-standard exception";
      }
      box->post(std::move(done));
    }));
  }

  /// One tick renews every attempt of the instance, in one round trip when
  /// the store can batch. A refused renewal fences that attempt.
  void on_heartbeat() {
    std::vector<std::uint64_t> ids;
    std::vector<heartbeat_request> batch;
    for (auto& [id, a] : attempts_) {
      ids.push_back(id);
      batch.push_back({a.run, a.token, opts_.lease});
      // Set at the attempt's first tick (within a heartbeat of its claim, so
      // well before it can fire), not at its start: a short run never costs
      // a timer.
      if (!a.checked) {
        a.checked = true;
        push({a.last_ack_send + opts_.lease, 0, detail::timer_kind::lease_check, a.job, {}, id});
      }
    }
    if (ids.empty()) {
      heartbeat_armed_ = false;
      return;
    }
    const time_point sent = clock_.now();
    push({sent + hb_, 0, detail::timer_kind::heartbeat});
    std::vector<std::optional<bool>> acked(ids.size());
    if constexpr (BatchHeartbeatStore<S>) {
      try {
        std::vector<bool> r = store_.heartbeat_many(batch);
        for (std::size_t i = 0; i < ids.size() && i < r.size(); ++i) acked[i] = r[i];
      } catch (const store_error& e) {
        heartbeat_failed(batch.front().run, e, ids.size());
      }
    } else {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        try {
          acked[i] = store_.heartbeat(batch[i].run, batch[i].token, batch[i].lease);
        } catch (const store_error& e) {
          heartbeat_failed(batch[i].run, e, 1);
        }
      }
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto it = attempts_.find(ids[i]);
      if (it == attempts_.end() || !acked[i]) continue;
      if (*acked[i]) {
        it->second.last_ack_send = std::max(it->second.last_ack_send, sent);
      } else {
        lose(it, "heartbeat refused by the store: this attempt's token is no longer current (another "
                 "instance took the run over, or it was replaced or interrupted); the handler's stop "
                 "token is requested and nothing more is sent for this attempt");
      }
    }
  }

  void heartbeat_failed(const run_key& run, const store_error& e, std::size_t n) {
    emit(event_kind::store_error, run, 0, 0,
         "heartbeat of " + std::to_string(n) + " run(s) failed: " + e.what() + " — " + advice(e) +
             "; the next tick retries, and a run with no acknowledged heartbeat for a whole lease is aborted");
  }

  /// **beyond**: a runner that had no renewal acknowledged for a whole lease
  /// (from the send time of the last acknowledged one, on its own clock) may
  /// already have been replaced, so it aborts as if fenced.
  void on_lease_check(std::uint64_t id) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    const time_point expiry = it->second.last_ack_send + opts_.lease;
    if (clock_.now() < expiry) {
      push({expiry, 0, detail::timer_kind::lease_check, it->second.job, {}, id});
      return;
    }
    lose(it, "no heartbeat acknowledged for a whole lease (" + detail::fmt(opts_.lease) +
                 " since the one sent at " + detail::fmt(it->second.last_ack_send) +
                 "): another instance may own the run now, so the handler's stop token is requested");
  }

  template <class It>
  void lose(It it, const std::string& why) {
    attempt& a = it->second;
    a.stop.request_stop();
    emit(event_kind::lost, a.run, a.number, a.fence, why);
    const std::uint32_t j = a.job;
    attempts_.erase(it);
    after_attempt(j);
  }

  void on_completion(const detail::completion& c) {
    auto it = attempts_.find(c.attempt_id);
    if (it == attempts_.end()) return;  // lost or abandoned: nothing more is sent for it
    attempt& a = it->second;
    if (a.at != step::running) return;
    if (c.threw && phase_ == phase::stopping) {
      a.at = step::releasing;
      a.why = c.what;
    } else {
      a.at = step::finishing;
      a.result = c.threw ? run_status::failed : run_status::success;
      a.why = c.what;
    }
    on_finish_retry(c.attempt_id);
  }

  /// Sends attempt `id`'s finish or release; retried with backoff on a store
  /// error while the attempt is not lost (heartbeats keep its lease alive).
  void on_finish_retry(std::uint64_t id) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    attempt& a = it->second;
    const bool release = a.at == step::releasing;
    std::optional<bool> ok;
    try {
      ok = release ? store_.release(a.run, a.token) : store_.finish(a.run, a.token, a.result);
    } catch (const store_error& e) {
      if (e.code() == errc::outcome_unknown) ok = read_back(a);
      if (!ok) {
        const duration wait = backoff(a.tries++);
        emit(event_kind::store_error, a.run, a.number, a.fence,
             std::string(release ? "release" : "finish") + " failed: " + e.what() + " — " + advice(e) +
                 "; heartbeats continue and it is retried in " + detail::fmt(wait));
        push({clock_.now() + wait, 0, detail::timer_kind::finish_retry, a.job, {}, id});
        return;
      }
    }
    const std::string detail_msg = a.why.empty() ? std::string{} : " (" + a.why + ")";
    if (!*ok) {
      lose(it, std::string(release ? "release" : "finish") +
                   " refused by the store: this attempt's token is no longer current (another instance "
                   "took the run over); its result" + detail_msg + " is not recorded");
      return;
    }
    if (release)
      emit(event_kind::handed_over, a.run, a.number, a.fence,
           (phase_ == phase::stopping ? "stopping: the handler threw after its stop request" : "not started")
               + detail_msg +
               "; the run is released and a backup takes it over within 2 heartbeats (not counted against "
               "max_attempts)");
    else if (a.result == run_status::success)
      emit(event_kind::success, a.run, a.number, a.fence, "the handler returned; recorded as success");
    else
      emit(event_kind::failed, a.run, a.number, a.fence,
           "the handler threw" + detail_msg + "; recorded as failed, and a failed run is never retried");
    const std::uint32_t j = a.job;
    attempts_.erase(it);
    after_attempt(j);
  }

  /// After an outcome_unknown finish or release: did it apply? nullopt: can't tell yet.
  std::optional<bool> read_back(const attempt& a) {
    try {
      std::optional<run_record> rec = store_.get(a.run);
      if (!rec || rec->token != a.token) return false;
      if (a.at == step::releasing && rec->released) return true;
      if (a.at == step::finishing && rec->status == a.result) return true;
      if (rec->status == run_status::running && !rec->released) return std::nullopt;  // not applied: retry
      return false;
    } catch (const store_error&) {
      return std::nullopt;
    }
  }

  void after_attempt(std::uint32_t j) {
    release_buffer(j);
    if (phase_ == phase::stopping && attempts_.empty()) phase_ = phase::stopped;
  }

  /// buffer_one: the blocking run ended, so claim the newest skipped slot now
  /// if its deadline has not passed (the store still decides).
  void release_buffer(std::uint32_t j) {
    job& jb = jobs_[j];
    if (!jb.buffered || phase_ != phase::running) return;
    const time_point slot = *jb.buffered;
    jb.buffered.reset();
    if (clock_.now() > slot + opts_.max_late) {
      emit(event_kind::late, {jb.name, slot}, 0, 0,
           "buffered slot dropped: the blocking run ended after its deadline (slot + max_late)");
      return;
    }
    new_claim(j, slot, claim_reason::scheduled);
  }

  // ---- stop() ------------------------------------------------------------

  void begin_stop(duration timeout) {
    phase_ = phase::stopping;
    pending_.clear();
    watches_.clear();
    for (auto& [id, a] : attempts_) a.stop.request_stop();
    push({clock_.now() + timeout, 0, detail::timer_kind::stop_deadline});
    if (attempts_.empty()) phase_ = phase::stopped;
  }

  void on_stop_deadline() {
    for (auto it = attempts_.begin(); it != attempts_.end(); it = attempts_.erase(it)) {
      const attempt& a = it->second;
      emit(event_kind::abandoned, a.run, a.number, a.fence,
           a.at == step::running
               ? "stopping: the handler was still running at the stop timeout; heartbeats stop and a backup "
                 "takes the run over once its lease runs out"
               : "stopping: the store did not accept the result before the stop timeout; a backup takes the "
                 "run over once its lease runs out");
    }
    phase_ = phase::stopped;
  }

  // ---- helpers -----------------------------------------------------------

  void push(detail::timer t) { timers_.push(t); }

  duration jitter(duration max) {
    if (max <= duration::zero()) return duration::zero();
    return duration{std::uniform_int_distribution<duration::rep>{0, max.count()}(rng_)};
  }
  /// A backup's next check: uniform in [1, 2] × heartbeat.
  duration backup_delay() { return hb_ + jitter(hb_); }
  /// Retry delay after `tries` failures: 100 ms doubling, capped at one
  /// heartbeat, plus up to 50% jitter so instances don't retry in step.
  duration backoff(std::uint32_t tries) {
    duration d{100};
    for (std::uint32_t i = 0; i < tries && d < hb_; ++i) d *= 2;
    d = std::min(d, hb_);
    return d + jitter(d / 2);
  }
  static std::string advice(const store_error& e) {
    if (e.code() == errc::unavailable) return "the store is unreachable or busy";
    if (e.code() == errc::outcome_unknown) return "the outcome is unknown";
    if (e.code() == errc::corrupt) return "stored data is not understood: an operator must look";
    if (e.code() == errc::invalid_argument) return "the call was rejected as invalid";
    return "unexpected store failure";
  }

  void emit(event_kind k, run_key run, std::uint32_t attempt_no, std::uint64_t fence, std::string message) {
    if (sinks_.empty()) return;
    const event ev{k, std::move(run), attempt_no, fence, opts_.instance, clock_.now(), std::move(message)};
    for (auto& [kind, fn] : sinks_) {
      if (kind && *kind != k) continue;
      try {
        fn(ev);
      } catch (...) {
        // A sink's failure must not stop the instance (see on()).
      }
    }
  }

  S store_;
  C clock_;
  E executor_;
  [[no_unique_address]] P overlap_;
  options opts_;
  duration hb_;
  std::mt19937_64 rng_;
  std::shared_ptr<detail::inbox> inbox_;

  std::vector<job> jobs_;
  std::set<std::string, std::less<>> names_;
  std::vector<std::pair<std::optional<event_kind>, sink>> sinks_;
  detail::timer_heap timers_;
  std::map<std::uint64_t, pending_claim> pending_;
  std::map<run_key, watch> watches_;
  std::map<std::uint64_t, attempt> attempts_;
  std::map<std::uint32_t, std::uint32_t> recover_tries_;
  std::uint64_t next_id_ = 1;
  bool heartbeat_armed_ = false;
  std::atomic<phase> phase_{phase::idle};
  std::jthread loop_;  // last: joined before the members it uses are destroyed
};

}  // namespace lease
