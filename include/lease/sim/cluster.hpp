// lease/sim/cluster.hpp — lease::sim::cluster, a seeded, single-threaded
// simulation of several scheduler instances over one memory_store.
//
// Each instance has its own clock, skewed from the store's fake_clock; each
// handler is a script (how long it runs, how it ends, whether and how fast it
// honours its stop token). Faults: crash (no release), freeze for a duration
// (GC pause, stalled VM: neither the loop nor the handlers move), stop() with
// any handler behaviour, delayed store calls, and failing store calls. Everything is recorded in a
// lease::sim::history, and the invariants of DESIGN.md §5 are checked on it.
//
// The same seed and the same calls give the same history, so a failing
// property test replays exactly. Users can run their own job settings
// through it: add_job() takes any Schedule and a script per run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lease/clock/concept.hpp"
#include "lease/clock/fake.hpp"
#include "lease/options.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/concept.hpp"
#include "lease/scheduler.hpp"
#include "lease/scheduler/detail/any_schedule.hpp"
#include "lease/sim/executor.hpp"
#include "lease/sim/history.hpp"
#include "lease/sim/script.hpp"
#include "lease/sim/store.hpp"

namespace lease::sim {

/// Several instances over one store, driven in simulated time. Not thread-safe.
template <OverlapPolicy P = skip_t>
class cluster {
 public:
  using clock_type = skewed_clock<fake_clock>;
  using scheduler_type = scheduler<store, clock_type, executor, P>;
  /// Chooses the script of one attempt (called at dispatch).
  using planner = std::function<script(const run_context&)>;

  /// `opts` is every instance's options (instance and seed are filled in per
  /// instance from `seed`); the store's clock starts at `start`.
  explicit cluster(std::uint64_t seed, options opts = {}, time_point start = time_point{} + std::chrono::hours{1})
      : seed_(seed),
        opts_(opts.validated()),
        world_(std::make_shared<world>(fake_clock{start}, opts_, P{}.mode() == overlap_mode::skip ||
                                                                     P{}.mode() == overlap_mode::buffer_one)) {}

  /// Adds a job to every instance (before their start()).
  template <Schedule S>
  void add_job(std::string name, S schedule, planner plan) {
    detail::any_schedule slots(schedule);
    jobs_.push_back({std::move(name), [s = std::move(schedule)](scheduler_type& sch, const std::string& n,
                                                                 typename scheduler_type::handler h) {
                       sch.add(n, s, std::move(h));
                     },
                     std::move(plan), std::move(slots)});
  }

  /// Adds an instance named `name` whose clock reads the store's plus `skew`;
  /// returns its index. It is started by start(i).
  std::size_t add_instance(std::string name, duration skew = duration::zero()) {
    instances_.push_back(std::make_unique<instance>());
    instance& in = *instances_.back();
    in.name = std::move(name);
    in.skew = skew;
    build(in);
    return instances_.size() - 1;
  }

  void start(std::size_t i) {
    fault(i, "start");
    instances_.at(i)->sched->start();
  }
  void start_all() {
    for (std::size_t i = 0; i < instances_.size(); ++i) start(i);
  }
  /// The process dies: no release, its handlers vanish, it is never polled again.
  void crash(std::size_t i) {
    instance& in = *instances_.at(i);
    if (in.crashed) return;
    fault(i, "crash");
    in.crashed = true;
    for (auto& r : in.running) end_handler(r, "crashed");
    in.running.clear();
  }
  /// A crashed or stopped instance comes back as a new process (same name and
  /// skew, a fresh scheduler) and starts: catch-up runs again.
  void restart(std::size_t i) {
    instance& in = *instances_.at(i);
    if (!in.crashed && !in.sched->stopped()) return;
    fault(i, "restart");
    for (auto& r : in.running) end_handler(r, "crashed");
    in.running.clear();
    in.crashed = false;
    in.frozen_until.reset();
    ++in.generation;
    build(in);
    in.sched->start();
  }
  /// Neither the loop nor the handlers of instance `i` move for `d`.
  void freeze(std::size_t i, duration d) {
    instance& in = *instances_.at(i);
    if (in.crashed || in.frozen_until) return;
    fault(i, "freeze " + std::to_string(d.count()) + " ms");
    in.frozen_until = now() + d;
    for (auto& r : in.running) r.natural_end += d;
  }
  /// stop(timeout) on instance `i`; the simulation carries it out.
  void stop(std::size_t i, duration timeout) {
    instance& in = *instances_.at(i);
    if (in.crashed) return;
    fault(i, "stop " + std::to_string(timeout.count()) + " ms");
    in.sched->stop(timeout);
  }
  /// Instance `i`'s next `calls` store calls reach the store `d` late.
  void delay_store(std::size_t i, duration d, int calls) {
    fault(i, "delay " + std::to_string(calls) + " store calls by " + std::to_string(d.count()) + " ms");
    world_->delays[instances_.at(i)->name] = {d, calls};
  }

