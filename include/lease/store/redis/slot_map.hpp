// lease/store/redis/slot_map.hpp — a Redis Cluster's slot map as CLUSTER
// SLOTS gives it (which master serves each of the 16,384 slots), and the
// node a MOVED or ASK redirection names. Shared by the router (the store's
// thread) and the release subscriber (its own thread), each with its own copy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/slot.hpp"

namespace lease::detail::redis {

struct slot_map {
  static constexpr std::uint16_t none = 0xffff;  ///< a slot no master serves
  std::vector<endpoint> masters;                 ///< host and port only
  std::array<std::uint16_t, slot_count> owner{};  ///< slot -> index in masters, or none
};

/// The map in a CLUSTER SLOTS reply, asked of `asked` (an empty or "?" host means that node).
[[nodiscard]] inline slot_map parse_slot_map(const redisReply* r, const endpoint& asked) {
  if (r->type != REDIS_REPLY_ARRAY) raise(redis_errc::bad_reply, "CLUSTER SLOTS", "not an array");
  slot_map m;
  m.owner.fill(slot_map::none);
  for (std::size_t i = 0; i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 || range->element[0]->type != REDIS_REPLY_INTEGER ||
        range->element[1]->type != REDIS_REPLY_INTEGER || range->element[2]->type != REDIS_REPLY_ARRAY ||
        range->element[2]->elements < 2 || range->element[2]->element[0]->type != REDIS_REPLY_STRING ||
        range->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
      raise(redis_errc::bad_reply, "CLUSTER SLOTS", "range of unexpected shape");
    const redisReply* master = range->element[2];
    endpoint e;
    e.host.assign(master->element[0]->str, master->element[0]->len);
    if (e.host.empty() || e.host == "?") e.host = asked.host;  // "the node you asked"
    e.port = static_cast<int>(master->element[1]->integer);
    std::size_t n = 0;
    while (n < m.masters.size() && (m.masters[n].host != e.host || m.masters[n].port != e.port)) ++n;
    if (n == m.masters.size()) m.masters.push_back(std::move(e));
    if (n >= slot_map::none) raise(redis_errc::bad_reply, "CLUSTER SLOTS", "too many masters");
    const auto lo = range->element[0]->integer, hi = range->element[1]->integer;
    if (lo < 0 || hi >= static_cast<long long>(slot_count) || lo > hi)
      raise(redis_errc::bad_reply, "CLUSTER SLOTS", "slot range out of bounds");
    for (auto slot = lo; slot <= hi; ++slot) m.owner[static_cast<std::size_t>(slot)] = static_cast<std::uint16_t>(n);
  }
  return m;
}

/// CLUSTER SLOTS asked of `s.where` on a connection of its own (no hooks, no backoff).
[[nodiscard]] inline slot_map read_slot_map(connection_settings s) {
  s.backoff_min = s.backoff_max = std::chrono::milliseconds{0};
  connection probe(s);
  const argv_t cmd{"CLUSTER", "SLOTS"};
  auto replies = probe.exchange(std::span(&cmd, 1));
  connection::throw_if_error(replies.front().get(), "CLUSTER SLOTS");
  return parse_slot_map(replies.front().get(), s.where);
}

/// "MOVED 3999 127.0.0.1:6381" / "ASK ...": the slot and the node (host and
/// port; an empty host means `default_host`); nullopt if unreadable.
[[nodiscard]] inline std::optional<std::pair<unsigned, endpoint>> parse_redirection(std::string_view text,
                                                                                     std::string_view default_host) {
  const auto sp1 = text.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : text.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) return std::nullopt;
  const std::string_view slot_text = text.substr(sp1 + 1, sp2 - sp1 - 1), addr = text.substr(sp2 + 1);
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos || slot_text.empty() || colon + 1 == addr.size()) return std::nullopt;
  unsigned slot = 0;
  int port = 0;
  for (char c : slot_text) {
    if (c < '0' || c > '9') return std::nullopt;
    slot = slot * 10 + static_cast<unsigned>(c - '0');
    if (slot >= slot_count) return std::nullopt;
  }
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  endpoint e;
  e.host = std::string(addr.substr(0, colon));
  if (e.host.empty()) e.host = std::string(default_host);
  e.port = port;
  return std::pair{slot, std::move(e)};
}

}  // namespace lease::detail::redis
