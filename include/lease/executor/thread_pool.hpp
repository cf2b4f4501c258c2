// lease/executor/thread_pool.hpp — lease::thread_pool, a fixed set of worker threads.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lease/executor/concept.hpp"

namespace lease {

/// Runs tasks on `threads` worker threads (default: the hardware's), first in
/// first out. execute() is thread-safe. Movable (the workers live behind a
/// pointer), not copyable.
///
/// Destruction waits for every queued and running task: a handler that never
/// returns (and ignores its stop token) keeps the destructor waiting. The
/// scheduler abandons such a handler at stop(timeout), but only the handler
/// itself can end its thread.
class thread_pool {
 public:
  explicit thread_pool(std::size_t threads = std::max(1u, std::thread::hardware_concurrency()))
      : state_(std::make_unique<state>()) {
    threads = std::max<std::size_t>(threads, 1);
    state_->workers.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i)
      state_->workers.emplace_back([s = state_.get()](std::stop_token st) { s->work(st); });
  }
  thread_pool(thread_pool&&) noexcept = default;
  thread_pool& operator=(thread_pool&&) noexcept = default;
  ~thread_pool() {
    if (!state_) return;
    {
      // Under the mutex: a worker tests stop_requested() under it and then
      // waits, so a stop requested without the lock can fall between the two
      // and its notify be lost, leaving the worker (and this join) asleep.
      std::scoped_lock lock(state_->mutex);
      for (auto& w : state_->workers) w.request_stop();
    }
    state_->ready.notify_all();
    state_->workers.clear();  // joins
  }

  void execute(task t) {
    {
      std::scoped_lock lock(state_->mutex);
      state_->queue.push_back(std::move(t));
    }
    state_->ready.notify_one();
  }
  [[nodiscard]] std::size_t size() const noexcept { return state_->workers.size(); }

 private:
  struct state {
    std::mutex mutex;
    std::condition_variable_any ready;
    std::deque<task> queue;
    std::vector<std::jthread> workers;

    void work(std::stop_token st) {
      for (;;) {
        task t;
        {
          std::unique_lock lock(mutex);
          // Drain the queue before leaving, so no accepted task is lost (L1).
          ready.wait(lock, [&] { return !queue.empty() || st.stop_requested(); });
          if (queue.empty()) return;
          t = std::move(queue.front());
          queue.pop_front();
        }
        t();
      }
    }
  };
  std::unique_ptr<state> state_;
};

static_assert(Executor<thread_pool>);

}  // namespace lease
