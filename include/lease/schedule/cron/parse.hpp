// lease/schedule/cron/parse.hpp — detail::parse_cron: cron expression text to
// detail::cron_fields, or a lease::cron_error that points at the mistake.
//
// Grammar (fields separated by spaces or tabs; names are case-insensitive):
//   expression := [second] minute hour day-of-month month day-of-week | macro
//   field      := item {"," item}
//   item       := "*" ["/" step] | value ["-" value] ["/" step]
//               | "?"                      (day fields only, alone)
//               | "L" | "L-" n | n "W" | "LW"  (day of month only)
//               | value "L" | value "#" k      (day of week only)
//   value      := number | name (jan–dec, sun–sat)
// A range whose end is below its start wraps around (22-2, fri-mon); `a/s`
// means a-max/s. Day of week 7 is Sunday, like 0; for `*` and `a/s` the week
// ends at 6, so Sunday is never counted twice.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lease/schedule/cron/error.hpp"
#include "lease/schedule/cron/fields.hpp"

namespace lease::detail {

enum class cron_field_kind { second, minute, hour, day_of_month, month, day_of_week };

struct cron_field_spec {
  cron_field_kind kind;
  std::string_view name;
  int min;
  int max;
};

inline constexpr std::array<cron_field_spec, 6> cron_field_specs{{
    {cron_field_kind::second, "second", 0, 59},
    {cron_field_kind::minute, "minute", 0, 59},
    {cron_field_kind::hour, "hour", 0, 23},
    {cron_field_kind::day_of_month, "day of month", 1, 31},
    {cron_field_kind::month, "month", 1, 12},
    {cron_field_kind::day_of_week, "day of week", 0, 7},
}};

inline constexpr std::array<std::string_view, 12> month_names{"jan", "feb", "mar", "apr", "may", "jun",
                                                              "jul", "aug", "sep", "oct", "nov", "dec"};
inline constexpr std::array<std::string_view, 7> weekday_names{"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct cron_macro {
  std::string_view name;
  std::string_view expansion;
};
inline constexpr std::array<cron_macro, 7> cron_macros{{
    {"@yearly", "0 0 0 1 1 *"},
    {"@annually", "0 0 0 1 1 *"},
    {"@monthly", "0 0 0 1 * *"},
    {"@weekly", "0 0 0 * * 0"},
    {"@daily", "0 0 0 * * *"},
    {"@midnight", "0 0 0 * * *"},
    {"@hourly", "0 0 * * * *"},
}};

constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// A piece of the expression and where it starts (0-based offset).
struct cron_token {
  std::string_view text;
  std::size_t offset;
};

/// Parses one field of an expression. Errors name the field and the 1-based
/// column of the offending text.
class cron_field_parser {
 public:
  cron_field_parser(const cron_field_spec& spec, cron_fields& out) : spec_(spec), out_(out) {}

