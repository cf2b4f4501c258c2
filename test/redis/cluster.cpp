// On a Redis Cluster node every script touches one slot: a one-node cluster
// serving all 16384 slots rejects a script whose keys span slots (CROSSSLOT),
// so the conformance suite and hostile job names passing there prove the
// key layout is cluster-ready.
#include <thread>

#include "laws/store_conformance.hpp"

#include "lease/store/redis.hpp"
#include "redis/server.hpp"

using namespace std::chrono_literals;

namespace {

/// A redis-server in cluster mode owning every slot.
struct one_node_cluster {
  lease::testing::redis_server srv{{.append_only = false,
                                    .extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                                   "--cluster-port",
                                                   std::to_string(lease::testing::free_loopback_port())}}};
  one_node_cluster() {
    auto r = srv.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
    REQUIRE(r->type == REDIS_REPLY_STATUS);
    for (int i = 0;; ++i) {
      auto info = srv.command({"CLUSTER", "INFO"});
      if (std::string_view(info->str, info->len).find("cluster_state:ok") != std::string_view::npos) break;
      REQUIRE(i < 500);
      std::this_thread::sleep_for(10ms);
    }
  }
};

}  // namespace

TEST_CASE("on a redis cluster node redis_store answers every random history exactly as the rules do") {
  one_node_cluster cluster;
  lease::testing::check_store_conformance([&](lease::fake_clock c) {
    return lease::redis_store{{.url = cluster.srv.url(), .prefix = lease::testing::fresh_prefix("cl"),
                               .clock = [c] { return c.now(); }}};
  });
}

TEST_CASE("on a redis cluster node the keys of any job name share one slot") {
  one_node_cluster cluster;
  // The node really enforces slots: two keys of different slots in one script fail.
  auto cross = cluster.srv.command({"EVAL", "return redis.call('MGET', KEYS[1], KEYS[2])", "2", "a", "b"});
  REQUIRE(cross->type == REDIS_REPLY_ERROR);

  lease::fake_clock clock{lease::time_point{lease::duration{1'700'000'000'000}}};
  lease::redis_store store{{.url = cluster.srv.url(), .prefix = "cl", .clock = [clock] { return clock.now(); }}};
  std::string binary;
  for (int c = 0; c < 256; ++c) binary.push_back(static_cast<char>(c));
  for (const std::string& job : {std::string("{"), std::string("}"), std::string("}{"), std::string("a}b{c"),
                                 std::string("{x}"), std::string("\0\n'\"", 4), binary, std::string(10'240, '}')}) {
    CAPTURE(job.size());
    auto k = lease::detail::redis::keys_for("cl", job);
    CHECK(cluster.srv.command({"CLUSTER", "KEYSLOT", k.runs})->integer ==
          cluster.srv.command({"CLUSTER", "KEYSLOT", k.ended})->integer);
    lease::claim_request req;
    req.run = {job, clock.now()};
    req.runner = "r";
    req.token = "t";
    req.deadline = req.run.slot;
    REQUIRE(store.claim(req).outcome == lease::claim_outcome::won);
    CHECK(store.heartbeat(req.run, "t", 10s));
    CHECK(store.unfinished(job).size() == 1);
    CHECK(store.finish(req.run, "t", lease::run_status::success));
    CHECK(store.get(req.run)->status == lease::run_status::success);
    // The pause lives in the job's runs hash: the claim script reads it in the job's slot.
    CHECK(store.pause(job));
    CHECK(store.paused(job));
    req.run.slot += 1s;
    req.deadline = req.run.slot;
    req.token = "t2";
    clock.advance(1s);
    CHECK(store.claim(req).outcome == lease::claim_outcome::paused);
    CHECK(store.resume(job));
    CHECK(store.claim(req).outcome == lease::claim_outcome::won);
  }
}
