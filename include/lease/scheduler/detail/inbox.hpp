// lease/scheduler/detail/inbox.hpp — the one hand-off between executor threads
// (or a caller of stop()) and the scheduler's loop: a small mutex-protected queue.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lease/time.hpp"

namespace lease::detail {

/// How one handler invocation ended.
struct completion {
  std::uint64_t attempt_id = 0;
  bool threw = false;
  /// Whether the handler's stop token had been requested when it ended: a
  /// throw after it is a hand-over, before it a failure — decided by the
  /// handler's own thread, not by when the loop sees the completion.
  bool stop_requested = false;
  std::string what;  ///< the exception's what(), when it threw
};

/// Shared by the scheduler and every task it gave out (a task may outlive an
/// abandoned attempt, even the scheduler), hence held by shared_ptr.
struct inbox {
  std::mutex mutex;
  std::condition_variable ready;
  std::vector<completion> done;
  std::optional<duration> stop_request;  ///< set by stop(), taken by the loop
  /// An announcement of a PushStore: a release or an end of a run of `job`
  /// (its watched runs are re-checked at once, but for the one an
  /// EndPushStore said a finish ended: that watch just ends).
  struct announced {
    std::string job;
    std::optional<time_point> finished;
  };
  /// The announcements, in the order made.
  std::vector<announced> released;
  /// Jobs a PushTriggerStore announced a trigger of ("" : poll all of them),
  /// in the order announced.
  std::vector<std::string> triggered;
  /// Work posted by a controlling thread (add, remove, jobs after start()),
  /// run by the loop in the order posted.
  std::vector<std::function<void()>> calls;
  /// Set by the loop thread when it exits: calls are refused from then on.
  bool closed = false;
  /// Set by stop() and never cleared: an add() from then on is refused, even
  /// before the loop has taken the stop (it would never be applied).
  bool stop_asked = false;
  bool is_drained = false;  ///< see drained()
  /// Set with every post: lets the loop look between two timers without
  /// taking the mutex (completions and stop() are never starved by timers).
  std::atomic<bool> posted{false};

  void post(completion c) {
    {
      std::scoped_lock lock(mutex);
      done.push_back(std::move(c));
      posted.store(true);
    }
    ready.notify_all();
  }
  void request_stop(duration timeout) {
    {
      std::scoped_lock lock(mutex);
      if (!stop_request && !stop_asked) stop_request = timeout;
      stop_asked = true;
      posted.store(true);
    }
    ready.notify_all();
  }
  void post_release(std::string_view job, std::optional<time_point> finished = std::nullopt) {
    {
      std::scoped_lock lock(mutex);
      released.push_back({std::string(job), finished});
      posted.store(true);
    }
    ready.notify_all();
  }
  void post_trigger(std::string_view job) {
    {
      std::scoped_lock lock(mutex);
      triggered.emplace_back(job);
      posted.store(true);
    }
    ready.notify_all();
  }
  /// Queues `fn` for the loop; false (and `fn` dropped) once the loop has exited.
  bool post_call(std::function<void()> fn) {
    {
      std::scoped_lock lock(mutex);
      if (closed) return false;
      calls.push_back(std::move(fn));
      posted.store(true);
    }
    ready.notify_all();
    return true;
  }
  /// Queues an add() for the loop; false (and `fn` dropped) once stop() was
  /// called or the loop has exited.
  bool post_add(std::function<void()> fn) {
    {
      std::scoped_lock lock(mutex);
      if (closed || stop_asked) return false;
      calls.push_back(std::move(fn));
      posted.store(true);
    }
    ready.notify_all();
    return true;
  }
  /// The loop exits: refuses further calls and hands back the ones left (the
  /// loop runs them, so no caller of jobs() waits forever, then calls
  /// drained()).
  std::vector<std::function<void()>> close() {
    std::scoped_lock lock(mutex);
    closed = true;
    return std::exchange(calls, {});
  }
  /// The calls close() handed back have run: the loop's state is final.
  void drained() {
    {
      std::scoped_lock lock(mutex);
      is_drained = true;
    }
    ready.notify_all();
  }
  /// For a caller refused by a closed inbox that reads the loop's state
  /// itself: waits until the leftover calls (a remove, say) stopped writing it.
  void wait_drained() {
    std::unique_lock lock(mutex);
    ready.wait(lock, [&] { return is_drained; });
  }
  [[nodiscard]] bool stop_was_asked() {
    std::scoped_lock lock(mutex);
    return stop_asked;
  }
  /// Whether anything is waiting for the loop (call with `mutex` held).
  [[nodiscard]] bool waiting() const {
    return !done.empty() || stop_request.has_value() || !released.empty() || !calls.empty() || !triggered.empty();
  }
  [[nodiscard]] bool has_work() {
    std::scoped_lock lock(mutex);
    return waiting();
  }
};

}  // namespace lease::detail
