// Invalid expressions are rejected at construction with a message that names
// the field, the offending text, the reason and the column.
#include <catch2/catch.hpp>

#include "lease/schedule/cron.hpp"

namespace {

struct expected_error {
  const char* expression;
  const char* field;
  const char* text;
  std::size_t column;
  const char* message;
};

lease::cron_error error_of(const char* expression, const char* zone = "UTC") {
  try {
    lease::cron c(expression, zone);
    FAIL("accepted: " << expression);
  } catch (const lease::cron_error& e) {
    return e;
  }
  throw std::logic_error("unreachable");
}

void check(const expected_error& x) {
  INFO("expression: " << x.expression);
  const lease::cron_error e = error_of(x.expression);
  CHECK(std::string(e.what()) == x.message);
  CHECK(e.field() == x.field);
  CHECK(e.text() == x.text);
  CHECK(e.column() == x.column);
}

}  // namespace

TEST_CASE("A value outside its field's range is rejected with field, value, range and column") {
  for (const expected_error& x : {
           expected_error{"0 61 * * * *", "minute", "61", 3, "minute: 61 is outside 0-59 (column 3)"},
           expected_error{"61 * * * *", "minute", "61", 1, "minute: 61 is outside 0-59 (column 1)"},
           expected_error{"60 * * * * *", "second", "60", 1, "second: 60 is outside 0-59 (column 1)"},
           expected_error{"0 24 * * *", "hour", "24", 3, "hour: 24 is outside 0-23 (column 3)"},
           expected_error{"0 0 0 * *", "day of month", "0", 5, "day of month: 0 is outside 1-31 (column 5)"},
           expected_error{"0 0 * 13 *", "month", "13", 7, "month: 13 is outside 1-12 (column 7)"},
           expected_error{"0 0 * * 8", "day of week", "8", 9, "day of week: 8 is outside 0-7 (column 9)"},
           expected_error{"0 10-99 * * * *", "minute", "99", 6, "minute: 99 is outside 0-59 (column 6)"},
           expected_error{"0 0 * * mon#6", "day of week", "6", 13, "day of week: 6 is outside 1-5 (column 13)"},
           expected_error{"0 0 L-31 * *", "day of month", "31", 7, "day of month: 31 is outside 0-30 (column 7)"},
           expected_error{"0 0 99999999999999999999 * *", "day of month", "99999999999999999999", 5,
                          "day of month: 99999999999999999999 is outside 1-31 (column 5)"},
       })
    check(x);
}

TEST_CASE("Text that is not a value is rejected with what was expected") {
  for (const expected_error& x : {
           expected_error{"0 0 * foo *", "month", "foo", 7,
                          "month: foo is neither a number nor a month name (jan-dec) (column 7)"},
           expected_error{"0 0 * * sunday", "day of week", "sunday", 9,
                          "day of week: sunday is neither a number nor a weekday name (sun-sat) (column 9)"},
           expected_error{"x * * * *", "minute", "x", 1, "minute: x is not a number (column 1)"},
           expected_error{"5x * * * *", "minute", "5x", 1, "minute: 5x is not a number (column 1)"},
           expected_error{"0 1-2-3 * * *", "hour", "2-3", 5, "hour: 2-3 is not a number (column 5)"},
           expected_error{"0 jan * * *", "hour", "jan", 3, "hour: jan is not a number (column 3)"},
       })
    check(x);
}

TEST_CASE("Malformed lists, ranges and steps are rejected where they go wrong") {
  for (const expected_error& x : {
           expected_error{"1,,2 * * * *", "minute", "", 3, "minute: empty list item (column 3)"},
           expected_error{"1, * * * *", "minute", "", 3, "minute: empty list item (column 3)"},
           expected_error{"5- * * * *", "minute", "", 3, "minute: missing value (column 3)"},
           expected_error{"*/ * * * *", "minute", "", 3, "minute: missing step after / (column 3)"},
           expected_error{"/5 * * * *", "minute", "", 1, "minute: missing value before / (column 1)"},
           expected_error{"*/0 * * * *", "minute", "0", 3, "minute: 0 is not a valid step, which must be 1-60 (column 3)"},
           expected_error{"0 */25 * * *", "hour", "25", 5, "hour: 25 is not a valid step, which must be 1-24 (column 5)"},
       })
    check(x);
}