  /// Instance `i`'s next `calls` store calls fail with `code`: before being
  /// applied, or (`applied`) after, as when a reply is lost.
  void fail_store(std::size_t i, errc code, int calls, bool applied = false) {
    fault(i, "fail " + std::to_string(calls) + " store calls" + (applied ? " after applying" : ""));
    world_->failures[instances_.at(i)->name] = {code, calls, applied};
  }

  /// Runs the simulation until the store's clock reads `t`.
  void run_until(time_point t) {
    for (;;) {
      settle();
      std::optional<time_point> next;
      auto consider = [&](time_point x) {
        if (!next || x < *next) next = x;
      };
      for (auto& p : instances_) {
        instance& in = *p;
        if (in.crashed) continue;
        if (in.frozen_until) {
          consider(*in.frozen_until);
          continue;
        }
        if (auto w = in.sched->next_wakeup()) consider(*w - in.skew);
        for (auto& r : in.running) consider(end_of(r));
      }
      if (!next || *next > t) break;
      if (*next > now()) world_->clock.set(*next);
    }
    if (t > now()) world_->clock.set(t);
    settle();
  }
  void run_for(duration d) { run_until(now() + d); }

  /// The store's clock.
  [[nodiscard]] time_point now() const { return world_->clock.now(); }
  [[nodiscard]] const history& recorded() const { return world_->hist; }
  [[nodiscard]] std::size_t size() const { return instances_.size(); }
  [[nodiscard]] scheduler_type& instance_at(std::size_t i) { return *instances_.at(i)->sched; }
  /// The shared store (e.g. to inspect runs).
  [[nodiscard]] memory_store<fake_clock>& backing_store() { return world_->mem; }

  /// Every invariant violation found (empty when the history is sound): the
  /// store-side checks made during the run, plus the history checks below.
  [[nodiscard]] std::vector<std::string> violations() const {
    std::vector<std::string> out = world_->hist.violations;
    // I5: a handler runs only for a won attempt, at most once per (run, attempt).
    std::set<std::pair<run_key, std::uint32_t>> seen;
    for (const handler_run& h : world_->hist.handlers)
      if (!seen.insert({h.run, h.attempt}).second)
        out.push_back("I5: " + to_text(h.run) + " attempt " + std::to_string(h.attempt) + " started twice");
    check_takeover_time(out);
    return out;
  }

  /// How many lease ends the last violations() call could hold to I6.
  [[nodiscard]] std::size_t takeover_checks() const noexcept { return takeover_checks_; }

  /// The history as readable text, for a failing test's message.
  [[nodiscard]] std::string describe(std::size_t max_lines = 200) const {
    std::vector<std::pair<time_point, std::string>> lines;
    const history& h = world_->hist;
    for (const auto& [at, what] : h.faults) lines.push_back({at, "FAULT " + what});
    for (const auto& e : h.events)
      lines.push_back({e.at, "event " + std::string(to_string(e.kind)) + " " + e.instance + " " + to_text(e.run) +
                                 " #" + std::to_string(e.attempt) + ": " + e.message});
    for (const auto& r : h.handlers)
      lines.push_back({r.start, "handler " + r.instance + " " + to_text(r.run) + " #" + std::to_string(r.attempt) +
                                    " fence " + std::to_string(r.fence) + " token " + r.token.substr(0, 6) +
                                    " ended " + (r.ended.empty() ? "-" : r.ended) + " at " +
                                    (r.end ? std::to_string(r.end->time_since_epoch().count()) : "-")});
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::ostringstream os;
    for (const auto& v : violations()) os << "VIOLATION " << v << '\n';
    std::size_t n = 0;
    for (const auto& [at, text] : lines) {
      if (++n > max_lines) {
        os << "… (" << lines.size() - max_lines << " more)\n";
        break;
      }
      os << at.time_since_epoch().count() << ' ' << text << '\n';
    }
    return os.str();
  }

