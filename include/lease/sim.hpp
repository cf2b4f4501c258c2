// lease/sim.hpp — lease::sim, a deterministic simulation of a cluster of
// scheduler instances over one store, with faults, a recorded history and
// the invariants of doc/invariants.md checked on it. Part of the library so users
// can property-test their own job settings.
//
//   lease::sim::cluster<> sim(seed, opts);
//   sim.add_job("report", lease::every(5s), [](const lease::run_context&) {
//     return lease::sim::script{.runs_for = 2s};
//   });
//   for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i), skew[i]);
//   sim.start_all();
//   sim.run_for(10s); sim.crash(0); sim.run_for(1min);
//   assert(sim.violations().empty());
#pragma once

#include "lease/sim/cluster.hpp"
#include "lease/sim/executor.hpp"
#include "lease/sim/history.hpp"
#include "lease/sim/script.hpp"
#include "lease/sim/store.hpp"
