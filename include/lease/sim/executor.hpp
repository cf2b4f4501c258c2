// lease/sim/executor.hpp — lease::sim::executor, hands each task to the
// simulation, which runs it at the simulated time its script says.
#pragma once

#include <memory>
#include <vector>

#include "lease/executor/concept.hpp"

namespace lease::sim {

/// Collects dispatched tasks; the simulation takes them after each poll and
/// starts each at once, or later when its workers are busy
/// (cluster::delay_starts: the task then checks its lease before anything).
struct executor {
  std::shared_ptr<std::vector<task>> dispatched = std::make_shared<std::vector<task>>();
  void execute(task t) { dispatched->push_back(std::move(t)); }
};

static_assert(Executor<executor>);

}  // namespace lease::sim
