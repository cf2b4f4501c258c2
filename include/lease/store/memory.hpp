// lease/store/memory.hpp — lease::memory_store, the rules behind a mutex.
//
// One process only: it is the reference model of the Store concept and the
// store of the simulation, not a way to coordinate separate processes.
// Copies share one table (it is a handle), so several schedulers in one
// process — or a test and the schedulers it watches — can use one store.
#pragma once

#include <memory>
#include <mutex>
#include <span>

#include "lease/clock/concept.hpp"
#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
#include "lease/rules.hpp"
#include "lease/store/concept.hpp"

namespace lease {

/// The pure rules of rules.hpp behind a mutex, on the clock `C` (the store's
/// clock; give it a different clock from the instances' to model skew).
/// Thread-safe: every operation locks; copies share state.
template <Clock C = system_clock>
class memory_store {
 public:
  memory_store() requires std::default_initializable<C> : memory_store(C{}) {}
  explicit memory_store(C clock) : clock_(std::move(clock)), state_(std::make_shared<state>()) {}

  claim_result claim(const claim_request& req) {
    std::scoped_lock lock(state_->mutex);
    return rules::claim(state_->table, req, clock_.now());
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
    std::scoped_lock lock(state_->mutex);
    return rules::finish(state_->table, run, token, status, clock_.now());
  }
  bool release(const run_key& run, std::string_view token) {
    std::scoped_lock lock(state_->mutex);
    return rules::release(state_->table, run, token, clock_.now());
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

  /// Forgets every run and fence, as a store restarted without persistence
  /// would, and notices it at once (rules::lose_state): a fault for tests
  /// and the simulation.
  void lose_state() {
    std::scoped_lock lock(state_->mutex);
    rules::lose_state(state_->table, clock_.now());
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
  };
  C clock_;
  std::shared_ptr<state> state_;
};

static_assert(Store<memory_store<>>);
static_assert(BatchHeartbeatStore<memory_store<fake_clock>>);
}  // namespace lease
