// lease/executor/inline.hpp — lease::inline_executor, runs each task at once on the caller's thread.
#pragma once

#include "lease/executor/concept.hpp"

namespace lease {

/// Runs the task inside execute(). Deterministic and thread-free, but a
/// handler then blocks the scheduler's loop (no heartbeats while it runs):
/// use it for short handlers, tests and benchmarks.
struct inline_executor {
  void execute(task t) { t(); }
};

static_assert(Executor<inline_executor>);

}  // namespace lease
