// postgres_store's stop, registrations and purge (StopStore, RegistryStore)
// beyond the conformance suite, against the binary's one real server:
// hostile registrations (bytes the SQL must never see as text), instance
// ids ordered by bytes whatever the database's collation, a stop on the
// server's clock heard by another store's release listener, and purges
// racing claims of the same job from other store objects.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::job_registration;
using lease::purge_outcome;
using lease::run_status;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::postgres_options options(std::string schema, std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::postgres_options o;
  o.conninfo = lease::testing::shared_server().conninfo();
  o.schema = std::move(schema);
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return o;
}

claim_request request(std::string job, time_point slot, std::string token) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.lease = 30s;
  r.deadline = slot + 1h;
  r.overlap = lease::overlap_mode::allow;
  return r;
}

lease::testing::postgres_server& srv() { return lease::testing::shared_server(); }

/// Polls `pred` every 10 ms for up to 10 s: a bounded wait for a push from the server.
template <class Pred>
bool wait_for(Pred pred) {
  for (int i = 0; i < 1000 && !pred(); ++i) std::this_thread::sleep_for(10ms);
  return pred();
}

}  // namespace

TEST_CASE("hostile registrations are stored and listed byte for byte, instances ordered by bytes, not by collation") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("reg");
  lease::postgres_store store{options(schema, clock)};
  using namespace std::string_literals;
  const std::string job = "x'); DROP TABLE lease_registrations; --\0\xff"s;
  // Bytewise: "" < "\0" < "B" < "a" < "\xc3\xa9" < "\xff"; a text collation (en_US) would put "a" before "B".
  const std::vector<std::string> ids = {"\xff"s, "a"s, "B"s, "\0"s, "\xc3\xa9"s, ""s};
  std::vector<job_registration> regs;
  for (std::size_t i = 0; i < ids.size(); ++i)
    regs.push_back({job, ids[i], "*/5 * * * *\0$1 '\\"s + std::to_string(i), "Europe/Paris\0\x80"s, {}});
  store.register_jobs(regs);
  // The same (job, instance) twice in one call: the later one, as two calls would.
  clock.advance(5ms);
  std::vector<job_registration> again = {{job, "a", "first", "UTC", {}}, {job, "a", "second", "UTC", {}}};
  store.register_jobs(again);

  const auto jobs = store.list_jobs();
  REQUIRE(jobs.size() == 1);  // a job with only registrations is listed
  CHECK(jobs[0].name == job);
  CHECK(jobs[0].fence == 0);
  CHECK_FALSE(jobs[0].last_run);
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(jobs[0].instances.size() == ids.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& g = jobs[0].instances[i];
    CHECK(g.instance == sorted[i]);
    CHECK(g.job == job);
    if (g.instance == "a") {
      CHECK(g.schedule == "second");
      CHECK(g.last_seen == at(1'700'000'000'005));
    } else {
      const auto k = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), g.instance) - ids.begin());
      CHECK(g.schedule == "*/5 * * * *\0$1 '\\"s + std::to_string(k));
      CHECK(g.zone == "Europe/Paris\0\x80"s);
      CHECK(g.last_seen == at(1'700'000'000'000));
    }
  }
  // Registered within unseen_for: the newest registration ("a", 5 ms later) keeps it.
  auto kept = store.purge(job, 1h);
  CHECK(kept.outcome == purge_outcome::registered);
  REQUIRE(kept.instance);
  CHECK(kept.instance->instance == "a");
  CHECK(kept.instance->last_seen == at(1'700'000'000'005));
  // Unseen for longer: purged, every registration with it; the tables are all still there.
  clock.advance(2h);
  CHECK(store.purge(job, 1h).outcome == purge_outcome::purged);
  CHECK(store.list_jobs().empty());
  CHECK(store.purge(job, 1h).outcome == purge_outcome::not_found);
  const std::string q = "\"" + schema + "\"";
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_registrations") == "0");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_jobs") == "0");
}

