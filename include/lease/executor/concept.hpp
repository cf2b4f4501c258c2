// lease/executor/concept.hpp — the Executor policy: where handlers run.
//
// Minimal definition: `e.execute(lease::task)`; the executor takes ownership
// of the task and calls it once, on whatever thread it likes, now or later.
//
// Laws:
//   L1  Every task given to execute() is eventually called exactly once, or
//       destroyed uncalled when the executor itself is destroyed.
//   L2  execute() does not wait for the task to finish, unless the executor
//       says so (inline_executor runs it on the spot: a handler then blocks
//       the scheduler's loop, including heartbeats).
//   L3  execute() may be called from the scheduler's loop thread while other
//       tasks run.
//
// The scheduler never makes a store call from an executor thread: a task
// reports its completion through a queue the loop drains.
//
// Models: thread_pool (executor/thread_pool.hpp), inline_executor
//         (executor/inline.hpp), manual_executor (executor/manual.hpp); a
//         Boost.Asio io_context adapter in example/custom_executor.
#pragma once

#include <concepts>
#include <utility>

#include "lease/executor/task.hpp"

namespace lease {

template <class E>
concept Executor = std::move_constructible<E> && requires(E& e, task t) {
  e.execute(std::move(t));
};

}  // namespace lease
