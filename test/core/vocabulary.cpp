// Options validation, tokens and error conditions: what a user sees when
// something is wrong, and what makes tokens fit for fencing.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "lease/error.hpp"
#include "lease/options.hpp"
#include "lease/token.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;

TEST_CASE("the default heartbeat is 5 s, or lease / 6 when that is smaller") {
  REQUIRE(lease::options{}.validated().heartbeat == 5s);
  lease::options short_lease;
  short_lease.lease = 6s;
  REQUIRE(short_lease.validated().heartbeat == 1s);
}

TEST_CASE("a heartbeat of half the lease or more is rejected with a sentence naming both") {
  lease::options o;
  o.lease = 10s;
  o.heartbeat = 5s;
  REQUIRE_THROWS_WITH(o.validated(), Contains("heartbeat (5000 ms) must be under half of lease (10000 ms)"));
  o.heartbeat = 4999ms;
  REQUIRE_NOTHROW(o.validated());
}

TEST_CASE("a zero or negative lease is rejected at construction") {
  lease::options o;
  o.lease = 0ms;
  REQUIRE_THROWS_AS(o.validated(), std::invalid_argument);
  REQUIRE_THROWS_WITH(o.validated(), Contains("lease must be positive"));
  o.lease = -1s;
  REQUIRE_THROWS_WITH(o.validated(), Contains("lease must be positive"));
}

TEST_CASE("a lease too short for any heartbeat is rejected") {
  lease::options o;
  o.lease = 5ms;  // lease / 6 rounds down to 0 ms
  REQUIRE_THROWS_WITH(o.validated(), Contains("heartbeat must be positive"));
}

TEST_CASE("max_attempts of zero and negative durations are rejected") {
  lease::options o;
  o.max_attempts = 0;
  REQUIRE_THROWS_WITH(o.validated(), Contains("max_attempts must be at least 1"));
  o = {};
  o.catch_up = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("catch_up"));
  o = {};
  o.max_late = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("max_late"));
  o = {};
  o.claim_jitter = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("jitter"));
  o = {};
  o.stop_timeout = -1ms;
  REQUIRE_THROWS_WITH(o.validated(), Contains("stop_timeout"));
}

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
