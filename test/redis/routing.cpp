// redis_store on a real 3-master Redis Cluster (cluster = true): each job's
// scripts go to the master owning its hash slot. The conformance suite
// passes with jobs spread over every master; a heartbeat batch over all
// masters is one round per node; a slot migrated in the middle of a run is
// followed through ASK and then MOVED, counted, and the run is intact.
#include <catch2/catch.hpp>

#include "laws/store_conformance.hpp"
#include "lease/clock/fake.hpp"
#include "lease/store/redis.hpp"
#include "lease/store/redis/slot.hpp"
#include "redis/cluster_fixture.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_request;
using lease::run_status;
using lease::time_point;

namespace {

lease::redis_store cluster_store(lease::testing::redis_cluster& c, const std::string& prefix, lease::fake_clock clock) {
  lease::redis_options o;
  o.url = c.url();
  o.prefix = prefix;
  o.cluster = true;
  o.clock = [clock] { return clock.now(); };
  return lease::redis_store{std::move(o)};
}

claim_request request(std::string job, time_point slot, std::string token) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "me";
  r.token = std::move(token);
  r.lease = 30s;
  r.deadline = slot + 1h;
  return r;
}

unsigned slot_of(const std::string& prefix, const std::string& job) {
  return lease::detail::redis::key_slot(lease::detail::redis::keys_for(prefix, job).runs);
}

}  // namespace

TEST_CASE("the cluster hash slot is Redis's own, for any key and hash tag") {
  lease::testing::redis_cluster c(1);
  for (const std::string& key : {std::string("a"), std::string("{user1000}.following"), std::string("foo{}{bar}"),
                                std::string("foo{{bar}}zap"), std::string("foo{bar}{zap}"), std::string("\0{x}", 4),
                                lease::detail::redis::keys_for("p", std::string("}{\0", 3)).runs}) {
    CAPTURE(key);
    CHECK(static_cast<long long>(lease::detail::redis::key_slot(key)) ==
          c.node(0).command({"CLUSTER", "KEYSLOT", key})->integer);
  }
}

TEST_CASE("on a 3-master redis cluster redis_store answers every random history exactly as the rules do") {
  lease::testing::redis_cluster c(3);
  lease::testing::check_store_conformance(
      [&](lease::fake_clock clock) { return cluster_store(c, lease::testing::fresh_prefix("rc"), clock); });
  for (int i = 0; i < c.size(); ++i) CHECK(c.keys(i) > 0);  // the jobs were spread over every master
}

TEST_CASE("on a redis cluster a heartbeat batch and a finish batch over every master are one round per master") {
  lease::testing::redis_cluster c(3);
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  auto store = cluster_store(c, "hb", clock);
  std::vector<lease::heartbeat_request> batch;
  std::vector<int> per_node(3, 0);
  for (int i = 0; i < 60; ++i) {
    const std::string job = "job-" + std::to_string(i);
    REQUIRE(store.claim(request(job, clock.now(), "t" + std::to_string(i))).outcome == claim_outcome::won);
    batch.push_back({{job, clock.now()}, "t" + std::to_string(i), 20s});
    ++per_node[static_cast<std::size_t>(c.owner_of(slot_of("hb", job)))];
  }
  for (int n : per_node) REQUIRE(n > 0);
  batch.push_back({{"job-0", clock.now()}, "stale", 20s});
  const auto before = store.round_trips();
  clock.advance(5s);
  const auto renewed = store.heartbeat_many(batch);
  CHECK(store.round_trips() - before == 3);
  for (std::size_t i = 0; i + 1 < batch.size(); ++i) CHECK(renewed[i]);
  CHECK_FALSE(renewed.back());
  CHECK(store.get({"job-7", time_point{lease::duration{1'700'000'000'000}}})->lease_end == clock.now() + 20s);
  CHECK(store.moved() == 0);
  CHECK(store.asked() == 0);

  // Ending them all, half finished and half released, is one round per master too.
  std::vector<lease::finish_request> ends;
  for (std::size_t i = 0; i + 1 < batch.size(); ++i)
    ends.push_back({batch[i].run, batch[i].token,
                    i % 2 == 0 ? std::optional(run_status::success) : std::optional<run_status>()});
  ends.push_back({batch.front().run, "stale", run_status::failed});
  const auto before_ends = store.round_trips();
  const auto ended = store.finish_many(ends);
  CHECK(store.round_trips() - before_ends == 3);
  for (std::size_t i = 0; i + 1 < ends.size(); ++i) CHECK(ended[i]);
  CHECK_FALSE(ended.back());
  CHECK(store.get(ends[0].run)->status == run_status::success);
  CHECK(store.get(ends[1].run)->released);
}

