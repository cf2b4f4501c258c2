// lease/store/memory.hpp — lease::memory_store, the rules behind a mutex.
//
// One process only: it is the reference model of the Store concept and the
// store of the simulation, not a way to coordinate separate processes.
// Copies share one table (it is a handle), so several schedulers in one
// process — or a test and the schedulers it watches — can use one store.
// It is a PushStore: a release or finish through any copy is announced to the
// listener of every copy (synchronously, on the caller's thread), a finish
// with its run's slot (EndPushStore).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "lease/clock/concept.hpp"
#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
#include "lease/rules.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/inspect.hpp"

namespace lease {

/// The pure rules of rules.hpp behind a mutex, on the clock `C` (the store's
/// clock; give it a different clock from the instances' to model skew).
/// Thread-safe: every operation locks; copies share state.
template <Clock C = system_clock>
class memory_store {
 public:
  memory_store() requires std::default_initializable<C> : memory_store(C{}) {}
  explicit memory_store(C clock) : clock_(std::move(clock)), state_(std::make_shared<state>()), id_(state_->new_id()) {}
  /// A copy shares the table but not the listener: each copy is one
  /// subscriber (a scheduler's own handle).
  memory_store(const memory_store& o) : clock_(o.clock_), state_(o.state_), id_(state_->new_id()) {}
  memory_store& operator=(const memory_store& o) {
    if (this != &o) *this = memory_store(o);
    return *this;
  }
  memory_store(memory_store&&) noexcept = default;
  memory_store& operator=(memory_store&&) noexcept = default;
  ~memory_store() = default;

  claim_result claim(const claim_request& req) {
    std::scoped_lock lock(state_->mutex);
    return rules::claim(state_->table, req, clock_.now());
  }
  /// Each claim by the rule of claim(), in order, under one lock.
  std::vector<claim_result> claim_many(std::span<const claim_request> batch) {
    std::scoped_lock lock(state_->mutex);
    const time_point now = clock_.now();
    std::vector<claim_result> out;
    out.reserve(batch.size());
    for (const auto& req : batch) out.push_back(rules::claim(state_->table, req, now));
    return out;
  }
  bool heartbeat(const run_key& run, std::string_view token, duration lease) {
    std::scoped_lock lock(state_->mutex);
    return rules::heartbeat(state_->table, run, token, lease, clock_.now());
  }
  /// Renews each lease by the same rule as heartbeat(), under one lock.
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> batch) {
    std::scoped_lock lock(state_->mutex);
    const time_point now = clock_.now();
    std::vector<bool> out;
    out.reserve(batch.size());
    for (const auto& h : batch) out.push_back(rules::heartbeat(state_->table, h.run, h.token, h.lease, now));
    return out;
  }
  bool finish(const run_key& run, std::string_view token, run_status status) {
    bool ok = false;
    {
      std::scoped_lock lock(state_->mutex);
      ok = rules::finish(state_->table, run, token, status, clock_.now());
    }
    if (ok) state_->announce(run.job, run.slot);
    return ok;
  }
  bool release(const run_key& run, std::string_view token) {
    bool ok = false;
    {
      std::scoped_lock lock(state_->mutex);
      ok = rules::release(state_->table, run, token, clock_.now());
    }
    if (ok) state_->announce(run.job);
    return ok;
  }
  /// Ends each run by the same rule as finish() or release(), under one lock.
  std::vector<bool> finish_many(std::span<const finish_request> batch) {
    std::vector<bool> out;
    out.reserve(batch.size());
    {
      std::scoped_lock lock(state_->mutex);
      const time_point now = clock_.now();
      for (const auto& f : batch)
        out.push_back(f.status ? rules::finish(state_->table, f.run, f.token, *f.status, now)
                               : rules::release(state_->table, f.run, f.token, now));
    }
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (out[i])
        state_->announce(batch[i].run.job, batch[i].status ? std::optional(batch[i].run.slot) : std::nullopt);
    return out;
  }
  /// PushStore: `f` is called after every accepted finish or release of any
  /// copy of this store; an empty `f` stops it (and waits for a call under way).
  void listen_releases(release_listener f) {
    if (!f) return listen_ends({});
    listen_ends([f = std::move(f)](std::string_view job, std::optional<time_point>) { f(job); });
  }
  /// EndPushStore: as listen_releases, and a finish names its run's slot.
  void listen_ends(end_listener f) {
    std::scoped_lock lock(state_->push_mutex);
    if (f)
      state_->listeners[id_] = std::move(f);
    else
      state_->listeners.erase(id_);
  }
  std::vector<run_record> unfinished(std::string_view job) {
    std::scoped_lock lock(state_->mutex);
    return rules::unfinished(state_->table, job);
  }
  std::optional<run_record> get(const run_key& run) {
    std::scoped_lock lock(state_->mutex);
    return rules::get(state_->table, run);
  }
  [[nodiscard]] time_point now() const { return clock_.now(); }

