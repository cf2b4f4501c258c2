// redis_store on a real Redis Cluster of 3 masters and 3 replicas (cluster =
// true), started once for the whole binary (ctest runs the binary as one
// test; the test cases run in order, the failover last, then one on a
// cluster of its own).
//
// The 4-process race and the two-schedulers law run with jobs on every
// master. Push hand-over: the release subscriber holds one connection per master
// serving a watched job's slot, hears the jobs of every master, follows a
// slot moved to another master (the old one unsubscribes it), and under the
// scheduler a stop() of runs on every master is taken over in milliseconds.
#include <algorithm>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/redis.hpp"
#include "lease/store/redis/slot.hpp"
#include "laws/two_schedulers.hpp"
#include "redis/cluster_fixture.hpp"
#include "redis/instances.hpp"
#include "redis/race.hpp"
#include "redis/wait.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_request;
using lease::event_kind;
using lease::run_status;
using lease::time_point;
using lease::testing::redis_cluster;
using lease::testing::wait_for;

namespace {

redis_cluster& shared_cluster() {
  static redis_cluster c(3, /*replicas=*/true);
  return c;
}

lease::redis_options cluster_options(const std::string& prefix) {
  lease::redis_options o;
  o.url = shared_cluster().url();
  o.prefix = prefix;
  o.cluster = true;
  for (int i = 1; i < shared_cluster().total(); ++i)
    o.seeds.push_back("127.0.0.1:" + std::to_string(shared_cluster().node(i).port()));
  return o;
}

lease::redis_store cluster_store(const std::string& prefix, std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::redis_options o = cluster_options(prefix);
  if (clock) o.clock = [c = *clock] { return c.now(); };
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

/// `per_master` job names for each master of the cluster, in master order.
std::vector<std::string> jobs_on_every_master(const std::string& prefix, int per_master) {
  std::vector<std::vector<std::string>> by(static_cast<std::size_t>(shared_cluster().size()));
  for (int i = 0; std::any_of(by.begin(), by.end(), [&](auto& v) { return v.size() < std::size_t(per_master); }); ++i) {
    const std::string job = "job-" + std::to_string(i);
    auto& v = by[static_cast<std::size_t>(shared_cluster().shard_of(shared_cluster().owner_of(slot_of(prefix, job))))];
    if (v.size() < std::size_t(per_master)) v.push_back(job);
  }
  std::vector<std::string> out;
  for (auto& v : by) out.insert(out.end(), v.begin(), v.end());
  return out;
}

/// `batch` claimed again until every master answers (within wait_for's
/// bound), whatever the error meanwhile: a claim resent with its token is
/// always safe.
std::vector<lease::claim_result> claim_until_answered(lease::redis_store& store, const std::vector<claim_request>& batch) {
  std::vector<lease::claim_result> out;
  REQUIRE(wait_for([&] {
    try {
      out = store.claim_many(batch);
      return true;
    } catch (const lease::store_error&) {
      return false;
    }
  }));
  return out;
}

/// Events from several loop threads, behind one lock.
struct recorder {
  std::mutex m;
  std::vector<lease::event> events;
  void operator()(const lease::event& e) {
    std::scoped_lock l(m);
    events.push_back(e);
  }
  std::vector<lease::event> of(event_kind k) {
    std::scoped_lock l(m);
    std::vector<lease::event> out;
    for (const auto& e : events)
      if (e.kind == k) out.push_back(e);
    return out;
  }
};

}  // namespace

TEST_CASE("on a redis cluster a listener hears every master's jobs, one connection per master, and follows a moved slot") {
  redis_cluster& c = shared_cluster();
  {
    lease::fake_clock clock{time_point{lease::duration{1'700'000'000'000}}};
    const std::string prefix = lease::testing::fresh_prefix("cpush");
    auto watcher = cluster_store(prefix, clock);
    auto runner = cluster_store(prefix, clock);
    lease::testing::heard_jobs heard;
    watcher.listen_releases(std::ref(heard));
    const auto jobs = jobs_on_every_master(prefix, 3);
    for (const auto& j : jobs) (void)watcher.unfinished(j);
    REQUIRE(wait_for([&] { return watcher.listener_channels() == jobs.size(); }));
    CHECK(watcher.listener_connects() == 3);

    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const std::string token = "t" + std::to_string(i);
      REQUIRE(runner.claim(request(jobs[i], clock.now(), token)).outcome == claim_outcome::won);
      if (i % 2 == 0)
        CHECK(runner.release({jobs[i], clock.now()}, token));
      else
        CHECK(runner.finish({jobs[i], clock.now()}, token, lease::run_status::success));
    }
    CHECK(wait_for([&] { return heard.size() == jobs.size(); }));
    for (const auto& j : jobs) CHECK(heard.count(j) == 1);

    // Move the first job's slot (empty of keys but its run's) to the next master.
    const std::string moving = jobs.front();
    const unsigned slot = slot_of(prefix, moving);
    const int from = c.owner_of(slot), to = (from + 1) % c.size();
    const std::string s = std::to_string(slot);
    redis_cluster::expect_ok(c.node(to).command({"CLUSTER", "SETSLOT", s, "IMPORTING", c.id(from)}), "IMPORTING");
    redis_cluster::expect_ok(c.node(from).command({"CLUSTER", "SETSLOT", s, "MIGRATING", c.id(to)}), "MIGRATING");
    auto keys = c.node(from).command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(c.node(to).port()), "", "0", "5000", "KEYS"};
    for (std::size_t i = 0; i < keys->elements; ++i) migrate.emplace_back(keys->element[i]->str, keys->element[i]->len);
    if (keys->elements > 0) redis_cluster::expect_ok(c.node(from).command(migrate), "MIGRATE");
    const auto reads = watcher.listener_map_reads();
    for (int i : {to, from, (to + 1) % c.size()})
      redis_cluster::expect_ok(c.node(i).command({"CLUSTER", "SETSLOT", s, "NODE", c.id(to)}), "SETSLOT NODE");
    // The old owner unsubscribed the channel; the listener read the map again and subscribed at the new owner.
    REQUIRE(wait_for([&] { return watcher.listener_map_reads() > reads && watcher.listener_channels() == jobs.size(); }));
    clock.advance(1s);
    REQUIRE(runner.claim(request(moving, clock.now(), "again")).outcome == claim_outcome::won);
    CHECK(runner.release({moving, clock.now()}, "again"));
    CHECK(wait_for([&] { return heard.count(moving) == 2; }));
    CHECK(c.owner_of(slot) == to);
  }
}

