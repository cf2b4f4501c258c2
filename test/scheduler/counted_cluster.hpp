// test/scheduler/counted_cluster.hpp — a deterministic cluster over one
// memory_store (so every capability: StopStore, RegistryStore, PushStore…)
// whose calls are counted by operation, for the stop and registration
// scenarios (stop.cpp, registry.cpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"
#include "store_cluster.hpp"
#include "lease/store/inspect.hpp"

namespace test {

/// A memory_store that counts the calls an instance makes, by operation
/// name ("claim", "heartbeat", "register_jobs", …). Copies share the counts.
class counted_store : public lease::memory_store<lease::fake_clock> {
  using mem = lease::memory_store<lease::fake_clock>;

 public:
  explicit counted_store(lease::fake_clock c) : mem(c) {}
  std::shared_ptr<std::map<std::string, int>> calls = std::make_shared<std::map<std::string, int>>();
  /// Every call made so far, all operations together.
  [[nodiscard]] int total() const {
    int n = 0;
    for (const auto& [op, k] : *calls) n += k;
    return n;
  }
  [[nodiscard]] int count(const std::string& op) const {
    auto it = calls->find(op);
    return it == calls->end() ? 0 : it->second;
  }
  /// register_jobs fails (store_error, unavailable) while set.
  std::shared_ptr<bool> fail_registration = std::make_shared<bool>(false);

  lease::claim_result claim(const lease::claim_request& r) { return tick("claim"), mem::claim(r); }
  std::vector<lease::claim_result> claim_many(std::span<const lease::claim_request> b) {
    return tick("claim_many"), mem::claim_many(b);
  }
  bool heartbeat(const lease::run_key& k, std::string_view t, duration l) { return tick("heartbeat"), mem::heartbeat(k, t, l); }
  std::vector<bool> heartbeat_many(std::span<const lease::heartbeat_request> b) {
    return tick("heartbeat"), mem::heartbeat_many(b);
  }
  bool finish(const lease::run_key& k, std::string_view t, lease::run_status s) { return tick("finish"), mem::finish(k, t, s); }
  bool release(const lease::run_key& k, std::string_view t) { return tick("release"), mem::release(k, t); }
  std::vector<bool> finish_many(std::span<const lease::finish_request> b) { return tick("finish"), mem::finish_many(b); }
  std::vector<lease::run_record> unfinished(std::string_view j) { return tick("unfinished"), mem::unfinished(j); }
  std::optional<lease::run_record> get(const lease::run_key& k) { return tick("get"), mem::get(k); }
  bool paused(std::string_view j) { return tick("paused"), mem::paused(j); }
  std::vector<lease::run_key> triggers(std::span<const std::string> j) { return tick("triggers"), mem::triggers(j); }
  void register_jobs(std::span<const lease::job_registration> regs) {
    tick("register_jobs");
    if (*fail_registration)
      throw lease::store_error(lease::make_error_code(lease::errc::unavailable), "injected: the store is down");
    mem::register_jobs(regs);
  }

 private:
  void tick(const char* op) { ++(*calls)[op]; }
};
static_assert(lease::StopStore<counted_store> && lease::RegistryStore<counted_store>);
static_assert(lease::PushStore<counted_store> && lease::PushTriggerStore<counted_store>);

/// Instances over one counted_store (store_cluster.hpp).
template <class Policy = lease::skip_t>
using counted_cluster = store_cluster<counted_store, Policy>;

}  // namespace test
