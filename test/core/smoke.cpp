#include <catch2/catch.hpp>
#include "lease/rules.hpp"
#include "lease/store/memory.hpp"
#include "lease/schedule/every.hpp"
#include "lease/options.hpp"
#include "lease/error.hpp"
#include "lease/token.hpp"
TEST_CASE("smoke") {
  lease::fake_clock c;
  lease::memory_store<lease::fake_clock> s{c};
  lease::claim_request r{{"j", lease::time_point{}}, "a", "t", lease::claim_reason::scheduled};
  r.deadline = lease::time_point{} + lease::duration{30000};
  REQUIRE(s.claim(r).outcome == lease::claim_outcome::won);
}
