// lease/prometheus/metrics.hpp — lease::prometheus_metrics, Prometheus
// metrics made from schedulers' events (optional component lease::prometheus,
// on prometheus-cpp; the core does not depend on it).
//
// What is exported (names, labels and meaning are also in the README):
//
//   lease_events_total{job,kind}                   counter: events, one kind each (to_string(event_kind))
//   lease_skipped_slots_total{job}                 counter: slots a late loop did not claim
//   lease_handler_duration_seconds{job,outcome}    histogram: how long handlers ran, by how the attempt ended
//   lease_takeover_latency_seconds{job}            histogram: lease end in the store → takeover
//   lease_claim_round_trip_seconds{job}            histogram: a claim's send → its answer
//   lease_running_attempts                         gauge: attempts running on the attached schedulers
//   lease_watched_runs                             gauge: runs the attached schedulers back up
//
// Every series comes from an event field (lease/event.hpp), never from a
// list of kinds: a new event_kind is counted as soon as it exists, and a
// histogram gets an observation from every event that carries its duration.
// No instance label: an instance id (hostname:pid by default) changes at
// every restart, and Prometheus already labels each scraped process.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "lease/event.hpp"
#include "lease/scheduler/live_counts.hpp"

namespace lease {

/// Histogram bucket bounds, in seconds.
struct prometheus_buckets {
  std::vector<double> handler_duration{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
  std::vector<double> takeover_latency{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  std::vector<double> claim_round_trip{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
};

/// Turns the events of one or more schedulers into Prometheus metrics.
///
///     lease::prometheus_metrics metrics;                 // its own registry, or pass yours
///     metrics.attach(scheduler);                          // before scheduler.start()
///     lease::prometheus_endpoint http(metrics, "0.0.0.0:9464");   // lease/prometheus/endpoint.hpp
///
/// The counters and histograms live in `registry()`, so a program that
/// already exposes a registry of its own can pass it to the constructor.
/// The two gauges are read from the schedulers when collected: at every
/// scrape through collectable() (prometheus_endpoint uses it; register it
/// with your own Exposer otherwise), and at every event.
///
/// Thread-safety: record() and the sink that attach() installs may run on
/// several schedulers' loop threads at once; collection runs on the HTTP
/// server's threads. attach() before the scheduler starts. The schedulers'
/// sinks and the collectable share the metrics' state, so neither the
/// schedulers nor this object need outlive the other.
class prometheus_metrics {
 public:
  explicit prometheus_metrics(std::shared_ptr<::prometheus::Registry> registry = std::make_shared<::prometheus::Registry>(),
                              prometheus_buckets buckets = {})
      : st_(std::make_shared<state>(std::move(registry), std::move(buckets))),
        collector_(std::make_shared<collector>(st_)) {}

  prometheus_metrics(const prometheus_metrics&) = delete;
  prometheus_metrics& operator=(const prometheus_metrics&) = delete;

  /// Counts every event of `s`, and adds its running attempts and watched
  /// runs to the gauges. Call before s.start() (scheduler::on_event's rule).
  template <class Scheduler>
  void attach(Scheduler& s) {
    {
      std::scoped_lock hold(st_->mutex);
      st_->counts.push_back(s.counts());
    }
    s.on_event([st = st_](const event& e) {
      st->record(e);
      st->refresh_gauges();
    });
  }

  /// Counts one event (for events that do not come from an attached
  /// scheduler, e.g. a simulation's history). Thread-safe.
  void record(const event& e) { st_->record(e); }

  /// The registry holding the counters and histograms (and the gauges, as of
  /// their last refresh).
  [[nodiscard]] std::shared_ptr<::prometheus::Registry> registry() const { return st_->registry; }

  /// The registry's metrics with the gauges read at collection time: what an
  /// Exposer should serve (`exposer.RegisterCollectable(metrics.collectable())`).
  [[nodiscard]] std::shared_ptr<::prometheus::Collectable> collectable() const { return collector_; }

 private:
  struct state {
    state(std::shared_ptr<::prometheus::Registry> r, prometheus_buckets b)
        : registry(std::move(r)),
          buckets(std::move(b)),
          events(::prometheus::BuildCounter()
                     .Name("lease_events_total")
                     .Help("Events of lease schedulers, by job and kind (see lease::event_kind)")
                     .Register(*registry)),
          skipped(::prometheus::BuildCounter()
                      .Name("lease_skipped_slots_total")
                      .Help("Slots a scheduler's loop did not claim because it ran late (late events)")
                      .Register(*registry)),
          handler(::prometheus::BuildHistogram()
                      .Name("lease_handler_duration_seconds")
                      .Help("How long handlers ran, by job and by how the attempt ended (success, failed, "
                            "handed_over, abandoned, lost)")
                      .Register(*registry)),
          takeover(::prometheus::BuildHistogram()
                       .Name("lease_takeover_latency_seconds")
                       .Help("Time from the end of a dead runner's lease, on the store's clock, to the "
                             "takeover of its run")
                       .Register(*registry)),
          round_trip(::prometheus::BuildHistogram()
                         .Name("lease_claim_round_trip_seconds")
                         .Help("Time from sending a claim to its answer, on the claiming instance's clock")
                         .Register(*registry)),
          running(::prometheus::BuildGauge()
                     .Name("lease_running_attempts")
                     .Help("Attempts the attached schedulers are running (handler running or result pending)")
                     .Register(*registry)
                     .Add({})),
          watched(::prometheus::BuildGauge()
                      .Name("lease_watched_runs")
                      .Help("Runs of other instances that the attached schedulers watch as backups")
                      .Register(*registry)
                      .Add({})) {}

    static double seconds(duration d) { return static_cast<double>(d.count()) / 1000.0; }

    void record(const event& e) {
      const std::string& job = e.run.job;
      events.Add({{"job", job}, {"kind", std::string(to_string(e.kind))}}).Increment();
      if (e.skipped_slots) skipped.Add({{"job", job}}).Increment(static_cast<double>(*e.skipped_slots));
      if (e.handler_duration)
        handler.Add({{"job", job}, {"outcome", std::string(to_string(e.kind))}}, buckets.handler_duration)
            .Observe(seconds(*e.handler_duration));
      if (e.takeover_latency)
        takeover.Add({{"job", job}}, buckets.takeover_latency).Observe(seconds(*e.takeover_latency));
      if (e.claim_round_trip)
        round_trip.Add({{"job", job}}, buckets.claim_round_trip).Observe(seconds(*e.claim_round_trip));
    }

    void refresh_gauges() {
      std::scoped_lock hold(mutex);
      double r = 0, w = 0;
      for (const auto& c : counts) {
        r += static_cast<double>(c->running.load(std::memory_order_relaxed));
        w += static_cast<double>(c->watching.load(std::memory_order_relaxed));
      }
      running.Set(r);
      watched.Set(w);
    }

    std::shared_ptr<::prometheus::Registry> registry;
    prometheus_buckets buckets;
    ::prometheus::Family<::prometheus::Counter>& events;
    ::prometheus::Family<::prometheus::Counter>& skipped;
    ::prometheus::Family<::prometheus::Histogram>& handler;
    ::prometheus::Family<::prometheus::Histogram>& takeover;
    ::prometheus::Family<::prometheus::Histogram>& round_trip;
    ::prometheus::Gauge& running;
    ::prometheus::Gauge& watched;
    std::mutex mutex;  // guards counts
    std::vector<std::shared_ptr<const live_counts>> counts;
  };

  class collector final : public ::prometheus::Collectable {
   public:
    explicit collector(std::shared_ptr<state> st) : st_(std::move(st)) {}
    std::vector<::prometheus::MetricFamily> Collect() const override {
      st_->refresh_gauges();
      return st_->registry->Collect();
    }

   private:
    std::shared_ptr<state> st_;
  };

  std::shared_ptr<state> st_;
  std::shared_ptr<collector> collector_;
};

}  // namespace lease
