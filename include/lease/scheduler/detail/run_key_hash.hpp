// lease/scheduler/detail/run_key_hash.hpp — a hash of a run key (job name
// and slot), for the scheduler's hashed indexes of runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "lease/run.hpp"

namespace lease::detail {

struct run_key_hash {
  [[nodiscard]] std::size_t operator()(const run_key& k) const noexcept {
    // The slot mixed by a 64-bit odd constant (Fibonacci hashing): the slots
    // of one job differ by multiples of its period, which a plain xor with
    // the name's hash would keep in few buckets.
    const auto slot = static_cast<std::uint64_t>(k.slot.time_since_epoch().count());
    return std::hash<std::string_view>{}(k.job) ^ static_cast<std::size_t>(slot * 0x9e3779b97f4a7c15ULL);
  }
};

}  // namespace lease::detail
