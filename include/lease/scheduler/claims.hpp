// lease/scheduler/claims.hpp — slots and claims: each slot of a job is claimed
// once, at slot + jitter; every answer of the store lands in on_claim().
//
// The rules carried out here, each next to its test (test/scheduler/):
// * latest only, never a queue: a loop that woke up late claims only the
//   latest due slot (one `late` event names the slots it skipped), and a
//   pending claim for an older slot is dropped once a newer slot of the job
//   is due (scenarios "latest only");
// * the same token until answered: a claim whose answer was lost is resent
//   with its token, so a claim the store applied anyway is recognised as
//   ours and run, never left as a phantom attempt;
// * never early: a store that answers `early` (its clock has not reached the
//   slot) gets the same claim again when its clock has;
// * a store that lost its state answers `quarantined` until one lease after
//   it noticed: claims wait for that, or are dropped at their deadline;
// * a job paused in the store (PauseStore) answers `paused` to every claim
//   that would win: the slot is not started, one `paused` event says so, and
//   the schedule goes on (the next slot is claimed, and answered `paused`
//   again until a resume). A takeover answered `paused` leaves the expired
//   run to the watch: after a resume, the next check takes it over.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lease/scheduler.hpp"
#include "lease/scheduler/detail/slot_span.hpp"

namespace lease {

/// A slot's claim is sent at slot + a random jitter in [0, claim_jitter],
/// placed by where this instance stands with the job: the winner of its
/// latest slot claims in the first quarter of the window, an instance that
/// saw another win it in the second half, an instance that knows nothing
/// (just started, or the job is new) anywhere in it. So with everyone alive
/// the last winner claims first and wins again, and with short handlers the
/// others hear its finish before their jitter runs out and send nothing
/// (announced_ended): one claim per slot instead of one per instance, and
/// the lag of the first quarter. If the winner died or fell behind, the
/// others still claim within claim_jitter and one of them becomes the
/// winner. Timing only: who wins is still the store's answer.
///
/// The slot's timer fires in the first quarter (the winner's claim goes
/// then); the others' claims wait on from there. Where this instance stands
/// is read when the timer fires, not when it was armed a whole period
/// before: by then the previous slot has been answered.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::arm_slot(std::uint32_t j, time_point slot) {
  jobs_[j].next_slot = slot;
  slot_timers_.push({slot + jitter(opts_.claim_jitter / 4), 0, detail::timer_kind::slot, j, slot, jobs_[j].gen});
}

