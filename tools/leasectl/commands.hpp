// leasectl/commands.hpp — jobs, runs, pause, resume and trigger on any Store, as
// text and an exit code (main prints them; tests call run() directly).
// A store lacking a capability (InspectStore, PauseStore, TriggerStore) answers exit code
// 3 and a sentence, decided at compile time: never a silent nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <lease/store/concept.hpp>
#include <lease/store/inspect.hpp>

#include "output.hpp"
#include "store_url.hpp"
#include "watch.hpp"

namespace leasectl {

/// The exit codes, as --help and the README document them.
enum exit_code : int { ok = 0, store_failed = 1, usage = 2, cannot = 3, no_such_job = 4, refused = 5 };

enum class verb { jobs, runs, pause, resume, trigger, watch, stop, purge };

struct command {
  verb what = verb::jobs;
  std::string job;
  std::size_t limit = 20;
  bool json = false;
  std::chrono::milliseconds interval{1000};  ///< watch: between two reads
  std::size_t count = 0;                     ///< watch: stop after this many reads (0: never)
  std::chrono::seconds unseen_for{86'400};   ///< purge: no instance registered the job for this long
  bool all = false;                          ///< pause, resume: every job the store knows instead of `job`
};

inline const char* kind_name(store_kind k) {
  switch (k) {
    case store_kind::sqlite: return "SQLite";
    case store_kind::redis: return "Redis";
    case store_kind::postgres: return "PostgreSQL";
  }
  return "?";
}

/// What a command prints and its exit code.
struct result {
  int code = ok;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// "the Redis store (redis://***@host:6379)": how every message names the store.
inline std::string store_name(const store_spec& spec) {
  return std::string("the ") + kind_name(spec.kind) + " store (" + spec.shown + ")";
}

/// What the store lacks, as a sentence; exit code 3.
inline result cannot_do(const store_spec& spec, const std::string& what, const char* capability) {
  return {cannot, "",
          "leasectl: " + store_name(spec) + " cannot " + what + ": this build of lease gives it no " + capability +
              " yet. Nothing was changed.\n"};
}

/// `leasectl trigger JOB`: one manual run of JOB, run by exactly one instance
/// that has the job. Says whether the request is new or was pending already,
/// and what stands in its way that the store can tell (a pause; a job no
/// instance ever ran here, perhaps a typo: the request then waits).
template <lease::TriggerStore S>
result trigger(S& s, const command& c) {
  const std::string asked[] = {c.job};
  const auto before = s.triggers(asked);
  const lease::time_point slot = s.trigger(c.job);
  const bool changed = before.empty() || before.front().slot != slot;
  bool paused = false;
  if constexpr (lease::PauseStore<S>) paused = s.paused(c.job);
  bool known = true;
  // One job's newest run, not list_jobs(): a Redis listing scans every key.
  if constexpr (lease::InspectStore<S>) known = !s.list_runs(c.job, 1).empty();
  if (c.json)
    return {ok,
            detail::json_object{}
                    .text("job", c.job)
                    .time("trigger", slot)
                    .boolean("changed", changed)
                    .boolean("paused", paused)
                    .boolean("ever_ran", known)
                    .str() +
                "\n",
            ""};
  const std::string job = cell(c.job);
  std::string out = "job " + job +
                    (changed ? " triggered: one instance that has it runs it once, as a manual run of slot "
                             : " already had a trigger pending: it runs once, as a manual run of slot ") +
                    lease::detail::fmt(slot) + " (`leasectl runs " + job + "` shows it)\n";
  if (paused)
    out += "note: job " + job + " is paused: the trigger is answered `paused` and does not run (`leasectl resume " +
           job + "` first, then trigger again)\n";
  if (!known)
    out += "note: no instance ever ran job " + job +
           " in this store: the trigger waits until an instance that has the job picks it up (check the name)\n";
  return {ok, out, ""};
}

/// `leasectl purge JOB`: every trace of JOB deleted, unless an instance
/// registered it within c.unseen_for or a run of it holds a lease (exit code
/// 5, and who or which run). Nothing else ever deletes a job.
template <lease::RegistryStore S>
result purge(S& s, const command& c, const store_spec& spec) {
  const lease::purge_result r = s.purge(c.job, c.unseen_for);
  const std::string job = cell(c.job);
  const lease::time_point now = s.now();
  if (c.json) {
    detail::json_object o;
    o.text("job", c.job).text("outcome", lease::to_string(r.outcome));
    if (r.instance) o.text("instance", r.instance->instance).time("last_seen", r.instance->last_seen);
    if (r.run) o.raw("run", run_json(*r.run, now));
    return {r.outcome == lease::purge_outcome::purged      ? ok
            : r.outcome == lease::purge_outcome::not_found ? no_such_job
                                                           : refused,
            o.str() + "\n", ""};
  }
  switch (r.outcome) {
    case lease::purge_outcome::purged:
      return {ok, "job " + job + " purged: its runs, fence, pause, trigger and registrations are gone\n", ""};
    case lease::purge_outcome::not_found:
      return {no_such_job, "",
              "leasectl: " + store_name(spec) + " has no state for job '" + job + "': nothing to purge.\n"};
    case lease::purge_outcome::registered:
      return {refused, "",
              "leasectl: not purged: instance " + cell(r.instance->instance) + " registered job " + job + " " +
                  ago(now - r.instance->last_seen) + " ago (schedule " + cell(r.instance->schedule) +
                  "), within --unseen-for " + std::to_string(c.unseen_for.count()) +
                  " s. Remove the job from that instance first, or wait. Nothing was changed.\n"};
    case lease::purge_outcome::running:
      // A stopped run keeps its lease: its handler may run until then.
      if (r.run->released)
        return {refused, "",
                "leasectl: not purged: job " + job + "'s run of slot " + lease::detail::fmt(r.run->slot) + " on " +
                    cell(r.run->runner) + " was stopped, but its handler may run until its lease ends at " +
                    lease::detail::fmt(r.run->lease_end) + "; purge after that. Nothing was changed.\n"};
      return {refused, "",
              "leasectl: not purged: job " + job + "'s run of slot " + lease::detail::fmt(r.run->slot) + " holds a lease on " +
                  cell(r.run->runner) + " until " + lease::detail::fmt(r.run->lease_end) +
                  " (`leasectl stop " + job + "` stops it; purge once its lease ended). Nothing was changed.\n"};
    case lease::purge_outcome::too_soon:
      return {refused, "",
              "leasectl: not purged: job " + job + " won an attempt in this very millisecond; try again. Nothing was "
              "changed.\n"};
  }
  return {refused, "", "leasectl: not purged\n"};
}

/// `leasectl pause --all` / `resume --all`: every job the store knows (its
/// listing: jobs that ran, were paused or triggered, or that an instance
/// registered) paused, or every paused one resumed — one store call per job,
/// in name order. Not one atomic step: a job the store first hears of after
/// the listing is not paused, and a store that fails halfway leaves the jobs
/// before the failure done (the error says so; run it again).
template <class S>
result pause_all(S& s, const command& c, const store_spec& spec) {
  const bool pausing = c.what == verb::pause;
  if constexpr (lease::InspectStore<S> && lease::PauseStore<S>) {
    std::vector<std::pair<std::string, bool>> done;  // job, changed
    for (const auto& j : s.list_jobs()) {
      if (!pausing && !j.paused) continue;
      try {
        done.emplace_back(j.name, pausing ? s.pause(j.name) : s.resume(j.name));
      } catch (const lease::store_error& e) {
        std::string before;
        for (const auto& [name, changed] : done) before += (before.empty() ? "" : ", ") + cell(name);
        throw lease::store_error(e.code(), std::string(e.what()) + " — while " + (pausing ? "pausing" : "resuming") +
                                               " job " + cell(j.name) + "; " +
                                               (done.empty() ? "no job was " + std::string(pausing ? "paused" : "resumed")
                                                             : "done before it: " + before) +
                                               ". Run it again: a job already " + (pausing ? "paused" : "resumed") +
                                               " is left as it is");
      }
    }
    if (c.json) {
      std::vector<std::string> items;
      for (const auto& [name, changed] : done)
        items.push_back(detail::json_object{}.text("job", name).boolean("paused", pausing).boolean("changed", changed).str());
      return {ok, detail::array(items), ""};
    }
    std::string out;
    std::size_t changed_n = 0;
    for (const auto& [name, changed] : done) {
      out += "job " + cell(name) +
             (changed    ? (pausing ? " paused" : " resumed")
              : pausing  ? " was already paused"
                         : " was not paused any more: nothing changed") +  // resumed by someone else since the listing
             "\n";
      changed_n += changed ? 1 : 0;
    }
    const std::string n = std::to_string(done.size()) + (done.size() == 1 ? " job" : " jobs");
    if (pausing)
      out += done.empty() ? "the store knows no job: nothing was paused\n"
                          : n + " paused (" + std::to_string(changed_n) + " just now): no claim of any wins on any instance "
                            "until `leasectl resume --all`. A job the store first hears of after this is not paused\n";
    else
      out += done.empty() ? "no job in the store is paused: nothing changed\n"
                          : n + " resumed: each job's next slot is claimed as usual; slots due while paused do not run\n";
    return {ok, out, ""};
  } else {
    return cannot_do(spec, std::string(pausing ? "pause" : "resume") + " every job",
                     "list_jobs and pause/resume (InspectStore, PauseStore)");
  }
}

/// `leasectl watch [JOB]`: reads the store every c.interval and hands each
/// change to print(line) as it is seen (watch.hpp says what a change is),
/// until c.count reads were made (never, for 0: until the operator stops it).
/// A store error ends it like any command's (exit code 1).
template <class S, class Print>
result watch(S& s, const command& c, const store_spec& spec, Print&& print) {
  if constexpr (lease::InspectStore<S>) {
    watcher w{c.job, c.json, c.limit};
    for (std::size_t n = 0; c.count == 0 || n < c.count; ++n) {
      if (n != 0) std::this_thread::sleep_for(c.interval);
      for (const auto& line : w.poll(s)) print(line + "\n");
    }
    return {ok, "", ""};
  } else {
    return cannot_do(spec, "be watched", "list_jobs (InspectStore)");
  }
}

/// Runs `c` on any Store: what the store cannot do (a capability it lacks)
/// is exit code 3 and a sentence, decided at compile time.
template <class S>
result run(S& s, const command& c, const store_spec& spec) {
  switch (c.what) {
    case verb::jobs:
      if constexpr (lease::InspectStore<S>) {
        const auto jobs = s.list_jobs();
        const auto now = s.now();
        return {ok, c.json ? jobs_json(jobs, now) : jobs_table(jobs, now), ""};
      } else {
        return cannot_do(spec, "list its jobs", "list_jobs (InspectStore)");
      }
    case verb::runs:
      if constexpr (lease::InspectStore<S>) {
        const auto runs = s.list_runs(c.job, c.limit);
        if (runs.empty()) {
          bool known = false;
          for (const auto& j : s.list_jobs()) known = known || j.name == c.job;
          if (!known) {
            return {no_such_job, "",
                    "leasectl: " + store_name(spec) + " has no state for job '" + cell(c.job) +
                        "': it never ran there and was never paused or triggered. Check the name (`leasectl jobs` lists them) "
                        "and --store" + (spec.kind == store_kind::sqlite ? "" : " and --namespace") + ".\n"};
          }
        }
        const auto now = s.now();
        return {ok, c.json ? runs_json(runs, now) : runs_table(runs, now), ""};
      } else {
        return cannot_do(spec, "list the runs of a job", "list_runs (InspectStore)");
      }
    case verb::pause:
    case verb::resume:
      if (c.all) return pause_all(s, c, spec);
      if constexpr (lease::PauseStore<S>) {
        const bool pausing = c.what == verb::pause;
        const bool changed = pausing ? s.pause(c.job) : s.resume(c.job);
        const std::string job = cell(c.job);
        if (c.json)
          return {ok,
                  detail::json_object{}.text("job", c.job).boolean("paused", pausing).boolean("changed", changed).str() +
                      "\n",
                  ""};
        if (pausing)
          return {ok,
                  "job " + job + (changed ? " paused" : " was already paused") +
                      ": no claim of it wins on any instance until `leasectl resume " + job + "`\n",
                  ""};
        return {ok,
                "job " + job +
                    (changed ? " resumed: its next slot is claimed as usual; slots due while it was paused do not run "
                               "(`leasectl trigger " + job + "` runs it once now)"
                             : " was not paused: nothing changed") +
                    "\n",
                ""};
      } else {
        return cannot_do(spec, c.what == verb::pause ? "pause a job" : "resume a job", "pause/resume (PauseStore)");
      }
    case verb::trigger:
      if constexpr (lease::TriggerStore<S>) return trigger(s, c);
      else return cannot_do(spec, "trigger a job", "trigger (TriggerStore)");
    case verb::watch:
      return watch(s, c, spec, [](const std::string&) {});
    case verb::stop:
      if constexpr (lease::StopStore<S>) {
        const std::size_t n = s.stop(c.job);
        const std::string job = cell(c.job);
        if (c.json)
          return {ok, detail::json_object{}.text("job", c.job).boolean("paused", true).number("handed_over", n).str() + "\n",
                  ""};
        return {ok,
                "job " + job + " stopped: paused, and " + std::to_string(n) + (n == 1 ? " run" : " runs") +
                    " in progress handed over (each runner stops its handler at its next heartbeat); no instance "
                    "takes " + (n == 1 ? "it" : "them") + " over or starts a slot until `leasectl resume " + job + "`\n",
                ""};
      } else {
        return cannot_do(spec, "stop a job's runs", "stop (StopStore)");
      }
    case verb::purge:
      if constexpr (lease::RegistryStore<S>) return purge(s, c, spec);
      else return cannot_do(spec, "purge a job", "purge (RegistryStore)");
  }
  return {usage, "", "leasectl: unknown command\n"};
}

}  // namespace leasectl
