// lease/testing/sim.hpp — random histories of a simulated cluster, for
// property tests of your own job settings (RapidCheck + lease::sim).
//
// The generators the library's own property tests are built from: handler
// scripts, instance clock skews, and faults (crash, restart, freeze, stop,
// slow, hung and failing store calls, lost replies, wall-clock steps, a store
// that loses its state). check_cluster() puts them together: your options
// and jobs, 3–5 instances with skewed clocks, random faults, and every
// invariant of doc/invariants.md checked on the history.
//
//   TEST_CASE("our report job keeps every invariant under faults") {
//     lease::testing::check_cluster(lease::options{.lease = 3s}, [](lease::sim::cluster<>& sim) {
//       sim.add_job("report", lease::every(10s), lease::testing::random_scripts(4, 8s));
//     });
//   }
//
// Or build your own property with the generators:
//
//   rc::prop("…", [] {
//     lease::sim::cluster<> sim(*rc::gen::arbitrary<std::uint64_t>(), opts);
//     …
//     for (const auto& f : *rc::gen::container<std::vector<lease::testing::fault>>(
//                              lease::testing::gen_fault(sim.size(), opts.lease)))
//       lease::testing::apply(sim, f);
//     RC_ASSERT(sim.violations().empty());
//   });
//
// A failure prints the history (cluster::describe()) and RapidCheck's seed;
// replay with RC_PARAMS="seed=…".
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "lease/error.hpp"
#include "lease/options.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/sim.hpp"

