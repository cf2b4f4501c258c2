// test/scheduler/harness.hpp — a deterministic cluster for scenario tests:
// several schedulers over one memory_store, one fake_clock, a manual_executor
// each, and a store wrapper that can fail or delay chosen calls.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "drive.hpp"
#include "lease/clock/fake.hpp"
#include "lease/event.hpp"
#include "lease/executor/manual.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/every.hpp"
#include "lease/scheduler.hpp"
#include "lease/store/memory.hpp"

namespace test {

using namespace std::chrono_literals;
using lease::duration;
using lease::time_point;

inline time_point at(duration d) { return time_point{} + d; }

/// A memory_store whose next calls can be made to throw (before or after
/// applying) or to arrive late (the shared clock advances before applying).
/// Copies share state. Counts calls per operation.
class faulty_store {
 public:
  enum class op { claim, heartbeat, finish, release, get, unfinished, pause };
  struct fault {
    op which;
    lease::errc code;
    bool applied = false;  ///< throw after applying (outcome unknown for real)
    bool foreign = false;  ///< throw std::runtime_error: a buggy store
  };

  explicit faulty_store(lease::fake_clock c) : st_(std::make_shared<state>(c)) {}

  void fail_next(op which, lease::errc code, bool applied = false) { st_->faults.push_back({which, code, applied}); }
  void throw_foreign_next(op which) { st_->faults.push_back({which, lease::errc::unavailable, false, true}); }
  void delay_next_claim(duration d) { st_->claim_delay = d; }
  /// The next `times` heartbeat_many calls renew every attempt but those of
  /// `job` and throw partial_batch_error with those unanswered: one master
  /// of a Redis Cluster down while the others answer.
  void fail_job_in_batches(std::string job, int times) { st_->failing_job = {std::move(job), times}; }
  /// The next claim is kept, not applied — a copy still on its way through
  /// the network — and answered outcome_unknown; the test delivers it later
  /// (inner().claim(*held())).
  void hold_next_claim() { st_->hold = true; }
  [[nodiscard]] std::optional<lease::claim_request> held() const { return st_->held; }
  [[nodiscard]] int calls(op o) const { return st_->calls[o]; }
  [[nodiscard]] int batches() const { return st_->batches; }
  lease::memory_store<lease::fake_clock>& inner() { return st_->inner; }

 private:
  template <class F>
  auto call(op o, F f) -> decltype(f()) {
    ++st_->calls[o];
    auto it = std::find_if(st_->faults.begin(), st_->faults.end(), [&](const fault& x) { return x.which == o; });
    if (it == st_->faults.end()) return f();
    fault fl = *it;
    st_->faults.erase(it);
    if (fl.applied) (void)f();
    if (fl.foreign) throw std::runtime_error("not a store_error");
    throw lease::store_error(lease::make_error_code(fl.code), "injected fault");
  }
 public:
  lease::claim_result claim(const lease::claim_request& r) {
    if (st_->claim_delay) {
      st_->clock.advance(*st_->claim_delay);
      st_->claim_delay.reset();
    }
    if (std::exchange(st_->hold, false)) {
      ++st_->calls[op::claim];
      st_->held = r;
      throw lease::store_error(lease::make_error_code(lease::errc::outcome_unknown), "reply lost (request delayed)");
    }
    return call(op::claim, [&] { return st_->inner.claim(r); });
  }
  bool heartbeat(const lease::run_key& k, std::string_view t, duration l) {
    return call(op::heartbeat, [&] { return st_->inner.heartbeat(k, t, l); });
  }
  std::vector<bool> heartbeat_many(std::span<const lease::heartbeat_request> b) {
    ++st_->batches;
    auto& [job, times] = st_->failing_job;
    if (times == 0) return call(op::heartbeat, [&] { return st_->inner.heartbeat_many(b); });
    --times;
    ++st_->calls[op::heartbeat];
    std::vector<std::optional<bool>> answers(b.size());
    for (std::size_t i = 0; i < b.size(); ++i)
      if (b[i].run.job != job) answers[i] = st_->inner.heartbeat(b[i].run, b[i].token, b[i].lease);
    throw lease::partial_batch_error<bool>(lease::make_error_code(lease::errc::unavailable),
                                           "injected fault: the master of job '" + job + "' is down",
                                           std::move(answers));
  }
  bool finish(const lease::run_key& k, std::string_view t, lease::run_status s) {
    return call(op::finish, [&] { return st_->inner.finish(k, t, s); });
  }
  bool release(const lease::run_key& k, std::string_view t) {
    return call(op::release, [&] { return st_->inner.release(k, t); });
  }
  std::vector<lease::run_record> unfinished(std::string_view j) {
    return call(op::unfinished, [&] { return st_->inner.unfinished(j); });
  }
  std::optional<lease::run_record> get(const lease::run_key& k) {
    return call(op::get, [&] { return st_->inner.get(k); });
  }
  [[nodiscard]] time_point now() const { return st_->inner.now(); }
  // PauseStore (scheduler::pause / resume), with faults as op::pause.
  bool pause(std::string_view j) { return call(op::pause, [&] { return st_->inner.pause(j); }); }
  bool resume(std::string_view j) { return call(op::pause, [&] { return st_->inner.resume(j); }); }
  bool paused(std::string_view j) { return call(op::pause, [&] { return st_->inner.paused(j); }); }

