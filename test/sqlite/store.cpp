// test/sqlite/store.cpp — sqlite_store keeps the store rules (doc/store-rules.md) on
// a real file: one test per rule on a fake clock, and a differential test that
// sends the same random operations to sqlite_store and to memory_store (the
// pure rules) and requires the same answer to every one.
#include <catch2/catch.hpp>

#include <barrier>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/store/memory.hpp"
#include "lease/store/sqlite.hpp"
#include "sqlite/helpers.hpp"
#include "sqlite/temp_dir.hpp"

using namespace std::chrono_literals;
using lease::testing::sqlite::claim_of;
using lease::testing::sqlite::store_on;
using lease::claim_outcome;
using lease::run_status;

namespace {

const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};

}  // namespace

static_assert(lease::Store<lease::sqlite_store>);
static_assert(lease::BatchHeartbeatStore<lease::sqlite_store>);
static_assert(lease::TriggerStore<lease::sqlite_store>);
static_assert(!std::is_copy_constructible_v<lease::sqlite_store>);

TEST_CASE("a claim on a new file wins attempt 1 with fence 1 and a lease on the store clock") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const auto res = s.claim(claim_of("report", t0, "tok-a"));
  CHECK(res.outcome == claim_outcome::won);
  CHECK(res.record.attempt == 1);
  CHECK(res.record.fence == static_cast<std::uint64_t>(t0.time_since_epoch().count()));  // the store's clock in ms
  CHECK(res.record.token == "tok-a");
  CHECK(res.record.runner == "runner-tok-a");
  CHECK(res.record.lease_end == t0 + 30s);
  CHECK(res.store_now == t0);
  CHECK(s.get({"report", t0}) == res.record);
}

TEST_CASE("a second claim while the lease is alive answers running and changes nothing") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const auto first = s.claim(claim_of("report", t0, "tok-a"));
  clock.advance(29'999ms);
  const auto second = s.claim(claim_of("report", t0, "tok-b"));
  CHECK(second.outcome == claim_outcome::running);
  CHECK(second.record == first.record);
  CHECK(s.get({"report", t0})->token == "tok-a");
}

TEST_CASE("a takeover claim for a run with no state creates nothing") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  CHECK(s.claim(claim_of("report", t0, "tok-a", lease::claim_reason::takeover)).outcome == claim_outcome::none);
  CHECK_FALSE(s.get({"report", t0}).has_value());
}

TEST_CASE("a new claim that arrives after deadline plus 10 s is late and a newer run supersedes older slots") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0 + 40'001ms};
  auto s = store_on(dir.file("jobs.db"), clock);
  CHECK(s.claim(claim_of("report", t0, "tok-a")).outcome == claim_outcome::late);
  CHECK_FALSE(s.get({"report", t0}).has_value());
  clock.set(t0 + 40'000ms);
  REQUIRE(s.claim(claim_of("report", t0 + 20s, "tok-b")).outcome == claim_outcome::won);
  CHECK(s.claim(claim_of("report", t0, "tok-c")).outcome == claim_outcome::superseded);
}

TEST_CASE("in skip mode a new run overlapping a live run of the job is refused with the blocking run") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const auto first = s.claim(claim_of("report", t0, "tok-a"));
  clock.advance(5s);
  const auto next = s.claim(claim_of("report", t0 + 5s, "tok-b"));
  CHECK(next.outcome == claim_outcome::overlap);
  CHECK(next.record == first.record);
  auto allowed = claim_of("report", t0 + 5s, "tok-c");
  allowed.overlap = lease::overlap_mode::allow;
  CHECK(s.claim(allowed).outcome == claim_outcome::won);
  CHECK(s.get({"report", t0})->status == run_status::running);  // allow leaves it alone
}

