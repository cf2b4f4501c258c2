// The redis store answers as the pure rules do (lease/rules.hpp), on fake
// time sent with each call and on the server's own TIME.
#include <random>
#include <set>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/rules.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::overlap_mode;
using lease::run_key;
using lease::run_status;
using lease::time_point;

namespace {

lease::redis_store make_store(const lease::testing::redis_server& srv, lease::fake_clock clock,
                              std::string prefix = lease::testing::fresh_prefix()) {
  lease::redis_options o;
  o.url = srv.url();
  o.prefix = std::move(prefix);
  o.clock = [clock] { return clock.now(); };
  return lease::redis_store(std::move(o));
}

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

claim_request request(std::string job, time_point slot, std::string token, claim_reason reason = claim_reason::scheduled) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.reason = reason;
  r.lease = 30s;
  r.deadline = slot + 30s;
  return r;
}

}  // namespace

TEST_CASE("a claim on a run with no state wins attempt 1 with the next fence and a lease from store-now") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'000'000)};
  auto store = make_store(srv, clock);
  auto res = store.claim(request("report", at(1'000'000), "t1"));
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.record.attempt == 1);
  CHECK(res.record.fence == 1'000'000);  // max(previous + 1, store-now in ms)
  CHECK(res.record.token == "t1");
  CHECK(res.record.runner == "runner-t1");
  CHECK(res.record.lease_end == at(1'030'000));
  CHECK(res.store_now == at(1'000'000));
  auto again = store.claim(request("report", at(1'000'000), "t2"));
  CHECK(again.outcome == claim_outcome::running);
  CHECK(again.record.token == "t1");
  REQUIRE(store.get({"report", at(1'000'000)}) == res.record);
}

TEST_CASE("a frozen runner is fenced after a takeover: its heartbeat finish and release are refused") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(5'000'000)};
  auto a = make_store(srv, clock, "fence");
  auto b = make_store(srv, clock, "fence");
  const run_key run{"job", at(5'000'000)};
  REQUIRE(a.claim(request("job", run.slot, "a1")).outcome == claim_outcome::won);
  CHECK(a.heartbeat(run, "a1", 30s));
  clock.advance(31s);  // A is frozen past its lease
  auto taken = b.claim(request("job", run.slot, "b7", claim_reason::takeover));
  REQUIRE(taken.outcome == claim_outcome::won);
  CHECK(taken.record.attempt == 2);
  CHECK(taken.record.fence == 5'031'000);  // max(5'000'000 + 1, store-now in ms)
  CHECK_FALSE(a.heartbeat(run, "a1", 30s));
  CHECK_FALSE(a.finish(run, "a1", run_status::success));
  CHECK_FALSE(a.release(run, "a1"));
  CHECK(b.heartbeat(run, "b7", 30s));
  CHECK(b.finish(run, "b7", run_status::success));
  CHECK(b.get(run)->status == run_status::success);
}

