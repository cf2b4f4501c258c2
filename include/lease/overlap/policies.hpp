// lease/overlap/policies.hpp — the overlap policies the library ships:
// lease::skip (the default), lease::allow, lease::buffer_one, lease::replace.
//
// Each is an empty type with a constexpr object of the same name without
// `_t`, so both `scheduler<…, lease::skip_t>` and `lease::overlap = lease::skip`
// read naturally.
#pragma once

#include "lease/overlap/concept.hpp"

namespace lease {

/// A new run is refused while an earlier run of the job is alive (the default; doc/protocol.md §11).
struct skip_t {
  [[nodiscard]] constexpr overlap_mode mode() const noexcept { return overlap_mode::skip; }
};
/// Runs of a job may overlap; each run is still claimed once.
struct allow_t {
  [[nodiscard]] constexpr overlap_mode mode() const noexcept { return overlap_mode::allow; }
};
/// **beyond** (after Temporal's BufferOne): like skip, but the newest skipped
/// slot is claimed once the blocking run ends, if before its deadline.
struct buffer_one_t {
  [[nodiscard]] constexpr overlap_mode mode() const noexcept { return overlap_mode::buffer_one; }
};
/// **beyond** (after Kubernetes' Replace): a new run interrupts the live one.
struct replace_t {
  [[nodiscard]] constexpr overlap_mode mode() const noexcept { return overlap_mode::replace; }
};

inline constexpr skip_t skip{};
inline constexpr allow_t allow{};
inline constexpr buffer_one_t buffer_one{};
inline constexpr replace_t replace{};

static_assert(OverlapPolicy<skip_t>);
static_assert(OverlapPolicy<allow_t>);
static_assert(OverlapPolicy<buffer_one_t>);
static_assert(OverlapPolicy<replace_t>);

}  // namespace lease
