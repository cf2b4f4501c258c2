// Cost of Schedule::next() and latest() for typical schedules, in UTC and in a
// zone. The floor is lease::every, whose next() is one division: the ratio to
// it is the price of the calendar and the time zone.
//
// Each call starts from a different time (1024 random instants in 2020–2035),
// so no answer is reused and every month length and weekday is exercised.
//
//   cmake --build BUILD --target schedule_bench && BUILD/benchmark/schedule/schedule_bench
#include <array>
#include <random>

#include <benchmark/benchmark.h>

#include "lease/schedule/cron.hpp"
#include "lease/schedule/every.hpp"

namespace {

const std::array<lease::time_point, 1024>& start_times() {
  static const auto times = [] {
    std::array<lease::time_point, 1024> out{};
    std::mt19937_64 rng(42);
    const auto from = date::sys_days{date::year{2020} / 1 / 1};
    const auto to = date::sys_days{date::year{2035} / 1 / 1};
    std::uniform_int_distribution<std::int64_t> ms(0, std::chrono::duration_cast<lease::duration>(to - from).count());
    for (auto& t : out) t = lease::time_point{from} + lease::duration{ms(rng)};
    return out;
  }();
  return times;
}

template <class S>
void run_next(benchmark::State& state, const S& schedule) {
  const auto& times = start_times();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(schedule.next(times[i++ & 1023]));
  }
}

template <class S>
void run_latest(benchmark::State& state, const S& schedule) {
  const auto& times = start_times();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(schedule.latest(times[i++ & 1023]));
  }
}

void floor_every_5s(benchmark::State& s) { run_next(s, lease::every(std::chrono::seconds{5})); }
void next_every_5s_utc(benchmark::State& s) { run_next(s, lease::cron("*/5 * * * * *")); }
void next_weekdays_0300_utc(benchmark::State& s) { run_next(s, lease::cron("0 3 * * 1-5")); }
void next_last_day_utc(benchmark::State& s) { run_next(s, lease::cron("0 0 L * *")); }
void next_every_5s_berlin(benchmark::State& s) { run_next(s, lease::cron("*/5 * * * * *", "Europe/Berlin")); }
void next_weekdays_0300_berlin(benchmark::State& s) { run_next(s, lease::cron("0 3 * * 1-5", "Europe/Berlin")); }
void next_last_day_berlin(benchmark::State& s) { run_next(s, lease::cron("0 0 L * *", "Europe/Berlin")); }
void next_leap_day_utc(benchmark::State& s) { run_next(s, lease::cron("0 0 29 2 *")); }
// A fifth Monday of February: 29 February on a Monday, once in 28 years or so.
void next_rare_berlin(benchmark::State& s) { run_next(s, lease::cron("0 0 * 2 mon#5", "Europe/Berlin")); }
void latest_weekdays_0300_utc(benchmark::State& s) { run_latest(s, lease::cron("0 3 * * 1-5")); }
void latest_weekdays_0300_berlin(benchmark::State& s) { run_latest(s, lease::cron("0 3 * * 1-5", "Europe/Berlin")); }

void construct_weekdays_0300_berlin(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(lease::cron("0 3 * * 1-5", "Europe/Berlin"));
}

}  // namespace

BENCHMARK(floor_every_5s);
BENCHMARK(next_every_5s_utc);
BENCHMARK(next_weekdays_0300_utc);
BENCHMARK(next_last_day_utc);
BENCHMARK(next_every_5s_berlin);
BENCHMARK(next_weekdays_0300_berlin);
BENCHMARK(next_last_day_berlin);
BENCHMARK(next_leap_day_utc);
BENCHMARK(next_rare_berlin);
BENCHMARK(latest_weekdays_0300_utc);
BENCHMARK(latest_weekdays_0300_berlin);
BENCHMARK(construct_weekdays_0300_berlin);
