// libFuzzer target for the cron parser and search. Input: one byte choosing
// the zone and DST policy, then the expression. Any expression must either
// throw lease::cron_error or build a schedule whose next/latest obey the
// Schedule laws; a crash, sanitizer report, leak or hang is a bug.
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 256) return 0;
  const std::uint8_t choice = data[0];
  const std::string_view expression(reinterpret_cast<const char*>(data + 1), size - 1);
  const lease::dst_policy dst{(choice & 4) != 0 ? lease::dst_gap::skip : lease::dst_gap::run_after,
                              (choice & 8) != 0 ? lease::dst_repeat::both : lease::dst_repeat::first_only};
  try {
    const lease::cron c(expression, zones[choice & 3], dst);
    for (const lease::time_point t : probe_times) {
      const lease::time_point next = c.next(t);
      const lease::time_point latest = c.latest(t);
      require(latest <= t && t < next);
      if (next != lease::time_point::max()) require(c.latest(next) == next);
      if (latest != lease::time_point::min()) require(c.next(latest) == next);
    }
  } catch (const lease::cron_error& e) {
    require(e.what()[0] != '\0' && !e.field().empty());
  }
  return 0;
}