TEST_CASE("an expired run is taken over as the next attempt and the old token is fenced") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  s.claim(claim_of("report", t0, "tok-a"));
  clock.advance(30s);  // lease end reached: expired
  const auto takeover = s.claim(claim_of("report", t0, "tok-b", lease::claim_reason::takeover));
  CHECK(takeover.outcome == claim_outcome::won);
  CHECK(takeover.record.attempt == 2);
  CHECK(takeover.record.fence == static_cast<std::uint64_t>((t0 + 30s).time_since_epoch().count()));
  CHECK(takeover.record.lease_end == clock.now() + 30s);
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-a", 30s));
  CHECK_FALSE(s.finish({"report", t0}, "tok-a", run_status::success));
  CHECK_FALSE(s.release({"report", t0}, "tok-a"));
  CHECK(s.heartbeat({"report", t0}, "tok-b", 30s));
  CHECK(s.finish({"report", t0}, "tok-b", run_status::success));
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-b", 30s));  // ended
  CHECK(s.claim(claim_of("report", t0, "tok-c")).outcome == claim_outcome::finished);
}

TEST_CASE("dead runners use up max_attempts and the run is then marked interrupted") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  auto r = claim_of("report", t0, "tok-1");
  r.max_attempts = 2;
  s.claim(r);
  clock.advance(31s);
  r.token = "tok-2";
  CHECK(s.claim(r).outcome == claim_outcome::won);
  clock.advance(31s);
  r.token = "tok-3";
  const auto last = s.claim(r);
  CHECK(last.outcome == claim_outcome::finished);
  CHECK(last.record.status == run_status::interrupted);
  CHECK(s.get({"report", t0})->status == run_status::interrupted);
}

TEST_CASE("a released run is handed over without using an attempt and stays released") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  auto r = claim_of("report", t0, "tok-1");
  r.max_attempts = 1;
  s.claim(r);
  clock.advance(1s);
  CHECK(s.release({"report", t0}, "tok-1"));
  const auto released = s.get({"report", t0});
  CHECK(released->released);
  CHECK(released->handovers == 1);
  CHECK(released->lease_end == clock.now());
  CHECK_FALSE(s.heartbeat({"report", t0}, "tok-1", 30s));  // a late heartbeat does not renew it
  CHECK_FALSE(s.release({"report", t0}, "tok-1"));
  r.token = "tok-2";
  const auto next = s.claim(r);  // max_attempts 1, but the handover did not count
  CHECK(next.outcome == claim_outcome::won);
  CHECK(next.record.attempt == 2);
  CHECK_FALSE(next.record.released);
}

TEST_CASE("a new run marks an older expired run of the job interrupted") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  s.claim(claim_of("report", t0, "tok-a"));
  clock.advance(60s);
  CHECK(s.claim(claim_of("report", t0 + 60s, "tok-b")).outcome == claim_outcome::won);
  CHECK(s.get({"report", t0})->status == run_status::interrupted);
  CHECK(s.unfinished("report").size() == 1);
}

TEST_CASE("the fence keeps growing after old runs are pruned, by one within a millisecond") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  for (int i = 0; i < 20; ++i) {
    auto r = claim_of("report", t0 + i * 60s, "tok-" + std::to_string(i));
    r.history_size = 2;
    r.retain = 0s;
    clock.set(r.run.slot);
    const auto res = s.claim(r);
    REQUIRE(res.outcome == claim_outcome::won);
    CHECK(res.record.fence == static_cast<std::uint64_t>(r.run.slot.time_since_epoch().count()));
    REQUIRE(s.finish(r.run, r.token, run_status::success));
  }
  // Two wins in the same store millisecond: the second is the first + 1.
  clock.set(t0 + 20 * 60s);
  auto a = claim_of("burst", clock.now(), "tok-x");
  const auto first = s.claim(a);
  a.run.slot += 1ms;
  a.token = "tok-y";
  a.overlap = lease::overlap_mode::allow;
  const auto second = s.claim(a);
  REQUIRE(second.outcome == claim_outcome::won);
  CHECK(second.record.fence == first.record.fence + 1);
  CHECK_FALSE(s.get({"report", t0}).has_value());            // pruned
  CHECK(s.get({"report", t0 + 18 * 60s}).has_value());      // among the 2 newest ended
  CHECK(s.get({"report", t0 + 17 * 60s}).has_value());      // the newest claim ran before it ended
}

TEST_CASE("a run is never pruned while a late claim for it could still arrive") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  for (int i = 0; i < 3; ++i) {
    auto r = claim_of("report", t0 + i * 1s, "tok-" + std::to_string(i));
    r.history_size = 0;
    r.retain = 300s;
    clock.set(r.run.slot);
    REQUIRE(s.claim(r).outcome == claim_outcome::won);
    REQUIRE(s.finish(r.run, r.token, run_status::failed));
  }
  CHECK(s.get({"report", t0}).has_value());
  // A late claim for slot t0 now finds its state instead of winning it again.
  CHECK(s.claim(claim_of("report", t0, "late")).outcome == claim_outcome::finished);
}