  /// PauseStore: rules::pause, rules::resume, rules::paused under the lock.
  bool pause(std::string_view job) {
    std::scoped_lock lock(state_->mutex);
    return rules::pause(state_->table, job, clock_.now());
  }
  bool resume(std::string_view job) {
    std::scoped_lock lock(state_->mutex);
    return rules::resume(state_->table, job, clock_.now());
  }
  bool paused(std::string_view job) {
    std::scoped_lock lock(state_->mutex);
    return rules::paused(state_->table, job);
  }
  /// StopStore: rules::stop under the lock; each handed-over run is announced
  /// as a release is (its backups re-check, and find the job paused).
  std::size_t stop(std::string_view job) {
    std::size_t n = 0;
    {
      std::scoped_lock lock(state_->mutex);
      n = rules::stop(state_->table, job, clock_.now());
    }
    if (n != 0) state_->announce(job);
    return n;
  }

  /// RegistryStore: rules::register_jobs and rules::purge under the lock.
  void register_jobs(std::span<const job_registration> regs) {
    std::scoped_lock lock(state_->mutex);
    rules::register_jobs(state_->table, regs, clock_.now());
  }
  purge_result purge(std::string_view job, duration unseen_for) {
    std::scoped_lock lock(state_->mutex);
    return rules::purge(state_->table, job, unseen_for, clock_.now());
  }

  /// TriggerStore: rules::trigger and rules::triggers under the lock; a
  /// PushTriggerStore, announced like a release (synchronously, to every copy).
  time_point trigger(std::string_view job) {
    time_point slot;
    {
      std::scoped_lock lock(state_->mutex);
      slot = rules::trigger(state_->table, job, clock_.now());
    }
    state_->announce_trigger(job);
    return slot;
  }
  std::vector<run_key> triggers(std::span<const std::string> jobs) {
    std::scoped_lock lock(state_->mutex);
    return rules::triggers(state_->table, jobs);
  }
  void listen_triggers(trigger_listener f) {
    std::scoped_lock lock(state_->push_mutex);
    if (f)
      state_->trigger_listeners[id_] = std::move(f);
    else
      state_->trigger_listeners.erase(id_);
  }

  /// InspectStore: rules::list_jobs and rules::list_runs under the lock.
  std::vector<stored_job> list_jobs() {
    std::scoped_lock lock(state_->mutex);
    return rules::list_jobs(state_->table);
  }
  std::vector<run_record> list_runs(std::string_view job, std::size_t limit) {
    std::scoped_lock lock(state_->mutex);
    return rules::list_runs(state_->table, job, limit);
  }

