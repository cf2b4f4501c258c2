// benchmark/takeover.hpp — the driver of the SIGTERM-to-takeover benchmarks
// on the stores that push releases (redis/redis_takeover.cpp,
// postgres/postgres_takeover.cpp). Two schedulers in one process, each with
// its own store: A runs a long job, B watches it as the backup. Each
// iteration: A wins the run, B becomes its backup, then A.stop() — what a
// SIGTERM handler calls — hands the run over, and the iteration's time is
// from the stop() call to B's takeover event. Heartbeat 2 s, lease 6 s.
// Counters: min / median / p95 / max in ms (nearest rank: p95 of 20 is the
// 19th smallest), the names scripts/lib/bench_results.py reads.
//
// "Push off" is the same store behind without_push, which hides
// listen_releases() (so the scheduler does not see a PushStore), nothing
// else changed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/schedule/every.hpp"

namespace lease::bench {

/// `Store` without PushStore: everything else forwarded as it is.
template <class Store>
class without_push {
 public:
  explicit without_push(Store s) : s_(std::move(s)) {}
  claim_result claim(const claim_request& r) { return s_.claim(r); }
  std::vector<claim_result> claim_many(std::span<const claim_request> b) { return s_.claim_many(b); }
  bool heartbeat(const run_key& r, std::string_view t, duration l) { return s_.heartbeat(r, t, l); }
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> b) { return s_.heartbeat_many(b); }
  bool finish(const run_key& r, std::string_view t, run_status s) { return s_.finish(r, t, s); }
  bool release(const run_key& r, std::string_view t) { return s_.release(r, t); }
  std::vector<bool> finish_many(std::span<const finish_request> b) { return s_.finish_many(b); }
  std::vector<run_record> unfinished(std::string_view job) { return s_.unfinished(job); }
  std::optional<run_record> get(const run_key& r) { return s_.get(r); }
  time_point now() { return s_.now(); }
  std::vector<std::string> take_notices() { return s_.take_notices(); }

 private:
  Store s_;
};