/// When, after its slot, this instance sends the claim of job `j`'s slot
/// (arm_slot); zero for the last winner, whose timer's own draw is its jitter.
template <Store S, Clock C, Executor E, OverlapPolicy P>
duration scheduler<S, C, E, P>::claim_delay(std::uint32_t j) {
  const duration window = opts_.claim_jitter;
  switch (jobs_[j].won_last) {
    case job::last_win::this_instance: return duration::zero();
    case job::last_win::another: return window / 2 + jitter(window - window / 2);
    case job::last_win::unknown: break;
  }
  return jitter(window);
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_slot(std::uint32_t j, time_point slot, std::uint64_t gen) {
  job& jb = jobs_[j];
  if (slot != jb.next_slot || gen != jb.gen || jb.removed) return;  // re-armed by an add, or removed
  // A loop that fell behind (frozen process, long store call, a wall clock
  // stepped forward) claims only the latest due slot: never a queue.
  const time_point now = wall();
  const time_point latest = jb.schedule.latest(now);
  if (latest > slot) {
    const auto span = detail::slot_span::of(jb.schedule, slot, latest);
    emit(event_kind::late, {jb.name, slot}, 0, 0,
         span.not_claimed() + ": this instance's loop did not run from " + detail::fmt(slot) + " to " +
             detail::fmt(now) + " (frozen, overloaded, or its wall clock stepped forward); only the latest slot, " +
             detail::fmt(latest) + ", is claimed",
         {.skipped_slots = span.count});
    slot = latest;
  }
  jb.fired = slot;
  arm_slot(j, jb.schedule.next(slot));
  // The delay counts from the slot: the timer's own jitter, or a loop that
  // comes late, has waited part of it. (Never less than nothing: a wall
  // clock stepped back since the timer fired must not push the claim past
  // claim_jitter.)
  const duration delay = claim_delay(j), waited = std::max(now - slot, duration::zero());
  new_claim(j, slot, claim_reason::scheduled, delay > waited ? delay - waited : duration::zero());
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::new_claim(std::uint32_t j, time_point slot, claim_reason reason, duration delay) {
  // A manual run is outside the schedule: it neither drops nor is dropped by
  // the claims of slots (triggers.hpp).
  if (reason != claim_reason::manual) drop_older_claims(j, slot);
  const std::uint64_t id = next_id_++;
  pending_.add(id, pending_claim{j, make_request(j, {jobs_[j].name, slot}, reason), 0, std::nullopt});
  if (delay > duration::zero())
    push_after(delay, {{}, 0, detail::timer_kind::claim, j, slot, id});
  else
    send_pending(id);
}

/// Latest only: a claim still pending (being retried, or waiting out an
/// `early` or a quarantine) for an older slot of the job is dropped once a
/// newer one is claimed — it would otherwise start a stale slot first, and
/// the newer ones would then be refused as superseded or overlaps.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::drop_older_claims(std::uint32_t j, time_point slot) {
  if (!pending_.has_job(j)) return;  // the common case, without a scan of every pending claim
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.job == j && it->second.req.run.slot < slot && it->second.req.reason != claim_reason::manual) {
      emit(event_kind::late, it->second.req.run, 0, 0,
           std::string(to_string(it->second.req.reason)) + " claim dropped: it was still pending (" +
               it->second.state() + ") when a newer slot, " + detail::fmt(slot) + ", became due; only the latest slot of a job is claimed");
      it = pending_.erase(it);
      wake_manual(j);
    } else {
      ++it;
    }
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
claim_request scheduler<S, C, E, P>::make_request(std::uint32_t j, run_key run, claim_reason reason) {
  const job_settings& cfg = jobs_[j].cfg;
  claim_request req;
  req.run = std::move(run);
  req.runner = opts_.instance;
  req.token = make_token(rng_);
  req.reason = reason;
  req.lease = cfg.lease;
  req.max_attempts = cfg.max_attempts;
  req.deadline = req.run.slot + (reason == claim_reason::catch_up ? cfg.catch_up : cfg.max_late);
  req.overlap = cfg.overlap;
  req.history_size = cfg.history_size;
  req.retain = std::max(cfg.max_late, cfg.catch_up);
  return req;
}

/// Sends pending claim `id`; on a store error retries it (same token, so a
/// claim that did apply is recognised) until its deadline has passed. A
/// BatchClaimStore gets it with the other claims due in this loop turn.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::send_pending(std::uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  pending_claim& pc = it->second;
  const job& jb = jobs_[pc.job];
  if (pc.req.reason == claim_reason::manual) {
    // A slot at or before the trigger is due here and its timer has not
    // fired yet (its claim jitter): its claim is made now, and the trigger
    // waits for that claim alone, whose timers and retries are all on
    // monotonic time. Parked until the slot's timer, on wall time, it waited
    // as long again as the wall clock was stepped back (a review found a
    // trigger held 10 min by a 10 min step).
    if (jb.next_slot <= pc.req.run.slot && jb.next_slot <= wall()) on_slot(pc.job, jb.next_slot, jb.gen);
    if (defer_manual(pc)) {  // a slot before the trigger is being claimed here: it goes first
      // Parked, with no timer: woken when that claim is answered or dropped
      // (a review found a 10 ms timer re-armed for as long as the slot's
      // claim waited — its jitter, a retry, a quarantine: up to 100 loop
      // turns a second per trigger, each scanning every pending claim).
      jobs_[pc.job].parked_manual.push_back(id);
      return;
    }
  } else if (jb.next_slot > pc.req.run.slot && jb.next_slot <= wall()) {
    // A newer slot is due (its timer has not fired yet: jitter): it goes first.
    drop_older_claims(pc.job, jb.next_slot);
    return;
  }
  if (!pc.first_sent && announced_ended(pc.job, pc.req)) {
    const std::uint32_t j = pc.job;
    const claim_reason reason = pc.req.reason;
    pending_.erase(it);
    claim_left(j, reason);
    return;
  }
  // Counted from now even when the batch leaves a little later: the lease
  // can only have started after this, so a self-abort counted from here is
  // early, never late.
  if (!pc.first_sent) pc.first_sent = steady();
  // A manual claim goes alone: a store that resolves a lost reply itself
  // leaves a manual claim's outcome unknown (its lost copy may have answered
  // the trigger with a refusal: doc/protocol.md §14), which would fail a
  // whole batch and delay the claims beside it. Triggers are rare.
  if constexpr (BatchClaimStore<S>) {
    if (pc.req.reason != claim_reason::manual) {
      claim_batch_.push_back({false, id, pc.job, {}, {}});
      if (claim_batch_.size() >= max_claim_batch) flush_turn();
      return;
    }
  }
  claim_answered(id, try_claim(pc.req));
}