TEST_CASE("on a redis cluster a stop() of runs on every master is taken over by the backup in milliseconds") {
  {
    recorder rec;
    // Lease 20 s, heartbeat 4 s: B's first periodic check is 4–8 s after it
    // became the backup.
    const auto settings = [](std::string name, lease::duration catch_up) {
      return lease::testing::instance_options(std::move(name), 20s, 20ms, catch_up);
    };
    const std::string prefix = lease::testing::fresh_prefix("chandover");
    const auto jobs = jobs_on_every_master(prefix, 1);
    auto a = lease::make_scheduler(lease::store = cluster_store(prefix), lease::executor = lease::thread_pool{3},
                                   lease::settings = settings("A", 2h));
    auto b = lease::make_scheduler(lease::store = cluster_store(prefix), lease::executor = lease::thread_pool{3},
                                   lease::settings = settings("B", 0ms));
    for (auto* s : {&a, &b}) {
      for (const auto& j : jobs) s->add(j, lease::every(1h), lease::testing::run_until_stopped);
      s->on_event(std::ref(rec));
    }
    a.start();
    REQUIRE(wait_for([&] { return rec.of(event_kind::catch_up).size() == jobs.size(); }));
    b.start();
    REQUIRE(wait_for([&] { return rec.of(event_kind::backup).size() == jobs.size(); }));
    REQUIRE(wait_for([&] { return b.store().listener_channels() == jobs.size(); }));
    CHECK(b.store().listener_connects() == 3);
    const auto t0 = std::chrono::steady_clock::now();
    a.stop(2s);
    REQUIRE(rec.of(event_kind::handed_over).size() == jobs.size());
    REQUIRE(wait_for([&] { return rec.of(event_kind::takeover).size() == jobs.size(); }, 30s));
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took < 1s);  // only the announcements can do that: the next periodic check is ≥ 4 s away
    for (const auto& e : rec.of(event_kind::takeover)) {
      CHECK(e.instance == "B");
      CHECK(e.attempt == 2);
    }
    b.stop(2s);
  }
}

TEST_CASE("on a redis cluster triggers on every master reach one listener connection, and one of two stores wins each") {
  const std::string prefix = lease::testing::fresh_prefix("ctrig");
  auto op = cluster_store(prefix);  // an operator's tool; the server's clock
  auto a = cluster_store(prefix);
  auto b = cluster_store(prefix);
  lease::testing::heard_jobs heard;
  a.listen_triggers(std::ref(heard));
  REQUIRE(wait_for([&] { return heard.count("") == 1; }));
  const auto jobs = jobs_on_every_master(prefix, 2);
  CHECK(b.triggers(jobs).empty());  // connects b to every master

  std::vector<lease::run_key> want;
  for (const auto& j : jobs) want.push_back({j, op.trigger(j)});
  // One subscription, on one node, hears the triggers of every master.
  CHECK(wait_for([&] { return heard.size() == jobs.size() + 1; }));
  for (const auto& j : jobs) CHECK(heard.count(j) == 1);
  CHECK(a.trigger_listener_connects() == 1);
  // The poll: one round per master.
  const auto rounds = b.round_trips();
  CHECK(b.triggers(jobs) == want);
  CHECK(b.round_trips() - rounds == static_cast<std::uint64_t>(shared_cluster().size()));

  for (std::size_t i = 0; i < want.size(); ++i) {
    auto claim = [&](lease::redis_store& s, std::string token) {
      auto r = request(want[i].job, want[i].slot, std::move(token));
      r.reason = lease::claim_reason::manual;
      return s.claim(r).outcome;
    };
    const bool a_first = i % 2 == 0;
    const auto first = claim(a_first ? a : b, "first"), second = claim(a_first ? b : a, "second");
    CHECK(first == claim_outcome::won);
    CHECK(second == claim_outcome::running);
    const auto run = op.get(want[i]);
    REQUIRE(run);
    CHECK(run->manual);
    CHECK(run->token == "first");
  }
  CHECK(op.triggers(jobs).empty());
  a.listen_triggers({});
}

