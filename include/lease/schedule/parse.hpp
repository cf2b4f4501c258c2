// lease/schedule/parse.hpp — a schedule read back from the text and zone an
// instance registered it with (job_registration::schedule and ::zone), so
// that a tool that has only the store (leasectl jobs) can tell a job's next
// slot.
//
// It is the inverse of what a scheduler registers (scheduler/detail/
// any_schedule.hpp), and of nothing else:
//
//   registered text                                    zone            read back as
//   "every 5m", "every 1500ms"                         ""              lease::every(5min), every(1500ms)
//   "every 1h anchored 15m after 1970-01-01 00:00 UTC" ""              lease::every(1h, epoch + 15min)
//   "0 3 * * mon-fri", "@daily", "*/5 * * * * *"       "Europe/Berlin"  lease::cron(text, zone)
//   "30 2 * * * (DST: gap skip)"                       "Europe/Berlin"  lease::cron("30 2 * * *", zone, {.gap = skip})
//   "custom schedule", a user's schedule's text()      any             nothing (std::nullopt)
//
// An every's text is only read in the exact form every::text() writes (the
// largest unit that divides the amount, no sign, no leading zero), so that
// no other text is taken for one: "every 60s" is not every::text()'s (it
// writes "every 1m") and reads as nothing. A cron is registered with its
// zone, never with "": a text registered without a zone is never read as a
// cron, and one with a zone never as an every.
//
// A cron's DST policy, when it is not the default, follows its expression
// (cron/dst.hpp, detail::registered_dst).
//
// Limits, each giving slots that may differ from the instance's own:
// * Time zones come from this host's tz database, which may be older or newer
//   than the instances'. A zone it does not know reads as nothing.
// * An interval or anchor over 10'000 years reads as nothing.
// * A user's schedule whose text() happens to read as an every's text, or
//   that exposes an expression() and a zone() as a cron does, is taken for
//   that every or cron.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>

#include "lease/schedule/cron.hpp"
#include "lease/schedule/every.hpp"
#include "lease/time.hpp"

namespace lease {

/// A schedule read back from its registration: an interval or a cron.
using registered_schedule = std::variant<every, cron>;

namespace detail {

/// Longer amounts are refused: with an interval or an anchor of 10'000 years
/// at most, every's arithmetic cannot overflow for any time of the years
/// 1-9999 (a text from a store is not trusted to be sane).
inline constexpr std::int64_t max_amount_ms = 10'000LL * 36'525 / 100 * 86'400'000;

/// "5m" → 300'000 ms: digits (no sign), then h, m, s or ms. nullopt for
/// anything else, or an amount over max_amount_ms.
inline std::optional<std::int64_t> parse_amount(std::string_view a) {
  std::int64_t unit = 0;
  std::size_t digits = 0;
  while (digits < a.size() && a[digits] >= '0' && a[digits] <= '9') ++digits;
  const std::string_view suffix = a.substr(digits);
  if (suffix == "h") unit = 3'600'000;
  else if (suffix == "m") unit = 60'000;
  else if (suffix == "s") unit = 1'000;
  else if (suffix == "ms") unit = 1;
  else return std::nullopt;
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(a.data(), a.data() + digits, n);
  if (digits == 0 || ec != std::errc{} || end != a.data() + digits) return std::nullopt;
  if (n > static_cast<std::uint64_t>(max_amount_ms / unit)) return std::nullopt;
  return static_cast<std::int64_t>(n) * unit;
}

/// every::text()'s form read back; nullopt for any other text.
inline std::optional<every> parse_every(std::string_view text) {
  constexpr std::string_view head = "every ";
  constexpr std::string_view anchored = " anchored ";
  constexpr std::string_view after = " after 1970-01-01 00:00 UTC";
  constexpr std::string_view before = " before 1970-01-01 00:00 UTC";
  if (!text.starts_with(head)) return std::nullopt;
  text.remove_prefix(head.size());
  const std::size_t space = text.find(' ');
  const auto interval = parse_amount(text.substr(0, space));
  if (!interval || *interval <= 0) return std::nullopt;
  time_point anchor{};
  if (space != std::string_view::npos) {
    text.remove_prefix(space);
    if (!text.starts_with(anchored)) return std::nullopt;
    text.remove_prefix(anchored.size());
    const bool is_after = text.ends_with(after);
    if (!is_after && !text.ends_with(before)) return std::nullopt;
    text.remove_suffix(is_after ? after.size() : before.size());
    const auto a = parse_amount(text);
    if (!a) return std::nullopt;
    anchor = time_point{duration{is_after ? *a : -*a}};
  }
  every e(duration{*interval}, anchor);
  return e;
}

}  // namespace detail

/// The schedule an instance registered as `text` in `zone` (see the top of
/// this file); std::nullopt when the text is not an every's or a cron's as
/// registered — a user's schedule, "custom schedule", a cron expression or
/// zone this build or host cannot read. Throws nothing but std::bad_alloc:
/// what it is given comes from a store, not from the code that wrote it.
[[nodiscard]] inline std::optional<registered_schedule> parse_registered(std::string_view text, std::string_view zone) {
  try {
    if (zone.empty()) {
      const auto e = detail::parse_every(text);
      // Exactly every::text()'s form: "every 60s", "every 05m", an anchor of
      // "0ms after" are not what any every registers.
      if (e && e->text() == text) return registered_schedule{*e};
      return std::nullopt;
    }
    // A DST policy other than the default is written after the expression.
    dst_policy dst{};
    for (const dst_policy p : {dst_policy{dst_gap::skip, dst_repeat::first_only},
                               dst_policy{dst_gap::run_after, dst_repeat::both},
                               dst_policy{dst_gap::skip, dst_repeat::both}}) {
      if (const std::string suffix = detail::registered_dst(p); text.ends_with(suffix)) {
        text.remove_suffix(suffix.size());
        dst = p;
        break;
      }
    }
    return registered_schedule{cron(text, zone, dst)};
  } catch (const std::invalid_argument&) {  // cron_error: not a cron expression, or an unknown zone
    return std::nullopt;
  } catch (const std::runtime_error&) {  // the tz database could not be read
    return std::nullopt;
  }
}

/// The first slot of `s` strictly after `t` (time_point::max() when it has
/// none left: a cron past the year 9999).
[[nodiscard]] inline time_point next_slot(const registered_schedule& s, time_point t) {
  return std::visit([t](const auto& x) { return x.next(t); }, s);
}

}  // namespace lease