TEST_CASE("heartbeat_many renews each lease by the heartbeat rule and answers in order") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  s.claim(claim_of("a", t0, "tok-a"));
  s.claim(claim_of("b", t0, "tok-b"));
  clock.advance(10s);
  const std::vector<lease::heartbeat_request> batch{
      {{"a", t0}, "tok-a", 60s}, {{"b", t0}, "wrong", 60s}, {{"c", t0}, "tok-c", 60s}, {{"b", t0}, "tok-b", 5s}};
  CHECK(s.heartbeat_many(batch) == std::vector<bool>{true, false, false, true});
  CHECK(s.get({"a", t0})->lease_end == clock.now() + 60s);
  CHECK(s.get({"b", t0})->lease_end == clock.now() + 5s);
  CHECK(s.heartbeat_many({}).empty());
}

TEST_CASE("unfinished lists the running runs of a job oldest first, expired ones included") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  auto allow = [](lease::claim_request r) {
    r.overlap = lease::overlap_mode::allow;
    return r;
  };
  s.claim(allow(claim_of("report", t0, "t1")));
  s.claim(allow(claim_of("report", t0 + 1s, "t2")));
  clock.advance(1s);  // a slot more than 1 s ahead of the store's clock is early
  s.claim(allow(claim_of("report", t0 + 2s, "t3")));
  s.finish({"report", t0 + 1s}, "t2", run_status::success);
  s.claim(allow(claim_of("other", t0, "t4")));
  clock.advance(40s);  // all expired, still running
  const auto u = s.unfinished("report");
  REQUIRE(u.size() == 2);
  CHECK(u[0].slot == t0);
  CHECK(u[1].slot == t0 + 2s);
  CHECK(s.unfinished("nobody").empty());
}

TEST_CASE("a second store on the same file sees the first one's runs and a moved store keeps working") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto a = store_on(dir.file("jobs.db"), clock);
  const auto won = a.claim(claim_of("report", t0, "tok-a"));
  auto b = store_on(dir.file("jobs.db"), clock);
  CHECK(b.get({"report", t0}) == won.record);
  CHECK(b.claim(claim_of("report", t0, "tok-b")).outcome == claim_outcome::running);
  lease::sqlite_store moved = std::move(a);
  CHECK(moved.heartbeat({"report", t0}, "tok-a", 30s));
  a = std::move(b);
  CHECK(a.get({"report", t0})->token == "tok-a");
  CHECK_THROWS_AS(b.get({"report", t0}), lease::store_error);  // NOLINT: moved-from use is reported
}

// ---- trigger now (doc/store-rules.md, "Trigger now") ----

namespace {

lease::claim_request manual(const lease::run_key& k, std::string token) {
  auto r = claim_of(k.job, k.slot, std::move(token), lease::claim_reason::manual);
  r.deadline = k.slot;  // never late: a manual claim ignores it
  return r;
}

}  // namespace

TEST_CASE("two instances on one file both claim an operator's trigger and exactly one wins it") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  const std::string path = dir.file("jobs.db");
  auto a = store_on(path, clock);
  auto b = store_on(path, clock);
  auto tool = store_on(path, clock);  // the operator's
  const std::vector<std::string> jobs{"report"};
  const lease::time_point slot = tool.trigger("report");
  CHECK(slot == t0);
  clock.advance(3s);
  CHECK(tool.trigger("report") == slot);  // asked again while pending: the same request
  // Both instances learn of it by polling, and both claim it.
  const std::vector<lease::run_key> pending{{"report", slot}};
  REQUIRE(a.triggers(jobs) == pending);
  REQUIRE(b.triggers(jobs) == pending);
  const auto first = b.claim(manual(pending[0], "tok-b"));
  const auto second = a.claim(manual(pending[0], "tok-a"));
  REQUIRE(first.outcome == claim_outcome::won);
  CHECK(first.record.manual);
  CHECK(first.record.runner == "runner-tok-b");
  CHECK(second.outcome == claim_outcome::running);
  CHECK(second.record == first.record);
  CHECK(a.triggers(jobs).empty());
  CHECK(b.triggers(jobs).empty());
  REQUIRE(b.finish({"report", slot}, "tok-b", run_status::success));
  CHECK(a.claim(manual(pending[0], "tok-a2")).outcome == claim_outcome::finished);
  // A manual claim without a pending trigger makes up nothing.
  CHECK(a.claim(manual({"report", clock.now()}, "tok-c")).outcome == claim_outcome::none);
  CHECK_FALSE(a.get({"report", clock.now()}).has_value());
}