// Random operations against the store and against the pure rules, answer by
// answer, with a full comparison of every run after each step.
TEST_CASE("random operation sequences get the same answers from redis as from the pure rules") {
  lease::testing::redis_server srv;
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng{seed};
    auto pick = [&](auto n) { return static_cast<decltype(n)>(std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng)); };
    lease::fake_clock clock{at(100'000'000)};
    auto store = make_store(srv, clock);
    lease::rules::run_table model;
    const std::vector<std::string> jobs{"a", "b{x}", std::string("n\0ul", 4)};
    std::vector<std::string> tokens;
    std::set<time_point> slots;  // every slot used so far, for the full comparison
    // Slots near the clock (some just ahead, some behind), so claims meet
    // live, expired, late and newer runs alike.
    auto near_slot = [&] {
      const auto base = clock.now().time_since_epoch().count() / 10'000 * 10'000;
      auto t = at(base + 10'000 * (pick(std::int64_t{6}) - 4));
      slots.insert(t);
      return t;
    };
    for (int step = 0; step < 300; ++step) {
      CAPTURE(step);
      const std::string& job = jobs[pick(jobs.size())];
      const time_point slot = near_slot();
      const run_key run{job, slot};
      auto token = [&]() -> std::string {
        if (!tokens.empty() && pick(4) != 0) return tokens[pick(tokens.size())];
        return "zz";
      };
      switch (pick(8)) {
        case 0:
        case 1: {
          claim_request req = request(job, slot, "tok" + std::to_string(step),
                                      static_cast<claim_reason>(pick(3)));
          req.lease = lease::duration{1'000 + 1'000 * pick(std::int64_t{20})};
          req.max_attempts = static_cast<std::uint32_t>(1 + pick(3));
          req.overlap = static_cast<overlap_mode>(pick(4));
          req.history_size = static_cast<std::uint32_t>(pick(4));
          req.retain = lease::duration{pick(std::int64_t{3}) * 20'000};
          req.deadline = slot + lease::duration{pick(std::int64_t{4}) * 10'000};
          tokens.push_back(req.token);
          auto want = lease::rules::claim(model, req, clock.now());
          auto got = store.claim(req);
          CHECK(lease::to_string(got.outcome) == lease::to_string(want.outcome));
          CHECK(got.record == want.record);
          CHECK(got.store_now == want.store_now);
          break;
        }
        case 2: {
          auto t = token();
          auto lease_ms = lease::duration{1'000 * (1 + pick(std::int64_t{30}))};
          CHECK(store.heartbeat(run, t, lease_ms) == lease::rules::heartbeat(model, run, t, lease_ms, clock.now()));
          break;
        }
        case 3: {
          auto t = token();
          auto st = static_cast<run_status>(pick(4));
          CHECK(store.finish(run, t, st) == lease::rules::finish(model, run, t, st, clock.now()));
          break;
        }
        case 4: {
          auto t = token();
          CHECK(store.release(run, t) == lease::rules::release(model, run, t, clock.now()));
          break;
        }
        case 5: {
          std::vector<lease::heartbeat_request> batch;
          std::vector<bool> want;
          for (int i = 0, n = static_cast<int>(pick(5)); i < n; ++i) {
            batch.push_back({{jobs[pick(jobs.size())], near_slot()}, token(), 20s});
            want.push_back(lease::rules::heartbeat(model, batch.back().run, batch.back().token, 20s, clock.now()));
          }
          CHECK(store.heartbeat_many(batch) == want);
          break;
        }
        default: clock.advance(lease::duration{pick(std::int64_t{8'000})}); break;
      }
      // The whole state agrees: every slot of every job, and unfinished().
      for (const auto& j : jobs) {
        CHECK(store.unfinished(j) == lease::rules::unfinished(model, j));
        for (const time_point t : slots) {
          const run_key key{j, t};
          CHECK(store.get(key) == lease::rules::get(model, key));
        }
      }
    }
  }
}

TEST_CASE("pruning keeps history_size ended runs and the fence counter survives it") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(0)};
  auto store = make_store(srv, clock);
  std::uint64_t fence = 0;
  for (int i = 0; i < 30; ++i) {
    clock.set(at(i * 1'000'000));
    auto req = request("p", at(i * 1'000'000), "t" + std::to_string(i));
    req.history_size = 3;
    req.retain = 60s;
    auto res = store.claim(req);
    REQUIRE(res.outcome == claim_outcome::won);
    fence = std::max<std::uint64_t>(fence + 1, static_cast<std::uint64_t>(i) * 1'000'000);
    CHECK(res.record.fence == fence);
    REQUIRE(store.finish(req.run, req.token, run_status::success));
  }
  int kept = 0;
  for (int i = 0; i < 30; ++i) kept += store.get({"p", at(i * 1'000'000)}).has_value() ? 1 : 0;
  CHECK(kept == 4);  // 3 ended kept by the last claim, plus the last run ended after it
  // A late claim for a pruned slot is refused as late or superseded, never won.
  auto late = store.claim(request("p", at(0), "late"));
  CHECK(late.outcome != claim_outcome::won);
}

TEST_CASE("hostile job names round-trip and do not collide") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(7'000'000)};
  auto store = make_store(srv, clock, "hostile");
  std::string binary;
  for (int c = 0; c < 256; ++c) binary.push_back(static_cast<char>(c));
  const std::vector<std::string> names{"quote'\"`", "{braces}", "}{", "{", "}", "new\nline\r\n", std::string(10'240, 'x'),
                                       binary, std::string("\0", 1), "", "1:{a}", "1:{a}:runs", "lease:1:a"};
  std::uint64_t n = 0;
  for (const auto& job : names) {
    CAPTURE(job.size());
    auto res = store.claim(request(job, at(7'000'000), "tok-" + std::to_string(n)));
    REQUIRE(res.outcome == claim_outcome::won);
    CHECK(res.record.job == job);
    CHECK(res.record.fence == 7'000'000);  // its own fence counter (else 7'000'001...): no two names share keys
    auto got = store.get({job, at(7'000'000)});
    REQUIRE(got);
    CHECK(got->job == job);
    CHECK(got->token == "tok-" + std::to_string(n));
    auto live = store.unfinished(job);
    REQUIRE(live.size() == 1);
    CHECK(live.front().job == job);
    CHECK(store.heartbeat({job, at(7'000'000)}, got->token, 10s));
    ++n;
  }
  // Every key of every job hashes to one cluster slot per job.
  for (const auto& job : names) {
    auto k = lease::detail::redis::keys_for("hostile", job);
    // Redis Cluster hashes the text between the first '{' and the next '}'.
    auto tag = [](const std::string& key) {
      auto open = key.find('{');
      auto close = key.find('}', open + 1);
      return key.substr(open + 1, close - open - 1);
    };
    CHECK(tag(k.runs) == tag(k.ended));
    CHECK_FALSE(tag(k.runs).empty());
  }
}

TEST_CASE("tokens and runner ids with any bytes round-trip") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(9'000'000)};
  auto store = make_store(srv, clock);
  auto req = request("j", at(9'000'000), std::string("t\0k\xff\n", 5));
  req.runner = std::string("host\0:\"1\"", 9);
  auto res = store.claim(req);
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.record.token == req.token);
  CHECK(res.record.runner == req.runner);
  CHECK(store.heartbeat(req.run, req.token, 5s));
  CHECK_FALSE(store.heartbeat(req.run, std::string("t\0k\xff", 4), 5s));
}

