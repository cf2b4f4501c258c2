// test/scheduler/store_cluster.hpp — harness.hpp's cluster over a store of
// the test's choosing that is a memory_store underneath: counted_cluster.hpp's
// counted_store, trigger.cpp's TriggerStores, retries_and_stops.cpp's store
// that fails chosen calls. Moved through fake time by drive.hpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace test {

/// Instances over one Store; each job's handler records its context and
/// runs only when the test lets it (manual executor).
template <class Store, class Policy = lease::skip_t>
struct store_cluster : drive<store_cluster<Store, Policy>> {
  struct node {
    using sched = lease::scheduler<Store, lease::fake_clock, recording_executor, Policy>;
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
  Store store;
  std::vector<std::unique_ptr<node>> nodes;

  explicit store_cluster(time_point start = at(1s)) : clock(start), store(clock) {}

  /// An instance with no job yet (add them with `n.s->add`).
  node& add_instance(lease::options o) {
    auto n = std::make_unique<node>();
    n->s = std::make_unique<typename node::sched>(store, clock, n->exec, Policy{}, std::move(o));
    node* raw = n.get();
    n->s->on_event([raw](const lease::event& e) { raw->events.push_back(e); });
    nodes.push_back(std::move(n));
    return *nodes.back();
  }
  /// An instance with job "report" on every(interval).
  node& add(lease::options o, duration interval = 60s) {
    node& n = add_instance(std::move(o));
    n.s->add("report", lease::every(interval), [](lease::run_context&) {});
    return n;
  }
  using drive<store_cluster<Store, Policy>>::poll_all;
  using drive<store_cluster<Store, Policy>>::run_until;

  /// Handlers started for `slot`, on every instance.
  [[nodiscard]] std::vector<lease::run_context> started_at(time_point slot) const {
    std::vector<lease::run_context> out;
    for (const auto& n : nodes)
      for (const auto& c : n->started)
        if (c.slot == slot) out.push_back(c);
    return out;
  }
  [[nodiscard]] std::vector<lease::event> events_of(lease::event_kind k) const {
    std::vector<lease::event> out;
    for (const auto& n : nodes)
      for (const auto& e : n->of(k)) out.push_back(e);
    return out;
  }
  /// The run as the memory_store underneath has it (not counted or failed
  /// by a wrapper's get).
  std::optional<lease::run_record> record(time_point slot, const std::string& job = "report") {
    lease::memory_store<lease::fake_clock>& underneath = store;
    return underneath.get({job, slot});
  }
  /// The store's pending triggers of "report" (a TriggerStore).
  std::vector<lease::run_key> pending() {
    const std::vector<std::string> jobs{"report"};
    return store.triggers(jobs);
  }
  /// The store's registrations of `job`, by instance id (a RegistryStore).
  std::vector<lease::job_registration> registrations(const std::string& job = "report") {
    for (const auto& j : store.list_jobs())
      if (j.name == job) return j.instances;
    return {};
  }
};

}  // namespace test
