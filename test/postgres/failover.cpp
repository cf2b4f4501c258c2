// A primary and a streaming standby on loopback; the primary is stopped
// `-m immediate` (a crash) and the standby promoted. Instances use one
// two-host conninfo with target_session_attrs=read-write, as users do.
//   * The standby had every write: the instances carry on — the runner's
//     heartbeats go through again, the backup still finds the run alive.
//   * The standby lacked the last writes (it was down while a run was won):
//     the store notices — the old runner's heartbeat is refused, and the
//     fence it carries is above the promoted server's counter — and
//     quarantines instead of letting the slot run again; the runner stops.
// Slow (three servers, a base backup): not built under sanitizers.
#include <algorithm>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::time_point;

namespace {

claim_request request(std::string job, time_point slot, std::string token,
                      claim_reason reason = claim_reason::scheduled) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.reason = reason;
  r.lease = 30s;
  r.deadline = slot + 1h;
  return r;
}

template <class Op>
auto until_available(Op op) {
  const auto end = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    try {
      return op();
    } catch (const lease::store_error& e) {
      INFO(e.what());
      REQUIRE(e.code() == lease::errc::unavailable);
      REQUIRE(std::chrono::steady_clock::now() < end);
      std::this_thread::sleep_for(50ms);
    }
  }
}

/// A primary with a store schema, and a standby made from it afterwards.
struct pair {
  lease::testing::postgres_server primary;
  std::string schema = lease::testing::fresh_schema("fo");
  std::unique_ptr<lease::testing::postgres_server> standby;

  pair() {
    (void)lease::postgres_store{{.conninfo = primary.conninfo(), .schema = schema, .clock = {}}}.now();  // the schema exists
    const auto dir = primary.dir();
    standby = std::make_unique<lease::testing::postgres_server>(lease::testing::postgres_server::settings{}, &dir,
                                                                 primary.port());
    REQUIRE(standby->sql("SELECT pg_is_in_recovery()") == "t");
  }
  [[nodiscard]] std::string conninfo() const {
    return "host=127.0.0.1,127.0.0.1 port=" + std::to_string(primary.port()) + "," + std::to_string(standby->port()) +
           " user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2";
  }
  lease::postgres_store store() const {
    return lease::postgres_store{{.conninfo = conninfo(), .schema = schema, .clock = {}, .max_backoff = 200ms}};
  }
  /// Bounded poll until the standby has replayed everything the primary wrote.
  void wait_replayed() const {
    const std::string lsn = primary.sql("SELECT pg_current_wal_lsn()::text");
    for (int i = 0; i < 3000; ++i) {
      if (standby->sql("SELECT pg_last_wal_replay_lsn() >= '" + lsn + "'::pg_lsn") == "t") return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL("the standby did not catch up within 30 s");
  }
  /// Crashes the primary (-m immediate), then promotes the standby;
  /// `start_standby`: the standby was down and is started only now, so it
  /// cannot fetch what it missed.
  void fail_over(bool start_standby = false) {
    primary.stop(SIGQUIT);
    if (start_standby) standby->start();
    REQUIRE(standby->sql("SELECT pg_promote(true, 60)") == "t");
  }
};

}  // namespace

