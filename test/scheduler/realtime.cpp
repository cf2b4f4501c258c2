// Real-time tests: system_clock + thread_pool + memory_store, each scheduler
// with its own loop thread. Timing is tolerant: these check order and
// counts, never exact times.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "lease/clock/system.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"
#include "lease/store/memory.hpp"

using namespace std::chrono_literals;
using lease::event_kind;

namespace {

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
  /// Waits (real time) up to `limit` for an event of kind `k`.
  bool wait_for(event_kind k, std::chrono::milliseconds limit) {
    for (auto waited = 0ms; waited < limit; waited += 10ms) {
      if (!of(k).empty()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return !of(k).empty();
  }
};

lease::options fast(std::string name) {
  lease::options o;
  o.lease = 600ms;  // heartbeat 100 ms
  o.claim_jitter = 20ms;
  o.catch_up = 0ms;
  o.instance = std::move(name);
  return o;
}

lease::duration elapsed_since(lease::time_point t0) { return lease::system_clock{}.now() - t0; }

}  // namespace

TEST_CASE("two real instances run each slot at most once, finish every run they start, and stop promptly") {
  lease::memory_store<lease::system_clock> store;
  recorder rec;
  std::atomic<int> ran{0};
  auto a = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{2},
                                 lease::settings = fast("A"));
  auto b = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{2},
                                 lease::settings = fast("B"));
  for (auto* s : {&a, &b}) {
    s->add("tick", lease::every(200ms), [&](lease::run_context&) {
      ++ran;
      std::this_thread::sleep_for(20ms);
    });
    s->on_event(std::ref(rec));
  }
  a.start();
  b.start();
  std::this_thread::sleep_for(1300ms);
  const lease::time_point t0 = lease::system_clock{}.now();
  a.stop(1s);
  b.stop(1s);
  CHECK(elapsed_since(t0) < 1s);

  const auto won = rec.of(event_kind::won);
  CHECK(won.size() >= 3);
  std::set<lease::time_point> slots;
  for (const auto& e : won) CHECK(slots.insert(e.run.slot).second);  // each slot won once
  CHECK(rec.of(event_kind::success).size() == won.size());
  CHECK(ran.load() == static_cast<int>(won.size()));
  CHECK(rec.of(event_kind::lost).empty());
  CHECK(rec.of(event_kind::store_error).empty());
}

TEST_CASE("a real instance stopping hands its running handler over and a real backup takes it over") {
  lease::memory_store<lease::system_clock> store;
  recorder rec;
  auto handler = [](lease::run_context& ctx) {
    while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(5ms);
    throw std::runtime_error("stopping");
  };
  auto b = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = fast("B"));
  b.add("long", lease::every(1h), handler);
  b.on_event(std::ref(rec));
  // The hourly slot is reached through catch-up: A starts first and runs it.
  auto a = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = [] {
                                   auto o = fast("A");
                                   o.catch_up = 2h;
                                   o.catch_up_jitter = 0ms;
                                   return o;
                                 }());
  a.add("long", lease::every(1h), handler);
  a.on_event(std::ref(rec));
  a.start();
  REQUIRE(rec.wait_for(event_kind::catch_up, 2s));
  const auto slot = rec.of(event_kind::catch_up).at(0).run.slot;
  b.start();  // on start, B finds the live run and becomes its backup
  REQUIRE(rec.wait_for(event_kind::backup, 2s));

  const lease::time_point t0 = lease::system_clock{}.now();
  a.stop(2s);
  CHECK(elapsed_since(t0) < 1s);
  REQUIRE(rec.of(event_kind::handed_over).size() == 1);
  REQUIRE(rec.wait_for(event_kind::takeover, 2s));  // within 2 heartbeats, plus slack
  const auto takeover = rec.of(event_kind::takeover).at(0);
  CHECK(takeover.instance == "B");
  CHECK(takeover.run.slot == slot);
  CHECK(takeover.attempt == 2);
  b.stop(2s);
  CHECK(store.get({"long", slot})->handovers == 2);
}