TEST_CASE("without a caller clock the store's clock is redis TIME") {
  lease::testing::redis_server srv;
  lease::redis_options o;
  o.url = srv.url();
  o.prefix = lease::testing::fresh_prefix();
  lease::redis_store store{o};
  const time_point t0 = store.now();
  const auto host = std::chrono::floor<lease::duration>(std::chrono::system_clock::now());
  CHECK(std::chrono::abs(t0 - host) < 5s);  // same host: TIME is the host's clock
  auto req = request("rt", t0, "real");
  req.lease = 300ms;
  auto res = store.claim(req);
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.store_now >= t0);
  CHECK(res.record.lease_end == res.store_now + 300ms);
  CHECK(store.claim(request("rt", t0, "other", claim_reason::takeover)).outcome == claim_outcome::running);
  std::this_thread::sleep_for(400ms);  // the one real-time test: the lease runs out on the server's clock
  auto taken = store.claim(request("rt", t0, "other", claim_reason::takeover));
  CHECK(taken.outcome == claim_outcome::won);
  CHECK(taken.record.attempt == 2);
  CHECK(taken.store_now - res.store_now >= 400ms);
}

TEST_CASE("list_jobs lists only its own prefix's jobs, whatever glob characters the prefixes hold, past one SCAN page") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(1'700'000'000'000)};
  // A pattern built from an unescaped "p*" would match every other prefix here;
  // "p" is a prefix of them all, and "p:1" makes keys that begin like "p"'s.
  const std::vector<std::string> prefixes{"p*", "p?x", "p[x]\\", "px", "p", "p:1"};
  std::vector<lease::redis_store> stores;
  for (const auto& p : prefixes) stores.push_back(make_store(srv, clock, p));
  for (std::size_t i = 0; i < stores.size(); ++i)
    REQUIRE(stores[i].claim(request("job of " + prefixes[i], at(1'700'000'000'000), "t")).outcome == claim_outcome::won);
  // More jobs than one SCAN page (COUNT 1000) under one prefix.
  std::vector<claim_request> many;
  for (int i = 0; i < 2'500; ++i) many.push_back(request("bulk " + std::to_string(i), at(1'700'000'000'000), "b"));
  for (const auto& r : stores[4].claim_many(many)) REQUIRE(r.outcome == claim_outcome::won);
  for (std::size_t i = 0; i < stores.size(); ++i) {
    INFO("prefix " << prefixes[i]);
    const auto jobs = stores[i].list_jobs();
    if (i == 4) {
      REQUIRE(jobs.size() == 2'501);
      CHECK(std::is_sorted(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.name < b.name; }));
    } else {
      REQUIRE(jobs.size() == 1);
      CHECK(jobs[0].name == "job of " + prefixes[i]);
      CHECK(jobs[0].last_run.has_value());
    }
  }
}
