// test/leasectl/seed.cpp — `leasectl_seed URL`: puts known runs into a real
// store through its public API, on the store's own clock, so check.sh can
// read them back with the real leasectl:
//
//   report   slot now−120 s: attempt 1 by api-1, success
//            slot now−60 s:  attempt 1 by api-1 released (stop()), then
//                            attempt 2 by api-2 (a takeover), running
//   cleanup  slot now−60 s:  attempt 1 by api-3, failed
//
// Slots are whole seconds. Exit 0 when every claim, finish and release
// answered as the rules say; 1 otherwise (the test fails before leasectl runs).
//
// `leasectl_seed URL claim JOB`: an instance's claim of JOB's slot now;
// prints its outcome ("won", "paused", …): what a pause does to instances.
// (Overlap allowed: report's seeded run is still live.)
#include <cstdio>
#include <exception>
#include <string>

#include "leasectl/store_url.hpp"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "leasectl_seed: %s\n", what.c_str());
  std::exit(1);
}

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
}

template <class S>
void claim_now(S& s, const std::string& job) {
  lease::claim_request r;
  r.run = {job, std::chrono::floor<std::chrono::seconds>(s.now())};
  r.runner = "api-9";
  r.token = "t9";
  r.overlap = lease::overlap_mode::allow;  // report's running run does not stand in the way
  r.deadline = r.run.slot + std::chrono::seconds(60);
  std::printf("%s\n", std::string(lease::to_string(s.claim(r).outcome)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "claim")) fail("usage: leasectl_seed URL [claim JOB]");
  const auto act = [&](auto& s) {
    if (argc == 4)
      claim_now(s, argv[3]);
    else
      seed(s);
  };
  try {
    const auto spec = leasectl::parse_store_url(argv[1]);
    if (spec.kind == leasectl::store_kind::sqlite) {
      // A new file: its instances would wait out a quarantine first (a file
      // that replaced a lost one may hide runs that started); ours has none.
      lease::sqlite_options o;
      o.quarantine_new_file = false;
      lease::sqlite_store s{spec.target, std::move(o)};
      act(s);
    } else {
      leasectl::with_store(spec, {}, act);
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