 private:
  struct job_spec {
    std::string name;
    std::function<void(scheduler_type&, const std::string&, typename scheduler_type::handler)> install;
    planner plan;
    detail::any_schedule slots;
  };
  struct running_handler {
    task t;
    script sc;
    time_point natural_end{};
    std::optional<time_point> stop_seen;
    std::size_t record = 0;  // index into history.handlers
  };
  struct instance {
    std::string name;
    duration skew{};
    std::uint32_t generation = 0;
    std::unique_ptr<scheduler_type> sched;
    executor exec;
    std::vector<running_handler> running;
    bool crashed = false;
    std::optional<time_point> frozen_until;
    bool throw_next = false;  // how the handler being run now ends
  };

  void build(instance& in) {
    options o = opts_;
    o.instance = in.name;
    o.seed = seed_ * 1'000'003ULL + in.generation * 104'729ULL + 1;  // the scheduler mixes in the name
    in.exec = executor{};
    in.sched = std::make_unique<scheduler_type>(store(world_, in.name), clock_type(world_->clock, in.skew), in.exec,
                                                P{}, o);
    in.sched->on_event([w = world_.get(), skew = in.skew](const event& e) {
      event copy = e;
      copy.at = e.at - skew;  // history times are on the store's clock
      w->hist.events.push_back(std::move(copy));
    });
    for (const auto& j : jobs_)
      j.install(*in.sched, j.name, [flag = &in.throw_next](run_context&) {
        if (*flag) throw std::runtime_error("scripted failure");
      });
  }

  [[nodiscard]] time_point end_of(const running_handler& r) const {
    time_point end = r.natural_end;
    if (r.stop_seen && r.sc.honours_stop) end = std::min(end, *r.stop_seen + *r.sc.honours_stop);
    return end;
  }

  /// Polls and completes everything due now, until nothing is.
  void settle() {
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (auto& p : instances_) {
        instance& in = *p;
        if (in.crashed) continue;
        if (in.frozen_until) {
          if (*in.frozen_until > now()) continue;
          in.frozen_until.reset();
        }
        if (auto w = in.sched->next_wakeup(); w && *w - in.skew <= now()) {
          in.sched->poll();
          progressed = true;
        }
        take_dispatched(in);
        check_fenced(in);
        for (std::size_t k = 0; k < in.running.size();) {
          running_handler& r = in.running[k];
          if (!r.stop_seen && r.t.context().stop.stop_requested()) r.stop_seen = now();
          if (end_of(r) > now()) {
            ++k;
            continue;
          }
          const bool early = r.stop_seen && r.sc.honours_stop && end_of(r) < r.natural_end;
          const bool throws = (early ? r.sc.on_stop : r.sc.ends) == script::ending::throws;
          in.throw_next = throws;
          running_handler done = std::move(r);
          in.running.erase(in.running.begin() + static_cast<std::ptrdiff_t>(k));
          done.t();  // posts the completion; the next poll picks it up
          end_handler(done, throws ? "threw" : "returned");
          progressed = true;
        }
      }
    }
  }

  void take_dispatched(instance& in) {
    for (task& t : *in.exec.dispatched) {
      const run_context& c = t.context();
      // I5: only the current winner runs.
      std::optional<run_record> rec = world_->mem.get(c.run());
      if (!rec || rec->token != c.token)
        world_->violation("I5: " + in.name + " started " + to_text(c.run()) + " without holding its current attempt");
      handler_run h{in.name, c.run(), c.attempt, c.token, c.fence, now(), std::nullopt, {}};
      world_->hist.handlers.push_back(h);
      running_handler r{std::move(t), script{}, now(), std::nullopt, world_->hist.handlers.size() - 1};
      for (const auto& j : jobs_)
        if (j.name == r.t.context().job) r.sc = j.plan(r.t.context());
      r.natural_end = now() + r.sc.runs_for;
      in.running.push_back(std::move(r));
    }
    in.exec.dispatched->clear();
  }

