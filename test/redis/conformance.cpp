// The redis store passes the shared store conformance suite unchanged: every
// random history gets the same answers from Redis as from the pure rules.
#include "laws/store_conformance.hpp"

#include "lease/store/redis.hpp"
#include "redis/server.hpp"

// A TriggerStore: the suite's trigger, poll and manual-claim steps run too.
static_assert(lease::PushTriggerStore<lease::redis_store>);
// A StopStore and a RegistryStore: the stop, register_jobs and purge steps
// run too (never skipped silently), here and on the clusters (cluster.cpp,
// routing.cpp).
static_assert(lease::StopStore<lease::redis_store> && lease::RegistryStore<lease::redis_store>);

TEST_CASE("redis_store answers every random history exactly as the rules do") {
  lease::testing::redis_server srv;
  lease::testing::check_store_conformance([&](lease::fake_clock c) {
    return lease::redis_store{{.url = srv.url(), .prefix = lease::testing::fresh_prefix("conf"),
                               .clock = [c] { return c.now(); }}};
  });
}
