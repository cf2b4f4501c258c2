// test/chaos/check.hpp — the checker: reads every instance's audit lines and
// reports what must never happen, whatever the fault:
//   1. double run: two handlers of one run (job + slot) whose
//      [start, last side effect] intervals overlap on CLOCK_MONOTONIC.
//      Excused, and counted, only when it began within two leases of an
//      instance saying the store's clock was stepped ahead and lasted less
//      than a lease: that step broke a stated precondition, and
//      doc/protocol.md §2 says what it costs (a backup takes the run over
//      up to a heartbeat before the runner's refused heartbeat stops it).
//      On SQLite the host's step is the store's: libfaketime brings it to
//      each process up to 1 s apart, so the backup may see it first;
//   2. a fence that does not strictly increase across a job's won attempts
//      in the order they started;
//   3. a slot due in the test window with neither a handler start nor an
//      event that explains it (late, skip, superseded, early, store_error,
//      interrupted, lost, abandoned, failed) on some instance;
//   4. two handlers of one job (any slots) whose intervals overlap: the
//      instances run in skip mode, one run of a job at a time. Excused only
//      where an instance said the store's clock was stepped ahead (a stated
//      precondition broken; doc/protocol.md §2) within two leases of the
//      later one's start, and counted.
// It also counts what happened, so a human sees the test did something.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chaos/audit.hpp"

namespace chaos {

/// One handler execution (one attempt on one instance), from its lines.
struct execution {
  std::string instance, job, token, reason = "?";
  std::int64_t slot = 0;
  std::uint32_t attempt = 0;
  std::uint64_t fence = 0;
  std::int64_t start = 0;        ///< µs, mono
  std::int64_t last_effect = 0;  ///< µs, mono: its last step, else its start
  int steps = 0;
  std::string ended = "no end line (killed?)";
};

struct report {
  std::vector<std::string> violations;
  std::size_t slots_due = 0, runs = 0, takeovers = 0, catch_ups = 0, double_runs = 0, fence_errors = 0,
              unexplained = 0, job_overlaps = 0, overlaps_after_store_step = 0, double_runs_after_store_step = 0;
  std::map<std::string, std::size_t> events;  ///< by kind
};

/// "+12.345 s" from the test's origin.
inline std::string at(std::int64_t mono_us, std::int64_t origin_us) {
  char b[32];
  std::snprintf(b, sizeof b, "+%.3f s", static_cast<double>(mono_us - origin_us) / 1e6);
  return b;
}

inline std::string describe(const execution& e, std::int64_t origin) {
  return e.instance + " attempt " + std::to_string(e.attempt) + " fence " + std::to_string(e.fence) + " (" + e.reason +
         ") ran " + at(e.start, origin) + " .. " + at(e.last_effect, origin) + ", " + std::to_string(e.steps) +
         " steps, ended: " + e.ended;
}

/// Milliseconds since the epoch of "2026-11-30T12:00:00.000Z", or -1.
inline std::int64_t parse_iso_ms(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &y, &mo, &d, &h, &mi, &sec, &ms) != 7) return -1;
  using namespace std::chrono;
  const sys_days day{year{y} / month{static_cast<unsigned>(mo)} / static_cast<unsigned>(d)};
  return duration_cast<milliseconds>(day.time_since_epoch()).count() + ((h * 60 + mi) * 60 + sec) * 1000 + ms;
}

/// A `late` event for a burst names every slot it skipped in one sentence:
/// "N slot(s) not claimed, <first> to <last>: …" (scheduler/claims.hpp).
/// Returns [first, last] when the message has that form.
inline std::pair<std::int64_t, std::int64_t> burst_range(const std::string& message, std::int64_t slot) {
  const std::string mark = "slot(s) not claimed, ";
  const auto at = message.find(mark);
  if (at == std::string::npos) return {slot, slot};
  const std::string rest = message.substr(at + mark.size());
  const std::int64_t first = parse_iso_ms(rest.substr(0, 24));
  const auto to = rest.find(" to ");
  const std::int64_t last = to == 24 ? parse_iso_ms(rest.substr(28, 24)) : first;
  if (first < 0 || last < first) return {slot, slot};
  return {first, last};
}

