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

/// Instances over one counted_store; each job's handler records its context
/// and runs only when the test lets it (manual executor).
template <class Policy = lease::skip_t>
struct counted_cluster : drive<counted_cluster<Policy>> {
  struct cnode {
    using sched = lease::scheduler<counted_store, lease::fake_clock, recording_executor, Policy>;
    recording_executor exec;
    std::vector<lease::run_context>& started = *exec.seen;
    std::unique_ptr<sched> s;
    std::vector<lease::event> events;
    bool down = false;
    [[nodiscard]] std::vector<lease::event> of(lease::event_kind k) const {
      std::vector<lease::event> out;
      for (const auto& e : events)
        if (e.kind == k) out.push_back(e);
      return out;
    }
    [[nodiscard]] int count(lease::event_kind k) const { return static_cast<int>(of(k).size()); }
  };
  lease::fake_clock clock;
  counted_store store;
  std::vector<std::unique_ptr<cnode>> nodes;

  explicit counted_cluster(time_point start = at(1s)) : clock(start), store(clock) {}

  /// An instance with no job yet (add them with `n.s->add`).
  cnode& add_instance(lease::options o) {
    auto n = std::make_unique<cnode>();
    n->s = std::make_unique<typename cnode::sched>(store, clock, n->exec, Policy{}, std::move(o));
    cnode* raw = n.get();
    n->s->on_event([raw](const lease::event& e) { raw->events.push_back(e); });
    nodes.push_back(std::move(n));
    return *nodes.back();
  }
  /// An instance with job "report" on every(interval).
  cnode& add(lease::options o, duration interval = 60s) {
    cnode& n = add_instance(std::move(o));
    n.s->add("report", lease::every(interval), [](lease::run_context&) {});
    return n;
  }
  using drive<counted_cluster<Policy>>::run_until;

  std::optional<lease::run_record> record(time_point slot, const std::string& job = "report") {
    return store.lease::memory_store<lease::fake_clock>::get({job, slot});  // not counted
  }
  /// The store's registrations of `job`, by instance id.
  std::vector<lease::job_registration> registrations(const std::string& job = "report") {
    for (const auto& j : store.list_jobs())
      if (j.name == job) return j.instances;
    return {};
  }
};

}  // namespace test
