// lease/scheduler/live_counts.hpp — lease::live_counts, how many attempts an
// instance runs and how many runs it watches, readable from any thread.
#pragma once

#include <atomic>
#include <cstddef>

namespace lease {

/// Kept up to date by the scheduler's loop at every change; read by anyone
/// (a metrics exporter's scrape thread). Shared by pointer, so it may be read
/// after its scheduler is gone (it then keeps its last values).
struct live_counts {
  std::atomic<std::size_t> running{0};   ///< attempts running (handler running or its finish pending)
  std::atomic<std::size_t> watching{0};  ///< runs this instance backs up
};

}  // namespace lease
