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
    bool wake = false;
    {
      std::scoped_lock lock(state_->mutex);
      state_->queue.push_back(std::move(t));
      wake = state_->wake_one();
    }
    if (wake) state_->ready.notify_one();
  }
  [[nodiscard]] std::size_t size() const noexcept { return state_->workers.size(); }

 private:
  // Waking a thread is the dear part of handing it a task: a futex call and
  // a context switch, paid by the caller of execute() (the scheduler's loop:
  // under perf, at 10,000 fires a second, about a quarter of its time went to
  // the wake-ups of a notify per task). So at most one wake-up is in flight
  // from execute(): a burst of tasks wakes one worker, and each worker that
  // takes a task wakes the next while tasks are left (a chain, paid by the
  // workers, in parallel with the caller).
  //
  // No task waits while a worker idles: after every push and every take,
  // under the mutex, either the queue is empty, no worker is idle, or a
  // wake-up is in flight (`waking`). A notified worker that finds the queue
  // empty (another took the task) goes back to sleep; the taker cleared
  // `waking` and chained as needed. A spurious wake-up takes or sleeps the
  // same way, and a notify that finds no sleeper is lost harmlessly: whoever
  // left the wait takes the task and chains.
  struct state {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<task> queue;
    std::size_t idle = 0;  // workers waiting on `ready`
    bool waking = false;   // a notify_one is in flight, its task not yet taken
    std::vector<std::jthread> workers;

    /// Under the mutex, after a push or a take: whether the caller must
    /// notify one worker (after unlocking).
    bool wake_one() {
      if (queue.empty() || idle == 0 || waking) return false;
      waking = true;
      return true;
    }

    void work(std::stop_token st) {
      for (;;) {
        task t;
        bool wake = false;
        {
          std::unique_lock lock(mutex);
          // Drain the queue before leaving, so no accepted task is lost (L1).
          while (queue.empty() && !st.stop_requested()) {
            ++idle;
            ready.wait(lock);
            --idle;
          }
          if (queue.empty()) return;
          t = std::move(queue.front());
          queue.pop_front();
          waking = false;
          wake = wake_one();
        }
        if (wake) ready.notify_one();
        t();
      }
    }
  };
  std::unique_ptr<state> state_;
};

static_assert(Executor<thread_pool>);

}  // namespace lease