/// An EndPushStore announced the finish of (job, slot): remembered, so that
/// this instance does not claim that slot if it has not yet (below).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::note_announced_end(std::string_view job, time_point slot) {
  auto it = job_index_.find(job);
  if (it == job_index_.end()) return;
  std::optional<time_point>& seen = jobs_[it->second].end_announced;
  if (!seen || *seen < slot) seen = slot;
}

/// A claim not sent yet (waiting out its jitter) of a run whose finish the
/// store has announced would only be answered `finished`: it is not sent,
/// and its skip event says so as that answer's would. With N instances, the
/// winner's finish usually arrives within the others' claim jitter when the
/// handler is short, so this saves most of the N − 1 losing claims of a slot
/// (benchmark/RESULTS.md, the sweep). Safe: a store announces a finish only
/// once the run has ended, and an ended run never starts again. Only the
/// announced slot is skipped; a manual run is its own.
template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::announced_ended(std::uint32_t j, const claim_request& req) {
  const std::optional<time_point>& seen = jobs_[j].end_announced;
  if (req.reason == claim_reason::manual || !seen || *seen != req.run.slot) return false;
  jobs_[j].won_last = job::last_win::another;
  emit(event_kind::skip, req.run, 0, 0,
       std::string(to_string(req.reason)) +
           " claim not sent: the store announced that this run already ended (another instance ran it, or a manual "
           "run of the same instant did)");
  return true;
}

/// Sends the claims gathered in this loop turn in one round trip; each
/// answer goes where a single claim's would. A failed batch is a failed
/// send of each claim: each is resent later with its own token. A batch
/// answered in part (partial_batch_error) is both: the answered claims are
/// acted on, the others resent.
///
/// The batch's two arrays (up to max_claim_batch elements, tens of kB each)
/// are kept for the next turn instead of freed: freeing a block that large
/// makes glibc consolidate its fast bins (malloc_consolidate was 8.8 % of
/// the loop thread's time under perf at 6,000 claims a second; 7.7 % with
/// the arrays kept, the rest coming from other large frees). An answer may
/// flush a nested batch meanwhile (a claim it makes fills one): that one
/// finds the spares taken and uses fresh arrays.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::flush_claims() {
  if constexpr (BatchClaimStore<S>) {
    std::vector<batched_claim> items;
    items.swap(claim_batch_);
    std::vector<claim_request> batch = std::exchange(claim_requests_spare_, {});
    struct recycle {  // every way out of this function hands the arrays back, emptied
      scheduler& s;
      std::vector<batched_claim>& items;
      std::vector<claim_request>& batch;
      ~recycle() {
        items.clear();
        batch.clear();
        if (s.claim_batch_.empty() && s.claim_batch_.capacity() < items.capacity()) s.claim_batch_.swap(items);
        if (s.claim_requests_spare_.capacity() < batch.capacity()) s.claim_requests_spare_.swap(batch);
      }
    } hand_back{*this, items, batch};
    std::erase_if(items, [&](const batched_claim& b) { return !b.backup && !pending_.contains(b.pending_id); });
    if (items.empty()) return;
    // One request per item: a backup check's own, or a pending claim's as it
    // is now (copied: the pending claim keeps it for a resend).
    batch.reserve(items.size());
    for (batched_claim& b : items) batch.push_back(b.backup ? std::move(b.req) : pending_.at(b.pending_id).req);
    auto answer = [&](std::size_t i, std::optional<claim_result> res) {
      if (items[i].backup)
        backup_answered(items[i].job, batch[i], items[i].sent, std::move(res));
      else
        claim_answered(items[i].pending_id, std::move(res));
    };
    if (items.size() == 1) {  // one claim: the single call, sent again at once if its outcome is unknown
      answer(0, try_claim(batch[0]));
      return;
    }
    std::vector<claim_result> answers;
    const steady_point sent = steady();
    auto failed = [&](const store_error& e) {
      store_failed("batch of " + std::to_string(batch.size()) + " claims", batch.front().run, e);
      for (std::size_t i = 0; i < items.size(); ++i) answer(i, std::nullopt);  // each resent later with its own token
    };
    try {
      answers = store_.claim_many(std::span<const claim_request>(batch));
    } catch (const partial_batch_error<claim_result>& e) {
      // Some claims answered (on a Redis Cluster, those of the masters that
      // are up): each acted on now, and only the others resent. (Answers
      // that do not match the batch are a store bug: all resent.) Failing
      // the whole batch resent every claim, and while one master stayed
      // down every resend failed again with it: the other masters' slots
      // were dropped at their deadlines.
      if (e.answers().size() != items.size()) {
        failed(e);
        return;
      }
      std::size_t first_failed = 0, first_answered = items.size();
      for (std::size_t i = items.size(); i-- > 0;) (e.answers()[i] ? first_answered : first_failed) = i;
      store_failed("batch of " + std::to_string(batch.size()) + " claims (answered in part)", batch[first_failed].run, e);
      if (first_answered < items.size())
        observe_store_clock(sent, steady(), batch[first_answered].run, e.answers()[first_answered]->store_now);
      for (std::size_t i = 0; i < items.size(); ++i) answer(i, e.answers()[i]);
      return;
    } catch (const store_error& e) {
      failed(e);
      return;
    } catch (const std::exception& e) {  // not a store_error (law L6): still no claim is dropped
      failed(store_error(make_error_code(errc::outcome_unknown),
                         std::string("claim_many threw something other than a store_error: ") + e.what()));
      return;
    }
    if (answers.size() != items.size()) {
      failed(store_error(make_error_code(errc::outcome_unknown),
                         "claim_many answered " + std::to_string(answers.size()) + " of " +
                             std::to_string(items.size()) + " claims"));
      return;
    }
    store_answered();
    observe_store_clock(sent, steady(), batch.front().run, answers.front().store_now);
    for (std::size_t i = 0; i < items.size(); ++i) answer(i, std::move(answers[i]));
  }
}

