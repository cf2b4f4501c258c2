// lease/rules.hpp — the store rules of doc/store-rules.md, once, as pure functions.
//
// A `run_table` is the whole stored state; each function is one atomic store
// operation applied at the store's clock `now`. memory_store is these
// functions behind a mutex; every other store is checked against them by the
// conformance suite (test/laws/store_conformance.hpp), answer by answer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "lease/run.hpp"
#include "lease/store/inspect.hpp"

namespace lease::rules {

/// The stored state of one job: its fence counter, its runs by slot, and
/// whether an operator paused it.
struct job_state {
  std::uint64_t fence = 0;  ///< the last won attempt's fence; survives pruning
  std::map<time_point, run_record> runs;
  /// Paused (pause() until resume()): no claim of the job wins; it is
  /// answered `paused` instead. Runs in progress are not touched.
  bool paused = false;
  /// An operator's pending trigger (trigger() until a manual claim answers
  /// it): the slot of the manual run it asks for, the store's clock when it
  /// was asked.
  std::optional<time_point> trigger;
  /// Which instances registered the job, by instance id (register_jobs()).
  std::map<std::string, job_registration, std::less<>> registrations;
  /// The job's own loss horizon (Redis's field 'q'): when a fence an
  /// instance remembered proved that this job's state was lost
  /// (prove_loss). Its claims obey it as every job obeys run_table::lost_at;
  /// it is lost with the job's state.
  std::optional<time_point> lost_at;
  friend bool operator==(const job_state&, const job_state&) = default;
};

/// The stored state of every job.
struct run_table {
  std::map<std::string, job_state, std::less<>> jobs;
  /// When the store noticed that it had lost its state (store clock), if it
  /// ever did: no attempt is won before lost_at + the claim's lease.
  std::optional<time_point> lost_at;
  /// Jobs purged (purge()), with the store's clock then: every fence the
  /// job had is at most that, so an instance that remembers one proves no
  /// loss (Redis's tombstone field 'x').
  std::map<std::string, time_point, std::less<>> purged;
  friend bool operator==(const run_table&, const run_table&) = default;
};

namespace detail {

inline run_record* find(run_table& t, const run_key& k) {
  auto j = t.jobs.find(k.job);
  if (j == t.jobs.end()) return nullptr;
  auto r = j->second.runs.find(k.slot);
  return r == j->second.runs.end() ? nullptr : &r->second;
}

inline bool has_newer(const job_state& js, time_point slot) {
  return js.runs.upper_bound(slot) != js.runs.end();
}

/// The loss horizon a claim of the job obeys: the later of the store's
/// (every job's) and the job's own.
inline std::optional<time_point> horizon(const run_table& t, const job_state* js) {
  if (js == nullptr || !js->lost_at) return t.lost_at;
  if (!t.lost_at) return js->lost_at;
  return std::max(*t.lost_at, *js->lost_at);
}
inline std::optional<time_point> horizon(const run_table& t, std::string_view job) {
  auto j = t.jobs.find(job);
  return horizon(t, j == t.jobs.end() ? nullptr : &j->second);
}

/// A fence as the store's clock in ms compares it (next_fence).
inline std::uint64_t as_fence(time_point at) {
  const auto ms = at.time_since_epoch().count();
  return ms > 0 ? static_cast<std::uint64_t>(ms) : 0;
}

inline bool is_current(const run_record& r, std::string_view token) {
  return r.status == run_status::running && !r.released && r.token == token;
}

/// The fence of a newly won attempt: above the last one, and at least the
/// store's clock in ms, so fences keep growing across a loss of all state.
inline std::uint64_t next_fence(std::uint64_t last, time_point now) {
  const auto ms = now.time_since_epoch().count();
  return std::max<std::uint64_t>(last + 1, ms > 0 ? static_cast<std::uint64_t>(ms) : 0);
}

}  // namespace detail

/// Deletes ended runs beyond the newest `history_size`, but never one that a
/// new claim could still ask for (store-now ≤ slot + retain + tolerance):
/// a late claim must find the state, not win a run that already happened.
/// Nor the run at the job's pending trigger slot, which answers the trigger.
inline void prune(job_state& js, std::uint32_t history_size, duration retain, time_point now) {
  std::uint32_t ended_kept = 0;
  for (auto it = js.runs.end(); it != js.runs.begin();) {
    --it;
    const run_record& r = it->second;
    if (r.status == run_status::running) continue;
    if (ended_kept < history_size) {
      ++ended_kept;
      continue;
    }
    if (now <= r.slot + retain + late_tolerance) continue;
    // The run at a pending trigger's slot answers that trigger (a manual
    // claim of it finds the run): deleting it would let the trigger start a
    // second run of the same slot.
    if (js.trigger == r.slot) continue;
    it = js.runs.erase(it);
  }
}

/// A claim (doc/store-rules.md, "Claim": cases 1–16, in that order, and
/// "Trigger now" for a manual claim). Returns the outcome, the record it
/// concerns, and `now`.
inline claim_result claim(run_table& t, const claim_request& req, time_point now) {
  claim_result res;
  res.store_now = now;
  res.record.job = req.run.job;
  res.record.slot = req.run.slot;
  const bool manual = req.reason == claim_reason::manual;
  // A manual claim answers the job's pending trigger for this very slot:
  // whatever its answer (below), a request it answered is no longer pending,
  // except where the claim is to be sent again (early, quarantined, and an
  // overlap in buffer_one mode: the run waits for the blocking one).
  auto answer_trigger = [&] {
    if (!manual) return;
    auto j = t.jobs.find(req.run.job);
    if (j != t.jobs.end() && j->second.trigger == req.run.slot) j->second.trigger.reset();
  };

  auto won = [&](job_state& js, run_record& r) {
    r.token = req.token;
    r.runner = req.runner;
    r.fence = js.fence = detail::next_fence(js.fence, now);
    r.status = run_status::running;
    r.lease_end = now + req.lease;
    r.released = false;
    res.outcome = claim_outcome::won;
    res.record = r;
  };

  // After a loss of state, a run this table forgot may still be running:
  // no attempt starts until a whole lease has passed since the loss was
  // noticed (its runner has self-aborted by then: no heartbeat of it can
  // have been acknowledged after the loss).
  // (The horizon is the job's: the store's loss, or a loss of this job's
  // state alone that a fence proved, prove_loss.)
  const std::optional<time_point> lost = detail::horizon(t, req.run.job);
  const bool quarantine = lost && now < *lost + req.lease;
  auto quarantined = [&] {
    res.outcome = claim_outcome::quarantined;
    res.record.lease_end = *lost + req.lease;
    return res;
  };

  if (run_record* existing = detail::find(t, req.run)) {
    // A trigger whose slot already has a run (a scheduled slot of that very
    // millisecond, or its own run): that run is its answer.
    answer_trigger();
    job_state& js = t.jobs.find(req.run.job)->second;
    run_record& r = *existing;
    if (r.status != run_status::running) {
      res.outcome = claim_outcome::finished;
    } else if (r.live(now)) {
      res.outcome = claim_outcome::running;
    } else if (detail::has_newer(js, r.slot)) {
      r.status = run_status::interrupted;  // a newer run started first
      res.outcome = claim_outcome::finished;
    } else if (r.attempt - r.handovers >= req.max_attempts) {
      r.status = run_status::interrupted;  // dead runners used up the attempts
      res.outcome = claim_outcome::finished;
    } else if (lost && r.slot <= *lost + early_tolerance) {
      // Won on the forgotten state, before the loss was noticed (only a
      // store that notices a loss beside its claims, as Redis does, has such
      // a run): its slot may have run before the loss, so it is never
      // taken over (case 14, for a run that has state).
      r.status = run_status::interrupted;
      res.outcome = claim_outcome::finished;
    } else if (quarantine) {
      return quarantined();
    } else if (js.paused) {
      res.outcome = claim_outcome::paused;  // the expired run stays as it is until a resume
      return res;
    } else {
      ++r.attempt;
      won(js, r);
      return res;
    }
    res.record = r;
    return res;
  }

  // No state for this run.
  if (req.reason == claim_reason::takeover) {
    res.outcome = claim_outcome::none;
    return res;
  }
  auto j = t.jobs.find(req.run.job);
  // A manual run exists only as the answer to a pending trigger: an
  // instance cannot make one up, and a trigger already answered is not run
  // twice (every other instance's claim of it is answered `none`).
  if (manual && (j == t.jobs.end() || j->second.trigger != req.run.slot)) {
    res.outcome = claim_outcome::none;
    return res;
  }
  // An operator's request waits for an instance however long it takes: it is
  // never late. It can be older than a run the schedule started meanwhile,
  // and is not superseded by it.
  if (!manual && now > req.deadline + late_tolerance) {
    res.outcome = claim_outcome::late;
    return res;
  }
  if (req.run.slot > now + early_tolerance) {
    res.outcome = claim_outcome::early;
    return res;
  }
  if (j != t.jobs.end()) {
    job_state& js = j->second;
    if (!manual && detail::has_newer(js, req.run.slot)) {
      res.outcome = claim_outcome::superseded;
      return res;
    }
    if (req.overlap == overlap_mode::skip || req.overlap == overlap_mode::buffer_one) {
      for (auto it = js.runs.rbegin(); it != js.runs.rend(); ++it) {
        if (it->second.live(now)) {
          res.outcome = claim_outcome::overlap;
          res.record = it->second;
          if (req.overlap == overlap_mode::skip) answer_trigger();
          return res;
        }
      }
    }
  }
  if (quarantine) return quarantined();
  // A slot that could have had state before the loss (claims are answered
  // early until store-now reaches slot − early_tolerance) may have run
  // already: it is never started as a new run. Skipped with an event, not
  // perhaps run twice. A trigger asked after the loss was noticed has its
  // slot past this horizon (trigger_slot); one still inside it was asked
  // before the loss was noticed (a store that notices beside its claims),
  // at a slot a forgotten scheduled run may share: it is answered, not run.
  if (lost && req.run.slot <= *lost + early_tolerance) {
    answer_trigger();
    res.outcome = claim_outcome::quarantined;
    res.record.lease_end = time_point::max();
    return res;
  }
  // Paused: only a claim that would win gets here; it changes nothing (but
  // answers a trigger: a paused job's trigger does not wait for the resume).
  if (j != t.jobs.end() && j->second.paused) {
    answer_trigger();
    res.outcome = claim_outcome::paused;
    return res;
  }
  answer_trigger();
  if (j == t.jobs.end()) j = t.jobs.emplace(req.run.job, job_state{}).first;
  job_state& js = j->second;
  // Every older running run is interrupted by the new one: expired ones
  // because a newer run started first, live ones only in replace mode
  // (allow leaves them running).
  // (A manual run may be older than runs of the schedule: an expired newer
  // one is interrupted too — else its takeover could win beside the manual
  // run in skip mode — but replace mode interrupts only older live ones.)
  for (auto& [slot, r] : js.runs) {
    if (r.status != run_status::running) continue;
    if (!r.live(now) || (req.overlap == overlap_mode::replace && slot < req.run.slot)) r.status = run_status::interrupted;
  }
  run_record& r = js.runs[req.run.slot];
  r.job = req.run.job;
  r.slot = req.run.slot;
  r.attempt = 1;
  r.handovers = 0;
  r.manual = manual;
  won(js, r);
  prune(js, req.history_size, req.retain, now);
  return res;
}

/// The store lost everything it held (a fault the simulation and the tests
/// inject; a real store detects it and applies the same rule): every run,
/// fence and pause is forgotten (an operator's pause is lost with the data
/// and must be set again), and the loss is remembered as noticed at `now`.
inline void lose_state(run_table& t, time_point now) {
  t.jobs.clear();
  t.purged.clear();
  t.lost_at = now;
}

/// A partial loss: the store comes back as it was at an earlier moment (a
/// backup restored; a failover to a replica that lacked the last writes),
/// noticed at `now`. Its runs, fences, pauses and triggers are the
/// backup's: a run may show as running that ran to its end since, a trigger
/// as pending that was answered. Cases 4a and 14 keep both from running
/// again; the quarantine keeps fences from repeating (the next fence is at
/// least the store's clock a lease after the notice).
inline void restore_state(run_table& t, run_table backup, time_point now) {
  t.jobs = std::move(backup.jobs);
  t.purged = std::move(backup.purged);
  t.lost_at = now;
}

/// The same rollback, not noticed: the backup's record of losses comes
/// back with it (a PostgreSQL database or a Redis dump restored whole: the
/// marker is the backup's too). Only a fence a handle remembers above a
/// restored counter proves it (prove_loss, then record_proof).
inline void roll_back(run_table& t, run_table backup) { t = std::move(backup); }

/// The two halves of lose_state, for a store that notices a loss later
/// than it happens (Redis notices a FLUSHALL when a call reads its marker
/// key): every run, fence and pause is forgotten, and nothing knows yet...
inline void forget_state(run_table& t) {
  t.jobs.clear();
  t.purged.clear();
}

/// ...until a call finds the evidence at `now`: from then on claims are
/// quarantined as after lose_state. A later loss moves the quarantine on.
inline void notice_loss(run_table& t, time_point now) {
  if (!t.lost_at || *t.lost_at < now) t.lost_at = now;
}

/// Evidence an instance brings: `known`, the highest fence of `job` its
/// handle has seen, above the job's stored fence counter. Fences never go
/// back (pruning keeps the counter), so the job's state was lost — all of
/// the store's, or this job's alone (a key evicted, a failover to a replica
/// that lacked the last writes, some tables restored), and nothing else
/// may have noticed. Unless the job was purged since: every fence it had is
/// at most the purge's clock. A proof moves the job's own horizon to `now`
/// (even a fence won before a recorded loss may stand for runs won after it
/// and lost since, which the caller missed: only `now` covers them) and
/// raises the counter back to `known`. Applied atomically with the claim
/// or refused heartbeat that carries it (Redis: inside the job's script).
/// Returns whether it proved a loss.
inline bool prove_loss(run_table& t, std::string_view job, std::uint64_t known, time_point now) {
  auto j = t.jobs.find(job);
  const std::uint64_t counter = j == t.jobs.end() ? 0 : j->second.fence;
  if (known <= counter) return false;
  if (auto p = t.purged.find(job); counter == 0 && p != t.purged.end() && known <= detail::as_fence(p->second))
    return false;  // purged, not lost
  if (j == t.jobs.end()) j = t.jobs.emplace(std::string(job), job_state{}).first;
  job_state& js = j->second;
  if (!js.lost_at || *js.lost_at < now) js.lost_at = now;
  js.fence = known;
  return true;
}

/// What one job's proof means for every job (Redis's marker script): a
/// fence is at least the store's clock in ms when it was won, so one at
/// most the recorded loss's was won before that loss was noticed, and that
/// loss explains it. Only a fence above it shows a loss that is news: every
/// job's horizon moves to `now` (notice_loss). Returns whether it moved.
inline bool record_proof(run_table& t, std::uint64_t fence, time_point now) {
  if (t.lost_at && fence <= detail::as_fence(*t.lost_at)) return false;
  notice_loss(t, now);
  return true;
}

/// A loss of one job's state alone, not noticed (a key evicted; a Redis
/// Cluster master failed over to a replica that lacked it): its runs,
/// fence, pause and trigger are forgotten. Only a fence an instance
/// remembers can prove it (prove_loss).
inline void forget_job(run_table& t, std::string_view job) {
  if (auto j = t.jobs.find(job); j != t.jobs.end()) t.jobs.erase(j);
  if (auto p = t.purged.find(job); p != t.purged.end()) t.purged.erase(p);
}

/// For a store that learns of a loss beside a claim rather than inside it
/// (Redis reads its marker in the claim's round trip, and the claim script
/// may have run on the forgotten state): the end of the quarantine that
/// turns this answer into `quarantined`, given a loss noticed at `lost_at`
/// that the claim did not know of — or nothing, if the answer stands.
/// It is claim()'s own rule, applied after the fact, to an answer that
/// starts a handler (starts_handler):
///  * a run of a slot inside the loss's horizon (cases 14 and 4a: it may
///    have run before the loss, whatever its attempt, manual too): never;
///    the caller ends it (finish as interrupted), so that no takeover
///    starts it later either;
///  * otherwise one applied within a lease of the loss: at the quarantine's
///    end; the caller releases it (a backup takes it over then).
/// A resent claim's `running` was applied one lease before its lease end.
/// A `paused` answer inside the quarantine is quarantined too (claim() puts
/// the quarantine before a pause) — but a manual claim's: that answer
/// answered the operator's trigger in the store, and held back, its resend
/// would find the trigger gone (`none`) and no event would name it (the
/// property tests found this once a proof of a loss of one job's state
/// moved the quarantine under another job's paused trigger).
[[nodiscard]] inline std::optional<time_point> quarantine_after_loss(const claim_request& req,
                                                                     const claim_result& res, time_point lost_at) {
  const time_point quarantine_end = lost_at + req.lease;
  if (res.outcome == claim_outcome::paused)
    return req.reason != claim_reason::manual && res.store_now < quarantine_end ? std::optional(quarantine_end)
                                                                               : std::nullopt;
  if (!starts_handler(req, res)) return std::nullopt;
  if (req.run.slot <= lost_at + early_tolerance) return time_point::max();
  const time_point applied_at =
      res.outcome == claim_outcome::running ? res.record.lease_end - req.lease : res.store_now;
  if (applied_at < quarantine_end) return quarantine_end;
  return std::nullopt;
}

/// The answer that replaces one quarantine_after_loss held back: the
/// request's key and the quarantine's end, as claim() answers `quarantined`.
[[nodiscard]] inline claim_result quarantined_answer(const claim_request& req, time_point quarantine_end,
                                                     time_point store_now) {
  claim_result q;
  q.outcome = claim_outcome::quarantined;
  q.record.job = req.run.job;
  q.record.slot = req.run.slot;
  q.record.lease_end = quarantine_end;
  q.store_now = store_now;
  return q;
}

/// Extends the lease to now + lease: only the current token of a running,
/// unreleased run.
inline bool heartbeat(run_table& t, const run_key& k, std::string_view token, duration lease,
                      time_point now) {
  run_record* r = detail::find(t, k);
  if (r == nullptr || !detail::is_current(*r, token)) return false;
  r->lease_end = now + lease;
  return true;
}

/// Records the end of the current attempt (success or failed): only the
/// current token of a running, unreleased run.
inline bool finish(run_table& t, const run_key& k, std::string_view token, run_status status,
                   time_point /*now*/) {
  if (status == run_status::running) return false;
  run_record* r = detail::find(t, k);
  if (r == nullptr || !detail::is_current(*r, token)) return false;
  r->status = status;
  return true;
}

/// Hands the run over (stop()): ends the lease now and counts a handover, so
/// the next attempt is not charged against max_attempts.
inline bool release(run_table& t, const run_key& k, std::string_view token, time_point now) {
  run_record* r = detail::find(t, k);
  if (r == nullptr || !detail::is_current(*r, token)) return false;
  r->lease_end = now;
  r->released = true;
  ++r->handovers;
  return true;
}

/// Pauses `job` (doc/store-rules.md, "Pause and resume"): from now on every
/// claim of it that would win is answered `paused` and changes nothing, on
/// every instance, until resume(). A job that never ran can be paused (its
/// state is created). Runs in progress continue: heartbeat, finish and
/// release are unaffected. Idempotent; returns whether the job was not
/// paused before (whether this call changed anything).
inline bool pause(run_table& t, std::string_view job, time_point /*now*/) {
  auto j = t.jobs.find(job);
  if (j == t.jobs.end()) j = t.jobs.emplace(std::string(job), job_state{}).first;
  if (j->second.paused) return false;
  j->second.paused = true;
  return true;
}

/// Lifts a pause: the next claim of `job` that can win wins. Slots whose
/// claims were answered `paused` meanwhile stay not run (a claim for one of
/// them now is late, superseded or a fresh claim within its deadline, by the
/// ordinary rules). Idempotent; returns whether the job was paused before.
/// Creates nothing.
inline bool resume(run_table& t, std::string_view job, time_point /*now*/) {
  auto j = t.jobs.find(job);
  if (j == t.jobs.end() || !j->second.paused) return false;
  j->second.paused = false;
  return true;
}

/// The slot of a trigger asked at `now`: `now`, unless that is within a
/// loss's horizon (at or before lost_at + early_tolerance), where a scheduled
/// run of that very millisecond may have been won before the loss and
/// forgotten with it; sharing its run key, the manual run would be a second
/// attempt 1 of it. It is then the first millisecond past the horizon (at
/// most early_tolerance + 1 ms after `now`: a manual claim at `now` itself
/// is answered early, and sent again a moment later).
inline time_point trigger_slot(const run_table& t, std::string_view job, time_point now) {
  const std::optional<time_point> lost = detail::horizon(t, job);
  return lost ? std::max(now, *lost + early_tolerance + duration{1}) : now;
}
/// The same, for a job that has no horizon of its own.
inline time_point trigger_slot(const run_table& t, time_point now) { return trigger_slot(t, std::string_view{}, now); }

/// An operator's "run it now" (doc/store-rules.md, "Trigger now"): asks for
/// one manual run of `job` at slot = `now` (trigger_slot: just past a loss's
/// horizon), unless one is pending already. Returns the pending request's
/// slot, the run key every instance then claims with claim_reason::manual;
/// exactly one such claim wins (the first one that could win answers the
/// request, see claim()). A job that never ran can be triggered (its state
/// is created).
inline time_point trigger(run_table& t, std::string_view job, time_point now) {
  auto j = t.jobs.find(job);
  if (j == t.jobs.end()) j = t.jobs.emplace(std::string(job), job_state{}).first;
  // A pending trigger inside a loss's horizon was asked before the loss was
  // noticed (a store that notices beside its claims): its slot may be that
  // of a forgotten scheduled run, so it moves past the horizon, as a
  // trigger asked now would be placed.
  auto& pending = j->second.trigger;
  const std::optional<time_point> lost = detail::horizon(t, &j->second);
  if (!pending || (lost && *pending <= *lost + early_tolerance)) pending = trigger_slot(t, job, now);
  return *pending;
}

/// The pending triggers among `jobs`, in the order asked (each job once;
/// a set, not a search of the answer: an operator may trigger every job).
inline std::vector<run_key> triggers(const run_table& t, std::span<const std::string> jobs) {
  std::vector<run_key> out;
  std::unordered_set<std::string_view> listed;
  for (const auto& name : jobs) {
    auto j = t.jobs.find(name);
    if (j == t.jobs.end() || !j->second.trigger || !listed.insert(name).second) continue;
    out.push_back({name, *j->second.trigger});
  }
  return out;
}

/// Pauses `job` and hands over every running, unreleased run of it, as its
/// runner's release() would but keeping its lease end (doc/store-rules.md,
/// "Stop"). Returns how many runs it handed over. The runner's next
/// heartbeat is refused and it stops its handler; until the lease ends the
/// run is live, so no attempt starts while that handler may still run. Then,
/// while the job is paused, no takeover wins it; after a resume a takeover
/// wins it as its next attempt.
inline std::size_t stop(run_table& t, std::string_view job, time_point now) {
  (void)pause(t, job, now);
  std::size_t stopped = 0;
  for (auto& [slot, r] : t.jobs.find(job)->second.runs) {
    if (r.status != run_status::running || r.released) continue;
    r.released = true;
    ++r.handovers;
    ++stopped;
  }
  return stopped;
}

/// Upserts each registration (doc/store-rules.md, "Registration and purge"):
/// its schedule and zone as given, last_seen = now. A job that never ran can
/// be registered (its state is created).
inline void register_jobs(run_table& t, std::span<const job_registration> regs, time_point now) {
  for (const auto& reg : regs) {
    auto j = t.jobs.find(reg.job);
    if (j == t.jobs.end()) j = t.jobs.emplace(reg.job, job_state{}).first;
    job_registration& r = j->second.registrations[reg.instance];
    r = reg;
    r.last_seen = now;
  }
}

/// Deletes every trace of `job` unless an instance registered it within
/// `unseen_for` (answer `registered`, with the newest registration), a run
/// of it is live (answer `running`, with the newest live run), or store-now
/// in ms is not yet past its fence (answer `too_soon`).
inline purge_result purge(run_table& t, std::string_view job, duration unseen_for, time_point now) {
  purge_result res;
  auto j = t.jobs.find(job);
  if (j == t.jobs.end()) return res;  // not_found
  const job_state& js = j->second;
  for (const auto& [id, reg] : js.registrations)
    if (now - reg.last_seen < unseen_for && (!res.instance || reg.last_seen > res.instance->last_seen)) res.instance = reg;
  if (res.instance) {
    res.outcome = purge_outcome::registered;
    return res;
  }
  for (auto it = js.runs.rbegin(); it != js.runs.rend(); ++it) {
    if (it->second.live(now)) {
      res.outcome = purge_outcome::running;
      res.run = it->second;
      return res;
    }
  }
  // Its fence goes with it: the next won attempt's fence is store-now in ms,
  // which must be above the last one.
  if (const auto ms = now.time_since_epoch().count(); ms <= 0 || static_cast<std::uint64_t>(ms) <= js.fence) {
    res.outcome = purge_outcome::too_soon;
    return res;
  }
  t.jobs.erase(j);
  t.purged.insert_or_assign(std::string(job), now);
  res.outcome = purge_outcome::purged;
  return res;
}

/// Whether `job` is paused.
inline bool paused(const run_table& t, std::string_view job) {
  auto j = t.jobs.find(job);
  return j != t.jobs.end() && j->second.paused;
}

/// The job's running runs, whatever their lease, oldest first.
inline std::vector<run_record> unfinished(const run_table& t, std::string_view job) {
  std::vector<run_record> out;
  auto j = t.jobs.find(job);
  if (j == t.jobs.end()) return out;
  for (const auto& [slot, r] : j->second.runs)
    if (r.status == run_status::running) out.push_back(r);
  return out;
}

/// One run's record, if it has state.
inline std::optional<run_record> get(const run_table& t, const run_key& k) {
  auto j = t.jobs.find(k.job);
  if (j == t.jobs.end()) return std::nullopt;
  auto r = j->second.runs.find(k.slot);
  if (r == j->second.runs.end()) return std::nullopt;
  return r->second;
}

/// Every job the table holds state for — a fence (an attempt was won), a
/// pause, a pending trigger, a run, or a registration — ordered by name (bytewise), each with its newest run.
/// A job whose only state was a pause that was lifted before it ever ran
/// holds nothing an operator could act on, and is not listed.
inline std::vector<stored_job> list_jobs(const run_table& t) {
  std::vector<stored_job> out;
  for (const auto& [name, js] : t.jobs) {
    if (js.fence == 0 && !js.paused && !js.trigger && js.runs.empty() && js.registrations.empty()) continue;
    stored_job j;
    j.name = name;
    j.fence = js.fence;
    j.paused = js.paused;
    j.trigger = js.trigger;
    for (const auto& [id, reg] : js.registrations) j.instances.push_back(reg);
    if (!js.runs.empty()) j.last_run = js.runs.rbegin()->second;
    out.push_back(std::move(j));
  }
  return out;
}

/// The job's runs with state, newest slot first, at most `limit` of them.
inline std::vector<run_record> list_runs(const run_table& t, std::string_view job, std::size_t limit) {
  std::vector<run_record> out;
  auto j = t.jobs.find(job);
  if (j == t.jobs.end()) return out;
  for (auto it = j->second.runs.rbegin(); it != j->second.runs.rend() && out.size() < limit; ++it)
    out.push_back(it->second);
  return out;
}

}  // namespace lease::rules
