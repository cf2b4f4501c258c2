// test/redis/cluster_fixture.hpp — a real Redis Cluster of N masters on
// loopback for one test: N redis-servers in cluster mode (server.hpp, each
// with a free client port and a free bus port), the slots split evenly with
// CLUSTER ADDSLOTSRANGE, joined with CLUSTER MEET, ready once every node
// says cluster_state:ok and agrees on all the masters.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "redis/server.hpp"

namespace lease::testing {

class redis_cluster {
 public:
  explicit redis_cluster(int masters = 3) {
    for (int i = 0; i < masters; ++i) {
      const int bus = free_loopback_port();
      nodes_.push_back(std::make_unique<redis_server>(redis_server::settings{
          .append_only = false,
          .extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
                         std::to_string(bus), "--cluster-node-timeout", "2000"}}));
      buses_.push_back(bus);
    }
    const int per = 16384 / masters;
    for (int i = 0; i < masters; ++i) {
      const int lo = i * per, hi = i + 1 == masters ? 16383 : (i + 1) * per - 1;
      expect_ok(node(i).command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)}), "ADDSLOTSRANGE");
    }
    for (int i = 1; i < masters; ++i)
      expect_ok(node(0).command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(node(i).port()),
                                 std::to_string(buses_[static_cast<std::size_t>(i)])}),
                "MEET");
    wait_ready();
  }

  [[nodiscard]] redis_server& node(int i) { return *nodes_.at(static_cast<std::size_t>(i)); }
  [[nodiscard]] int size() const noexcept { return static_cast<int>(nodes_.size()); }
  [[nodiscard]] std::string url() const { return nodes_.front()->url(); }

  /// The node's id (CLUSTER MYID).
  [[nodiscard]] std::string id(int i) {
    auto r = node(i).command({"CLUSTER", "MYID"});
    return {r->str, r->len};
  }
  /// The index of the node serving `slot`, by the word of node `asked`.
  [[nodiscard]] int owner_of(unsigned slot, int asked = 0) {
    auto r = node(asked).command({"CLUSTER", "SLOTS"});
    for (std::size_t k = 0; k < r->elements; ++k) {
      const redisReply* range = r->element[k];
      if (slot < range->element[0]->integer || slot > range->element[1]->integer) continue;
      const long long port = range->element[2]->element[1]->integer;
      for (int i = 0; i < size(); ++i)
        if (node(i).port() == port) return i;
    }
    throw std::runtime_error("no node serves the slot");
  }
  /// Keys held by node i.
  [[nodiscard]] long long keys(int i) { return node(i).command({"DBSIZE"})->integer; }

  /// Every node says cluster_state:ok and knows every master.
  void wait_ready() {
    using namespace std::chrono_literals;
    for (int tries = 0;; ++tries) {
      bool ok = true;
      for (int i = 0; i < size() && ok; ++i) {
        auto info = node(i).command({"CLUSTER", "INFO"});
        const std::string_view text(info->str, info->len);
        ok = text.find("cluster_state:ok") != std::string_view::npos &&
             text.find("cluster_known_nodes:" + std::to_string(size())) != std::string_view::npos;
      }
      if (ok) return;
      if (tries > 1000) throw std::runtime_error("the test cluster did not become ready in 10 s");
      std::this_thread::sleep_for(10ms);
    }
  }

  static void expect_ok(const lease::detail::redis::reply_ptr& r, std::string_view what) {
    if (!r || r->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("test cluster: " + std::string(what) + " failed: " + (r ? std::string(r->str, r->len) : ""));
  }

 private:
  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::vector<int> buses_;
};

}  // namespace lease::testing
