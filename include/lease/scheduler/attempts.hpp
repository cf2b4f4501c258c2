// lease/scheduler/attempts.hpp — running an attempt this instance won: the
// handler on the executor, heartbeats, the self-abort, and its result.
//
// The self-abort (doc/protocol.md §5, "The self-abort deadline"): a runner stops its handler once no
// renewal has been acknowledged for lease − safety margin, counted on its
// monotonic clock from the *send* time of the last acknowledged renewal (the
// store started that lease when the request arrived, no earlier). The
// watchdog (lease_guard.hpp) requests the stop at that deadline even while
// this loop is stuck in a store call; the loop's lease_check timer then
// says so in a `lost` event and sends nothing more for the attempt.
//
// A handler that throws is recorded failed (never retried) — unless its stop
// token had been requested when it ended (stop(), or the lease in doubt):
// then the throw means "hand it over" and the run is released. The handler's
// own thread records which (detail::completion), not the loop.
#pragma once

#include "lease/scheduler.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::begin_attempt(std::uint32_t j, const claim_request& req, const run_record& rec,
                                          steady_point sent, std::optional<duration> takeover_latency) {
  // One claim, one attempt: a second answer for the same claim (the same
  // token, winning the same attempt) starts nothing more. A batch that
  // carried one takeover claim twice (a backup check and a re-check in one
  // loop turn, resending the same claim in doubt) answered it `won`, then
  // `running` with its own token — taken as the win it also is — and its
  // handler was started twice (I5, found by the asan soak of the properties).
  if (own_attempt(rec.key()))
    for (const auto& [id, a] : attempts_)
      if (a.run == rec.key() && a.token == req.token && a.fence == rec.fence) return;
  unwatch(rec.key());
  // The lease this claim asked for (an add() may have changed the job's since).
  const duration lease_len = req.lease;
  const duration margin = abort_margin(lease_len);
  if (steady() >= sent + lease_len - margin) {
    // The answer came so late (a hung call, a stalled reply) that the lease
    // it started may already have ended, and another instance may be
    // running the next attempt: the handler is not started. The attempt's
    // lease runs out in the store and a backup takes the run over — this
    // instance among them: it may be the only one that knows of the run (a
    // trigger is gone from the store once claimed, so an instance that had
    // not polled it before never will).
    emit(event_kind::lost, rec.key(), rec.attempt, rec.fence,
         std::string(to_string(req.reason)) + " claim won attempt " + std::to_string(rec.attempt) +
             ", but its answer arrived " + detail::fmt(steady() - sent) + " after the claim was sent, past lease − "
             "safety margin (" + detail::fmt(lease_len - margin) + "): the lease may have ended already, so the "
             "handler is not started; a backup (this instance too) takes the run over when the lease runs out",
         answer_facts());
    watch_run(j, rec.key(), false);
    return;
  }
  const std::uint64_t id = next_id_++;
  attempt& a = add_attempt(id, rec.key());
  a.job = j;
  a.number = rec.attempt;
  a.token = req.token;
  a.fence = rec.fence;
  a.reason = req.reason;
  a.lease_len = lease_len;
  a.margin = margin;
  a.handovers = rec.handovers;
  const job_settings& cfg = jobs_[j].cfg;
  a.hb = cfg.lease == lease_len ? cfg.heartbeat : std::max(std::min(duration{5'000}, lease_len / 6), duration{1});
  a.lease = std::make_shared<detail::attempt_lease>(steady_, sent + lease_len - margin);
  guard_.add(a.lease);
  recount();
  const event_kind kind = req.reason == claim_reason::takeover   ? event_kind::takeover
                          : req.reason == claim_reason::catch_up ? event_kind::catch_up
                                                                 : event_kind::won;
  emit(kind, a.run, a.number, a.fence,
       std::string(to_string(req.reason)) + " claim won: attempt " + std::to_string(a.number) + " of " +
           std::to_string(req.max_attempts) + ", fence " + std::to_string(a.fence) + "; starting the handler" +
           (rec.manual ? " of a manual run of job " + a.run.job + " (an operator's trigger of " +
                             detail::fmt(a.run.slot) + ", not a slot of its schedule)"
                       : std::string{}),
       {.takeover_latency = takeover_latency, .claim_round_trip = round_trip_});
  // The first renewal a heartbeat from now, with the other attempts of its
  // interval (it joins their tick) — or at once if the claim's answer came so
  // late that less than a heartbeat is left before the self-abort: else the
  // watchdog stops the handler before a renewal was even sent (a review
  // found a late answer's handler started, then stopped unrenewed).
  const steady_point first = a.lease->deadline() - steady() <= a.hb ? steady() : steady() + a.hb;
  if (auto [tick, fresh] = hb_ticks_.try_emplace(a.hb, first); fresh || first < tick->second) {
    tick->second = first;
    push({first, 0, detail::timer_kind::heartbeat, 0, {}, static_cast<std::uint64_t>(a.hb.count())});
  }

  run_context ctx{a.run.job, a.run.slot, a.number, a.reason, a.token, a.fence, a.lease->token(), a.lease, rec.manual};
  try {
    a.started = steady();  // before: an inline executor runs the handler within dispatch
    dispatch(j, id, std::move(ctx));
  } catch (const std::exception& e) {
    // The handler never started: hand the run over rather than lose it.
    a.started.reset();
    a.at = step::releasing;
    a.why = std::string("the executor refused the task: ") + e.what();
    on_finish_retry(id);
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::dispatch(std::uint32_t j, std::uint64_t id, run_context ctx) {
  executor_.execute(task(std::move(ctx), [fn = jobs_[j].fn, box = inbox_, id](run_context& c) {
    detail::completion done{id, false, false, {}};
    if (!c.lease_held()) {
      // The executor took the task only after the attempt's lease was lost
      // (every worker busy until past the self-abort, or a pool draining its
      // queue after stop() abandoned the attempt): a backup may be running
      // the run by now. A handler that never started does nothing, so it is
      // not started at all, rather than trusted to check lease_held() first.
      done.threw = done.stop_requested = true;
      done.what = "the handler was not started: the executor took its task only after the attempt's lease was lost";
      box->post(std::move(done));
      return;
    }
    try {
      (*fn)(c);
    } catch (const std::exception& e) {
      done.threw = true;
      done.what = e.what();
    } catch (...) {
      done.threw = true;
      done.what = "a non-standard exception";
    }
    done.stop_requested = c.stop.stop_requested();
    box->post(std::move(done));
  }));
}

/// A tick of heartbeat interval `interval` renews every attempt whose
/// interval's tick is due — those of this interval and of any other due at
/// the same moment — in one round trip when the store can batch. A refused
/// renewal fences that attempt.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_heartbeat(duration interval) {
  const steady_point sent = steady();
  if (auto t = hb_ticks_.find(interval); t == hb_ticks_.end() || t->second > sent) return;  // stale timer
  std::set<duration> due;
  for (const auto& [hb, at] : hb_ticks_)
    if (at <= sent) due.insert(hb);
  std::vector<std::uint64_t> ids;
  std::vector<heartbeat_request> batch;
  // Past its self-abort deadline (the loop was blocked): the watchdog has
  // asked its handler to stop, and that cannot be taken back, so a renewal
  // now would only keep a stopping attempt held, with nothing saying why it
  // stopped (a review found the handler's throw then reported as a plain
  // hand-over). Lost here, as at its lease check.
  std::vector<std::uint64_t> overdue;
  for (auto& [id, a] : attempts_) {
    if (!due.contains(a.hb)) continue;
    if (a.lease->expire_if_due(sent)) {
      overdue.push_back(id);
      continue;
    }
    ids.push_back(id);
    batch.push_back({a.run, a.token, a.lease_len});
    // Set at the attempt's first tick (within a heartbeat of its claim, so
    // well before it can fire), not at its start: a short run never costs a timer.
    if (!a.checked) {
      a.checked = true;
      push({a.lease->deadline(), 0, detail::timer_kind::lease_check, a.job, {}, id});
    }
  }
  for (const duration hb : due) {
    const bool used = std::any_of(attempts_.begin(), attempts_.end(), [&](const auto& p) { return p.second.hb == hb; });
    if (!used) {
      hb_ticks_.erase(hb);  // its last attempt ended; the next one sets a new tick
      continue;
    }
    hb_ticks_[hb] = sent + hb;
    push({sent + hb, 0, detail::timer_kind::heartbeat, 0, {}, static_cast<std::uint64_t>(hb.count())});
  }
  for (const std::uint64_t id : overdue) on_lease_check(id);
  if (ids.empty()) return;
  std::vector<std::optional<bool>> acked(ids.size());
  if constexpr (BatchHeartbeatStore<S>) {
    try {
      std::vector<bool> r = store_.heartbeat_many(batch);
      if (r.size() != ids.size())  // a store bug: none of the answers can be matched to its attempt
        throw store_error(make_error_code(errc::outcome_unknown),
                          "heartbeat_many answered " + std::to_string(r.size()) + " of " + std::to_string(ids.size()) +
                              " renewals");
      for (std::size_t i = 0; i < ids.size(); ++i) acked[i] = r[i];
      store_answered();
    } catch (const partial_batch_error<bool>& e) {
      // Some renewals answered (on a Redis Cluster, the masters that are up):
      // those count, and a refusal among them stops its runner now.
      // (Answers that do not match the batch are a store bug: none counts.)
      std::size_t first_failed = ids.size();
      if (e.answers().size() == ids.size())
        for (std::size_t i = 0; i < ids.size(); ++i) {
          acked[i] = e.answers()[i];
          if (!acked[i] && first_failed == ids.size()) first_failed = i;
        }
      store_failed("heartbeat", batch[first_failed == ids.size() ? 0 : first_failed].run, e);
    } catch (const store_error& e) {
      store_failed("heartbeat", batch.front().run, e);
    }
  } else {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      try {
        acked[i] = store_.heartbeat(batch[i].run, batch[i].token, batch[i].lease);
        store_answered();
      } catch (const store_error& e) {
        store_failed("heartbeat", batch[i].run, e);
      }
    }
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto it = attempts_.find(ids[i]);
    if (it == attempts_.end() || !acked[i]) continue;
    if (*acked[i]) {
      it->second.lease->extend(sent + it->second.lease_len - it->second.margin);
      continue;
    }
    // Refused: read back why. Its finish or release may have applied, with
    // its reply lost or its first copy applied late, after a read-back that
    // said "not applied" (a review found a recorded success reported as
    // lost, "another instance took the run over", and a release applied so
    // reported as an operator's stop): then the attempt ended as it asked.
    switch (refused_because(it->second)) {
      case refusal::stopped: operator_stopped(it); break;
      case refusal::ended: end_answered(ids[i], true); break;
      case refusal::unread:
        // In doubt, its retry reads back again, and its lease check ends it
        // if nothing does; otherwise nothing is known but the refusal.
        if (it->second.end_in_doubt) break;
        [[fallthrough]];
      case refusal::lost:
        lose(it, "heartbeat refused by the store: this attempt's token is no longer current (another "
                 "instance took the run over, or it was replaced or interrupted, or the store lost it); the "
                 "handler's stop token is requested and nothing more is sent for this attempt");
        break;
    }
  }
}

/// The self-abort, as the loop sees it: at the deadline with no renewal
/// acknowledged since, the attempt is lost (the watchdog has requested the
/// handler's stop already, or does now).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_lease_check(std::uint64_t id) {
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return;
  const steady_point deadline = it->second.lease->deadline();
  if (steady() < deadline) {
    push({deadline, 0, detail::timer_kind::lease_check, it->second.job, {}, id});
    return;
  }
  const std::uint32_t j = it->second.job;
  const run_key run = it->second.run;
  lose(it, "no heartbeat acknowledged for lease − safety margin (" + detail::fmt(it->second.lease_len - it->second.margin) +
               ", monotonic time since the last acknowledged one was sent): another instance may own the run "
               "soon, so the handler's stop token was requested at that deadline and nothing more is sent; this "
               "instance watches the run as a backup from now on");
  // As a backup: another instance may not know of the run (a manual run
  // whose trigger it never polled, or no other instance at all), and a
  // takeover comes after the lease's end, so after the stop requested here.
  if (phase_ == phase::running) watch_run(j, run, false);
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
template <class It>
void scheduler<S, C, E, P>::lose(It it, const std::string& why) {
  attempt& a = it->second;
  a.lease->revoke();
  guard_.remove(a.lease.get());
  emit(event_kind::lost, a.run, a.number, a.fence, why, {.handler_duration = a.handler_time(steady())});
  const std::uint32_t j = a.job;
  drop_attempt(it);
  after_attempt(j);
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_completion(const detail::completion& c) {
  auto it = attempts_.find(c.attempt_id);
  if (it == attempts_.end()) return;  // lost or abandoned: nothing more is sent for it
  attempt& a = it->second;
  if (a.at != step::running) return;
  if (c.threw && c.stop_requested) {
    a.at = step::releasing;
  } else {
    a.at = step::finishing;
    a.result = c.threw ? run_status::failed : run_status::success;
  }
  a.why = c.what;
  if (a.started) a.ran = steady() - *a.started;
  on_finish_retry(c.attempt_id);
}

/// Attempt `id`'s finish or release is due (its handler ended, or a retry):
/// sent with the others due in this loop turn when the store can batch them
/// (flush_ends), else now.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_finish_retry(std::uint64_t id) {
  if (auto it = attempts_.find(id); it != attempts_.end() && it->second.end_in_doubt) {
    // Sent before with no answer and no read-back since (the store was down
    // for both): read back first. A resend of a finish that had applied
    // would be refused, and a recorded success reported as lost.
    attempt& a = it->second;
    if (std::optional<bool> applied = read_back(a)) {
      end_answered(id, *applied);
      return;
    }
    if (a.end_in_doubt) {
      push_after(backoff(a.tries++, a.hb), {{}, 0, detail::timer_kind::finish_retry, a.job, {}, id});
      return;
    }
  }
  if constexpr (BatchFinishStore<S>) {
    if (!attempts_.contains(id)) return;
    end_batch_.push_back(id);
    if (end_batch_.size() >= max_claim_batch) flush_ends();
  } else {
    send_end(id);
  }
}

/// One finish or release call for attempt `id`.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::send_end(std::uint64_t id) {
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return;
  attempt& a = it->second;
  bool ok = false;
  try {
    ok = a.at == step::releasing ? store_.release(a.run, a.token) : store_.finish(a.run, a.token, a.result);
    store_answered();
  } catch (const store_error& e) {
    end_failed(id, e, false);
    return;
  } catch (const std::exception& e) {
    // A store must throw store_error (law L6); anything else leaves the
    // outcome unknown: read back and retried, as flush_ends does (a review
    // found it escaping poll(), the attempt left with no retry and its
    // lease renewed for ever).
    end_failed(id,
               store_error(make_error_code(errc::outcome_unknown),
                           std::string(a.at == step::releasing ? "release" : "finish") +
                               " threw something other than a store_error: " + e.what()),
               false);
    return;
  }
  end_answered(id, ok);
}

/// The finishes and releases due in this loop turn, in one round trip; each
/// answer is handled as its single call's would be.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::flush_ends() {
  if constexpr (BatchFinishStore<S>) {
    std::vector<std::uint64_t> ids;
    ids.swap(end_batch_);
    std::erase_if(ids, [&](std::uint64_t id) { return !attempts_.contains(id); });
    if (ids.size() == 1) send_end(ids.front());
    if (ids.size() <= 1) return;
    std::vector<finish_request> batch;
    batch.reserve(ids.size());
    for (std::uint64_t id : ids) {
      const attempt& a = attempts_.at(id);
      batch.push_back({a.run, a.token, a.at == step::releasing ? std::nullopt : std::optional(a.result)});
    }
    std::vector<bool> answers;
    auto failed = [&](const store_error& e) {
      store_failed("batch of " + std::to_string(batch.size()) + " finishes and releases", batch.front().run, e);
      for (std::uint64_t id : ids) end_failed(id, e, true);
    };
    try {
      answers = store_.finish_many(batch);
    } catch (const partial_batch_error<bool>& e) {
      // Some ends answered (on a Redis Cluster, those of the masters that
      // are up): each acted on now; the others fail as a failed batch's do
      // (read back when their outcome is unknown, else retried). Failing the
      // whole batch retried every end, in one batch again, and while one
      // master stayed down each retry failed with it: the other masters'
      // finished runs stayed running, and their jobs' next slots were
      // skipped as overlaps. (Answers that do not match the batch are a
      // store bug: every outcome unknown.)
      if (e.answers().size() != ids.size()) {
        failed(store_error(make_error_code(errc::outcome_unknown),
                           "finish_many answered " + std::to_string(e.answers().size()) + " of " +
                               std::to_string(ids.size()) + " finishes and releases: " + e.what()));
        return;
      }
      std::size_t first_failed = 0;
      while (first_failed < ids.size() && e.answers()[first_failed]) ++first_failed;
      store_failed("batch of " + std::to_string(batch.size()) + " finishes and releases (answered in part)",
                   batch[first_failed < ids.size() ? first_failed : 0].run, e);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (e.answers()[i]) end_answered(ids[i], *e.answers()[i]);
        else end_failed(ids[i], e, true);
      }
      return;
    } catch (const store_error& e) {
      failed(e);
      return;
    } catch (const std::exception& e) {
      // A store must throw store_error (law L6). Anything else, like an
      // answer of the wrong length below, leaves every outcome unknown: each
      // run is read back, and stop() still ends (its deadline runs after this).
      failed(store_error(make_error_code(errc::outcome_unknown),
                         std::string("finish_many threw something other than a store_error: ") + e.what()));
      return;
    }
    if (answers.size() != ids.size()) {
      failed(store_error(make_error_code(errc::outcome_unknown),
                         "finish_many answered " + std::to_string(answers.size()) + " of " +
                             std::to_string(ids.size()) + " finishes and releases"));
      return;
    }
    store_answered();
    for (std::size_t i = 0; i < ids.size(); ++i) end_answered(ids[i], answers[i]);
  }
}

