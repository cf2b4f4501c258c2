// lease/token.hpp — attempt tokens: 128 random bits, made by the client.
//
// The client makes the token (not the store) so that an instance whose claim
// reply was lost can read the run back and see whether the stored token is
// the one it sent: an outcome_unknown is resolved, never blindly retried.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace lease {

/// 32 lowercase hex digits from two 64-bit draws of `rng`.
template <class Rng>
[[nodiscard]] std::string make_token(Rng& rng) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t v = std::uniform_int_distribution<std::uint64_t>{}(rng);
    for (int i = 0; i < 16; ++i, v >>= 4) out[static_cast<std::size_t>(half * 16 + 15 - i)] = hex[v & 15];
  }
  return out;
}

}  // namespace lease