TEST_CASE("after a failover to a standby that had every write, instances on a two-host conninfo carry on") {
  pair p;
  auto runner = p.store();
  auto backup = p.store();
  const time_point slot = runner.now();
  auto won = runner.claim(request("j", slot, "t1"));
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE(backup.claim(request("j", slot, "b1")).outcome == claim_outcome::running);
  p.wait_replayed();
  {
    // Straight to the standby, without target_session_attrs: refused with a sentence, as unavailable.
    lease::postgres_store direct{{.conninfo = p.standby->conninfo(), .schema = p.schema, .clock = {}}};
    try {
      (void)direct.get({"j", slot});
      FAIL("a standby was used");
    } catch (const lease::store_error& e) {
      CHECK(e.code() == lease::errc::unavailable);
      CHECK(e.code() == lease::postgres_errc::read_only);
      CHECK(std::string(e.what()).find("add target_session_attrs=read-write") != std::string::npos);
    }
    // Asked again at once, it backs off instead of opening a session on the
    // standby at every call (a review counted one per call, and 38 a second
    // from the listener), and says why.
    const std::string sessions = "SELECT sessions FROM pg_stat_database WHERE datname = current_database()";
    const std::string before = p.standby->sql(sessions);
    // (The backoff starts at 25 ms and doubles: a process held up that long
    // on a loaded machine probes once or twice more, as it should.)
    int probes = 0;
    for (int i = 0; i < 10; ++i) {
      try {
        (void)direct.get({"j", slot});
        FAIL("a standby was used");
      } catch (const lease::store_error& e) {
        if (e.code() == lease::postgres_errc::read_only) {
          ++probes;
          continue;
        }
        CHECK(e.code() == lease::postgres_errc::backing_off);
        CHECK(std::string(e.what()).find("is a standby") != std::string::npos);
      }
    }
    CHECK(probes <= 2);
    CHECK(std::stoll(p.standby->sql(sessions)) - std::stoll(before) <= 2 + probes);  // this query's own session, a probe
  }

  p.fail_over();
  CHECK(until_available([&] { return runner.heartbeat({"j", slot}, "t1", 30s); }));
  auto again = until_available([&] { return backup.claim(request("j", slot, "b2", claim_reason::takeover)); });
  CHECK(again.outcome == claim_outcome::running);  // no second winner
  CHECK(again.record.token == "t1");
  CHECK(runner.finish({"j", slot}, "t1", lease::run_status::success));
  const auto later = slot + 1min;
  auto next = backup.claim(request("j", later, "b3"));
  (void)next;  // the next slot is in the future: early, or won once the clock is there
  CHECK((next.outcome == claim_outcome::early || next.outcome == claim_outcome::won));
  for (const auto& n : backup.take_notices()) CHECK(n.find("lost its state") == std::string::npos);
}

TEST_CASE("after a failover to a standby that lacked the last writes, the store quarantines instead of re-running") {
  pair p;
  auto runner = p.store();
  auto backup = p.store();
  (void)runner.now();
  p.wait_replayed();
  p.standby->stop(SIGINT);  // the standby misses what follows

  const time_point slot = runner.now();
  auto won = runner.claim(request("j", slot, "t1"));
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE(backup.claim(request("j", slot, "b1")).outcome == claim_outcome::running);  // the backup saw fence F
  (void)backup.take_notices();

  p.fail_over(/*start_standby=*/true);
  // The old runner's run is gone on the new primary: its heartbeat is
  // refused, so it stops; the refusal carries fence F, above the job's
  // counter: a loss, recorded.
  (void)runner.take_notices();
  CHECK_FALSE(until_available([&] { return runner.heartbeat({"j", slot}, "t1", 30s); }));
  auto told = [](const std::vector<std::string>& notices, std::string_view what) {
    return std::any_of(notices.begin(), notices.end(), [&](const std::string& n) { return n.find(what) != n.npos; });
  };
  CHECK(told(runner.take_notices(), "a refused heartbeat of job 'j' carried a fence above its counter"));
  // The backup's takeover learns of it. The run has no state, so the
  // takeover creates nothing (none, as the rules say).
  auto take = until_available([&] { return backup.claim(request("j", slot, "b2", claim_reason::takeover)); });
  CHECK(take.outcome == claim_outcome::none);
  CHECK(told(backup.take_notices(), "lost its state (another instance noticed it)"));
  // Every instance obeys it: the slot does not start again, not even as a new run.
  auto fresh = runner.claim(request("j", slot, "t2"));
  CHECK(fresh.outcome == claim_outcome::quarantined);
  CHECK(fresh.record.lease_end > fresh.store_now);  // one lease after the loss was noticed
  CHECK_FALSE(runner.get({"j", slot}).has_value());
  // Fences never repeat across the loss: once the quarantine is over, a new slot's fence is above F.
  CHECK(runner.lost_at().has_value());
}