/// A finish or release of attempt `id` failed: an unknown outcome is read
/// back (never resent blindly: a resent finish that had applied would be
/// refused); otherwise it is retried with backoff while the attempt is not
/// lost (heartbeats keep its lease alive). `reported`: the batch's failure
/// was reported already.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::end_failed(std::uint64_t id, const store_error& e, bool reported) {
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return;
  attempt& a = it->second;
  // Said (counted) before the read-back, whose own failure is a fault too.
  if (!reported) store_failed(a.at == step::releasing ? "release" : "finish", a.run, e);
  if (e.code() == errc::outcome_unknown) {
    a.end_in_doubt = true;
    if (std::optional<bool> applied = read_back(a)) {
      end_answered(id, *applied);
      return;
    }
  }
  const duration wait = backoff(a.tries++, a.hb);
  push_after(wait, {{}, 0, detail::timer_kind::finish_retry, a.job, {}, id});
}

/// The store's answer to attempt `id`'s finish or release: the attempt ends
/// here, recorded — or lost, if its token was no longer current.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::end_answered(std::uint64_t id, bool ok) {
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return;
  attempt& a = it->second;
  const bool release = a.at == step::releasing;
  const std::string detail_msg = a.why.empty() ? std::string{} : " (" + a.why + ")";
  if (!ok) {
    switch (refused_because(a)) {
      case refusal::stopped:
        // An operator's stop handed the run over first (its finish or
        // release was being retried): said as the stop it was, and watched.
        operator_stopped(it);
        return;
      case refusal::ended:
        // An earlier copy of this very finish or release had applied (its
        // reply lost, or applied late after a read-back said it had not):
        // the resend is refused, and the attempt ended as it asked.
        break;
      case refusal::lost:
      case refusal::unread:
        lose(it, std::string(release ? "release" : "finish") +
                     " refused by the store: this attempt's token is no longer current (another instance "
                     "took the run over); its result" + detail_msg + " is not recorded");
        return;
    }
  }
  if (release)
    emit(event_kind::handed_over, a.run, a.number, a.fence,
         // A task the executor refused never ran, whatever happened since
         // (a stop() while its release was being retried, say).
         (!a.started                            ? "the handler was not started"
          : phase_ == phase::stopping           ? "stopping: the handler threw after its stop request"
          : a.lease->token().stop_requested()   ? "the handler threw after its stop request"
                                                : "released") +
             detail_msg +
             "; the run is released and a backup takes it over within 2 heartbeats (not counted against "
             "max_attempts)",
         {.handler_duration = a.ran});
  else if (a.result == run_status::success)
    emit(event_kind::success, a.run, a.number, a.fence, "the handler returned; recorded as success",
         {.handler_duration = a.ran});
  else
    emit(event_kind::failed, a.run, a.number, a.fence,
         "the handler threw" + detail_msg + "; recorded as failed, and a failed run is never retried",
         {.handler_duration = a.ran});
  const std::uint32_t j = a.job;
  const run_key run = a.run;
  // Handed over by a remove(name, true) whose job was added again since:
  // this instance is one of its backups too (alone, the only one). Only
  // that: a task the executor refused, watched, would be claimed, refused
  // and released again without end.
  const bool watch_own = release && a.removed_hand_over && phase_ == phase::running && !jobs_[j].removed;
  guard_.remove(a.lease.get());
  drop_attempt(it);
  after_attempt(j);
  if (watch_own) watch_run(j, run, false);
}

