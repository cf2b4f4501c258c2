// libFuzzer target for the cron parser and search. Input: one byte choosing
// the zone and DST policy, then the expression. Any expression must either
// throw lease::cron_error or build a schedule whose next/latest obey the
// Schedule laws; a crash, sanitizer report, leak or hang is a bug. The laws
// are checked at fixed times and at times derived from the input: within a
// second either side of one of the zone's transitions (1970-2037), where a
// search from whole seconds lands exactly on it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lease/schedule/cron.hpp"

namespace {

constexpr const char* zones[] = {"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"};

// Around DST transitions of the zones above, and a leap day.
lease::time_point probe_times[] = {
    date::sys_days{date::year{2026} / 3 / 29} + std::chrono::minutes{30},
    date::sys_days{date::year{2026} / 10 / 25} + std::chrono::minutes{30},
    date::sys_days{date::year{2026} / 4 / 4} + std::chrono::hours{14} + std::chrono::minutes{30},
    date::sys_days{date::year{2026} / 11 / 1} + std::chrono::hours{5} + std::chrono::minutes{30},
    date::sys_days{date::year{2000} / 2 / 29} - lease::duration{1},
};

void require(bool ok) {
  if (!ok) std::abort();
}

/// latest(t) <= t < next(t); next(t) is a slot and latest(t) too, nothing
/// lies between them: latest(next(t)) == next(t), next(latest(t) - 1 ms) ==
/// latest(t), and both seen from the other side.
void check_laws(const lease::cron& c, lease::time_point t) {
  const lease::time_point next = c.next(t);
  const lease::time_point latest = c.latest(t);
  require(latest <= t && t < next);
  if (next != lease::time_point::max()) {
    require(c.latest(next) == next);
    require(c.latest(next - lease::duration{1}) == latest);
  }
  if (latest != lease::time_point::min()) {
    require(c.next(latest - lease::duration{1}) == latest);
    require(c.next(latest) == next);
  }
}

/// FNV-1a: a few well-spread bits from the input to derive times from.
std::uint64_t hash(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 14695981039346656037ULL;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ULL;
  return h;
}

/// Times within a second before and after the zone's first or second
/// transition after 1 January of a year 1970-2037, both chosen by `h` (for
/// UTC: that 1 January).
std::array<lease::time_point, 3> times_from(std::uint64_t h, const char* zone) {
  const date::sys_seconds jan1 = date::sys_days{date::year{1970 + static_cast<int>(h % 68)} / 1 / 1};
  const date::sys_seconds end_of_data = date::sys_days{date::year{2038} / 1 / 1};
  const date::time_zone* z = date::locate_zone(zone);
  date::sys_info span = z->get_info(jan1);
  if ((h >> 40) % 2 == 1 && span.end < end_of_data) span = z->get_info(span.end);
  const lease::time_point at = span.end < end_of_data ? span.end : jan1;
  const auto before = lease::duration{1 + static_cast<std::int64_t>((h >> 8) % 1000)};
  const auto after = lease::duration{static_cast<std::int64_t>((h >> 20) % 1000)};
  return {at - before, at + after, at - before + std::chrono::hours{static_cast<std::int64_t>((h >> 32) % 48)}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 256) return 0;
  const std::uint8_t choice = data[0];
  const std::string_view expression(reinterpret_cast<const char*>(data + 1), size - 1);
  const lease::dst_policy dst{(choice & 4) != 0 ? lease::dst_gap::skip : lease::dst_gap::run_after,
                              (choice & 8) != 0 ? lease::dst_repeat::both : lease::dst_repeat::first_only};
  try {
    const lease::cron c(expression, zones[choice & 3], dst);
    for (const lease::time_point t : probe_times) check_laws(c, t);
    for (const lease::time_point t : times_from(hash(data, size), zones[choice & 3])) check_laws(c, t);
  } catch (const lease::cron_error& e) { require(e.what()[0] != '\0' && !e.field().empty()); }
  return 0;
}