/// The answer to pending claim `id` (nullopt: none came): acted on, or the
/// claim is resent after a backoff — or dropped once it would be too late.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::claim_answered(std::uint64_t id, std::optional<claim_result> res) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  pending_claim& pc = it->second;
  if (!res) {
    const duration wait = backoff(pc.tries++, jobs_[pc.job].cfg.heartbeat);
    // A manual claim has no deadline (an operator's request waits): it is
    // retried until the store answers, or the job is removed, or stop().
    if (pc.req.reason != claim_reason::manual && store_clock_estimate() + wait > pc.req.deadline + late_tolerance) {
      emit(event_kind::late, pc.req.run, 0, 0,
           std::string(to_string(pc.req.reason)) + " claim dropped: the store did not answer before the deadline " +
               detail::fmt(pc.req.deadline) + " (+10 s); the run is not started by this instance");
      const std::uint32_t j = pc.job;
      const claim_reason reason = pc.req.reason;
      pending_.erase(it);
      claim_left(j, reason);
      return;
    }
    push_after(wait, {{}, 0, detail::timer_kind::claim, pc.job, pc.req.run.slot, id});
    return;
  }
  const pending_claim done = std::move(pc);
  pending_.erase(it);
  claim_left(done.job, done.req.reason);
  if (done.req.reason == claim_reason::manual && done.tries > 0 && res->outcome == claim_outcome::none) {
    // The trigger is no longer pending, and an earlier send of this very
    // claim may be what answered it, its reply lost: if that answer was a
    // refusal (overlap, paused), no other instance heard it. Said here.
    emit(event_kind::skip, done.req.run, 0, 0,
         "manual run of job " + done.req.run.job + " not run by this instance: its claim was resent after a store "
         "error and the trigger of " + detail::fmt(done.req.run.slot) + " was answered meanwhile — by another "
         "instance, or by the earlier send whose reply was lost (then it was refused: a live earlier run in skip "
         "mode, or the job paused); the job's history (leasectl runs) shows whether it ran",
         answer_facts());
    return;
  }
  on_claim(done.job, done.req, *res, *done.first_sent);
}

