// lease/scheduler/backups.hpp — watching runs of other instances, and taking
// a run over once its runner stopped renewing.
//
// A backup re-checks a watched run with a takeover claim at a random moment
// in [1, 2] × heartbeat after its previous check (instances don't check in
// step, and a dead run is taken over within lease + 2 × heartbeat), or, when
// the lease end the store last answered comes sooner, just after that end
// (a dead run is then taken over about a lease after its last heartbeat),
// until an answer ends the watch: won (this instance runs the next attempt),
// finished, none. Two rules beyond a plain re-claim:
// * a newer slot of the job that is due and not yet claimed goes first: its
//   claim marks the dead run interrupted (a run never starts after a newer
//   one), so the backup does not start the old one;
// * a takeover whose answer was lost is resent with the same token at the
//   next check: if the store applied it meanwhile, the answer is `running`
//   with our token, and this instance runs the attempt it won.
// A PushStore announces releases and ends of runs: the watched runs of that
// job are re-checked at once (a hand-over is taken over in a round trip, not
// at the next check). The periodic checks stay: a lost announcement costs
// time, never a takeover.
#pragma once

#include "lease/scheduler.hpp"

namespace lease {

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::watch_run(std::uint32_t j, const run_key& run, bool check_now,
                                      std::optional<lease_seen> lease) {
  if (own_attempt(run)) return;
  auto [it, fresh] = watches_.try_emplace(run, watch{j, 0, std::nullopt, {}, std::nullopt, {}, false});
  watch& w = it->second;
  if (lease) w.lease_end_seen = lease->end;  // for the takeover event's latency
  recount();
  const steady_point now = steady();
  // The check this call sets: at once, or a new watch's first; none (the
  // pending one stays) for a run already watched.
  std::optional<steady_point> at;
  if (check_now) at = now;
  else if (fresh) at = now + backup_delay(j);
  if (lease && !check_now) {
    // The lease cannot run out before its end (store clock): a check aimed a
    // little after it takes a dead run over about a lease after its last
    // heartbeat, instead of up to two heartbeats later. Measured from this
    // answer's arrival, which is after the store read its clock, so the
    // check reaches the store at or after the end. The jitter keeps the
    // backups of one run from checking in step.
    const steady_point next = at ? *at : w.next_check;
    const duration left = std::max(duration::zero(), lease->end - lease->store_now);
    if (left < next - now) at = std::min(next, now + left + jitter(jobs_[j].cfg.heartbeat / 4));
  }
  if (!at || (!fresh && !check_now && *at == w.next_check)) return;
  w.gen = next_id_++;
  w.next_check = *at;
  push_after(*at - now, {{}, 0, detail::timer_kind::backup, j, run.slot, w.gen});
}

/// A PushStore said a run of `job` was released or ended: every run of it
/// this instance watches is checked now (the watch's next check replaces the
/// pending one). An announcement for a job not watched here costs nothing.
/// The run an EndPushStore said a finish ended (`finished`) is not checked:
/// its watch ends as the check's `finished` answer would end it.
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::recheck_watches(std::string_view job, std::optional<time_point> finished) {
  if (phase_ != phase::running) return;
  std::optional<std::uint32_t> ended;
  for (auto it = watches_.lower_bound(run_key{std::string(job), time_point::min()});
       it != watches_.end() && it->first.job == job;) {
    if (finished && it->first.slot == *finished && !it->second.in_doubt) {
      ended = it->second.job;
      it = watches_.erase(it);
      continue;
    }
    watch_run(it->second.job, it->first, true);
    ++it;
  }
  if (ended) {
    recount();
    release_buffer(*ended);  // as a `finished` answer: a run buffered behind it may go now
  }
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
bool scheduler<S, C, E, P>::own_attempt(const run_key& run) const {
  return own_runs_.contains(run);
}

template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::on_backup(std::uint32_t j, time_point slot, std::uint64_t gen) {
  const run_key run{jobs_[j].name, slot};
  auto it = watches_.find(run);
  if (it == watches_.end() || it->second.gen != gen) return;
  // The next check is set first: whatever this one answers (or throws), the
  // watch goes on until an answer ends it (unwatch makes the timer stale).
  const duration delay = backup_delay(j);
  it->second.gen = next_id_++;
  it->second.next_check = steady() + delay;
  push_after(delay, {{}, 0, detail::timer_kind::backup, j, slot, it->second.gen});
  const job& jb = jobs_[j];
  if (jb.next_slot > slot && jb.next_slot <= wall()) return;  // the newer slot's claim goes first
  watch& w = it->second;
  const bool resend = w.in_doubt.has_value();
  const claim_request req = resend ? *w.in_doubt : make_request(j, run, claim_reason::takeover);
  const steady_point sent = resend ? w.in_doubt_sent : steady();
  if constexpr (BatchClaimStore<S>) {
    // Once per batch: a check and a re-check in one loop turn would send
    // the same claim twice (begin_attempt starts it once all the same).
    for (const batched_claim& b : claim_batch_)
      if (b.backup && b.req.run == run) return;
    claim_batch_.push_back({true, 0, j, req, sent});
    if (claim_batch_.size() >= max_claim_batch) flush_turn();
  } else {
    backup_answered(j, req, sent, try_claim(req));
  }
}

/// The answer to a backup's takeover claim (nullopt: none came, so it is
/// resent with the same token at the next check).
template <Store S, Clock C, Executor E, OverlapPolicy P>
void scheduler<S, C, E, P>::backup_answered(std::uint32_t j, const claim_request& req, steady_point sent,
                                            std::optional<claim_result> res) {
  auto w = watches_.find(req.run);
  if (!res) {
    if (w != watches_.end()) {
      w->second.in_doubt = req;
      w->second.in_doubt_sent = sent;
    }
    return;
  }
  if (w != watches_.end()) w->second.in_doubt.reset();
  on_claim(j, req, *res, sent);
}

}  // namespace lease