TEST_CASE("Day-field letters are rejected outside their field or without their number") {
  for (const expected_error& x : {
           expected_error{"? * * * *", "minute", "?", 1,
                          "minute: ? is only allowed in the day-of-month and day-of-week fields (column 1)"},
           expected_error{"0 0 5,? * *", "day of month", "?", 7, "day of month: ? must stand alone in its field (column 7)"},
           expected_error{"0 0 * * L", "day of week", "L", 9,
                          "day of week: L needs a weekday before it, as in 5L or friL (the last Friday) (column 9)"},
           expected_error{"0 0 * * 5#", "day of week", "", 11,
                          "day of week: missing number after #, as in fri#3 (the third Friday) (column 11)"},
           expected_error{"0 0 * * 1#sun", "day of week", "sun", 11, "day of week: sun is not a number (column 11)"},
           expected_error{"0 0 W * *", "day of month", "W", 5, "day of month: W is not a number (column 5)"},
           expected_error{"0 0 32W * *", "day of month", "32", 5, "day of month: 32 is outside 1-31 (column 5)"},
           expected_error{"0 L * * *", "hour", "L", 3, "hour: L is not a number (column 3)"},
       })
    check(x);
}

TEST_CASE("An expression of the wrong shape is rejected as a whole") {
  for (const expected_error& x : {
           expected_error{"0 0 * *", "expression", "", 1,
                          "expression: has 4 fields: expected 5 (minute hour day-of-month month day-of-week), or 6 "
                          "with seconds first (column 1)"},
           expected_error{"", "expression", "", 1,
                          "expression: has 0 fields: expected 5 (minute hour day-of-month month day-of-week), or 6 "
                          "with seconds first (column 1)"},
           expected_error{"0 0 0 * * * 2026", "expression", "2026", 13,
                          "expression: 2026 is a 7th field: expected 5 fields, or 6 with seconds first (column 13)"},
           expected_error{"@often", "expression", "@often", 1,
                          "expression: @often is not a macro (@yearly, @annually, @monthly, @weekly, @daily, "
                          "@midnight, @hourly) (column 1)"},
           expected_error{"@daily *", "expression", "*", 8,
                          "expression: * follows a macro, which stands alone (column 8)"},
       })
    check(x);
}

TEST_CASE("An expression that can never fire is rejected at construction") {
  for (const expected_error& x : {
           expected_error{"0 0 30 2 *", "expression", "0 0 30 2 *", 1,
                          "expression: 0 0 30 2 * can never fire: no day in its months matches its day fields "
                          "(column 1)"},
           expected_error{"0 0 31 apr,jun,sep,nov *", "expression", "0 0 31 apr,jun,sep,nov *", 1,
                          "expression: 0 0 31 apr,jun,sep,nov * can never fire: no day in its months matches its "
                          "day fields (column 1)"},
           expected_error{"0 0 30W feb *", "expression", "0 0 30W feb *", 1,
                          "expression: 0 0 30W feb * can never fire: no day in its months matches its day fields "
                          "(column 1)"},
           expected_error{"0 0 L-29 feb *", "expression", "0 0 L-29 feb *", 1,
                          "expression: 0 0 L-29 feb * can never fire: no day in its months matches its day fields "
                          "(column 1)"},
       })
    check(x);
}

TEST_CASE("Rare but possible days are accepted") {
  CHECK_NOTHROW(lease::cron("0 0 29 2 *"));         // leap days
  CHECK_NOTHROW(lease::cron("0 0 30 2 mon"));       // either field: Mondays in February
  CHECK_NOTHROW(lease::cron("0 0 29 2 mon"));       // either: 29 Feb or a Monday
  CHECK_NOTHROW(lease::cron("0 0 * 2 mon#5"));      // a fifth Monday in February: 29 Feb on a Monday
  CHECK_NOTHROW(lease::cron("0 0 L-28 2 *"));       // 1 February in leap years
  CHECK_NOTHROW(lease::cron("0 0 L-27 2 *"));       // 1 or 2 February
}

TEST_CASE("An unknown time zone is rejected at construction") {
  const lease::cron_error e = error_of("0 * * * *", "Mars/Olympus_Mons");
  CHECK(std::string(e.what()) == "time zone: Mars/Olympus_Mons is not in the time zone database");
  CHECK(e.field() == "time zone");
  CHECK(e.text() == "Mars/Olympus_Mons");
  CHECK(e.column() == 0);
}

TEST_CASE("A cron_error can be caught as std::invalid_argument") {
  CHECK_THROWS_AS(lease::cron("0 61 * * *"), std::invalid_argument);
}