TEST_CASE("on a redis cluster with replicas = 1 each claim waits for the replica of the master that ran it") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("wait");
  lease::redis_options o = cluster_options(prefix);
  o.replicas = 1;
  o.replica_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 2);  // two per master, in master order
  const auto slot = time_point{lease::duration{1'700'000'000'000}};
  auto req = [&](std::size_t i, std::string token) {
    auto r = request(jobs[i], slot, std::move(token));
    r.deadline = time_point::max() - 1h;
    return r;
  };
  // Every master has its replica: claims on each win, alone or in a batch.
  CHECK(store.claim(req(0, "a")).outcome == claim_outcome::won);
  std::vector<claim_request> batch{req(2, "b"), req(4, "c")};
  for (const auto& r : store.claim_many(batch)) CHECK(r.outcome == claim_outcome::won);

  // Master 1's replica stalls: a claim on master 1 is not acknowledged
  // (released, thrown); one on master 2, whose replica is well, still wins.
  const int stalled = c.size() + 1;
  std::jthread stall([&] { (void)c.node(stalled).command({"DEBUG", "SLEEP", "1.5"}); });
  std::this_thread::sleep_for(100ms);
  auto late = req(3, "b2");
  std::optional<std::error_code> err;
  std::optional<claim_outcome> outcome;
  try {
    outcome = store.claim(late).outcome;
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  CAPTURE(outcome.has_value() ? static_cast<int>(*outcome) : -1);
  auto well = req(5, "c2");
  const auto res = store.claim(well);
  // A pause is stored data too: one its replica did not acknowledge says so
  // (applied on the master, it could be forgotten by a failover unnoticed).
  std::optional<std::error_code> pause_err;
  try {
    (void)store.pause(jobs[3]);
  } catch (const lease::store_error& e) {
    pause_err = e.code();
  }
  const bool paused_well = store.pause(jobs[5]);
  // A trigger likewise (pending on the master, but a failover could forget it).
  std::optional<std::error_code> trigger_err;
  try {
    (void)store.trigger(jobs[3]);
  } catch (const lease::store_error& e) {
    trigger_err = e.code();
  }
  const time_point triggered_well = store.trigger(jobs[5]);
  stall.join();
  REQUIRE(err);
  CHECK(*err == lease::redis_errc::not_replicated);
  CHECK(store.get(late.run)->released);
  CHECK(res.outcome == claim_outcome::won);
  REQUIRE(pause_err);
  CHECK(*pause_err == lease::redis_errc::not_replicated);
  CHECK(paused_well);
  REQUIRE(trigger_err);
  CHECK(*trigger_err == lease::redis_errc::not_replicated);
  const std::string triggered[] = {jobs[3], jobs[5]};
  CHECK(store.triggers(triggered).size() == 2);  // both applied on their masters
  CHECK(store.triggers(std::span(&triggered[1], 1)).front().slot == triggered_well);
  c.wait_synced(1);
}

TEST_CASE("on a redis cluster with replicas = 1 a claim followed by the marker's script on another master still "
          "waits for the replica of the claim's master") {
  // Found by a review: a loss recorded by another instance sends this
  // handle's marker script after its claim, to the marker's master; the
  // WAIT then went there only, and a claim its own master's replica never
  // had was counted as won.
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("waitmk");
  const std::string marker = lease::detail::redis::store_key(prefix);
  const int marker_master = c.owner_of(lease::detail::redis::key_slot(marker));
  std::string job;
  for (int i = 0; job.empty(); ++i)
    if (const std::string j = "job-" + std::to_string(i); c.owner_of(slot_of(prefix, j)) != marker_master) job = j;
  const int job_shard = c.shard_of(c.owner_of(slot_of(prefix, job)));
  lease::redis_options o = cluster_options(prefix);
  o.replicas = 1;
  o.replica_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  // Slots at the servers' time (this host's): a slot before the loss below would be refused anyway.
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch()).count();
  const auto slot = time_point{lease::duration{now_ms}};
  auto req = [&](time_point s, std::string token) {
    auto r = request(job, s, std::move(token));
    r.deadline = time_point::max() - 1h;
    r.overlap = lease::overlap_mode::allow;
    return r;
  };
  REQUIRE(store.claim(req(slot - 10min, "a")).outcome == claim_outcome::won);  // the handle has read the marker
  // Another instance recorded a loss an hour ago, unknown to this handle.
  REQUIRE(c.node(marker_master).command({"HSET", marker, "lost", std::to_string(now_ms - 3'600'000)}));
  // The job's master's replica stalls: a claim there cannot be acknowledged.
  std::jthread stall([&] { (void)c.node(c.size() + job_shard).command({"DEBUG", "SLEEP", "1.5"}); });
  std::this_thread::sleep_for(100ms);
  const auto late = req(slot + 500ms, "b");
  std::optional<std::error_code> err;
  std::optional<claim_outcome> outcome;
  try {
    outcome = store.claim(late).outcome;
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  stall.join();
  CAPTURE(outcome.has_value() ? static_cast<int>(*outcome) : -1);
  REQUIRE(err);
  CHECK(*err == lease::redis_errc::not_replicated);
  c.wait_synced(1);
}

