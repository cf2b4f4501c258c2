// lease/schedule/concept.hpp — the Schedule policy: which slots (runs) a job has.
//
// Minimal definition:
//   s.next(t)   -> time_point: the first slot strictly after t
//   s.latest(t) -> time_point: the last slot at or before t
//
// Laws (test/laws/schedule.cpp):
//   L1  next(t) > t, and next is monotonic: t1 ≤ t2 ⇒ next(t1) ≤ next(t2).
//   L2  latest(next(t)) == next(t), and latest(t) ≤ t.
//   L3  no slot lies strictly between latest(t) and next(t) other than ones ≤ t.
//   L4  the same schedule gives the same slots on every instance: slots depend
//       only on the schedule's own parameters, never on when it was built.
//
// Models: lease::every (schedule/every.hpp), lease::cron (schedule/cron.hpp).
// Thread-safety: const member functions; safe to call concurrently.
#pragma once

#include <concepts>

#include "lease/time.hpp"

namespace lease {

template <class S>
concept Schedule = std::copy_constructible<S> && requires(const S& s, time_point t) {
  { s.next(t) } -> std::same_as<time_point>;
  { s.latest(t) } -> std::same_as<time_point>;
};

}  // namespace lease
