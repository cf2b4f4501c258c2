// postgres_store passes the shared store conformance suite unchanged: every
// random history gets the same answers from PostgreSQL as from the pure
// rules. Each history gets a schema of its own. Its losses of state are real:
// the schema is dropped from another connection while the store is
// connected; the store notices at its next operation (the hook makes one at
// once, at the clock's current time): the schema is created again with a new
// marker, and the loss recorded as rules::lose_state does.
#include "laws/store_conformance.hpp"

#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"

// The suite generates stop, register_jobs and purge steps only for a store
// that models these: it must not skip them silently.
static_assert(lease::StopStore<lease::postgres_store> && lease::RegistryStore<lease::postgres_store>);

TEST_CASE("postgres_store answers every random history exactly as the rules do") {
  auto& srv = lease::testing::shared_server();
  lease::testing::check_store_conformance(
      [&](lease::fake_clock c) {
        return lease::postgres_store{{.conninfo = srv.conninfo(),
                                      .schema = lease::testing::fresh_schema("conf"),
                                      .clock = [c] { return c.now(); }}};
      },
      [&](lease::postgres_store& s) {
        (void)s.lost_at();  // connected, and the marker seen, before the loss
        srv.sql("DROP SCHEMA \"" + s.options().schema + "\" CASCADE");
        REQUIRE(s.lost_at().has_value());  // noticed now, at the clock's current time
      });
}