TEST_CASE("on a redis cluster with replicas = 1 a heartbeat waits for its master's replica, and a pause after it "
          "only for its own job's master") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("waitpause");
  const auto jobs = jobs_on_every_master(prefix, 1);  // one per master, in master order
  lease::redis_options o = cluster_options(prefix);
  o.replicas = 1;
  o.replica_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  auto r = request(jobs[1], time_point{lease::duration{1'700'000'000'000}}, "b");
  r.deadline = time_point::max() - 1h;
  REQUIRE(store.claim(r).outcome == claim_outcome::won);
  std::jthread stall([&] { (void)c.node(c.size() + 1).command({"DEBUG", "SLEEP", "1.5"}); });  // master 1's replica
  std::this_thread::sleep_for(100ms);
  // A write on master 1, not acknowledged by its stalled replica: the
  // renewal does not count (a failover now would bring back the earlier lease end).
  std::optional<std::error_code> renewal;
  try {
    (void)store.heartbeat(r.run, r.token, r.lease);
  } catch (const lease::store_error& e) {
    renewal = e.code();
  }
  REQUIRE(renewal);
  CHECK(*renewal == lease::redis_errc::not_replicated);
  bool paused = false;
  std::optional<std::error_code> err;
  try {
    paused = store.pause(jobs[0]);  // master 0, whose replica is well
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  stall.join();
  CHECK_FALSE(err);
  CHECK(paused);
  c.wait_synced(1);
}

// With replicas set, each master answers for its own renewals: the WAIT
// went to every master and the fewest replicas of any stood for all, so
// one lagging replica voided every renewal of the batch, and the runners
// on healthy masters self-aborted too. Likewise a batch of claims fails
// only by a master short of replicas where a claim would start a handler.
TEST_CASE("redis cluster with replicas = 1: a lagging replica voids only its master's renewals") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("waiteach");
  lease::redis_options o = cluster_options(prefix);
  o.replicas = 1;
  o.replica_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 3);  // jobs[3], jobs[4], jobs[5] on master 1
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  auto req = [&](const std::string& job, std::string token) {
    auto r = request(job, slot0, std::move(token));
    r.deadline = time_point::max() - 1h;
    return r;
  };
  std::vector<lease::heartbeat_request> beats;
  for (std::size_t i : {0, 1, 3, 4, 6, 7}) {
    const auto r = req(jobs[i], "t" + std::to_string(i));
    REQUIRE(store.claim(r).outcome == claim_outcome::won);
    beats.push_back({r.run, r.token, 30s});
  }
  beats[5].token = "not-ours";  // refused on master 2: a refusal needs no replica
  for (int m = 0; m < c.size(); ++m) c.wait_synced(m);

  std::vector<std::optional<bool>> answers;
  std::optional<std::error_code> code;
  std::string what, claim_error;
  std::vector<lease::claim_result> claimed;
  {
    lease::testing::frozen stalled(c.node(c.size() + 1));  // master 1's replica acknowledges nothing
    try {
      (void)store.heartbeat_many(beats);
    } catch (const lease::partial_batch_error<bool>& e) {
      answers = e.answers();
      code = e.code();
      what = e.what();
    }
    // Master 1 now holds this connection's renewals its replica lacks. A
    // batch whose claim there starts nothing (its run is held) waits only
    // for the masters of its wins.
    const std::vector<claim_request> batch{req(jobs[2], "w0"), req(jobs[3], "other"), req(jobs[8], "w2")};
    try {
      claimed = store.claim_many(batch);
    } catch (const lease::store_error& e) {
      claim_error = e.what();
    }
  }
  c.wait_synced(1);
  CAPTURE(what);
  REQUIRE(answers.size() == beats.size());
  CHECK(answers[0] == true);
  CHECK(answers[1] == true);
  CHECK_FALSE(answers[2].has_value());  // master 1: renewed there, but not on its replica
  CHECK_FALSE(answers[3].has_value());
  CHECK(answers[4] == true);
  CHECK(answers[5] == false);
  REQUIRE(code);
  CHECK(*code == lease::redis_errc::not_replicated);
  CAPTURE(claim_error);
  REQUIRE(claimed.size() == 3);
  CHECK(claimed[0].outcome == claim_outcome::won);
  CHECK(claimed[1].outcome == claim_outcome::running);
  CHECK(claimed[2].outcome == claim_outcome::won);
  // The replica caught up: every renewal counts again.
  CHECK(store.heartbeat_many(beats) == std::vector<bool>{true, true, true, true, true, false});
}

TEST_CASE("on a redis cluster four processes racing for runs on every master get exactly one winner per attempt") {
  const std::string prefix = lease::testing::fresh_prefix("crace");
  lease::testing::check_four_racers(cluster_options(prefix), jobs_on_every_master(prefix, 2),
                                    shared_cluster().node(0).dir());
}