 private:
  struct state {
    explicit state(lease::fake_clock c) : clock(c), inner(c) {}
    lease::fake_clock clock;
    lease::memory_store<lease::fake_clock> inner;
    std::deque<fault> faults;
    std::optional<duration> claim_delay;
    bool hold = false;
    std::optional<lease::claim_request> held;
    std::pair<std::string, int> failing_job{{}, 0};
    std::map<op, int> calls;
    int batches = 0;
  };
  std::shared_ptr<state> st_;
};
static_assert(lease::BatchHeartbeatStore<faulty_store> && lease::PauseStore<faulty_store>);

/// What a scripted handler does when the test lets it run.
enum class ends { returns, throws, throws_if_stopped };

/// A manual_executor that also records the context of every task it is
/// given: a handler counts as started when it is dispatched, even while the
/// test holds it "running" in the queue.
struct recording_executor {
  lease::manual_executor inner;
  std::shared_ptr<std::vector<lease::run_context>> seen = std::make_shared<std::vector<lease::run_context>>();
  void execute(lease::task t) {
    seen->push_back(t.context());
    inner.execute(std::move(t));
  }
  std::size_t run_all() { return inner.run_all(); }
};
static_assert(lease::Executor<recording_executor>);

/// One instance: its scheduler, executor and recorded events.
template <class Policy = lease::skip_t>
struct node {
  using sched = lease::scheduler<faulty_store, lease::fake_clock, recording_executor, Policy>;
  recording_executor exec;
  std::vector<lease::run_context>& started = *exec.seen;  // contexts dispatched, in order
  std::unique_ptr<sched> s;
  std::vector<lease::event> events;
  ends behaviour = ends::returns;
  bool down = false;  ///< crashed or frozen: neither polled nor its handlers run

  [[nodiscard]] std::vector<lease::event> of(lease::event_kind k) const {
    std::vector<lease::event> out;
    for (const auto& e : events)
      if (e.kind == k) out.push_back(e);
    return out;
  }
  [[nodiscard]] int count(lease::event_kind k) const { return static_cast<int>(of(k).size()); }
  [[nodiscard]] bool has(lease::event_kind k, time_point slot) const {
    for (const auto& e : events)
      if (e.kind == k && e.run.slot == slot) return true;
    return false;
  }
};

/// Options for scenario tests: the defaults of doc/protocol.md §17, no claim jitter (so the
/// order of claims is the order instances are polled), no catch-up, a fixed seed.
inline lease::options spec_options(std::string name, std::uint64_t seed) {
  lease::options o;
  o.instance = std::move(name);
  o.seed = seed;
  o.claim_jitter = 0ms;
  o.catch_up = 0ms;  // catch-up tests turn it on; others start with no missed slot
  return o;
}

template <class Policy = lease::skip_t>
struct cluster : drive<cluster<Policy>> {
  lease::fake_clock clock;
  faulty_store store;
  std::vector<std::unique_ptr<node<Policy>>> nodes;

  explicit cluster(time_point start = at(0ms)) : clock(start), store(clock) {}

  /// Adds an instance with one job `job` on `every(interval)`. Its handler
  /// records the context and, when the test runs its task, ends as the
  /// node's `behaviour` says.
  node<Policy>& add(lease::options o, std::string job = "report", duration interval = 60s) {
    auto n = std::make_unique<node<Policy>>();
    node<Policy>* raw = n.get();
    n->s = std::make_unique<typename node<Policy>::sched>(store, clock, n->exec, Policy{}, std::move(o));
    n->s->on_event([raw](const lease::event& e) { raw->events.push_back(e); });
    n->s->add(std::move(job), lease::every(interval), [raw](lease::run_context& c) {
      if (raw->behaviour == ends::throws) throw std::runtime_error("boom");
      if (raw->behaviour == ends::throws_if_stopped && c.stop.stop_requested())
        throw std::runtime_error("stopped");
    });
    nodes.push_back(std::move(n));
    return *nodes.back();
  }

  using drive<cluster<Policy>>::poll_all;
  using drive<cluster<Policy>>::run_until;

  std::optional<lease::run_record> record(time_point slot, std::string job = "report") {
    return store.inner().get({std::move(job), slot});
  }
};

/// Whether event `e`'s message contains `words`.
inline bool says(const lease::event& e, const std::string& words) { return e.message.find(words) != std::string::npos; }

}  // namespace test