namespace lease::testing {

/// Uniform in [lo, hi) whatever RapidCheck's size (its inRange scales with
/// the size, which would make the first histories all alike).
inline rc::Gen<std::int64_t> uniform(std::int64_t lo, std::int64_t hi) {
  return rc::gen::resize(100, rc::gen::inRange<std::int64_t>(lo, hi));
}

/// A handler's script: runs 50 ms … `longest`, throws one time in five,
/// honours its stop token (within 0–2 s) three times in four, and then
/// returns or throws (hands over).
inline rc::Gen<sim::script> gen_script(duration longest = duration{8'000}) {
  return rc::gen::exec([longest] {
    sim::script s;
    s.runs_for = duration{*uniform(50, std::max<std::int64_t>(51, longest.count()))};
    s.ends = *uniform(0, 5) == 0 ? sim::script::ending::throws : sim::script::ending::returns;
    if (*uniform(0, 4) != 0) s.honours_stop = duration{*uniform(0, 2'000)};
    s.on_stop = *uniform(0, 3) == 0 ? sim::script::ending::returns : sim::script::ending::throws;
    return s;
  });
}

/// A planner for sim::cluster::add_job: `count` random scripts; each attempt
/// picks one by its token, so the choice is as deterministic as the seed.
/// Call inside a property.
inline sim::cluster<>::planner random_scripts(int count, duration longest = duration{8'000}) {
  std::vector<sim::script> scripts;
  for (int i = 0; i < count; ++i) scripts.push_back(*gen_script(longest));
  return [scripts](const run_context& c) { return scripts[std::hash<std::string>{}(c.token) % scripts.size()]; };
}

/// An instance's clock skew: up to ± `lease`.
inline rc::Gen<duration> gen_skew(duration lease) {
  return rc::gen::map(uniform(-lease.count(), lease.count() + 1), [](std::int64_t v) { return duration{v}; });
}

/// One step of a random history.
struct fault {
  enum class kind : unsigned char {
    run,          ///< let the world run for `d`
    crash,        ///< kill -9: no release, no more heartbeats
    restart,      ///< start a crashed or stopped instance again
    freeze,       ///< SIGSTOP for `d`: neither loop nor handlers move
    stop,         ///< stop(d): hand-over, return, or abandon at the timeout
    delay_store,  ///< the next `calls` store calls arrive `d` late
    slow_reply,   ///< the next `calls` store calls are applied, their replies come `d` late
    fail_store,   ///< the next `calls` store calls fail with `code` before applying
    lost_reply,   ///< the next `calls` store calls are applied, their replies lost (`code`)
    step_clock,   ///< the instance's wall clock is stepped by `d` (NTP, an operator)
    lose_state,   ///< the store loses every run and fence, and notices
  };
  kind what = kind::run;
  std::size_t who = 0;  ///< the instance (index)
  duration d{};
  int calls = 0;
  errc code = errc::unavailable;
};

inline std::ostream& operator<<(std::ostream& os, const fault& f) {
  static constexpr const char* names[] = {"run",       "crash",      "restart",    "freeze",
                                          "stop",      "delay_store", "slow_reply", "fail_store",
                                          "lost_reply", "step_clock", "lose_state"};
  return os << names[static_cast<int>(f.what)] << "(instance " << f.who << ", " << f.d.count() << " ms, "
            << f.calls << " calls)";
}

/// A random step for a cluster of `instances` instances whose lease is
/// `lease`: a run of up to `longest_run` three times in 14, each fault
/// otherwise about equally often.
inline rc::Gen<fault> gen_fault(std::size_t instances, duration lease, duration longest_run = duration{8'000}) {
  return rc::gen::exec([instances, lease, longest_run] {
    fault f;
    f.who = static_cast<std::size_t>(*uniform(0, static_cast<std::int64_t>(instances)));
    const std::int64_t l = lease.count();
    switch (*uniform(0, 14)) {
      case 0: case 1: case 2: f.what = fault::kind::run; f.d = duration{*uniform(100, longest_run.count() + 1)}; break;
      case 3: f.what = fault::kind::crash; break;
      case 4: f.what = fault::kind::restart; break;
      case 5: f.what = fault::kind::freeze; f.d = duration{*uniform(500, 2 * l)}; break;
      case 6: f.what = fault::kind::stop; f.d = duration{*uniform(0, 2'000)}; break;
      case 7: f.what = fault::kind::delay_store; f.d = duration{*uniform(100, 2 * l)}; f.calls = static_cast<int>(*uniform(1, 4)); break;
      case 8: f.what = fault::kind::fail_store; f.calls = static_cast<int>(*uniform(1, 6)); break;
      case 9: f.what = fault::kind::lost_reply; f.code = errc::outcome_unknown; f.calls = static_cast<int>(*uniform(1, 3)); break;
      case 10: f.what = fault::kind::slow_reply; f.d = duration{*uniform(100, 2 * l)}; f.calls = static_cast<int>(*uniform(1, 3)); break;
      case 11: {
        const std::int64_t steps[] = {-60'000, -2 * l, -500, 500, 2 * l, 17'000};
        f.what = fault::kind::step_clock;
        f.d = duration{steps[*uniform(0, 6)]};
        break;
      }
      case 12: f.what = fault::kind::lose_state; break;
      default: f.what = fault::kind::lost_reply; f.code = errc::unavailable; f.calls = static_cast<int>(*uniform(1, 3)); break;
    }
    return f;
  });
}

/// Applies one step to the simulation.
template <OverlapPolicy P>
void apply(sim::cluster<P>& sim, const fault& f) {
  using k = fault::kind;
  switch (f.what) {
    case k::run: sim.run_for(f.d); break;
    case k::crash: sim.crash(f.who); break;
    case k::restart: sim.restart(f.who); break;
    case k::freeze: sim.freeze(f.who, f.d); break;
    case k::stop: sim.stop(f.who, f.d); break;
    case k::delay_store: sim.delay_store(f.who, f.d, f.calls); break;
    case k::slow_reply: sim.slow_store(f.who, f.d, f.calls, true); break;
    case k::fail_store: sim.fail_store(f.who, f.code, f.calls); break;
    case k::lost_reply: sim.fail_store(f.who, f.code, f.calls, true); break;
    case k::step_clock: sim.step_clock(f.who, f.d); break;
    case k::lose_state: sim.lose_store_state(); break;
  }
}

/// Random histories of your jobs: `add_jobs(sim)` adds them to a cluster
/// with `opts` (instance and seed are filled in per instance); then 3–5
/// instances with clocks skewed by up to ± one lease, 3–11 random steps, and
/// three leases to settle. True if every history kept every invariant.
template <OverlapPolicy P = skip_t, class AddJobs>
[[nodiscard]] bool cluster_keeps_invariants(options opts, AddJobs add_jobs) {
  return rc::check("every random history keeps every invariant", [&] {
    const options o = opts.validated();
    sim::cluster<P> sim(*rc::gen::arbitrary<std::uint64_t>(), o);
    add_jobs(sim);
    const auto n = static_cast<std::size_t>(*uniform(3, 6));
    for (std::size_t i = 0; i < n; ++i) sim.add_instance("n" + std::to_string(i), *gen_skew(o.lease));
    sim.start_all();
    const auto steps = *uniform(3, 12);
    for (std::int64_t s = 0; s < steps; ++s) apply(sim, *gen_fault(n, o.lease));
    sim.run_for(3 * o.lease);
    if (!sim.violations().empty()) RC_FAIL(sim.describe());
  });
}

/// Catch2: cluster_keeps_invariants() (call inside a TEST_CASE).
template <OverlapPolicy P = skip_t, class AddJobs>
void check_cluster(options opts, AddJobs add_jobs) {
  REQUIRE(cluster_keeps_invariants<P>(std::move(opts), std::move(add_jobs)));
}

}  // namespace lease::testing