TEST_CASE("on a redis cluster two schedulers run every slot exactly once, with the job on each master in turn") {
  redis_cluster& c = shared_cluster();
  for (int m = 0; m < c.size(); ++m) {
    std::string prefix = lease::testing::fresh_prefix("claw");
    while (c.owner_of(slot_of(prefix, "report")) != m) prefix = lease::testing::fresh_prefix("claw");
    CAPTURE(m);
    lease::testing::check_two_schedulers([&](lease::fake_clock clock) { return cluster_store(prefix, clock); });
  }
}

namespace {

/// Polls until node `replica` says it is a master and every other node up agrees on the slot's owner.
void wait_promoted(redis_cluster& c, int replica, unsigned slot) {
  REQUIRE(wait_for([&] { return c.info_field(replica, "replication", "role") == "master"; }));
  REQUIRE(wait_for([&] {
    for (int i = 0; i < c.total(); ++i) {
      if (!c.node(i).ready()) continue;
      try {
        if (c.owner_of(slot, i) != replica) return false;
      } catch (const std::exception&) {
        return false;
      }
    }
    return true;
  }));
}

}  // namespace

// One master frozen (or down until its replica takes over) fails the
// renewals of the jobs it serves, not the batch: the other masters' answers
// come back in a partial_batch_error, and the scheduler counts them. Before,
// the whole batch failed, and every runner of the instance, on every
// master, stopped at its self-abort deadline during a failover.
TEST_CASE("on a redis cluster a frozen master fails only its own renewals in a batch") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("frozen");
  lease::redis_options o = cluster_options(prefix);
  o.command_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 2);  // jobs[2], jobs[3] on master 1
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  std::vector<lease::heartbeat_request> beats;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto req = request(jobs[i], slot0, "t" + std::to_string(i));
    req.deadline = time_point::max() - 1h;
    REQUIRE(store.claim(req).outcome == claim_outcome::won);
    beats.push_back({req.run, req.token, 30s});
  }
  beats[4].token = "not-ours";  // refused on master 2, in the same batch

  // Master 1 answers no client for 1 s (the cluster bus goes on: no failover).
  const int frozen = c.owner_of(slot_of(prefix, jobs[2]));
  redis_cluster::expect_ok(c.node(frozen).command({"CLIENT", "PAUSE", "1000", "ALL"}), "CLIENT PAUSE");
  std::vector<std::optional<bool>> answers;
  std::string what;
  try {
    (void)store.heartbeat_many(beats);
  } catch (const lease::partial_batch_error<bool>& e) {
    answers = e.answers();
    what = e.what();
  }
  CAPTURE(what);
  REQUIRE(answers.size() == beats.size());
  CHECK(answers[0] == true);
  CHECK(answers[1] == true);
  CHECK_FALSE(answers[2].has_value());  // master 1: no answer within command_timeout
  CHECK_FALSE(answers[3].has_value());
  CHECK(answers[4] == false);  // a refusal needs no other master
  CHECK(answers[5] == true);
  CHECK(what.find("timed out") != std::string::npos);
  // Master 1 awake: the next batch is answered whole.
  const auto renewed = lease::testing::until([&] { return store.heartbeat_many(beats); });
  CHECK(renewed == std::vector<bool>{true, true, true, true, false, true});
}

// The same for a batch of claims: one master frozen fails only the claims
// of the jobs it serves; the others are answered in a partial_batch_error
// and the scheduler starts them. Before, the whole batch failed, and every
// resend failed again with it while the master stayed down: the slots of
// the healthy masters' jobs were dropped at their deadlines.
TEST_CASE("on a redis cluster a frozen master fails only its own claims in a batch") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("frozenclaim");
  lease::redis_options o = cluster_options(prefix);
  o.command_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 2);
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  std::vector<claim_request> batch;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    batch.push_back(request(jobs[i], slot0, "t" + std::to_string(i)));
    batch.back().deadline = time_point::max() - 1h;
  }
  for (const auto& job : jobs) CHECK_FALSE(store.get({job, slot0}));  // connected to every master
  // Freeze a master that does not hold the store's marker (its answer is
  // needed by every claim: that master down fails the batch whole).
  const int marker_shard =
      c.shard_of(c.owner_of(lease::detail::redis::key_slot(lease::detail::redis::store_key(prefix))));
  const std::size_t frozen_shard = marker_shard == 0 ? 1 : 0;
  const int frozen = c.owner_of(slot_of(prefix, jobs[2 * frozen_shard]));
  redis_cluster::expect_ok(c.node(frozen).command({"CLIENT", "PAUSE", "1000", "ALL"}), "CLIENT PAUSE");
  std::vector<std::optional<lease::claim_result>> answers;
  std::string what;
  try {
    (void)store.claim_many(batch);
  } catch (const lease::partial_batch_error<lease::claim_result>& e) {
    answers = e.answers();
    what = e.what();
  }
  CAPTURE(what);
  REQUIRE(answers.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i);
    if (i / 2 == frozen_shard) {
      CHECK_FALSE(answers[i].has_value());  // no answer within command_timeout
    } else {
      REQUIRE(answers[i].has_value());
      CHECK(answers[i]->outcome == claim_outcome::won);
      CHECK(answers[i]->record.token == batch[i].token);
    }
  }
  CHECK(what.find("timed out") != std::string::npos);
  // The master awake: the unanswered claims, resent with their tokens, are
  // this caller's (applied on waking, or now), and the answered ones stay
  // answered: no second winner, no attempt lost.
  const auto again = claim_until_answered(store, batch);
  REQUIRE(again.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i);
    CHECK(again[i].record.token == batch[i].token);
    CHECK(again[i].record.attempt == 1);
    if (i / 2 != frozen_shard) CHECK(again[i].outcome == claim_outcome::running);
  }
}