/// attempts_ and own_runs_ change together, here and in drop_attempt.
template <Store S, Clock C, Executor E, OverlapPolicy P>
typename scheduler<S, C, E, P>::attempt& scheduler<S, C, E, P>::add_attempt(std::uint64_t id, const run_key& run) {
  attempt& a = attempts_[id];
  a.run = run;
  ++own_runs_[run];
  return a;
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
typename std::map<std::uint64_t, typename scheduler<S, C, E, P>::attempt>::iterator scheduler<S, C, E, P>::drop_attempt(
    typename std::map<std::uint64_t, attempt>::iterator it) {
  if (auto o = own_runs_.find(it->second.run); o != own_runs_.end() && --o->second == 0) own_runs_.erase(o);
  return attempts_.erase(it);
}

/// After an outcome_unknown finish or release: did it apply? nullopt: can't tell yet.
template <Store S, Clock C, Executor E, OverlapPolicy P>
std::optional<bool> scheduler<S, C, E, P>::read_back(attempt& a) {
  const char* what = a.at == step::releasing ? "read-back of a release whose outcome is unknown"
                                              : "read-back of a finish whose outcome is unknown";
  try {
    std::optional<run_record> rec = store_.get(a.run);
    store_answered();
    a.end_in_doubt = false;  // answered: whatever it says, a resend is now safe or needless
    if (!rec || rec->token != a.token) return false;
    if (a.at == step::releasing && rec->released) return true;
    if (a.at == step::finishing && rec->status == a.result) return true;
    if (rec->status == run_status::running && !rec->released) return std::nullopt;  // not applied: retry
    return false;
  } catch (const store_error& e) {  // can't tell yet; a store fault like any other (counted, said once per episode)
    store_failed(what, a.run, e);
    return std::nullopt;
  } catch (const std::exception& e) {  // a store's bug (law L6): can't tell yet either
    store_failed(what, a.run,
                 store_error(make_error_code(errc::outcome_unknown),
                             std::string("get threw something other than a store_error: ") + e.what()));
    return std::nullopt;
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::after_attempt(std::uint32_t j) {
  recount();
  release_buffer(j);
  if (phase_ == phase::stopping && attempts_.empty()) phase_ = phase::stopped;
}

/// buffer_one: the blocking run ended, so claim the newest skipped slot now
/// if its deadline has not passed (the store still decides).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::release_buffer(std::uint32_t j) {
  release_manual(j);
  job& jb = jobs_[j];
  if (!jb.buffered || phase_ != phase::running) return;
  const time_point slot = *jb.buffered;
  jb.buffered.reset();
  // Latest only: a newer slot of the job is due here — its claim pending
  // (its jitter, or retried after a store error), or its timer due and not
  // fired yet. That one goes; the buffered one, claimed first, would run
  // and make the newer slot its overlap (a review found a queue: the older
  // slot ran, the newer one was skipped and buffered behind it).
  std::optional<time_point> newer;
  if (jb.next_slot > slot && jb.next_slot <= wall()) newer = jb.next_slot;
  if (pending_.has_job(j))
    for (const auto& [id, pc] : pending_)
      if (pc.job == j && pc.req.reason != claim_reason::manual && pc.req.run.slot > slot &&
          (!newer || pc.req.run.slot > *newer))
        newer = pc.req.run.slot;
  if (newer) {
    emit(event_kind::late, {jb.name, slot}, 0, 0,
         "buffered slot dropped: when the blocking run ended, a newer slot, " + detail::fmt(*newer) +
             ", was due and being claimed; only the latest slot of a job is claimed");
    return;
  }
  if (store_clock_estimate() > slot + jb.cfg.max_late + late_tolerance) {
    emit(event_kind::late, {jb.name, slot}, 0, 0,
         "buffered slot dropped: the blocking run ended after its deadline (slot + max_late + 10 s, on the "
         "store's clock)");
    return;
  }
  new_claim(j, slot, claim_reason::scheduled);
}

}  // namespace lease