/// Checks `lines`; slots are counted for jobs[] with due time (wall ms, the
/// driver's real clock) in [window_from, window_to].
inline report check(const std::vector<line>& lines, std::int64_t window_from, std::int64_t window_to,
                    std::int64_t origin) {
  report r;
  std::map<std::string, execution> by_token;
  std::vector<std::string> order;  // tokens, in start order of their lines
  std::set<std::pair<std::string, std::int64_t>> explained;
  std::vector<std::int64_t> store_steps;  // mono µs of each "store's clock was stepped ahead" notice
  static const std::set<std::string> explaining{"late", "skip", "superseded", "early", "store_error",
                                                "interrupted", "lost", "abandoned", "failed"};
  for (const line& l : lines) {
    if (l.type == "event") {
      ++r.events[l.kind];
      if (l.kind == "store_notice" && l.message.rfind("the store's clock was stepped ahead", 0) == 0)
        store_steps.push_back(l.mono);
      if (explaining.count(l.kind) != 0) explained.insert({l.job, l.slot});
      if (l.kind == "late") {  // a burst: every slot it names
        const auto [first, last] = burst_range(l.message, l.slot);
        for (const job_spec& j : jobs)
          if (l.job == j.name)
            for (std::int64_t s = first; s <= last && last - first < 3'600'000; s += j.every_ms)
              explained.insert({l.job, s});
      }
      continue;
    }
    if (l.type != "start" && l.type != "step" && l.type != "end") continue;
    auto [it, fresh] = by_token.try_emplace(l.token);
    execution& e = it->second;
    if (fresh) {
      order.push_back(l.token);
      e.instance = l.instance;
      e.job = l.job;
      e.token = l.token;
      e.slot = l.slot;
      e.attempt = l.attempt;
      e.fence = l.fence;
      e.start = e.last_effect = l.mono;
    }
    if (l.type == "start") {
      e.reason = l.kind;
      e.start = l.mono;
    } else if (l.type == "step") {
      ++e.steps;
      e.last_effect = std::max(e.last_effect, l.mono);
    } else {
      e.ended = l.kind + " at " + at(l.mono, origin) + " (" + l.message + ")";
    }
  }
  std::vector<execution> runs;
  for (const auto& t : order) runs.push_back(by_token[t]);
  std::sort(runs.begin(), runs.end(), [](const execution& a, const execution& b) { return a.start < b.start; });
  r.runs = runs.size();
  for (const execution& e : runs) {
    r.takeovers += e.reason == "takeover";
    r.catch_ups += e.reason == "catch_up";
    explained.insert({e.job, e.slot});
  }

  // A start within two leases of a notice that the store's clock was stepped
  // ahead: the stated exception of the header's checks 1 and 4.
  const auto near_store_step = [&](std::int64_t start) {
    return std::any_of(store_steps.begin(), store_steps.end(), [&](std::int64_t t) {
      return t >= start - 2 * lease_ms * 1000 && t <= start + 2 * lease_ms * 1000;
    });
  };
  // 1. Double runs: any two executions of one run whose intervals meet.
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const execution &a = runs[i], &b = runs[j];
      if (a.job != b.job || a.slot != b.slot) continue;
      if (b.start <= a.last_effect && a.start <= b.last_effect) {
        const std::int64_t overlap = std::min(a.last_effect, b.last_effect) - b.start;
        if (near_store_step(b.start) && overlap < lease_ms * 1000) {
          ++r.double_runs_after_store_step;
          continue;
        }
        ++r.double_runs;
        r.violations.push_back("DOUBLE RUN of job " + a.job + " slot " + std::to_string(a.slot) + ": " +
                               describe(a, origin) + "  OVERLAPS  " + describe(b, origin) + "; overlap " +
                               std::to_string(overlap / 1000) + " ms");
      }
    }
  // 2. Fences: strictly increasing per job, in start order.
  std::map<std::string, const execution*> last;
  for (const execution& e : runs) {
    const execution*& p = last[e.job];
    if (p != nullptr && e.fence <= p->fence) {
      ++r.fence_errors;
      r.violations.push_back("FENCE NOT INCREASING for job " + e.job + ": slot " + std::to_string(p->slot) + " " +
                             describe(*p, origin) + "  THEN  slot " + std::to_string(e.slot) + " " +
                             describe(e, origin));
    }
    p = &e;
  }
  // 4. Skip mode: one handler of a job at a time, whichever slots.
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const execution &a = runs[i], &b = runs[j];
      if (a.job != b.job || a.slot == b.slot) continue;  // the same run: check 1
      if (!(b.start <= a.last_effect && a.start <= b.last_effect)) continue;
      if (near_store_step(b.start)) {
        ++r.overlaps_after_store_step;
        continue;
      }
      ++r.job_overlaps;
      r.violations.push_back("JOB OVERLAP (skip mode) of job " + a.job + ": slot " + std::to_string(a.slot) + " " +
                             describe(a, origin) + "  OVERLAPS  slot " + std::to_string(b.slot) + " " +
                             describe(b, origin));
    }
  // 3. Every due slot in the window is run or explained.
  for (const job_spec& j : jobs) {
    const std::int64_t first = (window_from + j.every_ms - 1) / j.every_ms * j.every_ms;
    for (std::int64_t s = first; s <= window_to; s += j.every_ms) {
      ++r.slots_due;
      if (explained.count({j.name, s}) == 0) {
        ++r.unexplained;
        r.violations.push_back("UNEXPLAINED SLOT: job " + std::string(j.name) + " slot " + std::to_string(s) +
                               " was due in the window but no instance started it or said why not");
      }
    }
  }
  return r;
}

}  // namespace chaos
