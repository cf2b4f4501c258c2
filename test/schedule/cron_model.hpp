// test/schedule/cron_model.hpp — an independent model of cron expressions for
// the property tests: random expressions built from parts, each part's meaning
// written the slow, obvious way, and brute-force searches for slots.
//
// Nothing here uses lease's parser or search; where the model restates a rule
// (the nearest weekday, the k-th weekday) it does so from its definition.
#pragma once

#include <bitset>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <date/tz.h>
#include <rapidcheck.h>

#include "lease/schedule/cron/dst.hpp"
#include "lease/time.hpp"

namespace schedule_test {

struct cron_model {
  std::string text;
  std::bitset<60> seconds, minutes;
  std::bitset<24> hours;
  std::bitset<13> months;  // 1-12
  // Day of month.
  std::bitset<32> days;  // 1-31
  std::set<int> days_before_last;
  std::set<int> nearest_weekday_to;
  bool last_weekday = false;
  bool day_of_month_restricted = true;
  // Day of week, 0 = Sunday.
  std::bitset<7> weekdays;
  std::set<std::pair<int, int>> nth_of;  // (weekday, k)
  std::bitset<7> last_of;
  bool day_of_week_restricted = true;

  [[nodiscard]] bool day_matches(date::year_month_day ymd) const {
    const int d = static_cast<int>(unsigned{ymd.day()});
    const int n = static_cast<int>(unsigned{(ymd.year() / ymd.month() / date::last).day()});
    const auto weekday_of = [&](int day) {
      return static_cast<int>(date::weekday{date::sys_days{ymd.year() / ymd.month() / day}}.c_encoding());
    };
    const auto is_workday = [&](int day) { return weekday_of(day) != 0 && weekday_of(day) != 6; };
    const int wd = weekday_of(d);

    bool by_month_day = days[static_cast<std::size_t>(d)];
    for (const int k : days_before_last) by_month_day |= d == n - k;
    for (const int x : nearest_weekday_to) {
      if (x > n) continue;
      int best = -1;  // the Monday-Friday of this month closest to x
      for (int c = 1; c <= n; ++c)
        if (is_workday(c) && (best < 0 || std::abs(c - x) < std::abs(best - x))) best = c;
      by_month_day |= d == best;
    }
    if (last_weekday) {
      int last = n;
      while (!is_workday(last)) --last;
      by_month_day |= d == last;
    }

    bool by_week_day = weekdays[static_cast<std::size_t>(wd)];
    for (const auto& [w, k] : nth_of) by_week_day |= wd == w && (d - 1) / 7 + 1 == k;
    by_week_day |= last_of[static_cast<std::size_t>(wd)] && d + 7 > n;

    if (day_of_month_restricted && day_of_week_restricted) return by_month_day || by_week_day;
    return by_month_day && by_week_day;
  }

  /// Every matching second of a day, in order.
  template <class F>
  void for_each_time(F&& f) const {
    for (int h = 0; h < 24; ++h)
      if (hours[static_cast<std::size_t>(h)])
        for (int m = 0; m < 60; ++m)
          if (minutes[static_cast<std::size_t>(m)])
            for (int s = 0; s < 60; ++s)
              if (seconds[static_cast<std::size_t>(s)])
                if (!f(std::chrono::seconds{h * 3600 + m * 60 + s})) return;
  }

  [[nodiscard]] bool matches(date::local_seconds t) const {
    const auto day = date::floor<date::days>(t);
    const date::year_month_day ymd{day};
    const auto tod = date::hh_mm_ss<std::chrono::seconds>{t - day};
    return months[unsigned{ymd.month()}] && day_matches(ymd) && hours[static_cast<std::size_t>(tod.hours().count())] &&
           minutes[static_cast<std::size_t>(tod.minutes().count())] &&
           seconds[static_cast<std::size_t>(tod.seconds().count())];
  }

  [[nodiscard]] bool day_ok(date::local_days d) const {
    const date::year_month_day ymd{d};
    return months[unsigned{ymd.month()}] && day_matches(ymd);
  }