TEST_CASE("instances racing on threads for the same triggers get exactly one winner each") {
  lease::testing::temp_dir dir;
  const std::string path = dir.file("jobs.db");
  lease::sqlite_options o;
  o.quarantine_new_file = false;  // a fresh test file is not a lost one
  lease::sqlite_store tool{path, o};
  constexpr int n = 200;
  std::vector<std::string> jobs;
  for (int k = 0; k < n; ++k) jobs.push_back("job-" + std::to_string(k));
  for (const auto& j : jobs) (void)tool.trigger(j);  // the host clock: slots now
  std::barrier polled(2);
  struct answers {
    std::vector<lease::run_key> wins;
    std::map<claim_outcome, int> others;
    std::string error;
  };
  auto instance = [&](const std::string& name, answers& out) {
    try {
      lease::sqlite_store s{path, o};
      const auto pending = s.triggers(jobs);
      polled.arrive_and_wait();  // both have polled: every claim below races the other instance's
      for (const auto& k : pending) {
        const auto res = s.claim(manual(k, name + "-" + k.job));
        if (res.outcome == claim_outcome::won) out.wins.push_back(k);
        else ++out.others[res.outcome];
      }
    } catch (const std::exception& e) {
      out.error = e.what();
    }
  };
  answers x, y;
  std::thread tx([&] { instance("x", x); });
  std::thread ty([&] { instance("y", y); });
  tx.join();
  ty.join();
  REQUIRE(x.error.empty());
  REQUIRE(y.error.empty());
  CHECK(x.wins.size() + y.wins.size() == n);
  std::map<std::string, int> won;
  for (const auto* a : {&x, &y})
    for (const auto& k : a->wins) ++won[k.job];
  CHECK(won.size() == n);  // every job once: no trigger lost, none run twice
  for (const auto& [job, count] : won) CHECK(count == 1);
  // Every losing claim found the winner's run (or, polled after it was answered, nothing).
  for (const auto* a : {&x, &y})
    for (const auto& [outcome, count] : a->others)
      CHECK((outcome == claim_outcome::running || outcome == claim_outcome::none));
  CHECK(tool.triggers(jobs).empty());
  for (const auto& j : jobs) CHECK(tool.list_runs(j, 5).size() == 1);
}

TEST_CASE("claim_many answers manual claims as claim does, in order") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const lease::time_point slot = s.trigger("report");
  clock.advance(1h);  // long after: a manual claim is never late
  const std::vector<lease::claim_request> batch{manual({"report", slot}, "tok-a"), manual({"report", slot}, "tok-b"),
                                                manual({"other", slot}, "tok-c"),
                                                claim_of("other", clock.now(), "tok-d")};
  const auto got = s.claim_many(batch);
  REQUIRE(got.size() == 4);
  CHECK(got[0].outcome == claim_outcome::won);
  CHECK(got[0].record.manual);
  CHECK(got[0].record.token == "tok-a");
  CHECK(got[1].outcome == claim_outcome::running);
  CHECK(got[1].record == got[0].record);
  CHECK(got[2].outcome == claim_outcome::none);  // no trigger of "other"
  CHECK(got[3].outcome == claim_outcome::won);
  CHECK_FALSE(got[3].record.manual);
  const std::vector<std::string> jobs{"report", "other"};
  CHECK(s.triggers(jobs).empty());
}