TEST_CASE("on a redis cluster registrations of jobs on every master are one round per master, listed, stopped "
          "and purged in each job's slot") {
  lease::testing::redis_cluster c(3);
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = "reg*[?]";
  auto store = cluster_store(c, prefix, clock);
  std::vector<lease::job_registration> regs;
  std::vector<int> per_node(3, 0);
  for (int i = 0; i < 30; ++i) {
    const std::string job = "job-" + std::to_string(i);
    regs.push_back({job, "api-2", "*/5 * * * *", "UTC", {}});
    regs.push_back({job, "api-1", "*/5 * * * *", "UTC", {}});
    ++per_node[static_cast<std::size_t>(c.owner_of(slot_of(prefix, job)))];
  }
  for (int n : per_node) REQUIRE(n > 0);
  CHECK(store.list_jobs().empty());  // connects to every master first (connection setup counts as round trips)
  const auto before = store.round_trips();
  store.register_jobs(regs);
  CHECK(store.round_trips() - before == 3);
  auto jobs = store.list_jobs();
  REQUIRE(jobs.size() == 30);
  for (const auto& j : jobs) {
    REQUIRE(j.instances.size() == 2);
    CHECK(j.instances[0].instance == "api-1");
    CHECK(j.instances[1].last_seen == clock.now());
  }
  REQUIRE(store.claim(request("job-7", clock.now(), "t")).outcome == claim_outcome::won);
  CHECK(store.stop("job-7") == 1);
  CHECK(store.get({"job-7", clock.now()})->released);
  CHECK(store.purge("job-7", 1h).outcome == lease::purge_outcome::registered);
  clock.advance(2h);
  for (int i = 0; i < 30; ++i) CHECK(store.purge("job-" + std::to_string(i), 1h).outcome == lease::purge_outcome::purged);
  CHECK(store.list_jobs().empty());
  CHECK(store.moved() == 0);
}

TEST_CASE("on a redis cluster a slot migrated mid-run is followed through ASK and MOVED, and the run is intact") {
  lease::testing::redis_cluster c(3);
  lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
  const std::string prefix = lease::testing::fresh_prefix("mig");
  auto store = cluster_store(c, prefix, clock);
  auto rival = cluster_store(c, prefix, clock);
  const std::string job = "moving";
  const lease::run_key run{job, clock.now()};
  REQUIRE(store.claim(request(job, run.slot, "t1")).outcome == claim_outcome::won);

  const unsigned slot = slot_of(prefix, job);
  const int from = c.owner_of(slot), to = (from + 1) % 3;
  const std::string s = std::to_string(slot);
  using lease::testing::redis_cluster;
  redis_cluster::expect_ok(c.node(to).command({"CLUSTER", "SETSLOT", s, "IMPORTING", c.id(from)}), "IMPORTING");
  redis_cluster::expect_ok(c.node(from).command({"CLUSTER", "SETSLOT", s, "MIGRATING", c.id(to)}), "MIGRATING");
  // Move the job's keys (the run, and the ended set once it exists).
  auto keys = c.node(from).command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
  REQUIRE(keys->elements >= 1);
  std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(c.node(to).port()), "", "0", "5000", "KEYS"};
  for (std::size_t i = 0; i < keys->elements; ++i) migrate.emplace_back(keys->element[i]->str, keys->element[i]->len);
  redis_cluster::expect_ok(c.node(from).command(migrate), "MIGRATE");

  // Mid-migration: the old owner answers ASK; the run is renewed on the new one.
  clock.advance(1s);
  CHECK(store.heartbeat(run, "t1", 30s));
  CHECK(store.asked() >= 1);
  CHECK(store.moved() == 0);

  // Migration done: the old owner answers MOVED; the store follows and reads the map again.
  // The new owner first, as Redis's resharding does: told later, it would
  // answer MOVED back to the old owner meanwhile.
  for (int i : {to, from, 3 - to - from})
    redis_cluster::expect_ok(c.node(i).command({"CLUSTER", "SETSLOT", s, "NODE", c.id(to)}), "SETSLOT NODE");
  const auto reads = store.slot_map_reads();
  CHECK(store.finish(run, "t1", run_status::success));
  CHECK(store.moved() >= 1);
  CHECK(store.slot_map_reads() > reads);
  clock.advance(1s);
  CHECK(rival.claim(request(job, run.slot, "t2")).outcome == claim_outcome::finished);
  auto rec = rival.get(run);
  REQUIRE(rec);
  CHECK(rec->status == run_status::success);
  CHECK(rec->token == "t1");
  CHECK(rec->attempt == 1);
  CHECK(c.node(to).command({"CLUSTER", "COUNTKEYSINSLOT", s})->integer >= 1);
  CHECK(c.node(from).command({"CLUSTER", "COUNTKEYSINSLOT", s})->integer == 0);
}

TEST_CASE("redis_store refuses cluster settings it cannot honour, in a sentence") {
  auto make = [](std::string url, bool cluster, std::vector<std::string> seeds) {
    lease::redis_options o;
    o.url = std::move(url);
    o.cluster = cluster;
    o.seeds = std::move(seeds);
    return lease::redis_store{std::move(o)};
  };
  CHECK_THROWS_WITH(make("redis://127.0.0.1:1/2", true, {}), Catch::Contains("only database 0"));
  CHECK_THROWS_WITH(make("redis://127.0.0.1:1", true, {"nohost"}), Catch::Contains("host:port"));
  CHECK_THROWS_WITH(make("redis://127.0.0.1:1", false, {"127.0.0.1:2"}),
                    Catch::Contains("set cluster = true"));
}