  /// I6: a run whose lease ran out while still running (runner dead, frozen,
  /// abandoned, or released) is taken over or ended within 2 × heartbeat of
  /// the lease end — checked only where the rule applies cleanly: an instance
  /// became its backup before the lease end and had no fault (crash, stop,
  /// freeze, restart, failed store call) until the deadline, no store call of
  /// anyone was delayed meanwhile, and no newer slot of the job falls before
  /// the deadline (plus the largest skew, a lease).
  void check_takeover_time(std::vector<std::string>& out) const {
    takeover_checks_ = 0;
    const history& h = world_->hist;
    const duration hb = *opts_.heartbeat;
    std::map<run_key, std::vector<const store_op*>> by_run;
    for (const store_op& op : h.ops) by_run[op.run].push_back(&op);
    auto record_at = [&](const std::vector<const store_op*>& ops, time_point t) -> std::optional<run_record> {
      std::optional<run_record> rec;
      for (const store_op* op : ops) {
        if (op->at > t) break;
        rec = op->after;
      }
      return rec;
    };
    for (const auto& [run, ops] : by_run) {
      const job_spec* spec = nullptr;
      for (const auto& j : jobs_)
        if (j.name == run.job) spec = &j;
      if (spec == nullptr) continue;
      std::map<std::string, std::pair<time_point, std::string>> lease_end;  // token → (end, runner)
      for (const store_op* op : ops) {
        if (!op->after || op->after->token != op->token) continue;
        const bool extends = (op->op == store_op::kind::claim && op->outcome == claim_outcome::won) ||
                             ((op->op == store_op::kind::heartbeat || op->op == store_op::kind::release) && op->accepted);
        if (extends) lease_end[op->token] = {op->after->lease_end, op->instance};
      }
      for (const auto& [token, end_runner] : lease_end) {
        const auto& [end, runner] = end_runner;
        const time_point deadline = end + 2 * hb + duration{1};
        if (deadline > now()) continue;
        std::optional<run_record> at_end = record_at(ops, end);
        if (!at_end || at_end->token != token || at_end->status != run_status::running) continue;
        if (spec->slots.next(run.slot) <= deadline + opts_.lease) continue;
        if (!has_clean_backup(run, runner, end, deadline)) continue;
        ++takeover_checks_;
        std::optional<run_record> later = record_at(ops, deadline);
        if (later && later->token == token && later->status == run_status::running)
          out.push_back("I6: " + to_text(run) + " attempt " + std::to_string(at_end->attempt) + "'s lease ended at " +
                        std::to_string(end.time_since_epoch().count()) + " but nobody took it over within 2 heartbeats");
      }
    }
  }

  [[nodiscard]] bool has_clean_backup(const run_key& run, const std::string& runner, time_point end,
                                      time_point deadline) const {
    const history& h = world_->hist;
    for (const event& e : h.events) {
      if (e.kind != event_kind::backup || e.run != run || e.instance == runner || e.at > end) continue;
      bool clean = true;
      for (const event& o : h.events)
        if (o.instance == e.instance && o.run == run && o.at >= e.at && o.at <= deadline &&
            (o.kind == event_kind::won || o.kind == event_kind::takeover || o.kind == event_kind::catch_up))
          clean = false;  // it ran the run itself meanwhile: not a backup throughout
      for (const auto& [at, what] : h.faults) {
        if (at < e.at || at > deadline) continue;
        const bool about_it = what.size() > e.instance.size() &&
                              what.compare(what.size() - e.instance.size() - 1, std::string::npos, " " + e.instance) == 0;
        if (about_it || what.rfind("delayed call", 0) == 0) clean = false;
      }
      if (clean) return true;
    }
    return false;
  }

  /// I2: a runner whose heartbeat was refused has its stop token aborted
  /// before its next heartbeat tick (checked right after the poll that saw it).
  void check_fenced(instance& in) {
    for (const auto& r : in.running)
      if (world_->refused.count(r.t.context().token) != 0 && !r.t.context().stop.stop_requested())
        world_->violation("I2: " + in.name + "'s heartbeat for " + to_text(r.t.context().run()) +
                          " was refused but its handler's stop token was not aborted");
  }

  void end_handler(const running_handler& r, std::string how) {
    handler_run& h = world_->hist.handlers.at(r.record);
    h.end = now();
    h.ended = std::move(how);
  }

  void fault(std::size_t i, const std::string& what) {
    world_->hist.faults.push_back({now(), what + " " + instances_.at(i)->name});
  }

  std::uint64_t seed_;
  options opts_;
  std::shared_ptr<world> world_;
  std::vector<job_spec> jobs_;
  std::vector<std::unique_ptr<instance>> instances_;
  mutable std::size_t takeover_checks_ = 0;
};

}  // namespace lease::sim
