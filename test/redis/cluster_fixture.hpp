// test/redis/cluster_fixture.hpp — a real Redis Cluster of N masters on
// loopback for one test: N redis-servers in cluster mode (server.hpp, each
// with a free client port and a free bus port), the slots split evenly with
// CLUSTER ADDSLOTSRANGE, joined with CLUSTER MEET, ready once every node
// says cluster_state:ok and agrees on all the masters. With `replicas`, one
// replica per master (nodes size() .. 2 × size() - 1, replica of node i is
// node size() + i), ready once each has synced with its master, so that a
// failover (kill the master, CLUSTER FAILOVER TAKEOVER on the replica)
// keeps the data.
//
// Every wait is a bounded poll of real processes on the steady clock. While
// the cluster forms, the MEETs are sent again each second: on a loaded
// machine (two sanitizer builds' tests at once) a cluster once never formed
// from a single round of MEETs, most likely because a node drops a handshake
// the other side has not answered within the node timeout.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "redis/server.hpp"

namespace lease::testing {

class redis_cluster {
 public:
  explicit redis_cluster(int masters = 3, bool replicas = false) : masters_(masters) {
    for (int i = 0; i < (replicas ? 2 : 1) * masters; ++i) {
      const int bus = free_loopback_port();
      nodes_.push_back(std::make_unique<redis_server>(redis_server::settings{
          .append_only = false,
          .extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
                         std::to_string(bus), "--cluster-node-timeout", "2000",
                         "--cluster-replica-validity-factor", "0"}}));
      buses_.push_back(bus);
    }
    const int per = 16384 / masters;
    for (int i = 0; i < masters; ++i) {
      const int lo = i * per, hi = i + 1 == masters ? 16383 : (i + 1) * per - 1;
      expect_ok(node(i).command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)}), "ADDSLOTSRANGE");
    }
    meet();
    wait_ready(/*meet_again=*/true);
    if (!replicas) return;
    for (int i = 0; i < masters; ++i) {
      const std::string master = id(i);
      const auto start = std::chrono::steady_clock::now();
      for (;;) {  // the replica must have heard of its master first
        auto r = node(masters + i).command({"CLUSTER", "REPLICATE", master});
        if (r && r->type != REDIS_REPLY_ERROR) break;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds{30}) expect_ok(r, "REPLICATE (30 s)");
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
      }
    }
    for (int i = 0; i < masters; ++i) wait_synced(i);
    wait_ready();
  }

  /// Masters at the start (nodes 0 .. size() - 1).
  [[nodiscard]] int size() const noexcept { return masters_; }
  /// Every node, replicas included.
  [[nodiscard]] int total() const noexcept { return static_cast<int>(nodes_.size()); }

  /// Waits until node `replica` (a replica) has every write of its master `master`.
  void wait_synced(int master, int replica = -1) {
    if (replica < 0) replica = master + masters_;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto m = info_field(master, "replication", "master_repl_offset");
      const std::string r = info_field(replica, "replication", "slave_repl_offset");
      if (info_field(replica, "replication", "master_link_status") == "up" && !m.empty() && m == r) return;
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds{30})
        throw std::runtime_error("test cluster: a replica did not sync within 30 s");
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
  }

  /// One field of INFO `section` of node i ("" if absent).
  [[nodiscard]] std::string info_field(int i, const std::string& section, std::string_view field) {
    auto r = node(i).command({"INFO", section});
    if (!r || r->type != REDIS_REPLY_STRING) return {};
    return field_of(std::string_view(r->str, r->len), field).value_or("");
  }

  [[nodiscard]] redis_server& node(int i) { return *nodes_.at(static_cast<std::size_t>(i)); }
  [[nodiscard]] std::string url() const { return nodes_.front()->url(); }

  /// The node's id (CLUSTER MYID).
  [[nodiscard]] std::string id(int i) {
    auto r = node(i).command({"CLUSTER", "MYID"});
    return {r->str, r->len};
  }
  /// The index of the node serving `slot`, by the word of node `asked`.
  [[nodiscard]] int owner_of(unsigned slot, int asked = -1) {
    while (asked < 0 || down_.count(asked) != 0) ++asked;  // by default the first node up
    auto r = node(asked).command({"CLUSTER", "SLOTS"});
    for (std::size_t k = 0; k < r->elements; ++k) {
      const redisReply* range = r->element[k];
      if (slot < range->element[0]->integer || slot > range->element[1]->integer) continue;
      const long long port = range->element[2]->element[1]->integer;
      for (int i = 0; i < total(); ++i)
        if (node(i).port() == port) return i;
    }
    throw std::runtime_error("no node serves the slot");
  }
  /// The shard node i serves: its own index for a master, its master's for a replica.
  [[nodiscard]] int shard_of(int node) const noexcept { return node % masters_; }
  /// Keys held by node i.
  [[nodiscard]] long long keys(int i) { return node(i).command({"DBSIZE"})->integer; }

  /// SIGKILL of node i (a crash); wait_ready() then skips it.
  void kill(int i) {
    node(i).kill();
    down_.insert(i);
  }

  /// Every node up says cluster_state:ok and knows every node; with
  /// `meet_again`, the MEETs are sent again each second while it does not.
  void wait_ready(bool meet_again = false) {
    using namespace std::chrono_literals;
    const auto start = std::chrono::steady_clock::now();
    auto met = start;
    for (;;) {
      std::string state;  // for the error: what each node says
      bool ok = true;
      for (int i = 0; i < total(); ++i) {
        if (down_.count(i) != 0) continue;
        auto info = node(i).command({"CLUSTER", "INFO"});
        const std::string_view text = info && info->type == REDIS_REPLY_STRING ? std::string_view(info->str, info->len)
                                                                              : std::string_view{};
        const bool state_ok = text.find("cluster_state:ok") != std::string_view::npos;
        const bool knows_all = text.find("cluster_known_nodes:" + std::to_string(total())) != std::string_view::npos;
        ok = ok && state_ok && knows_all;
        state += " node " + std::to_string(i) + ": " + (state_ok ? "ok" : "not ok") + ", knows " +
                 field_of(text, "cluster_known_nodes").value_or("?") + " of " + std::to_string(total()) + ";";
      }
      if (ok) return;
      const auto now = std::chrono::steady_clock::now();
      if (now - start > 30s) throw std::runtime_error("the test cluster did not become ready in 30 s:" + state);
      if (meet_again && now - met > 1s) {
        meet();
        met = now;
      }
      std::this_thread::sleep_for(10ms);
    }
  }

  static void expect_ok(const lease::detail::redis::reply_ptr& r, std::string_view what) {
    if (!r || r->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("test cluster: " + std::string(what) + " failed: " + (r ? std::string(r->str, r->len) : ""));
  }

 private:
  /// Node 0 meets every other node. A MEET of a node already known is
  /// harmless: the handshake ends as soon as the node answers with its id.
  void meet() {
    for (int i = 1; i < total(); ++i)
      expect_ok(node(0).command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(node(i).port()),
                                 std::to_string(buses_[static_cast<std::size_t>(i)])}),
                "MEET");
  }

  /// The value of `field` in an INFO or CLUSTER INFO text ("field:value\r\n" lines).
  static std::optional<std::string> field_of(std::string_view text, std::string_view field) {
    const std::string key = std::string(field) + ":";
    const auto at = text.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    const auto end = text.find('\r', at);
    return std::string(text.substr(at + key.size(), end - at - key.size()));
  }

  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::vector<int> buses_;
  int masters_;
  std::set<int> down_;
};

}  // namespace lease::testing
