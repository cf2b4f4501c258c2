// The redis store passes the shared store conformance suite unchanged: every
// random history gets the same answers from Redis as from the pure rules.
#include "laws/store_conformance.hpp"

#include "lease/store/redis.hpp"
#include "redis/server.hpp"

TEST_CASE("redis_store answers every random history exactly as the rules do") {
  lease::testing::redis_server srv;
  lease::testing::check_store_conformance([&](lease::fake_clock c) {
    return lease::redis_store{{.url = srv.url(), .prefix = lease::testing::fresh_prefix("conf"),
                               .clock = [c] { return c.now(); }}};
  });
}
