// Four processes claim the same runs of one job at once on one redis-server
// (race.hpp): exactly one winner per attempt.
#include <catch2/catch.hpp>

#include "lease/store/redis.hpp"
#include "redis/race.hpp"
#include "redis/server.hpp"

TEST_CASE("four processes racing for the same runs get exactly one winner per attempt") {
  lease::testing::redis_server srv;
  lease::redis_options o;
  o.url = srv.url();
  o.prefix = lease::testing::fresh_prefix("race");
  lease::testing::check_four_racers(o, {"race"}, srv.dir());
}