TEST_CASE("stop on the server's clock hands the runs over at once, keeping their leases, another store's release "
          "listener hears it, and no takeover wins before the lease ends nor until the resume") {
  const std::string schema = lease::testing::fresh_schema("stop");
  std::mutex m;
  std::vector<std::string> heard;
  lease::postgres_store runner{options(schema)}, op{options(schema)}, watcher{options(schema)};
  watcher.listen_releases([&](std::string_view j) {
    std::scoped_lock lock(m);
    heard.emplace_back(j);
  });
  const std::string job = "stop 'me'";
  const time_point slot = runner.now();
  auto won = runner.claim(request(job, slot, "t1"));
  REQUIRE(won.outcome == claim_outcome::won);
  const auto other = runner.claim(request(job, slot + 1ms, "t2"));
  REQUIRE(other.outcome == claim_outcome::won);  // overlap allow: two running runs
  REQUIRE(runner.finish({job, slot + 1ms}, "t2", run_status::success));
  auto short_lease = request(job, slot + 2ms, "t3");
  short_lease.lease = 400ms;  // its end is waited for below
  const auto third = runner.claim(short_lease);
  REQUIRE(third.outcome == claim_outcome::won);

  CHECK(op.stop(job) == 2);  // t1 and t3; t2 had finished
  CHECK(op.paused(job));
  CHECK(wait_for([&] {
    std::scoped_lock lock(m);
    return std::count(heard.begin(), heard.end(), job) >= 1;
  }));
  CHECK_FALSE(runner.heartbeat({job, slot}, "t1", 30s));  // the runner learns it at its next heartbeat
  for (const auto& [s, tok, end] : {std::tuple{slot, "t1", won.record.lease_end},
                                    std::tuple{slot + 2ms, "t3", third.record.lease_end}}) {
    const auto rec = op.get({job, s});
    REQUIRE(rec);
    CHECK(rec->released);
    CHECK(rec->handovers == 1);
    CHECK(rec->lease_end == end);  // kept: its handler may run until the runner hears of the stop
    CHECK(rec->token == tok);
  }
  // Until t3's lease ends, a backup's check finds it live, even after an
  // immediate resume: no attempt starts beside the stopped handler.
  CHECK(op.resume(job));
  CHECK(op.claim(request(job, slot + 2ms, "b-early")).outcome == claim_outcome::running);
  CHECK(op.pause(job));
  CHECK(wait_for([&] { return op.now() >= third.record.lease_end; }));
  // A backup's takeover of the newest (t3; t1 has a newer run, so it is finished by the rules) is refused while paused.
  CHECK(op.claim(request(job, slot + 2ms, "b0")).outcome == claim_outcome::paused);
  CHECK(op.stop(job) == 0);  // nothing left to hand over; still paused
  CHECK(op.resume(job));
  const auto back = op.claim(request(job, slot + 2ms, "b1"));
  CHECK(back.outcome == claim_outcome::won);
  CHECK(back.record.attempt == 2);
  watcher.listen_releases({});
}

TEST_CASE("purges racing claims of the same job from other store objects: no won run loses its job, fences only "
          "grow, and no purge is taken for a loss of state") {
  // The server started from this thread (a server started from a worker
  // thread would be stopped when that thread ends).
  const std::string schema = lease::testing::fresh_schema("prace");
  (void)srv();
  const std::string job = "raced";
  constexpr int claimers = 2;
  constexpr auto run_for = 3s;
  std::atomic<std::uint64_t> highest{0};  // the highest fence of a win that has returned
  std::atomic<bool> done{false};
  std::atomic<int> purged{0}, wins{0};
  std::vector<std::string> errors(claimers + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < claimers; ++c) {
    threads.emplace_back([&, c] {
      try {
        lease::postgres_store s{options(schema)};
        for (int i = 0; !done.load(); ++i) {
          const std::uint64_t before = highest.load();
          const time_point slot = s.now();
          const std::string token = std::to_string(c) + "-" + std::to_string(i);
          const auto res = s.claim(request(job, slot, token));
          if (res.outcome != claim_outcome::won) continue;
          ++wins;
          if (res.record.fence <= before)
            throw std::runtime_error("a win's fence " + std::to_string(res.record.fence) +
                                     " is not above an earlier win's " + std::to_string(before));
          std::uint64_t h = highest.load();
          while (h < res.record.fence && !highest.compare_exchange_weak(h, res.record.fence)) {
          }
          // Won, so live: no purge may take it or its job row (its fence) away.
          const auto rec = s.get({job, slot});
          if (!rec || rec->token != token) throw std::runtime_error("a won run vanished before it finished");
          const auto jobs = s.list_jobs();
          auto j = std::find_if(jobs.begin(), jobs.end(), [&](const lease::stored_job& x) { return x.name == job; });
          if (j == jobs.end() || j->fence < res.record.fence)
            throw std::runtime_error("a won run's job lost its fence while the run was running");
          if (!s.finish({job, slot}, token, run_status::success)) throw std::runtime_error("a won run could not finish");
        }
        if (s.lost_at()) throw std::runtime_error("a claimer took a purge for a loss of state");
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(c)] = e.what();
        done = true;
      }
    });
  }
  threads.emplace_back([&] {
    try {
      lease::postgres_store s{options(schema)};
      // At least run_for, and on until both sides did it often enough (a
      // sanitizer's build is slow), but never beyond 30 s.
      const auto start = std::chrono::steady_clock::now();
      const auto enough = [&] { return purged.load() > 20 && wins.load() > 20; };
      for (auto now = start; !done.load() && now < start + 30s && (now < start + run_for || !enough());
           now = std::chrono::steady_clock::now())
        if (s.purge(job, 0ms).outcome == purge_outcome::purged) ++purged;
    } catch (const std::exception& e) {
      errors[claimers] = e.what();
    }
    done = true;
  });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) CHECK(e == "");
  INFO("wins " << wins.load() << ", purges " << purged.load());
  CHECK(wins.load() > 10);
  CHECK(purged.load() > 10);  // the race was run, not avoided
  const std::string q = "\"" + schema + "\"";
  CHECK(srv().sql("SELECT coalesce(lost_at::text, 'none') FROM " + q + ".lease_store") == "none");
}