TEST_CASE("a real backup takes a hand-over over as soon as the store announces it, well before its next check") {
  lease::memory_store<lease::system_clock> store;  // a PushStore: it announces releases to every copy's listener
  recorder rec;
  auto handler = [](lease::run_context& ctx) {
    while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(5ms);
    throw std::runtime_error("stopping");
  };
  auto slow = [](std::string name, lease::duration catch_up) {
    auto o = fast(std::move(name));
    o.lease = 20s;  // heartbeat 4 s: a backup's periodic checks are 4–8 s apart
    o.catch_up = catch_up;
    o.catch_up_jitter = 0ms;
    return o;
  };
  auto a = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = slow("A", 2h));
  auto b = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = slow("B", 0ms));
  for (auto* s : {&a, &b}) {
    s->add("long", lease::every(1h), handler);
    s->on_event(std::ref(rec));
  }
  a.start();
  REQUIRE(rec.wait_for(event_kind::catch_up, 2s));
  b.start();
  REQUIRE(rec.wait_for(event_kind::backup, 2s));
  a.stop(2s);
  REQUIRE(rec.of(event_kind::handed_over).size() == 1);
  // B's first periodic check is at least 4 s after it became the backup: a
  // takeover within 2 s can only come from the announcement.
  REQUIRE(rec.wait_for(event_kind::takeover, 2s));
  CHECK(rec.of(event_kind::takeover).at(0).instance == "B");
  b.stop(2s);
}

TEST_CASE("stop returns at its timeout when a real handler ignores its stop token, and the run is abandoned") {
  recorder rec;
  std::atomic<bool> release{false};
  auto o = fast("A");
  o.catch_up = 2h;
  o.catch_up_jitter = 0ms;
  auto a = lease::make_scheduler(lease::executor = lease::thread_pool{1}, lease::settings = o);
  a.add("stubborn", lease::every(1h), [&](lease::run_context&) {
    while (!release.load()) std::this_thread::sleep_for(5ms);
  });
  a.on_event(std::ref(rec));
  a.start();
  REQUIRE(rec.wait_for(event_kind::catch_up, 2s));
  // Monotonic time, as the stop deadline is; the scheduler counts whole
  // milliseconds, so its 200 ms may end up to 1 ms early on a finer clock.
  const auto t0 = std::chrono::steady_clock::now();
  a.stop(200ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 199ms);
  CHECK(took < 700ms);
  CHECK(rec.of(event_kind::abandoned).size() == 1);
  release = true;  // let the pool's thread end so the scheduler can be destroyed
}

TEST_CASE("trigger() from the controlling thread, in real mode: the loop thread asks the store, one instance runs it once, soon") {
  lease::memory_store<lease::system_clock> store;
  recorder rec;
  std::mutex m;
  std::vector<lease::run_context> manual_runs;
  auto a = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = fast("A"));
  auto b = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = fast("B"));
  for (auto* s : {&a, &b}) {
    s->add("daily", lease::every(std::chrono::hours{24}), [&](lease::run_context& c) {
      std::scoped_lock l(m);
      if (c.manual) manual_runs.push_back(c);
    });
    s->on_event(std::ref(rec));
  }
  a.start();
  b.start();
  const lease::time_point asked = lease::system_clock{}.now();
  const lease::time_point slot = a.trigger("daily");  // answered by A's loop thread
  CHECK(slot >= asked);
  CHECK_THROWS_AS(b.trigger("nightly"), std::invalid_argument);
  REQUIRE(rec.wait_for(event_kind::success, 2000ms));  // by push: no poll interval to wait out
  a.stop();
  b.stop();
  std::scoped_lock l(m);
  REQUIRE(manual_runs.size() == 1);
  CHECK(manual_runs[0].slot == slot);
  CHECK(store.get({"daily", slot})->manual);
  CHECK_THROWS_AS(a.trigger("daily"), std::logic_error);
}
