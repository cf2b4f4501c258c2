// leasectl/watch.hpp — `leasectl watch [JOB]`: what changes in a store, one
// line per change, as it happens (an operator's `tail -f` of the cluster).
//
// Every --interval the watcher reads the store again (list_jobs(), or
// list_runs(JOB) for one job) and prints what differs from its last read:
// a job that appears, a pause or resume, a trigger asked or answered, a run
// that starts, is taken over, handed over or ends. The first read prints
// the state as it is. A change that begins and ends between two reads is
// seen as its end only: watch is a view of the store, not a log of it.
//
// Cost: one listing per interval (on Redis, a SCAN of the keyspace for all
// jobs; one script for one JOB), so the default interval is 1 s and watching
// one job is the cheaper view of a large store.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <lease/run.hpp>
#include <lease/store/inspect.hpp>

#include "output.hpp"

namespace leasectl {

/// Remembers the last read and says what changed since, as lines.
class watcher {
 public:
  /// `job`: watch that job's runs (its newest `limit`); empty: every job's
  /// pause, trigger and newest run.
  explicit watcher(std::string job = {}, bool json = false, std::size_t limit = 20)
      : job_(std::move(job)), json_(json), limit_(limit) {}

  /// One read of `s`: the lines to print (none when nothing changed).
  template <lease::InspectStore S>
  std::vector<std::string> poll(S& s) {
    const lease::time_point now = s.now();
    std::map<std::string, lease::stored_job> jobs;
    std::map<std::pair<std::string, lease::time_point>, lease::run_record> runs;
    if (job_.empty()) {
      for (auto& j : s.list_jobs()) {
        if (j.last_run) runs.emplace(std::pair{j.name, j.last_run->slot}, *j.last_run);
        jobs.emplace(j.name, std::move(j));
      }
    } else {
      for (auto& r : s.list_runs(job_, limit_)) runs.emplace(std::pair{r.job, r.slot}, std::move(r));
    }
    std::vector<std::string> out;
    for (const auto& [name, j] : jobs) diff_job(now, name, j, out);
    for (const auto& [key, r] : runs) diff_run(now, r, out);
    jobs_ = std::move(jobs);
    runs_ = std::move(runs);
    first_ = false;
    prev_now_ = now;
    return out;
  }

 private:
  void diff_job(lease::time_point now, const std::string& name, const lease::stored_job& j,
                std::vector<std::string>& out) {
    const auto was = jobs_.find(name);
    const bool is_new = was == jobs_.end();
    if (is_new && !first_) line(now, name, "appeared", "job " + cell(name) + " appeared in the store", out);
    if ((is_new && j.paused) || (!is_new && j.paused != was->second.paused))
      line(now, name, j.paused ? "paused" : "resumed",
           "job " + cell(name) + (j.paused ? " is paused: no claim of it wins" : " was resumed"), out);
    // (A bool and a time rather than a copied optional: g++ -O1 warns that
    // such a copy may be used uninitialized.)
    const bool had = !is_new && was->second.trigger.has_value();
    const lease::time_point before = had ? *was->second.trigger : lease::time_point{};
    if (j.trigger && (!had || *j.trigger != before))
      line(now, name, "triggered", "job " + cell(name) + " has a trigger pending: a manual run of slot " +
                                       lease::detail::fmt(*j.trigger), out);
    if (!j.trigger && had)
      line(now, name, "trigger answered",
           "job " + cell(name) + ": the trigger of slot " + lease::detail::fmt(before) + " was answered", out);
  }

  void diff_run(lease::time_point now, const lease::run_record& r, std::vector<std::string>& out) {
    const auto was = runs_.find({r.job, r.slot});
    const std::string what = "job " + cell(r.job) + (r.manual ? " manual run of slot " : " slot ") +
                             lease::detail::fmt(r.slot) + ": ";
    const std::string who = cell(r.runner.empty() ? "-" : r.runner);
    const std::string attempt = "attempt " + std::to_string(r.attempt) + " by " + who + ", fence " +
                                std::to_string(r.fence);
    std::string change, text;
    if (was == runs_.end()) {
      change = "run";
      text = what + status_word(r, now) + " (" + attempt + ")";
    } else if (const lease::run_record& b = was->second; b == r) {
      // The same record; a running run whose lease ran out is news all the same.
      if (r.status == lease::run_status::running && !r.live(now) && b.live(prev_now_)) {
        change = "expired";
        text = what + "expired: " + who + " stopped renewing its lease (" + lease::detail::fmt(r.lease_end) +
               "); a backup takes it over at its next check";
      }
    } else if (r.attempt != b.attempt) {
      change = "takeover";
      text = what + "taken over (" + attempt + ")";
    } else if (r.released && !b.released) {
      change = "released";
      text = what + "handed over by " + who + " (it stopped): a backup takes it over";
    } else if (r.status != b.status) {
      change = std::string(lease::to_string(r.status));
      text = what + std::string(lease::to_string(r.status)) + " (" + attempt + ")";
    }
    if (!change.empty()) line(now, r.job, change, text, out, &r);
  }

  void line(lease::time_point now, const std::string& job, const std::string& change, const std::string& text,
            std::vector<std::string>& out, const lease::run_record* run = nullptr) {
    if (json_) {
      detail::json_object o;
      o.time("time", now).text("job", job).text("change", change).text("text", text);
      if (run) o.raw("run", run_json(*run, now));
      out.push_back(o.str());
    } else {
      out.push_back(lease::detail::fmt(now) + "  " + text);
    }
  }

  std::string job_;
  bool json_ = false;
  std::size_t limit_ = 20;
  bool first_ = true;
  std::map<std::string, lease::stored_job> jobs_;
  std::map<std::pair<std::string, lease::time_point>, lease::run_record> runs_;
  lease::time_point prev_now_{};  ///< the last read's store time: "expired" is said once
};

}  // namespace leasectl
