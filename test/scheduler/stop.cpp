// An operator's stop of a job (StopStore, leasectl stop; doc/protocol.md
// §20), on fake time: the runner learns it at its next heartbeat, asks its
// handler to stop and says so in a `stopped` event (not a generic `lost`);
// no backup takes the run over while the job is paused; after a resume a
// backup (or the runner itself, when it is the only instance) takes it over
// as the next attempt.
#include <catch2/catch.hpp>

#include "counted_cluster.hpp"

using namespace test;
using lease::event_kind;
using lease::run_status;

TEST_CASE("stop of a running job: the handler is asked to stop, a stopped event says why, no takeover while paused, a takeover after resume") {
  counted_cluster<> c;
  auto& a = c.add(spec_options("api-1", 1), 300s);
  auto& b = c.add(spec_options("api-2", 2), 300s);
  c.start_all();
  c.run_until(at(301s));
  auto& runner = a.started.empty() ? b : a;
  auto& backup = a.started.empty() ? a : b;
  REQUIRE(runner.started.size() == 1);
  REQUIRE(backup.count(event_kind::backup) == 1);
  const lease::run_context first = runner.started[0];
  REQUIRE_FALSE(first.stop.stop_requested());

  CHECK(c.store.stop("report") == 1);  // an operator, from outside any instance (leasectl stop)
  c.run_until(at(301s) + 5s);          // the runner's next heartbeat, refused
  CHECK(first.stop.stop_requested());  // the handler was asked to stop
  REQUIRE(runner.count(event_kind::stopped) == 1);
  CHECK(runner.count(event_kind::lost) == 0);  // not a generic "lease lost"
  const lease::event stopped = runner.of(event_kind::stopped)[0];
  CHECK(stopped.run == lease::run_key{"report", at(300s)});
  CHECK(stopped.attempt == 1);
  CHECK(stopped.runner == runner.s->instance());
  CHECK(says(stopped, "job report slot "));
  CHECK(says(stopped, "stopped by an operator (leasectl stop)"));
  CHECK(says(stopped, "the handler was asked to stop"));
  CHECK(says(stopped, "stays stopped until `leasectl resume report`"));

  c.run_until(at(400s));  // paused: every takeover check is answered paused
  CHECK(c.record(at(300s))->attempt == 1);
  CHECK(c.record(at(300s))->released);
  CHECK(c.record(at(300s))->status == run_status::running);
  CHECK(a.count(event_kind::takeover) + b.count(event_kind::takeover) == 0);
  CHECK(runner.started.size() + backup.started.size() == 1);
  REQUIRE(backup.count(event_kind::paused) == 1);  // said once
  INFO(backup.of(event_kind::paused)[0].message);
  CHECK(says(backup.of(event_kind::paused)[0], "stopped by an operator (leasectl stop), is not taken over until a resume (`leasectl resume report`)"));

  runner.exec.run_all();  // the stopped handler ends meanwhile: nothing more is sent for it
  c.run_until(at(401s));
  CHECK(c.record(at(300s))->status == run_status::running);
  CHECK(runner.count(event_kind::success) == 0);

  REQUIRE(c.store.resume("report"));
  c.run_until(at(401s) + 2 * 5s);  // a backup's next check: within 2 heartbeats
  CHECK(a.count(event_kind::takeover) + b.count(event_kind::takeover) == 1);
  const auto rec = c.record(at(300s));
  CHECK(rec->attempt == 2);
  CHECK(rec->handovers == 1);  // the stop's hand-over: not counted against max_attempts
  CHECK_FALSE(rec->released);
  std::size_t second = 0;
  for (auto* n : {&a, &b})
    for (const auto& ctx : n->started) second += ctx.slot == at(300s) && ctx.attempt == 2 ? 1 : 0;
  CHECK(second == 1);
}

TEST_CASE("stop with one instance: it watches its own stopped run and takes it over itself after the resume") {
  counted_cluster<> c;
  auto& a = c.add(spec_options("only", 1), 300s);
  c.start_all();
  c.run_until(at(301s));
  REQUIRE(a.started.size() == 1);
  REQUIRE(c.store.stop("report") == 1);
  c.run_until(at(360s));
  CHECK(a.count(event_kind::stopped) == 1);
  CHECK(a.started[0].stop.stop_requested());
  CHECK(a.count(event_kind::takeover) == 0);
  CHECK(a.count(event_kind::paused) == 1);  // its own takeover check, answered paused
  REQUIRE(c.store.resume("report"));
  c.run_until(at(360s) + 2 * 5s);
  REQUIRE(a.count(event_kind::takeover) == 1);
  CHECK(a.started.size() == 2);
  CHECK(a.started[1].attempt == 2);
  CHECK(c.record(at(300s))->runner == "only");
}
