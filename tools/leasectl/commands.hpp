// leasectl/commands.hpp — jobs, runs, pause and resume on any Store, as
// text and an exit code (main prints them; tests call run() directly).
// A store lacking a capability (InspectStore, PauseStore) answers exit code
// 3 and a sentence, decided at compile time: never a silent nothing.
#pragma once

#include <cstddef>
#include <string>

#include <lease/store/concept.hpp>
#include <lease/store/inspect.hpp>

#include "output.hpp"
#include "store_url.hpp"

namespace leasectl {

/// The exit codes, as --help and the README document them.
enum exit_code : int { ok = 0, store_failed = 1, usage = 2, cannot = 3, no_such_job = 4 };

enum class verb { jobs, runs, pause, resume };

struct command {
  verb what = verb::jobs;
  std::string job;
  std::size_t limit = 20;
  bool json = false;
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
                        "': it never ran there and was never paused. Check the name (`leasectl jobs` lists them) "
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
                    (changed ? " resumed: its next slot is claimed as usual" : " was not paused: nothing changed") +
                    "\n",
                ""};
      } else {
        return cannot_do(spec, c.what == verb::pause ? "pause a job" : "resume a job", "pause/resume (PauseStore)");
      }
  }
  return {usage, "", "leasectl: unknown command\n"};
}

}  // namespace leasectl
