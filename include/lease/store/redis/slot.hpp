// lease/store/redis/slot.hpp — the Redis Cluster hash slot of a key: CRC16
// (XMODEM, as Redis computes it) of the key's hash tag, modulo 16384.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lease/store/redis/connection.hpp"

namespace lease::detail::redis {

inline constexpr unsigned slot_count = 16384;

/// CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, no reflection.
[[nodiscard]] constexpr std::uint16_t crc16(std::string_view s) noexcept {
  std::uint16_t crc = 0;
  for (char ch : s) {
    crc = static_cast<std::uint16_t>(crc ^ (static_cast<std::uint16_t>(static_cast<unsigned char>(ch)) << 8));
    for (int i = 0; i < 8; ++i)
      crc = static_cast<std::uint16_t>((crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}
static_assert(crc16("123456789") == 0x31C3);  // the check value of the Redis Cluster spec

/// The slot of `key`: only the part between the first '{' and the first '}'
/// after it is hashed, if that part is not empty.
[[nodiscard]] constexpr unsigned key_slot(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) % slot_count;
}

/// The slot a command of this store addresses, if any: the first key of
/// EVALSHA/EVAL, or the key of a one-key command (HMGET, HGET, ...);
/// nothing for a keyless one (TIME, WAIT, INFO).
[[nodiscard]] inline std::optional<unsigned> command_slot(const argv_t& cmd) {
  if (cmd.empty()) return std::nullopt;
  const std::string_view name = cmd[0];
  if (name == "EVALSHA" || name == "EVAL") {
    if (cmd.size() < 4 || cmd[2] == "0") return std::nullopt;
    return key_slot(cmd[3]);
  }
  if (name == "TIME" || name == "WAIT" || name == "INFO" || name == "CONFIG" || name == "PING" || cmd.size() < 2)
    return std::nullopt;
  return key_slot(cmd[1]);
}

}  // namespace lease::detail::redis