// The same for a batch of finishes and releases: one master frozen leaves
// only its own elements unanswered, their outcome unknown (sent, maybe
// applied: the scheduler reads them back); the other masters' ends are
// answered and acted on. Before, the whole batch failed, and its retries
// failed with it while the master stayed down: the healthy masters'
// finished runs stayed running, and their jobs' next slots were skipped as
// overlaps.
TEST_CASE("on a redis cluster a frozen master fails only its own finishes and releases in a batch") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("frozenfinish");
  lease::redis_options o = cluster_options(prefix);
  o.command_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 2);
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  std::vector<lease::finish_request> batch;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto req = request(jobs[i], slot0, "t" + std::to_string(i));
    req.deadline = time_point::max() - 1h;
    REQUIRE(store.claim(req).outcome == claim_outcome::won);
    // Even elements finish, odd ones release: both kinds on every master.
    batch.push_back({req.run, req.token, i % 2 == 0 ? std::optional(run_status::success) : std::nullopt});
  }
  const int marker_shard =
      c.shard_of(c.owner_of(lease::detail::redis::key_slot(lease::detail::redis::store_key(prefix))));
  const std::size_t frozen_shard = marker_shard == 0 ? 1 : 0;  // ends read no marker; a claim's batch would
  const int frozen = c.owner_of(slot_of(prefix, jobs[2 * frozen_shard]));
  redis_cluster::expect_ok(c.node(frozen).command({"CLIENT", "PAUSE", "1000", "ALL"}), "CLIENT PAUSE");
  std::vector<std::optional<bool>> answers;
  std::string what;
  std::error_code code;
  try {
    (void)store.finish_many(batch);
  } catch (const lease::partial_batch_error<bool>& e) {
    answers = e.answers();
    what = e.what();
    code = e.code();
  }
  CAPTURE(what);
  REQUIRE(answers.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i);
    if (i / 2 == frozen_shard) CHECK_FALSE(answers[i].has_value());  // no answer within command_timeout
    else CHECK(answers[i] == true);
  }
  CHECK(code == lease::errc::outcome_unknown);
  CHECK(what.find("timed out") != std::string::npos);
  // The master awake, as the scheduler does: an unanswered end is read back,
  // and sent again only if it had not applied (its connection closed at the
  // timeout, the paused master may have dropped it). Every end then stands
  // as asked, once.
  auto applied = [&](const lease::finish_request& f, const lease::run_record& r) {
    return r.token == f.token && (f.status ? r.status == *f.status : r.released);
  };
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i);
    const auto& f = batch[i];
    std::optional<lease::run_record> rec;
    auto read = [&] {
      return wait_for([&] {
        try {
          rec = store.get(f.run);
          return true;
        } catch (const lease::store_error&) {
          return false;  // the master still paused: asked again
        }
      });
    };
    REQUIRE(read());
    REQUIRE(rec);
    if (!answers[i] && !applied(f, *rec)) {
      CHECK(rec->status == run_status::running);  // not applied: nothing else ended it
      const bool ended = f.status ? store.finish(f.run, f.token, *f.status) : store.release(f.run, f.token);
      CHECK(ended);
      REQUIRE(read());
      REQUIRE(rec);
    }
    CHECK(applied(f, *rec));
    CHECK(rec->attempt == 1);
    CHECK(rec->handovers == (f.status ? 0U : 1U));
  }
}

// The store's marker key is read after every batch of claims: a loss of
// state it shows holds every answer of the batch. Its master frozen, no
// claim can be answered, even those of the masters that are up.
TEST_CASE("on a redis cluster a frozen master of the store's marker fails the whole claim batch") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("frozenmarker");
  lease::redis_options o = cluster_options(prefix);
  o.command_timeout = 300ms;
  lease::redis_store store{std::move(o)};
  const auto jobs = jobs_on_every_master(prefix, 1);
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  for (const auto& job : jobs) CHECK_FALSE(store.get({job, slot0}));  // connected to every master
  const int marker = c.owner_of(lease::detail::redis::key_slot(lease::detail::redis::store_key(prefix)));
  std::vector<claim_request> batch;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (static_cast<int>(i) != c.shard_of(marker)) {
      batch.push_back(request(jobs[i], slot0, "t" + std::to_string(i)));
      batch.back().deadline = time_point::max() - 1h;
    }
  REQUIRE(batch.size() == 2);
  redis_cluster::expect_ok(c.node(marker).command({"CLIENT", "PAUSE", "1000", "ALL"}), "CLIENT PAUSE");
  bool partial = false, failed = false;
  try {
    (void)store.claim_many(batch);
  } catch (const lease::partial_batch_error<lease::claim_result>&) {
    partial = true;
  } catch (const lease::store_error&) {
    failed = true;
  }
  CHECK(failed);
  CHECK_FALSE(partial);
  // Resent with their tokens once the master is awake: each claim this
  // caller's, at attempt 1.
  const auto again = claim_until_answered(store, batch);
  REQUIRE(again.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CHECK(again[i].record.token == batch[i].token);
    CHECK(again[i].record.attempt == 1);
  }
}

