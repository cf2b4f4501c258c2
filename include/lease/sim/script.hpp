// lease/sim/script.hpp — lease::sim::script, what a simulated handler does.
#pragma once

#include <optional>

#include "lease/time.hpp"

namespace lease::sim {

/// How a simulated handler behaves: the simulation starts it at dispatch and
/// ends it at the simulated time the script says, earlier if it honours an
/// abort of its stop token.
struct script {
  enum class ending : unsigned char { returns, throws };
  duration runs_for{1'000};                 ///< how long it runs if nobody stops it
  ending ends = ending::returns;            ///< how it ends then
  std::optional<duration> honours_stop{};   ///< ends this long after its stop is requested; nullopt: never
  ending on_stop = ending::throws;          ///< how it ends when it honours a stop (throw = hand over)
  /// It calls run_context::lease_held() before each side effect; if not, it
  /// learns of a lost lease only through its stop token (the watchdog's job).
  bool checks_lease = true;
};

}  // namespace lease::sim
