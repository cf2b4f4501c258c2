// Tokens and error conditions: what a user sees when something is wrong, and
// what makes tokens fit for fencing. (Options: options.cpp.)
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "lease/error.hpp"
#include "lease/token.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;

TEST_CASE("tokens are 32 hex digits, 128 random bits, and do not repeat") {
  std::mt19937_64 rng{42};
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    const std::string t = lease::make_token(rng);
    REQUIRE(t.size() == 32);
    REQUIRE(t.find_first_not_of("0123456789abcdef") == std::string::npos);
    REQUIRE(seen.insert(t).second);
  }
}

TEST_CASE("a store_error compares equal to the lease::errc that says what to do") {
  const lease::store_error e{lease::make_error_code(lease::errc::outcome_unknown), "claim sent, reply lost"};
  REQUIRE(e.code() == lease::errc::outcome_unknown);
  REQUIRE(e.code() != lease::errc::unavailable);
  REQUIRE_THAT(e.what(), Contains("read the run back"));
}
