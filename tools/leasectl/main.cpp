// leasectl — an operator's look into a lease store, and its hands on it:
//
//   leasectl --store URL jobs [--json]              every job the store holds state for, and its next slot
//   leasectl --store URL runs JOB [--limit N]       a job's runs, newest slot first
//   leasectl --store URL pause JOB | --all          no claim of JOB (of any job) wins, on any instance
//   leasectl --store URL resume JOB | --all         lifts the pause (of every paused job)
//   leasectl --store URL trigger JOB                one manual run of JOB now, by one instance
//   leasectl --store URL watch [JOB]                one line per change, as it happens
//   leasectl --store URL stop JOB                   pause JOB and hand over its runs in progress
//   leasectl --store URL purge JOB                  delete every trace of a job no instance has
//
// It drives every store through the same generic code: what a store cannot
// do (a capability it lacks: PauseStore, InspectStore, TriggerStore) is an error with its
// own exit code, never a silent nothing. Exit codes are in `kFooter`.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

#include <lease/error.hpp>

#include "commands.hpp"

namespace {

using namespace leasectl;

constexpr const char* kFooter =
    "Store URLs: PATH or sqlite:PATH (an existing SQLite file); redis://[user:pass@]host[:port][/db];\n"
    "  redis+cluster://[user:pass@]host[:port] (a Redis Cluster seed node); postgres://… or postgresql://…\n"
    "  (a libpq URI); postgres:key=value … (a libpq conninfo). Passwords are never printed.\n"
    "\n"
    "Exit codes:\n"
    "  0  done (also a pause of a paused job, a resume of one not paused: nothing changed)\n"
    "  1  the store failed: unreachable, timed out, or its data is not lease's (message on stderr); also no\n"
    "     store there: no SQLite file, a PostgreSQL schema without lease tables or of an older version\n"
    "  2  usage error: bad arguments, an unknown URL form, credentials or a job name the store refuses\n"
    "  3  this store cannot do that (it lacks the capability, e.g. listing jobs; or this build lacks the store)\n"
    "  4  runs JOB, purge JOB: the store has no state for JOB (no run, fence, pause, trigger or registration)\n"
    "  5  purge JOB refused: an instance registered JOB within --unseen-for, or a run of it holds a lease\n";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"leasectl: look into a lease store, pause, resume and trigger its jobs"};
  app.footer(kFooter);
  app.require_subcommand(1, 1);
  app.fallthrough();  // --json and --store after the command too

  std::string url;
  leasectl::store_settings settings;
  command c;
  app.add_option("--store", url, "the store the instances share (forms below; or $LEASECTL_STORE)")
      ->required()
      ->envname("LEASECTL_STORE");
  app.add_option("--namespace", settings.ns, "Redis key prefix or PostgreSQL schema the instances use")
      ->capture_default_str();
  app.add_flag("--json", c.json, "one JSON document instead of a table or a sentence");

  auto* jobs = app.add_subcommand(
      "jobs", "every job the store holds state for, by name: its schedule, next slot, pause, last run, instances");
  auto* runs = app.add_subcommand("runs", "a job's runs, newest slot first");
  runs->add_option("JOB", c.job, "the job's name")->required();
  runs->add_option("--limit", c.limit, "at most this many runs")->capture_default_str()->check(CLI::Range(1, 1000000));
  auto* pause = app.add_subcommand("pause", "no claim of JOB wins on any instance until resume (runs in progress go on)");
  pause->add_option("JOB", c.job, "the job's name");
  pause->add_flag("--all", c.all, "every job the store knows (one pause each; a job it first hears of later is not paused)");
  auto* resume = app.add_subcommand("resume", "lift a pause: the job's next slot is claimed as usual");
  resume->add_option("JOB", c.job, "the job's name");
  resume->add_flag("--all", c.all, "every paused job");
  for (auto* sub : {pause, resume})  // JOB or --all, not both, not neither
    sub->callback([sub, &c] {
      if (c.all == c.job.empty()) return;
      throw CLI::ValidationError(sub->get_name(), c.all ? "give JOB or --all, not both" : "JOB or --all is required");
    });
  auto* trigger = app.add_subcommand(
      "trigger", "one run of JOB now, outside its schedule, by exactly one instance that has it (subject to its overlap mode)");
  trigger->add_option("JOB", c.job, "the job's name")->required();
  auto* stop = app.add_subcommand(
      "stop", "pause JOB and hand over its runs in progress: their handlers stop; nothing runs until resume");
  stop->add_option("JOB", c.job, "the job's name")->required();
  auto* purge = app.add_subcommand(
      "purge", "delete every trace of JOB (runs, fence, pause, trigger, registrations) if no instance has it");
  purge->add_option("JOB", c.job, "the job's name")->required();
  std::int64_t unseen_s = 86'400;
  purge->add_option("--unseen-for", unseen_s,
                    "refuse if an instance registered JOB within this long (s, or with a unit: 90m, 24h, 7d)")
      ->capture_default_str()
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, std::int64_t>{{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}}))
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{10} * 365 * 86400));
  auto* watch = app.add_subcommand(
      "watch", "one line per change (a run starts, is taken over, ends; a pause, a trigger), until Ctrl-C");
  watch->add_option("JOB", c.job, "watch only this job's runs (cheaper on a large store)");
  std::int64_t interval_ms = 1000;
  watch->add_option("--interval", interval_ms, "ms between two reads of the store")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{50}, std::int64_t{3'600'000}));
  watch->add_option("--count", c.count, "stop after this many reads (0: never)")->capture_default_str();
  watch->add_option("--limit", c.limit, "with JOB: its newest runs to watch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? ok : usage;
  }
  c.what = jobs->parsed()     ? verb::jobs
           : runs->parsed()   ? verb::runs
           : pause->parsed()  ? verb::pause
           : resume->parsed() ? verb::resume
           : watch->parsed()  ? verb::watch
           : stop->parsed()   ? verb::stop
           : purge->parsed()  ? verb::purge
                              : verb::trigger;
  c.interval = std::chrono::milliseconds(interval_ms);
  c.unseen_for = std::chrono::seconds(unseen_s);

  leasectl::store_spec spec;
  try {
    spec = leasectl::parse_store_url(url);
  } catch (const leasectl::bad_store_url& e) {
    std::fprintf(stderr, "leasectl: %s\n", e.what());
    return usage;
  }
  try {
    const result r = leasectl::with_store(spec, settings, [&](auto& s) {
      if (c.what != verb::watch) return run(s, c, spec);
      return leasectl::watch(s, c, spec, [](const std::string& line) {
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fflush(stdout);  // as it happens, also into a pipe
      });
    });
    std::fwrite(r.out.data(), 1, r.out.size(), stdout);
    std::fwrite(r.err.data(), 1, r.err.size(), stderr);
    return r.code;
  } catch (const leasectl::not_built& e) {
    std::fprintf(stderr, "leasectl: %s: %s\n", store_name(spec).c_str(), e.what());
    return cannot;
  } catch (const lease::store_error& e) {
    // The stores redact their own messages; scrub() is the second lock.
    const std::string msg = leasectl::scrub(e.what(), spec.secrets);
    std::fprintf(stderr, "leasectl: %s: %s\n", store_name(spec).c_str(), msg.c_str());
    return e.code() == lease::errc::invalid_argument ? usage : store_failed;
  } catch (const std::exception& e) {
    const std::string msg = leasectl::scrub(e.what(), spec.secrets);
    std::fprintf(stderr, "leasectl: %s: %s\n", store_name(spec).c_str(), msg.c_str());
    return store_failed;
  }
}
