// test/leasectl/seed.hpp — known runs put into any store through its public
// API, on the store's own clock (leasectl_seed for the real stores,
// output.cpp for memory_store on a fake clock):
//
//   report   slot now−120 s: attempt 1 by api-1, success
//            slot now−60 s:  attempt 1 by api-1 released (stop()), then
//                            attempt 2 by api-2 (a takeover), running
//   cleanup  slot now−60 s:  attempt 1 by api-3, failed
//
// and, on a RegistryStore, registrations: report by api-1 and api-2
// ("0 6 * * *", Europe/Paris), cleanup by api-3 ("every 1m", no zone).
//
// now is the store's clock floored to the second. Throws runtime_error when
// a claim, finish or release does not answer as the rules say.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include <lease/run.hpp>
#include <lease/schedule/every.hpp>
#include <lease/store/inspect.hpp>

namespace leasectl_test {

[[noreturn]] inline void fail(const std::string& what) { throw std::runtime_error(what); }

template <class S>
void seed(S& s) {
  using namespace std::chrono;
  const auto now = floor<seconds>(s.now());
  const auto claim = [&](const std::string& job, lease::time_point slot, const std::string& runner,
                         const std::string& token, lease::claim_reason why) {
    lease::claim_request r;
    r.run = {job, slot};
    r.runner = runner;
    r.token = token;
    r.reason = why;
    r.lease = lease::duration{600'000};  // live through the test
    r.deadline = now + seconds(60);
    const auto res = s.claim(r);
    if (res.outcome != lease::claim_outcome::won)
      fail("claim of " + job + " by " + runner + " did not win: " + std::string(lease::to_string(res.outcome)));
  };
  const lease::time_point a = now - seconds(120), b = now - seconds(60);
  claim("report", a, "api-1", "t1", lease::claim_reason::scheduled);
  if (!s.finish({"report", a}, "t1", lease::run_status::success)) fail("finish of report failed");
  claim("report", b, "api-1", "t2", lease::claim_reason::scheduled);
  if (!s.release({"report", b}, "t2")) fail("release of report failed");
  claim("report", b, "api-2", "t3", lease::claim_reason::takeover);
  claim("cleanup", b, "api-3", "t4", lease::claim_reason::scheduled);
  if (!s.finish({"cleanup", b}, "t4", lease::run_status::failed)) fail("finish of cleanup failed");
  if constexpr (lease::RegistryStore<S>) {
    const lease::job_registration regs[] = {{"report", "api-1", "0 6 * * *", "Europe/Paris", {}},
                                            {"report", "api-2", "0 6 * * *", "Europe/Paris", {}},
                                            // (what lease::every(60s) registers: "every 1m")
                                            {"cleanup", "api-3", lease::every(seconds(60)).text(), "", {}}};
    s.register_jobs(regs);
  }
}

/// An instance's claim of `job`'s slot now (overlap allowed: report's seeded
/// run is still live); its outcome, "won", "paused", ….
template <class S>
std::string claim_now(S& s, const std::string& job) {
  lease::claim_request r;
  r.run = {job, std::chrono::floor<std::chrono::seconds>(s.now())};
  r.runner = "api-9";
  r.token = "t9";
  r.overlap = lease::overlap_mode::allow;  // report's running run does not stand in the way
  r.deadline = r.run.slot + std::chrono::seconds(60);
  return std::string(lease::to_string(s.claim(r).outcome));
}

/// An instance's claim of `job`'s pending trigger (claim_reason::manual), or
/// of the slot it had when there is none; its outcome. Remembers the slot in
/// the run key it claims, so a second call claims the same trigger.
template <class S>
std::string claim_trigger(S& s, const std::string& job) {
  lease::claim_request r;
  const std::string asked[] = {job};
  const auto pending = s.triggers(asked);
  // No pending trigger: claim the newest run's slot (the trigger's run, if
  // one won): answered none, running or finished, never a second run.
  if (!pending.empty()) {
    r.run = pending.front();
  } else {
    const auto runs = s.list_runs(job, 1);
    if (runs.empty()) return "no trigger";
    r.run = runs.front().key();
    if (!runs.front().manual) return "none";
  }
  r.runner = "api-9";
  r.token = "t-manual";
  r.reason = lease::claim_reason::manual;
  r.lease = lease::duration{600'000};
  r.overlap = lease::overlap_mode::allow;
  const auto res = s.claim(r);
  // A second instance's claim of the trigger's run finds it running: that
  // trigger is not pending any more, which is what the caller asks.
  if (pending.empty() && res.outcome == lease::claim_outcome::running) return "none";
  return std::string(lease::to_string(res.outcome));
}

}  // namespace leasectl_test