  /// Forgets every run and fence, as a store restarted without persistence
  /// would, and notices it at once (rules::lose_state): a fault for tests
  /// and the simulation.
  void lose_state() {
    std::scoped_lock lock(state_->mutex);
    rules::lose_state(state_->table, clock_.now());
  }
  /// Comes back as `backup` (an earlier snapshot()) and notices it at once
  /// (rules::restore_state): a partial loss, for tests and the simulation.
  void restore(rules::run_table backup) {
    std::scoped_lock lock(state_->mutex);
    rules::restore_state(state_->table, std::move(backup), clock_.now());
  }
  /// Comes back as `backup` and notices nothing (rules::roll_back).
  void roll_back(rules::run_table backup) {
    std::scoped_lock lock(state_->mutex);
    rules::roll_back(state_->table, std::move(backup));
  }
  /// The same loss, noticed later (rules::forget_state, then notice_loss):
  /// how a store that finds a loss by a marker beside its claims sees one.
  void forget_state() {
    std::scoped_lock lock(state_->mutex);
    rules::forget_state(state_->table);
  }
  void notice_loss() {
    std::scoped_lock lock(state_->mutex);
    rules::notice_loss(state_->table, clock_.now());
  }
  /// A fence a handle remembers of `job` proves a loss of its state
  /// (rules::prove_loss), and what that proof means for every job
  /// (rules::record_proof): how a store that keeps no evidence of its own
  /// (Redis) learns of a loss of one job's keys. For the simulation.
  bool prove_loss(std::string_view job, std::uint64_t known) {
    std::scoped_lock lock(state_->mutex);
    return rules::prove_loss(state_->table, job, known, clock_.now());
  }
  bool record_proof(std::uint64_t fence) {
    std::scoped_lock lock(state_->mutex);
    return rules::record_proof(state_->table, fence, clock_.now());
  }
  /// Forgets one job's state and notices nothing (rules::forget_job).
  void forget_job(std::string_view job) {
    std::scoped_lock lock(state_->mutex);
    rules::forget_job(state_->table, job);
  }
  /// When the loss claims are quarantined by was noticed (store clock), if any.
  [[nodiscard]] std::optional<time_point> lost_at() const {
    std::scoped_lock lock(state_->mutex);
    return state_->table.lost_at;
  }

  /// A copy of the whole table (tests and the simulation inspect it).
  [[nodiscard]] rules::run_table snapshot() const {
    std::scoped_lock lock(state_->mutex);
    return state_->table;
  }
  [[nodiscard]] const C& clock() const noexcept { return clock_; }

 private:
  struct state {
    mutable std::mutex mutex;
    rules::run_table table;
    // Listeners have their own lock, held while they are called: a listener
    // must not call the store (it only posts to a scheduler's inbox), and
    // listen_releases({}) returns only once a call under way has ended.
    std::mutex push_mutex;
    std::map<std::uint64_t, end_listener> listeners;
    std::map<std::uint64_t, trigger_listener> trigger_listeners;
    std::atomic<std::uint64_t> ids{0};

    std::uint64_t new_id() { return ++ids; }
    void announce(std::string_view job, std::optional<time_point> finished = std::nullopt) {
      std::scoped_lock lock(push_mutex);
      for (auto& [id, f] : listeners) f(job, finished);
    }
    void announce_trigger(std::string_view job) {
      std::scoped_lock lock(push_mutex);
      for (auto& [id, f] : trigger_listeners) f(job);
    }
  };
  C clock_;
  std::shared_ptr<state> state_;
  std::uint64_t id_ = 0;  ///< this copy's subscriber id
};

static_assert(Store<memory_store<>>);
static_assert(BatchHeartbeatStore<memory_store<fake_clock>>);
static_assert(EndPushStore<memory_store<fake_clock>>);
static_assert(BatchClaimStore<memory_store<fake_clock>>);
static_assert(BatchFinishStore<memory_store<fake_clock>>);
static_assert(PauseStore<memory_store<fake_clock>>);
static_assert(InspectStore<memory_store<fake_clock>>);
static_assert(PushTriggerStore<memory_store<fake_clock>>);
static_assert(StopStore<memory_store<fake_clock>>);
static_assert(RegistryStore<memory_store<fake_clock>>);
}  // namespace lease