TEST_CASE("on a redis cluster a master killed mid-finish: the replica takes over, the store follows, no second winner") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("failover");
  auto store = cluster_store(prefix);
  auto rival = cluster_store(prefix);
  const auto jobs = jobs_on_every_master(prefix, 2);  // jobs[0], jobs[1] on master 0
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  std::vector<lease::heartbeat_request> beats;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto req = request(jobs[i], slot0, "t" + std::to_string(i));
    req.deadline = time_point::max() - 1h;
    REQUIRE(store.claim(req).outcome == claim_outcome::won);
    beats.push_back({req.run, req.token, 30s});
  }
  c.wait_synced(0);

  // Master 0 stalls with a finish of jobs[0] written to it and unanswered;
  // its replica takes over, then master 0 dies: the finish's reply is lost.
  const int victim = 0, heir = c.size();
  std::jthread stall([&] { (void)c.node(victim).command({"DEBUG", "SLEEP", "3"}); });
  std::this_thread::sleep_for(100ms);
  const auto reads = store.slot_map_reads();
  std::optional<bool> finished;
  std::string error;
  std::jthread finisher([&] {
    try {
      finished = store.finish(beats[0].run, beats[0].token, lease::run_status::success);
    } catch (const lease::store_error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(100ms);
  redis_cluster::expect_ok(c.node(heir).command({"CLUSTER", "FAILOVER", "TAKEOVER"}), "FAILOVER TAKEOVER");
  wait_promoted(c, heir, slot_of(prefix, jobs[0]));
  c.kill(victim);
  stall.join();
  finisher.join();
  // In doubt, read back on the new master (it never ran on the dead one), sent once more there.
  CAPTURE(error);
  REQUIRE(finished);
  CHECK(*finished);
  CHECK(store.slot_map_reads() > reads);
  auto rec = lease::testing::until([&] { return store.get(beats[0].run); });
  REQUIRE(rec);
  CHECK(rec->status == lease::run_status::success);
  CHECK(rec->token == beats[0].token);

  // Every other run, on every master, is still held and renewed in one batch.
  std::vector<lease::heartbeat_request> rest(beats.begin() + 1, beats.end());
  const auto renewed = lease::testing::until([&] { return store.heartbeat_many(rest); });
  for (bool r : renewed) CHECK(r);
  // No second winner: a rival's claims find each run running or finished.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto req = request(jobs[i], slot0, "rival");
    req.deadline = time_point::max() - 1h;
    const auto res = lease::testing::until([&] { return rival.claim(req); });
    CHECK(res.outcome == (i == 0 ? claim_outcome::finished : claim_outcome::running));
  }
  c.wait_ready();
}

TEST_CASE("on a redis cluster a replica promoted without the last writes: the loss is detected, no second winner") {
  redis_cluster& c = shared_cluster();
  const std::string prefix = lease::testing::fresh_prefix("lossy");
  auto store = cluster_store(prefix);
  const int victim = 1, heir = c.size() + 1;
  const std::string job = jobs_on_every_master(prefix, 1)[static_cast<std::size_t>(victim)];
  auto req = request(job, time_point{lease::duration{1'700'000'000'000}}, "mine");
  req.deadline = time_point::max() - 1h;
  REQUIRE(store.claim(req).outcome == claim_outcome::won);
  c.wait_synced(victim);
  (void)store.take_notices();
  // The replica forgets what it had (a stand-in for one whose sync fell
  // behind), is promoted, and the master dies: the run is gone from the cluster.
  redis_cluster::expect_ok(c.node(heir).command({"CONFIG", "SET", "replica-read-only", "no"}), "CONFIG SET");
  redis_cluster::expect_ok(c.node(heir).command({"FLUSHALL"}), "FLUSHALL on the replica");
  redis_cluster::expect_ok(c.node(heir).command({"CLUSTER", "FAILOVER", "TAKEOVER"}), "FAILOVER TAKEOVER");
  wait_promoted(c, heir, slot_of(prefix, job));
  c.kill(victim);

  // The runner's heartbeat is refused, and the store sees why: the job's
  // fence counter went back, so its state was lost (watch.hpp).
  CHECK_FALSE(lease::testing::until([&] { return store.heartbeat(req.run, req.token, 30s); }));
  // Which check says so first depends on where the marker key lives: on
  // the failed master (a third of the prefixes), the reconnect finds the
  // marker gone, and the heartbeat's fence then proves nothing new (the
  // recorded loss explains it: marker_lua). Otherwise the fence proves it.
  const auto notices = store.take_notices();
  REQUIRE_FALSE(notices.empty());
  std::string all;
  for (const auto& n : notices) all += n + "\n";
  INFO(all);
  CHECK(std::any_of(notices.begin(), notices.end(), [](const std::string& n) {
    return n.find("lost its state (the marker key is gone") != std::string::npos ||
           n.find("lost in a failover") != std::string::npos;
  }));
  // A rival does not win the forgotten run a second time: it is quarantined.
  auto rival = cluster_store(prefix);
  auto again = req;
  again.token = "rival";
  const auto res = lease::testing::until([&] { return rival.claim(again); });
  CHECK(res.outcome == claim_outcome::quarantined);
}

// A slot that no master serves (its master failed with no replica to
// promote, or an operator removed it) while the cluster serves the others
// (cluster-require-full-coverage no): a batch of claims fails only the
// claims of the jobs on that slot, and once the slot has a master again
// the store finds it. Before, the router threw for the whole batch as soon
// as the slot map it read showed the gap, so every job of the batch missed
// its slot while the gap lasted; and a call that failed on the gap without
// sending anything left the map as it was, so that job kept failing after
// the slot was served again. Its own small cluster: a slot is removed.
TEST_CASE("on a redis cluster a slot with no master fails only its own claims in a batch and is found once served again") {
  redis_cluster c(3);
  for (int i = 0; i < c.total(); ++i)
    redis_cluster::expect_ok(c.node(i).command({"CONFIG", "SET", "cluster-require-full-coverage", "no"}),
                             "CONFIG SET");
  const std::string prefix = lease::testing::fresh_prefix("noowner");
  const unsigned marker = lease::detail::redis::key_slot(lease::detail::redis::store_key(prefix));
  // Two jobs per master, none on the marker's slot.
  std::vector<std::string> jobs;
  std::vector<int> per(3, 0);
  for (int i = 0; jobs.size() < 6; ++i) {
    const std::string job = "job-" + std::to_string(i);
    int& n = per[static_cast<std::size_t>(c.owner_of(slot_of(prefix, job)))];
    if (n < 2 && slot_of(prefix, job) != marker) {
      ++n;
      jobs.push_back(job);
    }
  }
  // The first job's slot served by no one, on every node's map: its owner
  // lets go first (else its gossip would give the slot back to a node that
  // already dropped it), then the others; bounded, for gossip in flight.
  const unsigned gap = slot_of(prefix, jobs.front());
  const int owner = c.owner_of(gap);
  auto served_by = [&](int asked) {
    try {
      return c.owner_of(gap, asked);
    } catch (const std::runtime_error&) {
      return -1;  // no node serves the slot, by node `asked`'s map
    }
  };
  for (int tries = 0;; ++tries) {
    (void)c.node(owner).command({"CLUSTER", "DELSLOTS", std::to_string(gap)});
    for (int i = 0; i < c.total(); ++i) (void)c.node(i).command({"CLUSTER", "DELSLOTS", std::to_string(gap)});
    bool gone = true;
    for (int i = 0; i < c.total(); ++i) gone = gone && served_by(i) < 0;
    if (gone) break;
    REQUIRE(tries < 100);
    std::this_thread::sleep_for(50ms);
  }
  lease::redis_options o;
  o.url = c.url();
  o.prefix = prefix;
  o.cluster = true;
  lease::redis_store store{std::move(o)};
  const auto slot0 = time_point{lease::duration{1'700'000'000'000}};
  std::vector<claim_request> batch;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    batch.push_back(request(jobs[i], slot0, "t" + std::to_string(i)));
    batch.back().deadline = time_point::max() - 1h;
  }
  std::vector<std::optional<lease::claim_result>> answers;
  std::string what;
  try {
    (void)store.claim_many(batch);
    FAIL("the claim of a job on a slot with no master was answered");
  } catch (const lease::partial_batch_error<lease::claim_result>& e) {
    answers = e.answers();
    what = e.what();
  }
  CAPTURE(what);
  CHECK(what.find("no master") != std::string::npos);
  REQUIRE(answers.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CAPTURE(i, jobs[i], slot_of(prefix, jobs[i]));
    if (slot_of(prefix, jobs[i]) == gap) {
      CHECK_FALSE(answers[i].has_value());
    } else {
      REQUIRE(answers[i].has_value());
      CHECK(answers[i]->outcome == claim_outcome::won);
      CHECK(answers[i]->record.token == batch[i].token);
    }
  }
  // The job alone, one call that sends nothing: unavailable, as long as the gap lasts.
  try {
    (void)store.claim(batch.front());
    FAIL("the claim of a job on a slot with no master was answered");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
    CHECK(std::string(e.what()).find("slot " + std::to_string(gap) + " has no master") != std::string::npos);
  }
  // The slot served again (by its old master, on every node's map): the
  // next call reads the map again and wins the job's slot.
  for (int tries = 0;; ++tries) {
    (void)c.node(owner).command({"CLUSTER", "ADDSLOTS", std::to_string(gap)});
    bool back = true;
    for (int i = 0; i < c.total(); ++i) back = back && served_by(i) == owner;
    if (back) break;
    REQUIRE(tries < 100);
    std::this_thread::sleep_for(50ms);
  }
  const auto res = store.claim(batch.front());
  CHECK(res.outcome == claim_outcome::won);
  CHECK(res.record.token == batch.front().token);
}