  /// Whether any day in one 400-year Gregorian cycle matches.
  [[nodiscard]] bool ever_fires() const {
    const date::local_days begin{date::year{2000} / 1 / 1};
    const date::local_days end{date::year{2400} / 1 / 1};
    for (auto d = begin; d < end; d += date::days{1})
      if (day_ok(d)) return true;
    return false;
  }
};

// --- random expressions -------------------------------------------------------

namespace gen_detail {

inline std::string name_or_number(int v, const char* const* names) {
  if (names == nullptr || !*rc::gen::arbitrary<bool>()) return std::to_string(v);
  std::string s = names[v];
  for (char& c : s)
    if (*rc::gen::arbitrary<bool>()) c = static_cast<char>(c - 'a' + 'A');
  return s;
}

inline constexpr const char* month_names[] = {"", "jan", "feb", "mar", "apr", "may", "jun",
                                              "jul", "aug", "sep", "oct", "nov", "dec"};
inline constexpr const char* weekday_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/// One field: a comma list of *, */s, v, a-b, a-b/s, a/s; a-b wraps when b < a.
/// `set(v)` marks value v in the model. Returns the text.
template <class Set>
std::string numeric_field(int min, int max, const char* const* names, Set set, int items) {
  std::string text;
  for (int i = 0; i < items; ++i) {
    if (i > 0) text += ',';
    const int span = max - min + 1;
    const int kind = *rc::gen::inRange(0, 6);
    const int a = *rc::gen::inRange(min, max + 1);
    const int b = *rc::gen::inRange(min, max + 1);
    const int step = *rc::gen::inRange(1, span + 1);
    // Walk a, a+1, ... (wrapping after max) up to b, keeping every step-th.
    const auto walk = [&](int from, int to, int s) {
      for (int v = from, k = 0;; v = v == max ? min : v + 1, ++k) {
        if (k % s == 0) set(v);
        if (v == to) break;
      }
    };
    switch (kind) {
      case 0: text += '*'; walk(min, max, 1); break;
      case 1: text += "*/" + std::to_string(step); walk(min, max, step); break;
      case 2: text += name_or_number(a, names); set(a); break;
      case 3: text += name_or_number(a, names) + "-" + name_or_number(b, names); walk(a, b, 1); break;
      case 4: text += name_or_number(a, names) + "-" + name_or_number(b, names) + "/" + std::to_string(step); walk(a, b, step); break;
      default: text += name_or_number(a, names) + "/" + std::to_string(step); walk(a, max, step); break;
    }
  }
  return text;
}

}  // namespace gen_detail

/// A random cron expression (5 or 6 fields, every syntax form) and its model.
/// `every_hour` makes the hour field `*`, so that DST tests near a transition
/// have slots in the skipped or repeated hour.
inline cron_model random_cron(bool every_hour = false) {
  using namespace gen_detail;
  cron_model m;
  std::string text;
  const auto items = [] { return *rc::gen::weightedElement<int>({{6, 1}, {3, 2}, {1, 3}}); };

  if (*rc::gen::arbitrary<bool>()) {
    text += numeric_field(0, 59, nullptr, [&](int v) { m.seconds.set(static_cast<std::size_t>(v)); }, items()) + " ";
  } else {
    m.seconds.set(0);
  }
  text += numeric_field(0, 59, nullptr, [&](int v) { m.minutes.set(static_cast<std::size_t>(v)); }, items()) + " ";
  if (every_hour) {
    text += "* ";
    m.hours.set();
  } else {
    text += numeric_field(0, 23, nullptr, [&](int v) { m.hours.set(static_cast<std::size_t>(v)); }, items()) + " ";
  }

  // Day of month: ?, or a list mixing numbers with L, L-k, nW, LW.
  std::string dom;
  if (*rc::gen::inRange(0, 10) == 0) {
    dom = "?";
    m.days.set();
    m.day_of_month_restricted = false;
  } else {
    const int n = items();
    for (int i = 0; i < n; ++i) {
      if (i > 0) dom += ',';
      switch (*rc::gen::inRange(0, 8)) {
        case 0: dom += "L"; m.days_before_last.insert(0); break;
        case 1: { const int k = *rc::gen::inRange(0, 31); dom += "L-" + std::to_string(k); m.days_before_last.insert(k); break; }
        case 2: { const int x = *rc::gen::inRange(1, 32); dom += std::to_string(x) + "W"; m.nearest_weekday_to.insert(x); break; }
        case 3: dom += "LW"; m.last_weekday = true; break;
        default: dom += numeric_field(1, 31, nullptr, [&](int v) { m.days.set(static_cast<std::size_t>(v)); }, 1);
      }
    }
    m.day_of_month_restricted = dom.front() != '*';
  }
  text += dom + " ";
  text += numeric_field(1, 12, month_names, [&](int v) { m.months.set(static_cast<std::size_t>(v)); }, items()) + " ";

  // Day of week: ?, 7 for Sunday, or a list mixing ranges with wL and w#k.
  std::string dow;
  if (*rc::gen::inRange(0, 10) == 0) {
    dow = "?";
    m.weekdays.set();
    m.day_of_week_restricted = false;
  } else {
    const int n = items();
    for (int i = 0; i < n; ++i) {
      if (i > 0) dow += ',';
      const int w = *rc::gen::inRange(0, 7);
      switch (*rc::gen::inRange(0, 8)) {
        case 0: dow += name_or_number(w, weekday_names) + "L"; m.last_of.set(static_cast<std::size_t>(w)); break;
        case 1: { const int k = *rc::gen::inRange(1, 6); dow += name_or_number(w, weekday_names) + "#" + std::to_string(k); m.nth_of.insert({w, k}); break; }
        case 2: dow += "7"; m.weekdays.set(0); break;
        default: dow += numeric_field(0, 6, weekday_names, [&](int v) { m.weekdays.set(static_cast<std::size_t>(v)); }, 1);
      }
    }
    m.day_of_week_restricted = dow.front() != '*';
  }
  text += dow;
  m.text = text;
  return m;
}

/// A random expression that fires only on one day of the year (month/day),
/// at random times of day, half the time within an hour of `hour`: aimed at
/// a DST transition, its slots are sparse and fall in the skipped or repeated
/// hour.
inline cron_model random_cron_on(int month, int day, int hour) {
  using namespace gen_detail;
  cron_model m;
  std::string text;
  if (*rc::gen::arbitrary<bool>()) {
    text += numeric_field(0, 59, nullptr, [&](int v) { m.seconds.set(static_cast<std::size_t>(v)); }, 1) + " ";
  } else {
    m.seconds.set(0);
  }
  text += numeric_field(0, 59, nullptr, [&](int v) { m.minutes.set(static_cast<std::size_t>(v)); }, 1) + " ";
  if (*rc::gen::arbitrary<bool>() && hour >= 1 && hour <= 22) {
    // The hour itself (the repeated one, for a fall-back), the next (the
    // skipped one, for a spring-forward), or both with the hour before.
    const auto [from, to] = *rc::gen::element(std::pair{hour, hour}, std::pair{hour + 1, hour + 1}, std::pair{hour - 1, hour + 1});
    text += std::to_string(from) + "-" + std::to_string(to) + " ";
    for (int h = from; h <= to; ++h) m.hours.set(static_cast<std::size_t>(h));
  } else {
    text += numeric_field(0, 23, nullptr, [&](int v) { m.hours.set(static_cast<std::size_t>(v)); }, 1) + " ";
  }
  text += std::to_string(day) + " " + std::to_string(month) + " *";
  m.days.set(static_cast<std::size_t>(day));
  m.months.set(static_cast<std::size_t>(month));
  m.weekdays.set();
  m.day_of_week_restricted = false;
  m.text = text;
  return m;
}

// --- brute-force searches -------------------------------------------------------

/// The first matching UTC second strictly after t, by walking days.
inline std::optional<lease::time_point> model_next_utc(const cron_model& m, lease::time_point t) {
  const auto start = date::floor<date::days>(t);
  for (auto d = start; d < start + date::days{146097}; d += date::days{1}) {
    if (!m.day_ok(date::local_days{d.time_since_epoch()})) continue;
    std::optional<lease::time_point> found;
    m.for_each_time([&](std::chrono::seconds tod) {
      if (d + tod > t) found = d + tod;
      return !found;
    });
    if (found) return found;
  }
  return std::nullopt;
}

/// The last matching UTC second at or before t.
inline std::optional<lease::time_point> model_latest_utc(const cron_model& m, lease::time_point t) {
  const auto start = date::floor<date::days>(t);
  for (auto d = start; d > start - date::days{146097}; d -= date::days{1}) {
    if (!m.day_ok(date::local_days{d.time_since_epoch()})) continue;
    std::optional<lease::time_point> found;
    m.for_each_time([&](std::chrono::seconds tod) {
      if (d + tod <= t) found = d + tod;
      return true;
    });
    if (found) return found;
  }
  return std::nullopt;
}

/// The first slot strictly after t in a zone, from the definition: each
/// matching local time maps through date's local_info — unique: one instant;
/// in a gap: the transition (run_after) or nothing; repeated: the first
/// instant, or both.
inline std::optional<lease::time_point> model_next_zoned(const cron_model& m, const date::time_zone* zone,
                                                        lease::dst_policy policy, lease::time_point t) {
  using std::chrono::hours;
  const date::sys_seconds ts = date::floor<std::chrono::seconds>(t);
  const date::local_seconds lt = zone->to_local(ts);
  // A local time more than 3 hours before t's cannot map after t, nor one
  // more than 3 hours after the best found map before it: no DST shift is that large.
  std::optional<date::sys_seconds> best;
  std::optional<date::local_seconds> best_local;
  const auto first_day = date::floor<date::days>(lt - hours{3});
  for (auto d = first_day; d < first_day + date::days{146097}; d += date::days{1}) {
    if (best_local && d > *best_local + hours{3}) break;
    if (!m.day_ok(d)) continue;
    m.for_each_time([&](std::chrono::seconds tod) {
      const date::local_seconds l = d + tod;
      if (l < lt - hours{3}) return true;
      if (best_local && l > *best_local + hours{3}) return false;
      const date::local_info info = zone->get_info(l);
      std::vector<date::sys_seconds> instants;
      switch (info.result) {
        case date::local_info::unique: instants.push_back(date::sys_seconds{(l - info.first.offset).time_since_epoch()}); break;
        case date::local_info::nonexistent:
          if (policy.gap == lease::dst_gap::run_after) instants.push_back(info.first.end);
          break;
        case date::local_info::ambiguous:
          instants.push_back(date::sys_seconds{(l - info.first.offset).time_since_epoch()});
          if (policy.repeat == lease::dst_repeat::both)
            instants.push_back(date::sys_seconds{(l - info.second.offset).time_since_epoch()});
          break;
      }
      for (const auto i : instants)
        if (i > t && (!best || i < *best)) best = i, best_local = zone->to_local(i);
      return true;
    });
  }
  if (!best) return std::nullopt;
  return lease::time_point{*best};
}

}  // namespace schedule_test