/// The store's clock in a claim answer, against this instance's monotonic
/// clock: a step of it is said (detail/store_clock_watch.hpp). A store that
/// leaves store_now unset (the epoch) is not watched.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::observe_store_clock(steady_point sent, steady_point arrived, const run_key& run,
                                                time_point store_now) {
  if (store_now == time_point{}) return;
  store_seen_ = store_seen{store_now, arrived, wall()};
  const std::optional<duration> step = store_clock_.observe(sent, arrived, store_now);
  if (!step) return;
  // Two answers in a row showed it (store_clock_watch.hpp).
  const std::string seen =
      std::string("in two claim answers in a row it had moved that much ") +
      (*step > duration::zero() ? "more" : "less") +
      " than this instance's monotonic clock allows (NTP or an operator stepped it; on SQLite it is this host's wall "
      "clock; on a Redis Cluster, two masters' clocks may also differ by that much)";
  if (*step > duration::zero())
    emit(event_kind::store_notice, run, 0, 0,
         "the store's clock was stepped ahead by at least " + detail::fmt(*step) + ": " + seen +
             ". Leases are on that clock, so every lease in the store ended that much early: if the step was "
             "longer than lease − 2 × heartbeat, a run whose runner was alive may have been taken over, or ended by "
             "its next slot, before its runner was told (within one heartbeat), and two handlers ran at once "
             "meanwhile. Let the clock slew, not step (chrony: makestep at boot only), or use leases longer than "
             "any step you allow");
  else
    emit(event_kind::store_notice, run, 0, 0,
         "the store's clock was stepped back by at least " + detail::fmt(-*step) + ": " + seen +
             ". Leases in the store last that much longer, so a dead runner's run is taken over that much later, "
             "and slots wait for the store's clock to reach them again (early)");
}

/// One claim call. A store_error is reported; an outcome_unknown is resolved
/// at once by sending the same request again, same token (never a new one):
/// the rules recognise the token, so a first copy that was applied is
/// answered `running` with this claim's token, which on_claim takes as the
/// win it was. Sent again rather than read back with get(): the answer then
/// passes the store's own claim checks, which a read cannot (a Redis store
/// that lost its state before the first copy won, noticed only on the
/// reconnect, answers quarantined and hands the run back).
/// Returns nullopt when the outcome is still not known: the caller resends
/// the same request (same token) later.
template <Store S, Clock C, Executor E, OverlapPolicy P>
std::optional<claim_result> scheduler<S, C, E, P>::try_claim(const claim_request& req) {
  const steady_point sent = steady();
  auto send = [&] {
    claim_result r = store_.claim(req);
    round_trip_ = steady() - sent;
    store_answered();
    observe_store_clock(sent, sent + *round_trip_, req.run, r.store_now);
    return r;
  };
  try {
    return send();
  } catch (const store_error& e) {
    // Not a manual claim: its first copy may have answered the trigger
    // (a refusal clears it), and claim_answered explains a `none` after a
    // resend only when the resend came after a backoff (tries > 0).
    if (e.code() != errc::outcome_unknown || req.reason == claim_reason::manual) {
      store_failed(std::string(to_string(req.reason)) + " claim", req.run, e);
      return std::nullopt;
    }
    emit(event_kind::store_error, req.run, 0, 0,
         std::string("claim outcome unknown (") + e.what() +
             "); sending it again at once with the same token, which the store recognises if the first copy "
             "was applied",
         {.runner = opts_.instance});
  }
  try {
    return send();  // the same request: the same token
  } catch (const store_error& e) {
    store_failed(std::string(to_string(req.reason)) + " claim", req.run, e);
    return std::nullopt;
  }
}

/// Who won the slot a scheduled or catch-up claim asked for, as far as its
/// answer says (claim_delay places the next slot's claim by it). Manual runs
/// and takeovers are outside the schedule's rhythm and say nothing of it.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::note_winner(std::uint32_t j, const claim_request& req, const claim_result& res,
                                        bool ours) {
  if (req.reason != claim_reason::scheduled && req.reason != claim_reason::catch_up) return;
  const bool others = res.record.runner != req.runner;
  switch (res.outcome) {
    case claim_outcome::won: jobs_[j].won_last = job::last_win::this_instance; break;
    case claim_outcome::running:
    case claim_outcome::finished:
      if (ours) jobs_[j].won_last = job::last_win::this_instance;
      else if (others && res.record.slot == req.run.slot) jobs_[j].won_last = job::last_win::another;
      break;
    default: break;
  }
}