TEST_CASE("a manual run interrupts older live runs in replace mode but not a newer live run, expired ones of any slot") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  auto allow = [](lease::claim_request r) {
    r.overlap = lease::overlap_mode::allow;
    return r;
  };
  REQUIRE(s.claim(allow(claim_of("report", t0, "old"))).outcome == claim_outcome::won);
  clock.advance(10s);
  const lease::time_point slot = s.trigger("report");
  // The schedule's next slot, 500 ms ahead (within the early tolerance), wins first.
  REQUIRE(s.claim(allow(claim_of("report", slot + 500ms, "newer"))).outcome == claim_outcome::won);
  auto m = manual({"report", slot}, "tok-m");
  m.overlap = lease::overlap_mode::replace;
  const auto won = s.claim(m);
  REQUIRE(won.outcome == claim_outcome::won);  // not superseded by the newer run
  CHECK(won.record.manual);
  CHECK(s.get({"report", t0})->status == run_status::interrupted);           // older: replaced
  CHECK(s.get({"report", slot + 500ms})->status == run_status::running);     // newer: left alone
  // An expired newer run is interrupted by a manual win: else its takeover
  // could win beside the manual run (two live leases in skip mode).
  clock.advance(31s);  // every lease above has run out
  const lease::time_point again = s.trigger("report");
  REQUIRE(s.claim(allow(claim_of("report", again + 500ms, "newest"))).outcome == claim_outcome::won);
  clock.advance(31s);  // "newest" expired, still running
  REQUIRE(s.claim(manual({"report", again}, "tok-m2")).outcome == claim_outcome::won);
  CHECK(s.get({"report", again + 500ms})->status == run_status::interrupted);
  CHECK(s.get({"report", slot})->status == run_status::interrupted);  // older and expired
}

TEST_CASE("a manual claim ends the trigger when a run is at its slot or a live run drops it, and leaves it pending "
          "when early or waiting in buffer_one mode") {
  lease::testing::temp_dir dir;
  lease::fake_clock clock{t0};
  auto s = store_on(dir.file("jobs.db"), clock);
  const std::vector<std::string> jobs{"report"};
  // A scheduled run of the trigger's very millisecond is its answer.
  const lease::time_point slot = s.trigger("report");
  const auto scheduled = s.claim(claim_of("report", slot, "tok-s"));
  REQUIRE(scheduled.outcome == claim_outcome::won);
  CHECK(s.triggers(jobs).size() == 1);  // a scheduled claim does not answer it
  const auto answered = s.claim(manual({"report", slot}, "tok-m"));
  CHECK(answered.outcome == claim_outcome::running);
  CHECK(answered.record == scheduled.record);
  CHECK_FALSE(answered.record.manual);
  CHECK(s.triggers(jobs).empty());
  // While that run is live: buffer_one keeps the trigger pending, skip drops it.
  clock.advance(1s);
  const lease::time_point next = s.trigger("report");
  auto waiting = manual({"report", next}, "tok-w");
  waiting.overlap = lease::overlap_mode::buffer_one;
  CHECK(s.claim(waiting).outcome == claim_outcome::overlap);
  CHECK(s.triggers(jobs) == std::vector<lease::run_key>{{"report", next}});
  const auto dropped = s.claim(manual({"report", next}, "tok-d"));
  CHECK(dropped.outcome == claim_outcome::overlap);
  CHECK(dropped.record == scheduled.record);
  CHECK(s.triggers(jobs).empty());
  CHECK_FALSE(s.get({"report", next}).has_value());
  // A trigger's slot ahead of the store's clock (the host clock stepped back
  // after the trigger): early, and the trigger stays pending.
  REQUIRE(s.finish({"report", slot}, "tok-s", run_status::success));
  const lease::time_point third = s.trigger("report");
  clock.set(third - 2s);  // the store's clock stepped back
  CHECK(s.claim(manual({"report", third}, "tok-e")).outcome == claim_outcome::early);
  CHECK(s.triggers(jobs) == std::vector<lease::run_key>{{"report", third}});
  clock.set(third);
  const auto won = s.claim(manual({"report", third}, "tok-e2"));
  CHECK(won.outcome == claim_outcome::won);
  CHECK(won.record.manual);
  CHECK(s.triggers(jobs).empty());
}

// ---- differential: the same random operations to sqlite_store and memory_store ----