  void parse(cron_token field) {
    const bool day_field = spec_.kind == cron_field_kind::day_of_month || spec_.kind == cron_field_kind::day_of_week;
    if (day_field) {
      const bool restricted = field.text.front() != '*' && field.text.front() != '?';
      (spec_.kind == cron_field_kind::day_of_month ? out_.day_of_month_restricted : out_.day_of_week_restricted) =
          restricted;
    }
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = field.text.find(',', start);
      const std::size_t end = comma == std::string_view::npos ? field.text.size() : comma;
      const cron_token item{field.text.substr(start, end - start), field.offset + start};
      if (item.text.empty()) fail(item, "empty list item");
      if (item.text == "?") {
        if (!day_field) fail(item, "is only allowed in the day-of-month and day-of-week fields");
        if (field.text.size() != 1) fail(item, "must stand alone in its field");
        add_range(spec_.min, spec_.max, 1);
      } else {
        parse_item(item);
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }

 private:
  [[noreturn]] void fail(cron_token at, std::string reason) const {
    throw cron_error(std::string(spec_.name), std::string(at.text), std::move(reason), at.offset + 1);
  }

  // Digits only; saturates, since a huge number is out of range anyway.
  [[nodiscard]] long long number(cron_token t) const {
    long long v = 0;
    for (const char c : t.text) {
      if (!is_digit(c)) fail(t, "is not a number");
      if (v < 1000000) v = v * 10 + (c - '0');
    }
    return v;
  }

  // A number or (months, weekdays) a name, within [min, max].
  [[nodiscard]] int value(cron_token t, int min, int max) const {
    if (t.text.empty()) fail(t, "missing value");
    if (is_digit(t.text.front())) {
      const long long v = number(t);
      if (v < min || v > max) fail(t, "is outside " + std::to_string(min) + "-" + std::to_string(max));
      return static_cast<int>(v);
    }
    if (spec_.kind == cron_field_kind::month) {
      for (std::size_t i = 0; i < month_names.size(); ++i)
        if (iequals(t.text, month_names[i])) return static_cast<int>(i) + 1;
      fail(t, "is neither a number nor a month name (jan-dec)");
    }
    if (spec_.kind == cron_field_kind::day_of_week) {
      for (std::size_t i = 0; i < weekday_names.size(); ++i)
        if (iequals(t.text, weekday_names[i])) return static_cast<int>(i);
      fail(t, "is neither a number nor a weekday name (sun-sat)");
    }
    fail(t, "is not a number");
  }

  // The suffix forms of the day fields; true if `item` was one.
  bool parse_day_special(cron_token item) {
    const std::string_view s = item.text;
    const auto is = [](char c, char letter) { return ascii_lower(c) == letter; };
    const auto sub = [&](std::size_t from, std::size_t n = std::string_view::npos) {
      return cron_token{s.substr(from, n), item.offset + from};
    };
    if (spec_.kind == cron_field_kind::day_of_month) {
      if (iequals(s, "L")) return out_.days_before_last |= 1u, true;
      if (iequals(s, "LW")) return out_.last_weekday = true, true;
      if (s.size() >= 2 && is(s[0], 'l') && s[1] == '-') {
        out_.days_before_last |= std::uint32_t{1} << value(sub(2), 0, 30);
        return true;
      }
      if (s.size() >= 2 && is(s.back(), 'w') && is_digit(s.front())) {
        out_.nearest_weekday_to |= std::uint32_t{1} << value(sub(0, s.size() - 1), 1, 31);
        return true;
      }
      return false;
    }
    if (spec_.kind == cron_field_kind::day_of_week) {
      if (iequals(s, "L")) fail(item, "needs a weekday before it, as in 5L or friL (the last Friday)");
      if (const std::size_t hash = s.find('#'); hash != std::string_view::npos) {
        const int w = value(sub(0, hash), 0, 7) % 7;
        const cron_token k = sub(hash + 1);
        if (k.text.empty()) fail(k, "missing number after #, as in fri#3 (the third Friday)");
        if (!is_digit(k.text.front())) fail(k, "is not a number");  // not a weekday name: it counts
        out_.nth_of[static_cast<std::size_t>(w)] |= static_cast<std::uint8_t>(1u << value(k, 1, 5));
        return true;
      }
      if (s.size() >= 2 && is(s.back(), 'l')) {
        const int w = value(sub(0, s.size() - 1), 0, 7) % 7;
        out_.last_of |= static_cast<std::uint8_t>(1u << w);
        return true;
      }
    }
    return false;
  }

  void parse_item(cron_token item) {
    if (parse_day_special(item)) return;
    const std::string_view s = item.text;
    const std::size_t slash = s.find('/');
    const cron_token base{s.substr(0, slash), item.offset};

    int step = 1;
    if (slash != std::string_view::npos) {
      const cron_token st{s.substr(slash + 1), item.offset + slash + 1};
      if (st.text.empty()) fail(st, "missing step after /");
      const int span = spec_.max - spec_.min + 1;
      const long long n = number(st);
      if (n < 1 || n > span) fail(st, "is not a valid step, which must be 1-" + std::to_string(span));
      step = static_cast<int>(n);
    }

    // The week ends at 6 (Saturday): 7 is only another name for Sunday.
    const int field_end = spec_.kind == cron_field_kind::day_of_week ? 6 : spec_.max;
    if (base.text == "*") return add_range(spec_.min, field_end, step);
    if (base.text.empty()) fail(base, "missing value before /");

    const std::size_t dash = base.text.find('-', 1);
    const int from = value({base.text.substr(0, dash), base.offset}, spec_.min, spec_.max);
    if (dash == std::string_view::npos) {
      // `a/s` runs from a to the end of the field; a lone value is just itself.
      return slash == std::string_view::npos ? add_range(from, from, 1) : add_range(from, field_end, step);
    }
    const int to = value({base.text.substr(dash + 1), base.offset + dash + 1}, spec_.min, spec_.max);
    add_range(from, to, step);
  }

  // Sets every step-th value from `from` to `to`, wrapping around the field
  // when to < from (22-2 is 22, 23, 0, 1, 2).
  void add_range(int from, int to, int step) {
    int min = spec_.min;
    int max = spec_.max;
    if (spec_.kind == cron_field_kind::day_of_week && from > to) {
      // Wrap within the real week (0-6): 7 is Sunday, and counting it twice
      // would break the step (fri-tue/2 is fri, sun, tue).
      from %= 7;
      to %= 7;
      max = 6;
    }
    const int span = max - min + 1;
    const int length = from <= to ? to - from + 1 : span - (from - to) + 1;
    for (int i = 0; i < length; i += step) set(min + (from - min + i) % span);
  }

  void set(int v) {
    switch (spec_.kind) {
      case cron_field_kind::second: out_.seconds |= std::uint64_t{1} << v; break;
      case cron_field_kind::minute: out_.minutes |= std::uint64_t{1} << v; break;
      case cron_field_kind::hour: out_.hours |= std::uint32_t{1} << v; break;
      case cron_field_kind::day_of_month: out_.days |= std::uint32_t{1} << v; break;
      case cron_field_kind::month: out_.months |= static_cast<std::uint16_t>(1u << v); break;
      case cron_field_kind::day_of_week: out_.weekdays |= static_cast<std::uint8_t>(1u << (v % 7)); break;
    }
  }

  const cron_field_spec& spec_;
  cron_fields& out_;
};

/// Splits on blanks, keeping each token's offset.
inline std::size_t split_fields(std::string_view expr, std::array<cron_token, 7>& out) {
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < expr.size()) {
    while (i < expr.size() && is_blank(expr[i])) ++i;
    if (i == expr.size()) break;
    const std::size_t start = i;
    while (i < expr.size() && !is_blank(expr[i])) ++i;
    if (n == out.size()) break;  // one too many is enough to report
    out[n++] = {expr.substr(start, i - start), start};
  }
  return n;
}

/// Parses a whole expression (5 or 6 fields, or a macro). Throws cron_error.
inline cron_fields parse_cron(std::string_view expr) {
  std::array<cron_token, 7> tokens{};
  std::size_t n = split_fields(expr, tokens);

  if (n >= 1 && tokens[0].text.front() == '@') {
    if (n > 1) throw cron_error("expression", std::string(tokens[1].text), "follows a macro, which stands alone", tokens[1].offset + 1);
    for (const auto& m : cron_macros)
      if (iequals(tokens[0].text, m.name)) return parse_cron(m.expansion);
    throw cron_error("expression", std::string(tokens[0].text),
                     "is not a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)",
                     tokens[0].offset + 1);
  }
  if (n > 6)
    throw cron_error("expression", std::string(tokens[6].text), "is a 7th field: expected 5 fields, or 6 with seconds first",
                     tokens[6].offset + 1);
  if (n < 5)
    throw cron_error("expression", "", "has " + std::to_string(n) + " fields: expected 5 (minute hour day-of-month month day-of-week), or 6 with seconds first",
                     1);

  cron_fields f;
  const std::size_t first_spec = n == 6 ? 0 : 1;
  if (n == 5) f.seconds = 1;  // minute precision: at second 0
  for (std::size_t i = 0; i < n; ++i) cron_field_parser(cron_field_specs[first_spec + i], f).parse(tokens[i]);

  if (!f.can_fire())
    throw cron_error("expression", std::string(expr), "can never fire: no day in its months matches its day fields", tokens[0].offset + 1);
  return f;
}

}  // namespace lease::detail