/// Every claim answer lands here. `sent`: when the request's token was first
/// sent (the earliest its lease can have started).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_claim(std::uint32_t j, const claim_request& req, const claim_result& res,
                                     steady_point sent) {
  const run_record& rec = res.record;
  const bool ours = rec.token == req.token && rec.runner == req.runner;
  note_winner(j, req, res, ours);
  // A win, or `running` with our own token: a resent claim whose first copy
  // won. Not if an operator's stop released it meanwhile (its lease end kept).
  if (starts_handler(req, res)) {
    // A takeover's latency: from the lease end this backup last read to the store's answer.
    std::optional<duration> latency;
    if (auto w = watches_.find(rec.key()); req.reason == claim_reason::takeover &&
                                           res.outcome == claim_outcome::won && w != watches_.end() &&
                                           w->second.lease_end_seen && *w->second.lease_end_seen <= res.store_now)
      latency = res.store_now - *w->second.lease_end_seen;
    begin_attempt(j, req, rec, sent, latency);
    return;
  }
  const std::string what = std::string(to_string(req.reason)) + " claim: ";
  if (ours && res.outcome == claim_outcome::running) {  // so released: nothing runs, nothing to back up
    emit(event_kind::skip, rec.key(), rec.attempt, rec.fence,
         what + "this instance's attempt " + std::to_string(rec.attempt) +
             " was won by a send whose reply was lost, and released before this instance could start it (an "
             "operator's stop, or too few replicas had it); its handler is not started",
         answer_facts());
    return;
  }
  const auto retired = retired_tokens_.find(req.run);
  const bool stray = retired != retired_tokens_.end() && res.outcome == claim_outcome::running &&
                     rec.runner == req.runner && rec.token == retired->second;
  if (retired != retired_tokens_.end() && req.reason != claim_reason::takeover) retired_tokens_.erase(retired);
  if (stray) {
    // A delayed copy of this instance's earlier send won; no handler runs
    // it. Released, it is taken over at once (a hand-over: no attempt used).
    bool released = false;
    try {
      released = store_.release(rec.key(), rec.token);
      store_answered();
    } catch (const store_error& e) {
      store_failed("release of a stray win", rec.key(), e);
    }
    emit(event_kind::skip, rec.key(), rec.attempt, rec.fence,
         what + "attempt " + std::to_string(rec.attempt) + " was won by an earlier send of this instance's claim "
             "whose reply was lost, after it had been claimed again with a new token; nothing runs it here, so " +
             (released ? "it was released and is taken over at once"
                       : "it is taken over when its lease runs out (its release failed)"),
         answer_facts());
    watch_run(j, rec.key(), false);
    return;
  }
  switch (res.outcome) {
    case claim_outcome::won: break;
    case claim_outcome::running: {
      // An attempt of an earlier process under this instance's id, which
      // start() found and named in its own event (catch_up.hpp), is not said
      // again as another instance's (a restart at the very millisecond of
      // the slot it had won claims that slot too). An attempt under this
      // id that start() did not name is said: a takeover claim start() sent
      // for a dead run, applied though its answer was lost, or won and
      // given back as not replicated — this claim's slot gets its word.
      const bool told = rec.runner == opts_.instance && [&] {
        const auto w = watches_.find(rec.key());
        return w != watches_.end() && w->second.told_on_start == rec.attempt;
      }();
      if (req.reason != claim_reason::takeover && !own_attempt(rec.key()) && !told)
        emit(event_kind::backup, rec.key(), rec.attempt, rec.fence,
             what + "attempt " + std::to_string(rec.attempt) +
                 (rec.runner == opts_.instance
                      ? " holds a live lease under this instance's id (" + rec.runner +
                            ") but runs nowhere in this process; this instance is its backup and takes it over "
                            "once the lease runs out"
                      : " runs on " + rec.runner + " with a live lease; this instance is its backup"),
             answer_facts(rec.runner));
      watch_run(j, rec.key(), false, lease_seen{rec.lease_end, res.store_now});
      break;
    }
    case claim_outcome::overlap:
      if (req.reason == claim_reason::manual) {
        manual_overlap(j, req, res);
        break;
      }
      emit(event_kind::skip, req.run, 0, 0,
           what + "skipped as an overlap: the earlier run " + detail::fmt(rec.slot) + " (attempt " +
               std::to_string(rec.attempt) + " on " + rec.runner + ") still holds a live lease" +
               (jobs_[j].cfg.overlap == overlap_mode::buffer_one ? "; buffered until it ends" : ""),
           answer_facts());
      watch_run(j, rec.key(), false, lease_seen{rec.lease_end, res.store_now});
      watch_run(j, req.run, false);  // if the earlier run ends and someone claims this one
      if (jobs_[j].cfg.overlap == overlap_mode::buffer_one && (!jobs_[j].buffered || *jobs_[j].buffered < req.run.slot))
        jobs_[j].buffered = req.run.slot;
      break;
    case claim_outcome::late:
      emit(event_kind::late, req.run, 0, 0,
           what + "refused as late: it reached the store at " + detail::fmt(res.store_now) + ", after the deadline " +
               detail::fmt(req.deadline) + " + 10 s (store clock)",
           answer_facts());
      break;
    case claim_outcome::superseded:
      emit(event_kind::superseded, req.run, 0, 0,
           what + "a newer run of the job already started; runs start in slot order, so this one never will",
           answer_facts());
      break;
    case claim_outcome::finished:
      unwatch(rec.key());
      if (rec.status == run_status::interrupted)
        emit(event_kind::interrupted, rec.key(), rec.attempt, rec.fence, what + interrupted_why(j, rec),
             answer_facts(rec.runner));
      else if (req.reason != claim_reason::takeover)
        emit(event_kind::skip, req.run, rec.attempt, rec.fence,
             what + "the run already ended (" + std::string(to_string(rec.status)) + " on " + rec.runner + ")",
             answer_facts(rec.runner));
      release_buffer(j);
      break;
    case claim_outcome::none:
      // A manual claim: another instance answered the trigger first (it runs
      // it, or said why not). A takeover: the run is gone (the store lost
      // its state); a manual run waiting for it need wait no more.
      unwatch(req.run);
      if (req.reason == claim_reason::takeover) release_manual(j);
      break;
    case claim_outcome::early:
    case claim_outcome::quarantined:
      not_yet(j, req, res);
      break;
    case claim_outcome::paused:
      if (req.reason == claim_reason::takeover) {
        // The watch goes on (its next check is set); told once per watch,
        // not at every check of a pause that may last days.
        auto w = watches_.find(req.run);
        if (w == watches_.end() || w->second.paused_told) break;
        w->second.paused_told = true;
      }
      if (req.reason == claim_reason::manual) {
        emit(event_kind::paused, req.run, 0, 0,
             "manual run of job " + req.run.job + " not run: the job is paused in the store, so the trigger of " +
                 detail::fmt(req.run.slot) + " is dropped (a trigger does not wait for a resume; trigger again "
                 "after resuming the job)",
             answer_facts());
        break;
      }
      emit(event_kind::paused, req.run, 0, 0,
           what + "job " + req.run.job + " is paused in the store; " +
               (req.reason == claim_reason::takeover
                    // The store's `paused` answer does not say which: both read the same.
                    ? "the run " + detail::fmt(req.run.slot) + ", whose runner stopped renewing its lease or was "
                      "stopped by an operator (leasectl stop), is not taken over until a resume (`leasectl "
                      "resume " + req.run.job + "`)"
                    : "slot " + detail::fmt(req.run.slot) + " not started") +
               "; the job runs again from the first slot due after a resume",
           answer_facts());
      break;
  }
}

