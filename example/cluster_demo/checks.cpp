// cluster_demo/checks.cpp — the invariants of doc/invariants.md, checked on what
// the demo saw: the instances' events, the orchestrator's samples of the
// store, the records read back at the end, and how the processes exited.
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "demo.hpp"

namespace demo {

std::vector<attempt_bar> attempts_of(const history& h) {
  std::vector<attempt_bar> bars;
  for (const line& l : h.lines) {
    if (l.kind != 'E') continue;
    if (l.what == "won" || l.what == "takeover" || l.what == "catch_up") {
      bars.push_back({l.instance, l.slot, l.attempt, l.fence, l.what, l.at, {}, "running"});
      continue;
    }
    if (l.what != "success" && l.what != "failed" && l.what != "lost" && l.what != "handed_over" &&
        l.what != "abandoned")
      continue;
    for (attempt_bar& b : bars)
      if (b.instance == l.instance && b.slot == l.slot && b.attempt == l.attempt && b.outcome == "running") {
        b.to = l.at;
        b.outcome = l.what;
      }
  }
  // No end event: the runner was killed (its process life ended by kill -9), or the demo ended first.
  for (attempt_bar& b : bars) {
    if (b.outcome != "running") continue;
    b.to = h.t_end;
    for (const life& f : h.lives)
      if (f.instance == b.instance && f.from <= b.from && f.ended && b.from <= f.to) {
        b.to = f.to;
        if (f.killed) b.outcome = "killed";
      }
  }
  return bars;
}

void check_invariants(history& h) {
  using v = check::verdict;
  const std::vector<attempt_bar> bars = attempts_of(h);

  // 5. each (run, attempt) has exactly one winner; fences are never reused.
  {
    std::map<std::pair<lease::time_point, std::uint32_t>, std::set<std::string>> winners;
    std::map<std::uint64_t, int> fences;
    for (const attempt_bar& b : bars) {
      winners[{b.slot, b.attempt}].insert(b.instance);
      ++fences[b.fence];
    }
    std::string bad;
    for (const auto& [key, who] : winners)
      if (who.size() != 1) bad += std::string(" ") + hms(key.first) + " attempt " + std::to_string(key.second) + " won by " +
                                  std::to_string(who.size()) + " instances;";
    for (const auto& [fence, n] : fences)
      if (n != 1) bad += std::string(" fence ") + std::to_string(fence) + " used " + std::to_string(n) + " times;";
    std::set<lease::time_point> runs;
    for (const attempt_bar& b : bars) runs.insert(b.slot);
    h.checks.push_back({bad.empty() ? v::pass : v::fail, "one winner per attempt",
                        bad.empty() ? std::to_string(bars.size()) + " attempts of " + std::to_string(runs.size()) +
                                          " runs, each won by exactly one instance, each with its own fence"
                                    : "violated:" + bad});
  }

  // 1. skip: no two runs of the job hold live leases at once.
  {
    const bool ok = h.samples > 0 && h.max_live <= 1;
    std::string detail = std::to_string(h.samples) + " samples of the store (every ~100 ms, its own connection): " +
                         "at most " + std::to_string(h.max_live) + " live lease at a time";
    if (h.sample_errors != 0) detail += " (" + std::to_string(h.sample_errors) + " samples failed and were skipped)";
    for (const std::string& o : h.overlaps) detail += "; TWO LIVE " + o;
    h.checks.push_back({ok ? v::pass : v::fail, "no two live leases at once", detail});
  }

  // 3. attempts - handovers <= max_attempts; the hand-over did not count.
  {
    std::string bad;
    std::uint32_t most = 0;
    for (const auto& [slot, ah] : h.final_records) {
      const std::uint32_t counted = ah.first - ah.second;
      most = std::max(most, counted);
      if (counted > max_attempts) bad += std::string(" ") + hms(slot) + ": " + std::to_string(counted) + ";";
    }
    h.checks.push_back({bad.empty() && !h.final_records.empty() ? v::pass : v::fail,
                        "attempts - hand-overs <= max_attempts",
                        bad.empty() ? std::to_string(h.final_records.size()) +
                                          " run records read back: at most " + std::to_string(most) +
                                          " counted attempt(s) per run (max_attempts " +
                                          std::to_string(max_attempts) + ")"
                                    : "over the limit:" + bad});
  }

  // Fencing, seen from the events: a lost attempt never recorded a result,
  // and every fence probe was refused.
  {
    std::string bad;
    int probes = 0;
    for (const line& l : h.lines)
      if (l.kind == 'F') {
        ++probes;
        if (l.what != "refused") bad += std::string(" ") + l.instance + " " + hms(l.slot) + ": " + l.what + ";";
      }
    h.checks.push_back({bad.empty() ? v::pass : v::fail, "a fenced runner cannot change the run",
                        bad.empty() ? std::to_string(probes) + " finish(es) with a fenced token tried, all refused"
                                    : "accepted:" + bad});
  }

  // No store errors, every process ended the way the orchestrator ended it.
  {
    int errors = 0;
    std::string first;
    for (const line& l : h.lines)
      if (l.kind == 'E' && l.what == "store_error") {
        if (errors++ == 0) first = l.instance + ": " + l.message;
      }
    h.checks.push_back({errors == 0 ? v::pass : v::fail, "no store errors",
                        errors == 0 ? "no store_error event from any instance"
                                    : std::to_string(errors) + " store_error event(s), first: " + first});
  }
  {
    std::string bad;
    int killed = 0, clean = 0;
    for (const life& f : h.lives) {
      if (!f.ended) bad += std::string(" ") + f.instance + " never reaped;";
      else if (f.killed) ++killed;
      else if (WIFEXITED(f.status) && WEXITSTATUS(f.status) == 0) ++clean;
      else bad += std::string(" ") + f.instance + " exited with status " + std::to_string(f.status) + ";";
    }
    h.checks.push_back({bad.empty() ? v::pass : v::fail, "every process stopped cleanly and was reaped",
                        bad.empty() ? std::to_string(h.lives.size()) + " instance processes: " +
                                          std::to_string(clean) + " exited 0 after SIGTERM, " +
                                          std::to_string(killed) + " killed by the demo; none left running"
                                    : "problems:" + bad});
  }
}

}  // namespace demo