/// The first time each kind of event was seen, on the monotonic clock.
struct takeover_recorder {
  using steady = std::chrono::steady_clock;
  std::mutex m;
  std::vector<std::pair<event_kind, steady::time_point>> seen;
  std::vector<std::string> said;  ///< each event's instance and message, as seen
  void operator()(const event& e) {
    const auto t = steady::now();
    std::scoped_lock l(m);
    seen.emplace_back(e.kind, t);
    said.push_back(e.instance + ": " + e.message.substr(0, 160));
  }
  std::optional<steady::time_point> at(event_kind k) {
    std::scoped_lock l(m);
    for (const auto& [kind, t] : seen)
      if (kind == k) return t;
    return std::nullopt;
  }
  /// Polls (1 ms) until an event of kind `k`, at most `limit`.
  std::optional<steady::time_point> wait(event_kind k, std::chrono::milliseconds limit) {
    const auto end = steady::now() + limit;
    for (;;) {
      if (auto t = at(k)) return t;
      if (steady::now() > end) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
  }
};

inline options takeover_settings(std::string name, duration catch_up) {
  options o;
  o.instance = std::move(name);
  o.lease = std::chrono::seconds{6};
  o.heartbeat = std::chrono::seconds{2};
  o.claim_jitter = duration{0};
  o.catch_up = catch_up;
  o.catch_up_jitter = duration{0};
  return o;
}

/// Returns once the wall clock is at least 60 s before the next full hour
/// (sleeping past it if needed). The job below runs every hour and A wins
/// its last slot by catch-up: in a hand-over that straddles the hour, B
/// starts the new slot first, and then, by the rules, the released older run
/// is not taken over but interrupted (a newer run started). A run of this
/// benchmark at 07:59:59 did exactly that and reported "B did not take over".
inline void clear_of_the_hour() {
  const auto now = std::chrono::system_clock::now();
  const auto next = std::chrono::ceil<std::chrono::hours>(now);
  // 60 s: more than one hand-over's own limits (10 + 10 + 20 s of waits, two 2 s stops).
  if (next - now < std::chrono::seconds{60}) std::this_thread::sleep_until(next + std::chrono::seconds{1});
}

/// One hand-over of job "long-<i>": the seconds from A.stop() to B's
/// takeover, or a negative number with the reason in `error`. `make()`
/// returns a new store (its own connection); with a PushStore,
/// `push_ready(b_store)` waits until B's store can hear the release and
/// returns why not ("" when it can), so the time measured is the push's.
template <class MakeStore, class PushReady>
double one_handover(int i, MakeStore make, PushReady push_ready, std::string& error) {
  using namespace std::chrono_literals;
  clear_of_the_hour();
  takeover_recorder rec;
  auto handler = [](run_context& ctx) {
    while (!ctx.stop.stop_requested()) std::this_thread::sleep_for(1ms);
    throw std::runtime_error("stopping");  // handed over, not finished
  };
  auto a = make_scheduler(lease::store = make(), lease::executor = thread_pool{1},
                          lease::settings = takeover_settings("A", 2h));
  auto b = make_scheduler(lease::store = make(), lease::executor = thread_pool{1},
                          lease::settings = takeover_settings("B", 0ms));
  const std::string job = "long-" + std::to_string(i);
  for (auto* s : {&a, &b}) s->add(job, every(std::chrono::hours(1)), handler);
  a.on_event(std::ref(rec));
  b.on_event(std::ref(rec));
  a.start();
  if (!rec.wait(event_kind::catch_up, 10s)) {
    error = "A did not start the run; events:";
    {
      std::scoped_lock l(rec.m);
      for (const auto& e : rec.seen) error += " " + std::string(to_string(e.first));
    }
    a.stop(2s);
    return -1;
  }
  b.start();
  if (!rec.wait(event_kind::backup, 10s)) {
    error = "B did not become the backup";
    a.stop(2s);
    b.stop(2s);
    return -1;
  }
  if constexpr (PushStore<std::decay_t<decltype(b.store())>>) {
    if (std::string why = push_ready(b.store()); !why.empty()) {
      error = std::move(why);
      a.stop(2s);
      b.stop(2s);
      return -1;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  a.stop(2s);
  const auto took = rec.wait(event_kind::takeover, 20s);
  b.stop(2s);
  if (!took) {
    // What each scheduler said, and when (ms from the stop() call): what
    // to look at when a hand-over went wrong.
    error = "B did not take over within 20 s; events:";
    std::scoped_lock l(rec.m);
    for (std::size_t k = 0; k < rec.seen.size(); ++k)
      error += " [" + std::string(to_string(rec.seen[k].first)) + " at " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(rec.seen[k].second - t0).count()) +
               " ms, " + rec.said[k] + "]";
    return -1;
  }
  return std::chrono::duration<double>(*took - t0).count();
}

/// One job per hand-over across all modes of a binary: each starts from no state.
inline int next_takeover_job = 0;

/// The benchmark's loop: a hand-over per iteration (manual time), then the
/// counters; the first failure skips the benchmark with its reason.
template <class MakeStore, class PushReady>
void run_takeovers(benchmark::State& state, MakeStore make, PushReady push_ready) {
  std::vector<double> ms;
  for (auto _ : state) {
    std::string error;
    double s = -1;
    try {
      s = one_handover(next_takeover_job++, make, push_ready, error);
    } catch (const std::exception& e) {
      error = e.what();  // e.g. a server or cluster fixture did not come up
    }
    if (s < 0) {
      state.SkipWithError(error.c_str());
      break;
    }
    state.SetIterationTime(s);
    ms.push_back(1e3 * s);
  }
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  const auto rank = [&](double q) {  // nearest rank
    const auto r = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(ms.size()))));
    return ms[std::min(ms.size(), r) - 1];
  };
  state.counters["min_ms"] = ms.front();
  state.counters["median_ms"] = rank(0.5);
  state.counters["p95_ms"] = rank(0.95);
  state.counters["max_ms"] = ms.back();
}

}  // namespace lease::bench
