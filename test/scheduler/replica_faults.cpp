// Scenario tests for Redis with `replicas = 1` over a primary and one
// asynchronous replica, as lease::sim models it (cluster::wait_for_replica):
// the replica lags (cluster::replica_lags), so each WAIT after a write falls
// short, and the primary fails over to the replica (fail_over_to_replica),
// losing every write since the lag began. Each consequence redis_store draws
// from a short WAIT (a claim released, a renewal not counted, a finish told
// in a notice) is shown on the fake clock.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lease/schedule/every.hpp"
#include "lease/sim.hpp"
#include "sim_options.hpp"

using namespace std::chrono_literals;
using lease::duration;
using lease::event_kind;
using unreplicated = lease::sim::cluster<>::unreplicated;

namespace {

/// sim_options(), with a slot given up 5 s after it is due.
lease::options replica_options() {
  lease::options o = test::sim_options();
  o.max_late = 5s;
  return o;
}

/// Three instances (n0, n1, n2, no skew) over a store with one replica and
/// `replicas = 1`; one job every minute whose handler runs `runs_for` and
/// honours its stop at once.
struct replicated_sim {
  lease::sim::cluster<> sim;
  explicit replicated_sim(std::uint64_t seed, duration runs_for) : sim(seed, replica_options()) {
    sim.wait_for_replica(true);
    sim.notice_losses_beside_claims(true);  // as Redis notices a loss
    sim.add_job("report", lease::every(60s), [runs_for](const lease::run_context&) {
      return lease::sim::script{.runs_for = runs_for, .honours_stop = 0ms};
    });
    for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i));
    sim.start_all();
  }
  [[nodiscard]] lease::time_point at(duration d) const { return lease::time_point{} + 1h + d; }
  /// The handler runs of the slot at 1 h + `slot`.
  [[nodiscard]] std::vector<lease::sim::handler_run> runs_of(duration slot) const {
    std::vector<lease::sim::handler_run> out;
    for (const auto& r : sim.recorded().handlers)
      if (r.run.slot == at(slot)) out.push_back(r);
    return out;
  }
};

}  // namespace

TEST_CASE("replicas 1: a claim the lagging replica lacks is released and runs nothing") {
  replicated_sim s(3, 20s);
  s.sim.run_until(s.at(59s));
  s.sim.replica_lags();
  s.sim.run_until(s.at(62s));
  INFO(s.sim.describe());
  // Every win of the slot was released at once: no handler started on it.
  CHECK(s.runs_of(60s).empty());
  CHECK(s.sim.not_replicated(unreplicated::claims) > 0);
  std::size_t released = 0;
  for (const auto& op : s.sim.recorded().ops)
    released += op.op == lease::sim::store_op::kind::release && op.accepted && op.run.slot == s.at(60s) ? 1 : 0;
  CHECK(released > 0);
  // Once the replica has caught up, the released run is taken over, once.
  s.sim.replica_catches_up();
  s.sim.run_until(s.at(70s));
  REQUIRE(s.runs_of(60s).size() == 1);
  CHECK(s.runs_of(60s).front().start > s.at(62s));
  CHECK(s.sim.violations().empty());
}

TEST_CASE("replicas 1: a heartbeat the replica lacks does not count") {
  replicated_sim s(5, 20s);
  s.sim.run_until(s.at(62s) + 100ms);
  REQUIRE(s.runs_of(60s).size() == 1);
  const auto first = s.runs_of(60s).front();
  s.sim.replica_lags();
  // The primary renews the lease, but no renewal counts: the runner stops
  // at its self-abort deadline, one lease after its last replicated renewal
  // less the safety margin, and no later.
  s.sim.run_until(s.at(66s));
  INFO(s.sim.describe());
  CHECK(s.sim.not_replicated(unreplicated::heartbeats) > 0);
  REQUIRE(s.runs_of(60s).size() == 1);
  const auto stopped = s.runs_of(60s).front();
  REQUIRE(stopped.end);
  CHECK(*stopped.end <= s.at(62s) + 100ms + 3s);
  // The primary still shows the renewed lease: nobody takes over yet.
  const auto rec = s.sim.backing_store().get({"report", s.at(60s)});
  REQUIRE(rec);
  CHECK(rec->lease_end > s.at(66s));
  // The replica is promoted with the lease end the runner went by: a
  // backup takes over after it, and after the runner stopped.
  REQUIRE(s.sim.fail_over_to_replica());
  s.sim.run_until(s.at(70s));
  const auto runs = s.runs_of(60s);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].attempt == first.attempt + 1);
  CHECK(runs[1].start >= *stopped.end);
  CHECK(runs[1].start < rec->lease_end);  // the primary's renewals died with it
  CHECK(s.sim.violations().empty());
}

TEST_CASE("replicas 1: a failover after an unreplicated heartbeat runs nothing twice") {
  replicated_sim s(7, 20s);
  s.sim.run_until(s.at(62s) + 100ms);
  REQUIRE(s.runs_of(60s).size() == 1);
  s.sim.replica_lags();
  // The runner's last renewal the replica has is at 1 h + 62 s: its
  // self-abort deadline is 64.7 s (lease less the 300 ms margin), the
  // replica's lease end 65 s. The primary dies in between, its lease
  // renewed up to 67.5 s: a runner that counted those renewals would run
  // on past the backup's takeover.
  s.sim.run_until(s.at(64s) + 850ms);
  REQUIRE(s.sim.not_replicated(unreplicated::heartbeats) > 0);
  const auto primary = s.sim.backing_store().get({"report", s.at(60s)});
  REQUIRE(primary);
  REQUIRE(s.sim.fail_over_to_replica());
  s.sim.run_until(s.at(70s));
  INFO(s.sim.describe());
  const auto runs = s.runs_of(60s);
  REQUIRE(runs.size() == 2);
  REQUIRE(runs[0].end);
  CHECK(*runs[0].end <= s.at(64s) + 700ms);
  CHECK(runs[1].start >= s.at(65s));
  CHECK(runs[1].start < primary->lease_end);  // taken over by the replica's lease end, not the primary's
  CHECK(s.sim.violations().empty());
}

TEST_CASE("replicas 1: a finish the replica lacks is told, and a failover may run it again") {
  replicated_sim s(9, 5s);
  // A store that cannot push: the backups learn of the finish only at
  // their next check, and the primary dies before it.
  s.sim.announce_releases(false);
  s.sim.run_until(s.at(64s) + 900ms);
  REQUIRE(s.runs_of(60s).size() == 1);
  s.sim.replica_lags();
  s.sim.run_until(s.at(65s) + 50ms);  // the handler returned at 1 h + 65 s: its finish is on the primary only
  INFO(s.sim.describe());
  CHECK(s.sim.not_replicated(unreplicated::finishes) == 1);
  bool told = false;
  for (const auto& e : s.sim.recorded().events)
    told |= e.kind == event_kind::store_notice &&
            e.message.find("a failover before the replicas catch up would bring the run back as running") !=
                std::string::npos;
  CHECK(told);
  REQUIRE(s.sim.fail_over_to_replica());
  CHECK(s.sim.finishes_lost_in_failovers() == 1);
  s.sim.run_until(s.at(75s));
  // What the design accepts, and says it does: the run is back as running,
  // and a backup runs its slot again after its lease. The check that a run
  // finished before a failover never starts again excuses exactly this.
  const auto runs = s.runs_of(60s);
  CHECK(runs.size() == 2);
  CHECK(s.sim.violations().empty());
  CHECK(s.sim.accepted_reruns() == runs.size() - 1);
}
