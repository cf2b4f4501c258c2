// lease/missed_slots.hpp — what scheduler::resume() does with the slots that
// came due while the job was paused.
#pragma once

#include <cstdint>

namespace lease {

/// A paused job's claims are answered `paused` on every instance, and each
/// instance moves on to the next slot: the slots due meanwhile have no run.
enum class missed_slots : std::uint8_t {
  /// They stay not run (the default, and what a store's resume() or
  /// `leasectl resume` does): the first slot due after the resume runs.
  skip,
  /// The latest slot due before the resume runs now, if it is less than the
  /// job's catch_up old and has no run yet (a slot that ran before the pause
  /// is not run again): claimed at once with reason catch-up, as start()
  /// claims a slot missed while no instance ran. Only that one, never a queue.
  catch_up_latest,
};

}  // namespace lease