/// `early` or `quarantined`: nothing was created; the same claim goes again
/// when the store's clock says it may win (a takeover: the backup's next
/// check does).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::not_yet(std::uint32_t j, const claim_request& req, const claim_result& res) {
  const bool early = res.outcome == claim_outcome::early;
  const time_point from = early ? req.run.slot : res.record.lease_end;  // store clock
  const duration wait = std::max(from - res.store_now, duration{1}) + jitter(opts_.claim_jitter);
  if (early && req.reason == claim_reason::manual) {
    // The store chose the slot (rules::trigger_slot), so no wall clock is to blame.
    emit(event_kind::early, req.run, 0, 0,
         "manual claim refused as early: the store's clock reads " + detail::fmt(res.store_now) +
             ", before the trigger's slot (a trigger asked just after the store lost its state is set past the "
             "slots that may have run before the loss, or the store's clock stepped back since); claimed again in " +
             detail::fmt(wait),
         answer_facts());
  } else if (early) {
    emit(event_kind::early, req.run, 0, 0,
         std::string(to_string(req.reason)) + " claim refused as early: the store's clock reads " +
             detail::fmt(res.store_now) + ", before the slot; this instance's wall clock runs ahead of the store's by "
             "about " + detail::fmt(wall() - res.store_now) + " (check its time sync); claimed again in " +
             detail::fmt(wait),
         answer_facts());
  } else if (res.record.lease_end == time_point::max() && req.reason == claim_reason::manual) {
    emit(event_kind::late, req.run, 0, 0,
         "manual run of job " + req.run.job + " not run: the trigger of " + detail::fmt(req.run.slot) +
             " was asked before the store noticed that it lost its state (or was restored with a backup that "
             "still held it), so its slot may be that of a run which ran before the loss; the trigger is dropped "
             "rather than perhaps run that slot twice (trigger again: a new one is placed past the loss)",
         answer_facts());
    return;
  } else if (res.record.lease_end == time_point::max()) {
    emit(event_kind::late, req.run, 0, 0,
         std::string(to_string(req.reason)) + " claim refused: the store lost its state after this slot could "
             "have started, so whether it ran is unknown; it is not started (a slot skipped with this event, "
             "rather than perhaps run twice)",
         answer_facts());
    return;
  } else if (quarantine_told_ != res.record.lease_end) {
    quarantine_told_ = res.record.lease_end;
    emit(event_kind::store_notice, req.run, 0, 0,
         "the store lost its state (it said so when answering a claim): runs it forgot may still be running "
         "elsewhere, so it starts no run until " + detail::fmt(res.record.lease_end) +
             ", one lease after it noticed, when every such runner has stopped; claims wait until then, and "
             "slots whose deadline passes meanwhile are dropped with a late event");
  }
  if (req.reason == claim_reason::takeover) return;  // the watch goes on
  // The deadline is on the store's clock: an instance whose wall clock runs
  // ahead of it by more than max_late still claims at the slot.
  if (req.reason != claim_reason::manual && res.store_now + wait > req.deadline + late_tolerance) {
    emit(event_kind::late, req.run, 0, 0,
         std::string(to_string(req.reason)) + " claim dropped: the store will not let it start before " +
             detail::fmt(from) + ", after its deadline " + detail::fmt(req.deadline) + " + 10 s");
    return;
  }
  // Claimed again with a new token. An earlier send of this one whose reply
  // was lost may still reach the store and win there, its lease starting
  // then: sent again with that token, the claim would come back `running`
  // with it and start the handler with a self-abort counted from the resend,
  // late (a backup could take over while the handler runs). With a new
  // token such a stray win is nobody's: this instance backs it up, and it is
  // taken over when its lease runs out.
  claim_request again = req;
  again.token = make_token(rng_);
  // One per job is enough (an older slot's is of a claim superseded or
  // answered): kept small however many slots are answered early.
  std::erase_if(retired_tokens_, [&](const auto& e) { return e.first.job == req.run.job && e.first.slot < req.run.slot; });
  retired_tokens_[req.run] = req.token;
  const std::uint64_t id = next_id_++;
  pending_.add(id, pending_claim{j, std::move(again), 0, std::nullopt});
  push_after(wait, {{}, 0, detail::timer_kind::claim, j, req.run.slot, id});
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
std::string scheduler<S, C, E, P>::interrupted_why(std::uint32_t j, const run_record& rec) const {
  const std::uint32_t max_attempts = jobs_[j].cfg.max_attempts;
  if (rec.attempt >= rec.handovers + max_attempts)
    return "marked interrupted: " + std::to_string(rec.attempt - rec.handovers) + " runner(s) died, max_attempts (" +
           std::to_string(max_attempts) + ") used up";
  // The store's `finished` answer does not say which of the two it was.
  return "marked interrupted and not retried: a newer run of the job started first, or the store lost its state "
         "after this run started (a run that may have run before a loss is never started again)";
}

}  // namespace lease
