// lease/overlap/concept.hpp — the OverlapPolicy: what a new slot does while an
// earlier run of the same job still holds a live lease.
//
// Minimal definition: `p.mode()` → lease::overlap_mode, sent with every claim
// (the store applies it inside the atomic claim, so it holds across instances).
//
// Laws:
//   L1  mode() is constant for a policy object (all instances of a cluster
//       must use the same policy for a job).
//   L2  skip:       no two runs of a job hold live leases at once.
//       allow:      runs of a job may overlap.
//       buffer_one: as skip in the store; the scheduler additionally re-claims
//                   the newest skipped slot once the blocking run ends, if its
//                   deadline (slot + max_late) has not passed and no newer
//                   slot is due (latest only: that one is claimed instead).
//       replace:    a new run marks the live one interrupted; its runner is
//                   fenced at its next heartbeat.
//
// Models: skip, allow, buffer_one, replace (overlap/policies.hpp).
#pragma once

#include <concepts>

#include "lease/run.hpp"

namespace lease {

template <class P>
concept OverlapPolicy = std::copy_constructible<P> && requires(const P& p) {
  { p.mode() } -> std::same_as<overlap_mode>;
};

}  // namespace lease