TEST_CASE("sqlite_store answers every random operation exactly as the pure rules do") {
  for (const std::uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    INFO("seed " << seed);
    lease::testing::temp_dir dir;
    lease::fake_clock clock{t0};
    auto s = store_on(dir.file("jobs.db"), clock);
    lease::memory_store<lease::fake_clock> model{clock};
    std::mt19937 rng{seed};
    auto pick = [&](auto... options) {
      const std::array<std::common_type_t<decltype(options)...>, sizeof...(options)> values{options...};
      return values[std::uniform_int_distribution<std::size_t>{0, values.size() - 1}(rng)];
    };
    const std::vector<std::string> jobs{"a", std::string("b\0x", 3)};
    std::vector<std::string> tokens{"nope"};
    auto key = [&] {
      return lease::run_key{pick(jobs[0], jobs[1]), t0 + pick(0, 1, 2, 3, 4, 5) * 10s};
    };
    auto token = [&] { return tokens[std::uniform_int_distribution<std::size_t>{0, tokens.size() - 1}(rng)]; };
    for (int step = 0; step < 1500; ++step) {
      INFO("step " << step);
      switch (pick(0, 0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 7)) {
        case 0: {
          lease::claim_request r;
          r.run = key();
          r.token = "t" + std::to_string(step);
          r.runner = pick("x", "y");
          r.reason = pick(lease::claim_reason::scheduled, lease::claim_reason::catch_up,
                          lease::claim_reason::takeover);
          r.lease = pick(0ms, 1s, 5s, 30s);
          r.max_attempts = pick(1u, 2u, 3u);
          r.deadline = r.run.slot + pick(0s, 30s);
          r.overlap = pick(lease::overlap_mode::skip, lease::overlap_mode::allow, lease::overlap_mode::buffer_one,
                           lease::overlap_mode::replace);
          r.history_size = pick(0u, 1u, 3u);
          r.retain = pick(0s, 5s, 60s);
          tokens.push_back(r.token);
          const auto got = s.claim(r);
          const auto want = model.claim(r);
          REQUIRE(got.outcome == want.outcome);
          REQUIRE(got.record == want.record);
          REQUIRE(got.store_now == want.store_now);
          break;
        }
        case 1: {
          const auto k = key();
          const auto t = token();
          const auto l = pick(1s, 30s);
          REQUIRE(s.heartbeat(k, t, l) == model.heartbeat(k, t, l));
          break;
        }
        case 2: {
          std::vector<lease::heartbeat_request> batch(pick(1u, 2u, 3u));
          for (auto& h : batch) h = {key(), token(), pick(1s, 30s)};
          REQUIRE(s.heartbeat_many(batch) == model.heartbeat_many(batch));
          break;
        }
        case 3: {
          const auto k = key();
          const auto t = token();
          const auto st = pick(run_status::running, run_status::success, run_status::failed, run_status::interrupted);
          REQUIRE(s.finish(k, t, st) == model.finish(k, t, st));
          break;
        }
        case 4: {
          const auto k = key();
          const auto t = token();
          REQUIRE(s.release(k, t) == model.release(k, t));
          break;
        }
        case 5: {
          const auto j = pick(jobs[0], jobs[1]);
          REQUIRE(s.unfinished(j) == model.unfinished(j));
          break;
        }
        case 6: {
          const auto k = key();
          REQUIRE(s.get(k) == model.get(k));
          break;
        }
        default: clock.advance(pick(1ms, 500ms, 5s, 5s, 31s, -1s)); break;
      }
      // The whole state agrees after every step, not only the answers.
      for (const auto& j : jobs)
        for (int i = 0; i < 6; ++i) REQUIRE(s.get({j, t0 + i * 10s}) == model.get({j, t0 + i * 10s}));
    }
  }
}

TEST_CASE("a store syncs every commit before acknowledging it unless durable = false is asked") {
  lease::testing::temp_dir dir;
  auto synchronous = [](lease::sqlite_store& s) {
    sqlite3_stmt* q = nullptr;
    REQUIRE(sqlite3_prepare_v2(s.native_handle(), "PRAGMA synchronous", -1, &q, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(q) == SQLITE_ROW);
    const int level = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return level;
  };
  lease::sqlite_store full{dir.file("jobs.db"), {.quarantine_new_file = false}};
  CHECK(synchronous(full) == 2);  // FULL: a won claim survives a power loss
  lease::sqlite_store normal{dir.file("jobs.db"), {.durable = false, .quarantine_new_file = false}};
  CHECK(synchronous(normal) == 1);  // NORMAL
}
