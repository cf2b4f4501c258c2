// lease/executor/manual.hpp — lease::manual_executor, tasks wait until the test runs them.
//
// After folly's ManualExecutor: nothing happens until the caller says so, and
// tasks run in the order they were given. A public reference model (with
// fake_clock and memory_store) for testing jobs deterministically.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "lease/executor/concept.hpp"

namespace lease {

/// Queues tasks; run_one()/run_all() run them on the caller's thread in
/// insertion order. Copies share one queue (it is a handle), so a test keeps
/// a copy of the executor it gave to a scheduler. Thread-safe.
class manual_executor {
 public:
  manual_executor() : state_(std::make_shared<state>()) {}

  void execute(task t) {
    std::scoped_lock lock(state_->mutex);
    state_->queue.push_back(std::move(t));
  }
  /// Runs the oldest waiting task, if any; returns whether one ran.
  bool run_one() {
    task t = take();
    if (!t) return false;
    t();
    return true;
  }
  /// Runs waiting tasks, including ones queued meanwhile, until none is left;
  /// returns how many ran.
  std::size_t run_all() {
    std::size_t n = 0;
    while (run_one()) ++n;
    return n;
  }
  /// Removes and returns the oldest waiting task without running it (an empty
  /// task when none waits): lets a test hold a handler "in flight".
  [[nodiscard]] task take() {
    std::scoped_lock lock(state_->mutex);
    if (state_->queue.empty()) return task{};
    task t = std::move(state_->queue.front());
    state_->queue.pop_front();
    return t;
  }
  [[nodiscard]] std::size_t pending() const {
    std::scoped_lock lock(state_->mutex);
    return state_->queue.size();
  }

 private:
  struct state {
    mutable std::mutex mutex;
    std::deque<task> queue;
  };
  std::shared_ptr<state> state_;
};

static_assert(Executor<manual_executor>);

}  // namespace lease
