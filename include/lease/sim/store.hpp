// lease/sim/store.hpp — lease::sim::store, each simulated instance's view of
// the cluster's one memory_store: it records every call into the history,
// can delay an instance's next calls, and checks the store-side invariants of
// doc/invariants.md after every call.
#pragma once

#include <algorithm>
#include <bit>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/clock/skewed.hpp"
#include "lease/error.hpp"
#include "lease/options.hpp"
#include "lease/rules.hpp"
#include "lease/sim/history.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/inspect.hpp"
#include "lease/store/memory.hpp"

namespace lease::sim {

class store;

/// The state every instance's store handle shares: the store, its clock, the
/// history and what the checks remember between calls.
struct world {
  world(fake_clock c, options o, bool skip)
      : clock(c), store_clock(c, duration::zero()), mem(store_clock), opts(std::move(o)), skip_mode(skip) {}

  /// Real time: the history is on it, and instances read it through a skew.
  fake_clock clock;
  /// The store's clock: real time, until a test steps it (NTP or an operator
  /// on the store's host: cluster::step_store_clock). Leases, deadlines and
  /// fences are on it; the checks of real time (I9) are not.
  skewed_clock<fake_clock> store_clock;
  memory_store<skewed_clock<fake_clock>> mem;
  /// Each step of the store's clock: (real time, by how much).
  std::vector<std::pair<time_point, duration>> store_steps;
  options opts;
  bool skip_mode;
  history hist;
  struct failure {
    errc code = errc::unavailable;
    int calls = 0;         ///< calls left to fail
    bool applied = false;  ///< fail after applying (a lost reply), else before
  };
  std::map<std::string, failure> failures;  ///< instance → injected store errors
  /// A slow call: the calling instance is blocked for `d` while the rest of
  /// the world goes on (other instances, its own handlers and watchdog).
  struct slowness {
    duration d{};
    int calls = 0;
    bool applied_first = false;  ///< applied at once, the reply comes late; else it arrives late
    bool then_fail = false;      ///< never arrives: fails as unavailable after `d` (a black-holed connection)
  };
  std::map<std::string, std::deque<slowness>> slow;  ///< instance → slow calls, in the order they come
  /// A call that times out while its request is still in the network: the
  /// caller waits `timeout`, fails with `code`, and the store applies the
  /// request `later` after that, on an old connection whose reply no one
  /// reads (the client reconnected and may have sent it again, or sent
  /// another). Only claims, heartbeats, finishes and releases meet it.
  struct late_copy_fault {
    duration timeout{};
    duration later{};
    int calls = 0;
    errc code = errc::unavailable;
    bool claims_only = false;  ///< heartbeats, finishes and releases pass it by
  };
  std::map<std::string, std::deque<late_copy_fault>> late_copy_faults;  ///< instance → its next such calls
  /// A heartbeat or claim batch answered in part, as a Redis Cluster
  /// answers it with one master down or cut off while the others answer
  /// (router::routed): the elements of the other masters' jobs are
  /// answered, the rest fail, and each of those was applied (it reached its
  /// master, the reply was lost) or not (it never did). Which element meets
  /// which fate comes from `pattern`, two bits an element (store::part_of);
  /// a batch of one element, which cannot fail in part, passes the fault by.
  struct partial_answers {
    int batches = 0;  ///< batches of two or more elements left to answer in part
    std::uint64_t pattern = 0;
    bool varies = false;  ///< each batch by the pattern rotated 13 bits further
  };
  std::map<std::string, std::deque<partial_answers>> partial_heartbeat_faults;  ///< instance → its next such batches
  std::map<std::string, std::deque<partial_answers>> partial_claim_faults;      ///< instance → its next such batches
  std::map<std::string, std::deque<partial_answers>> partial_finish_faults;     ///< instance → its next such batches
  std::uint64_t partial_finish_batches = 0;    ///< finish batches answered in part (partial_batch_error thrown)
  std::uint64_t unanswered_ends_applied = 0;   ///< of their unanswered finishes and releases, those the store applied
  std::uint64_t unanswered_ends_dropped = 0;   ///< and those it never received
  std::uint64_t partial_claim_batches = 0;     ///< claim batches answered in part (partial_batch_error thrown)
  std::uint64_t unanswered_claims_applied = 0;  ///< of their unanswered claims, those the store applied
  std::uint64_t unanswered_claims_dropped = 0;  ///< and those it never received
  std::uint64_t partial_batches = 0;       ///< heartbeat batches answered in part (partial_batch_error thrown)
  std::uint64_t unanswered_applied = 0;    ///< of their unanswered renewals, those the store applied
  std::uint64_t unanswered_dropped = 0;    ///< and those it never received
  std::uint64_t partial_refusals = 0;      ///< refusals answered in a batch that failed in part
  /// Index in hist.faults of each batch answered in part → the tokens of
  /// the renewals it left unanswered (the runs it hindered).
  std::map<std::size_t, std::set<std::string>> unanswered_in;
  /// Reads an instance's monotonic clock (set by the cluster): a store
  /// call notes when it was sent, as the scheduler does.
  std::function<std::optional<steady_point>(const std::string&)> steady_of;
  /// token → the latest self-abort deadline an answer that reached its
  /// instance can justify: the send of a won claim or of a renewal answered
  /// true, on the instance's monotonic clock, + lease − safety margin. A
  /// runner's deadline beyond it counted something the store never said
  /// (an unanswered renewal, one thrown as not_replicated): cluster checks.
  std::map<std::string, steady_point> acked_until;
  /// The scheduler's safety margin (scheduler::abort_margin, private there).
  static duration abort_margin(duration lease) { return std::max(std::min(lease / 10, duration{5'000}), duration{1}); }
  /// token → the same, from renewals alone: the scheduler counts its lease
  /// from the send of each renewal answered true, exactly (a claim's it
  /// counts from a moment no later than the send, when the claim was made
  /// ready: earlier than the store can see). A runner that says `lost` at
  /// its self-abort before this moment, on its monotonic clock, gave up a
  /// lease it held (cluster::check_event_kinds).
  std::map<std::string, steady_point> renewed_until;
  void acknowledged(const std::string& token, std::optional<steady_point> sent, duration lease, bool renewal = false) {
    if (!sent) return;
    const steady_point until = *sent + lease - abort_margin(lease);
    for (auto* m : {&acked_until, &renewed_until}) {
      if (m == &renewed_until && !renewal) continue;
      auto [it, fresh] = m->try_emplace(token, until);
      if (!fresh) it->second = std::max(it->second, until);
    }
  }
  /// A request still in the network: applied by `apply` (on a handle of
  /// `instance` that remembers what its process did) once the store's
  /// real time reaches `at` (store::deliver_late_copies).
  struct late_copy {
    time_point at{};
    std::string instance;
    std::string what;
    std::function<void(store&)> apply;
  };
  std::vector<late_copy> in_flight;
  std::uint64_t late_copies_applied = 0;  ///< requests applied after their caller had given up on them
  std::uint64_t late_claim_wins = 0;      ///< of those, claims that won an attempt
  [[nodiscard]] std::optional<time_point> next_late_copy() const {
    std::optional<time_point> next;
    for (const late_copy& c : in_flight)
      if (!next || c.at < *next) next = c.at;
    return next;
  }
  /// Set by the cluster: runs the world until the given store time while
  /// the named instance waits in a store call.
  std::function<void(const std::string&, time_point)> block;
  rules::run_table last;                                    ///< the table after the previous call
  std::map<run_key, std::string> won_token;                 ///< latest won attempt's token per run
  /// history::faults' size when each token's claim won: a reply that comes
  /// late (a slow or lost one, resent) is dispatched after its win, and the
  /// checks of I5 go by the win.
  std::map<std::string, std::size_t> faults_at_win;
  std::set<std::pair<run_key, std::uint32_t>> winners;      ///< (run, attempt) won so far
  std::set<run_key> failed;                                 ///< runs recorded failed
  std::set<std::string> refused;                            ///< tokens whose heartbeat was refused
  /// When each claim token was first sent (a resend keeps its token): a
  /// winner counts its lease from there, and the checks excuse its faults
  /// from there on.
  std::map<std::string, time_point> claim_first_sent;

  /// Push hand-over (PushStore): the store announces every accepted finish
  /// and release to every instance's listener, unless switched off (a store
  /// that cannot push) or the announcement is lost (`lost_announcements`).
  bool pushes = true;
  /// Whether an announced finish names its run (EndPushStore, as every
  /// store we ship does); off, every announcement says only the job (a
  /// plain PushStore, a user's), and backups check every watched run of it.
  bool names_finished = true;
  int lost_announcements = 0;  ///< the next N announcements reach no one
  std::map<std::uint64_t, end_listener> listeners;
  /// Push of triggers (PushTriggerStore): every trigger is announced to every
  /// instance's listener at once, synchronously (as memory_store does) —
  /// unless that instance's listener is cut (its connection down): then the
  /// push is lost, and when the cut ends the listener reconnects and calls
  /// f(""), as Redis's and PostgreSQL's listeners do, so that its instance
  /// polls every trigger once (deliver_reconnects).
  struct trigger_subscriber {
    std::string instance;
    trigger_listener f;
  };
  std::map<std::uint64_t, trigger_subscriber> trigger_listeners;
  std::map<std::string, time_point> trigger_cut_until;  ///< instance → when its listener reconnects
  std::uint64_t unheard_triggers = 0;  ///< triggers whose push reached no listener: only a poll finds them
  std::uint64_t last_listener = 0;
  std::uint64_t claim_batches = 0;  ///< claim_many calls (each one round trip)
  std::uint64_t trigger_polls = 0;  ///< triggers() calls
  std::uint64_t finish_batches = 0;  ///< finish_many calls (each one round trip)
  std::map<std::string, std::uint64_t> register_calls;  ///< instance → register_jobs calls it made
  std::vector<std::pair<time_point, std::string>> registered_at;  ///< (store time, instance) of each register_jobs
  /// Operators' stops: (store time, job, runs handed over), in order.
  struct stop_request {
    time_point at{};
    std::string job;
    std::size_t handed_over = 0;
    std::size_t fault = 0;      ///< its index in hist.faults: what came before and after it
    std::size_t before_op = 0;  ///< index into hist.ops of the first call after it
    std::vector<std::pair<run_key, std::string>> runs;  ///< the runs it handed over, each with its token then
  };
  std::vector<stop_request> stops;
  /// What every store call costs its caller (0: calls are instantaneous).
  /// With it, an instance can do only so many calls per second: overload.
  duration round_trip{};

  /// How the store notices a loss of its state. Off: at once, inside every
  /// claim (memory_store: rules::lose_state). On: as Redis does, only when a
  /// call reads its marker key — which a claim reads beside its script, in
  /// the same round trip, not inside it. The script then runs on the
  /// forgotten state and may win; only the marker answer in the same reply
  /// makes the handle hand that win back (rules::quarantine_after_loss). A
  /// lost reply loses that answer with it, and the handle learns nothing.
  /// (Once noticed, the quarantine is store-wide here; on Redis each handle
  /// learns it from the marker beside its next claim, and hands back what
  /// its script won meanwhile — the same answers, one step later.)
  bool loss_beside_claims = false;
  /// A loss not noticed yet (loss_beside_claims): the marker key is gone.
  bool marker_gone = false;
  /// instance → a loss of state that lands inside its next claim round
  /// trip, after this many of its claims ran (0: before the first): the
  /// pipeline is not atomic, and a FLUSHALL from elsewhere can come between
  /// its commands. Only the marker read after the claims then shows it.
  std::map<std::string, std::size_t> loss_inside_claims;
  std::uint64_t handed_back = 0;         ///< answers that would start a handler, handed back by the marker's answer
  std::uint64_t resent_handed_back = 0;  ///< of those, resent claims answered `running` with their own token

  /// What each instance's handle remembers, as a redis_store handle does:
  /// instance → job → the highest fence its current handle has seen in a
  /// claim's, get's or unfinished's answer that reached it. A new handle
  /// (a restart) knows none.
  /// Each claim and refused heartbeat carries it as evidence: above the
  /// job's stored counter, it proves a loss (rules::prove_loss).
  std::map<std::string, std::map<std::string, std::uint64_t, std::less<>>> known_fences;
  /// Jobs whose state alone was lost (lose_job_state) and no fence has
  /// proved it yet.
  std::set<std::string> unproven;
  std::uint64_t proofs = 0;            ///< losses proved by a fence, inside a claim or refused heartbeat
  std::uint64_t explained_proofs = 0;  ///< of those, by a fence the recorded loss explains (won before it)
  /// Losses of one job's state (lose_job_state) first proved by a fence
  /// won before an earlier, recorded loss: the case where the job's horizon
  /// must be the proof's moment, not the recorded loss.
  std::uint64_t stale_proofs = 0;

  [[nodiscard]] std::uint64_t fence_seen(const std::string& instance, const std::string& job) const {
    auto i = known_fences.find(instance);
    if (i == known_fences.end()) return 0;
    auto j = i->second.find(job);
    return j == i->second.end() ? 0 : j->second;
  }
  void learn_fence(const std::string& instance, const std::string& job, std::uint64_t fence) {
    if (fence == 0) return;
    std::uint64_t& f = known_fences[instance][job];
    f = std::max(f, fence);
  }
  /// `by`'s call carries its fence of `job`; true if it proved a loss of
  /// the job's state (the job's horizon is now: rules::prove_loss).
  /// `carried`: the fence the call carried, when it is not what the handle
  /// knows now (a late copy carries what its handle knew when it was sent).
  bool prove(const std::string& by, const std::string& job, std::optional<std::uint64_t> carried = std::nullopt) {
    const std::uint64_t known = carried ? *carried : fence_seen(by, job);
    const std::optional<time_point> recorded = mem.lost_at();
    const bool stale = unproven.count(job) != 0 && recorded && known <= rules::detail::as_fence(*recorded);
    if (known == 0 || !mem.prove_loss(job, known)) return false;
    ++proofs;
    if (stale) ++stale_proofs;
    unproven.erase(job);
    hist.faults.push_back({clock.now(), "loss of job " + job + "'s state proved: " + by + " remembered fence " +
                                            std::to_string(known) + ", above the stored counter"});
    return true;
  }
  /// The proof of `by`'s fence of `job`, sent after the reply that said so
  /// (Redis's marker script): it moves every job's horizon only if the
  /// recorded loss does not explain it (rules::record_proof).
  void record_proof(const std::string& by, const std::string& job, std::uint64_t fence) {
    if (marker_gone) {  // the marker script finds the marker gone too: that alone is a loss, noticed now
      notice_loss(by);
      return;
    }
    if (!mem.record_proof(fence)) {
      ++explained_proofs;
      return;
    }
    unproven.clear();  // every slot up to now is inside the store's horizon
    hist.faults.push_back({clock.now(), "loss of state noticed: " + by + "'s fence " + std::to_string(fence) + " of " + job +
                                            " was won after the recorded loss"});
  }

  void announce(const std::string& job, std::optional<time_point> finished = std::nullopt) {
    if (!pushes) return;
    if (lost_announcements > 0) {
      --lost_announcements;
      hist.faults.push_back({clock.now(), "announcement of " + job + " lost"});
      return;
    }
    for (auto& [id, f] : listeners) f(job, names_finished ? finished : std::nullopt);
  }

  void violation(std::string what) { hist.violations.push_back(std::move(what)); }

  /// The history's words for a loss of every job's state (lose_state,
  /// restore_backup), and of one job's (lose_job_state; each job that
  /// changed since the backup, in a restore noticed by nothing, which also
  /// writes unnoticed_restore_fault: registrations go back with it).
  static constexpr std::string_view lost_every_job_fault = "store lost its state";
  static constexpr std::string_view unnoticed_restore_fault = "store restored from a backup, unnoticed";
  static std::string lost_job_fault(std::string_view job) { return "store lost job " + std::string(job) + "'s state"; }
  /// Whether the fault `what` lost some of the store's state.
  static bool is_loss(std::string_view what) {
    return what == lost_every_job_fault || what == unnoticed_restore_fault || what == failover_fault ||
           what.starts_with("store lost job ");
  }
  /// Whether the fault `what` lost `job`'s state (every job's, or its alone).
  /// A failover lost writes of `job` too, but only unacknowledged ones and
  /// finishes: not a loss that check_no_start_across_loss holds it to.
  static bool lost_state_of(const std::string& what, std::string_view job) {
    return what == lost_every_job_fault || what == lost_job_fault(job) || what == failover_job_fault(job);
  }

  /// `by`'s call read the marker and found it gone: the loss is noticed
  /// now (Redis's marker script writes a new marker and the quarantine's
  /// start), and claims are quarantined from here on.
  void notice_loss(const std::string& by) {
    if (!marker_gone) return;
    marker_gone = false;
    mem.notice_loss();
    unproven.clear();  // every slot up to now is inside the store's horizon
    // Worded so that it names no instance at its end: not a fault of one.
    hist.faults.push_back({clock.now(), "loss of state noticed: " + by + "'s call found the marker gone"});
  }
  /// A trigger whose marker answer showed a loss it did not know of is
  /// sent again (redis_store::trigger): a pending trigger asked before the
  /// loss was noticed then moves past its horizon (rules::trigger).
  time_point trigger_after_notice(const std::string& job, const std::string& by) {
    notice_loss(by);
    return trigger(job, by);
  }

  /// An operator pauses or resumes `job` in the store (PauseStore), recorded
  /// in the history; returns the store's answer.
  bool set_paused(const std::string& job, bool on) {
    const bool changed = on ? mem.pause(job) : mem.resume(job);
    hist.faults.push_back({clock.now(), std::string(on ? "pause" : "resume") + " job " + job + " in the store"});
    hist.pauses.push_back({clock.now(), hist.ops.size(), job, on});
    return changed;
  }

  /// An operator stops `job` in the store (StopStore): a pause (recorded as
  /// one) that hands over the job's runs in progress, each announced as a
  /// release is; returns how many.
  std::size_t stop(const std::string& job) {
    std::vector<std::pair<run_key, std::string>> runs;
    for (const run_record& r : mem.unfinished(job))
      if (r.status == run_status::running && !r.released) runs.emplace_back(r.key(), r.token);
    const std::size_t n = mem.stop(job);
    stops.push_back({clock.now(), job, n, hist.faults.size(), hist.ops.size(), std::move(runs)});
    hist.faults.push_back({clock.now(), "stop job " + job + " in the store (" + std::to_string(n) + " runs handed over)"});
    hist.pauses.push_back({clock.now(), hist.ops.size(), job, true});
    last = mem.snapshot();
    if (n > 0) announce(job);
    return n;
  }

  /// An operator purges `job` (RegistryStore): recorded; a purge forgets the
  /// job's pause too.
  purge_result purge(const std::string& job, duration unseen_for) {
    purge_result r = mem.purge(job, unseen_for);
    hist.faults.push_back({clock.now(), "purge job " + job + " from the store: " + std::string(to_string(r.outcome))});
    if (r.outcome == purge_outcome::purged) {
      hist.pauses.push_back({clock.now(), hist.ops.size(), job, false});
      last = mem.snapshot();
    }
    return r;
  }

  /// After a rollback (a restored backup, a failover): a pending trigger it
  /// brought back at a slot no request of the history has any more (a
  /// request moved past a loss's horizon since keeps its record at its new
  /// slot) is recorded as a request of its own, made now: the run that
  /// answers it is no manual run without a trigger. (A failover after such
  /// a move brought the older slot back, and its run was said to have no
  /// trigger.)
  void record_restored_triggers() {
    std::set<std::string> jobs;
    for (const trigger_request& t : hist.triggers) jobs.insert(t.job);
    for (const std::string& job : jobs)
      for (const run_key& k : mem.triggers(std::span(&job, 1)))
        if (std::none_of(hist.triggers.begin(), hist.triggers.end(),
                         [&](const trigger_request& t) { return t.job == k.job && t.slot == k.slot; }))
          hist.triggers.push_back({clock.now(), k.job, k.slot, "a rollback of the store"});
  }

  /// An operator's "trigger now" of `job` (TriggerStore), from instance `by`
  /// or from outside ("operator"): recorded in the history when it made a
  /// new request, announced to every listener; returns the store's answer.
  time_point trigger(const std::string& job, const std::string& by) {
    const std::vector<run_key> before = mem.triggers(std::span(&job, 1));
    const time_point slot = mem.trigger(job);
    if (!before.empty() && before.front().slot != slot) {
      // The pending request moved past a loss's horizon (rules::trigger):
      // the same request (the latest one of its job), at its new slot —
      // unless that one was answered by a run already, and a restored
      // backup brought it back as pending: then the move is a request of
      // its own, and the answered one keeps its key.
      const run_key old{job, before.front().slot};
      const bool answered = std::any_of(hist.ops.begin(), hist.ops.end(), [&](const store_op& op) {
        return op.op == store_op::kind::claim && op.run == old && op.outcome == claim_outcome::won;
      });
      for (auto t = hist.triggers.rbegin(); t != hist.triggers.rend(); ++t)
        if (t->job == job) {
          if (answered || t->slot != old.slot)
            hist.triggers.push_back({clock.now(), job, slot, by});
          else
            t->slot = slot;
          break;
        }
      hist.faults.push_back({clock.now(), "pending trigger of job " + job + " moved past the loss's horizon (" +
                                              std::to_string(before.front().slot.time_since_epoch().count()) +
                                              " to " + std::to_string(slot.time_since_epoch().count()) + ")"});
    }
    // A new request if none was pending (one at the key of an earlier,
    // answered or forgotten, request is a new one all the same).
    const bool fresh = before.empty();
    // Worded so that it names no instance at its end: not a fault of one.
    hist.faults.push_back({clock.now(), "trigger of job " + job + " asked by " + by + " (" +
                                            std::to_string(slot.time_since_epoch().count()) + ")"});
    if (fresh) hist.triggers.push_back({clock.now(), job, slot, by});
    bool heard = false;
    for (auto& [id, sub] : trigger_listeners) {
      if (auto cut = trigger_cut_until.find(sub.instance); cut != trigger_cut_until.end() && cut->second > clock.now()) {
        // Worded so that it names no instance at its end: it hinders nothing
        // but this push, which the reconnect's poll must make up for.
        hist.faults.push_back({clock.now(), "trigger push of job " + job + " to " + sub.instance + " lost (listener cut)"});
        continue;
      }
      sub.f(job);
      heard = true;
    }
    if (!heard && !trigger_listeners.empty()) ++unheard_triggers;
    return slot;
  }

  /// Every cut trigger listener whose cut has ended reconnects and calls
  /// f(""): "pushes may have been missed". True if any did.
  bool deliver_reconnects() {
    bool any = false;
    for (auto it = trigger_cut_until.begin(); it != trigger_cut_until.end();) {
      if (it->second > clock.now()) {
        ++it;
        continue;
      }
      hist.faults.push_back({clock.now(), "trigger listener of " + it->first + " reconnected (it polls once)"});
      for (auto& [id, sub] : trigger_listeners)
        if (sub.instance == it->first) sub.f("");
      it = trigger_cut_until.erase(it);
      any = true;
    }
    return any;
  }
  /// When the next cut trigger listener reconnects, if any is cut.
  [[nodiscard]] std::optional<time_point> next_reconnect() const {
    std::optional<time_point> next;
    for (const auto& [name, until] : trigger_cut_until)
      if (!next || until < *next) next = until;
    return next;
  }

  /// The store loses every run and fence and notices at once
  /// (rules::lose_state), or, with loss_beside_claims, when a call next
  /// reads its marker (notice_loss).
  void lose_state() {
    if (loss_beside_claims) {
      mem.forget_state();
      marker_gone = true;
    } else {
      mem.lose_state();
      unproven.clear();
    }
    hist.faults.push_back({clock.now(), std::string(lost_every_job_fault)});
    hist.pauses.push_back({clock.now(), hist.ops.size(), {}, false});  // pauses are lost too
    last = mem.snapshot();  // deleted on purpose: not an I7 breach
  }

  /// `job`'s state alone is lost, and nothing notices (rules::forget_job):
  /// a key evicted, a Redis Cluster master failed over to a replica that
  /// lacked it. Only a fence an instance remembers proves it (prove). The
  /// history holds it to "nothing started before the loss starts again
  /// after it", like a loss of everything.
  void lose_job_state(const std::string& job) {
    const auto before = mem.snapshot();
    mem.forget_job(job);
    unproven.insert(job);
    hist.faults.push_back({clock.now(), lost_job_fault(job)});
    if (auto j = before.jobs.find(job); j != before.jobs.end() && j->second.paused)
      hist.pauses.push_back({clock.now(), hist.ops.size(), job, false});  // its pause is lost with it
    last = mem.snapshot();  // deleted on purpose: not an I7 breach
  }

  /// A backup of the store as it is now, for restore_backup().
  std::optional<rules::run_table> backup;
  /// The jobs whose runs, fence, pause, trigger or horizon differ between
  /// the store now and the backup. Registrations aside: they carry no run;
  /// a job that one side lacks counts as one with nothing stored.
  [[nodiscard]] std::vector<std::string> changed_since_backup() const {
    return backup ? changed_since(*backup) : std::vector<std::string>{};
  }
  /// The same, between the store now and `then` (a backup, or what a
  /// lagging replica had).
  [[nodiscard]] std::vector<std::string> changed_since(const rules::run_table& then_table) const {
    std::vector<std::string> out;
    auto stored = [](rules::run_table t) {
      for (auto& [job, js] : t.jobs) js.registrations.clear();
      return std::move(t.jobs);
    };
    const auto now = stored(mem.snapshot()), then = stored(then_table);
    const rules::job_state nothing;
    auto of = [&](const auto& jobs, const std::string& job) -> const rules::job_state& {
      const auto it = jobs.find(job);
      return it == jobs.end() ? nothing : it->second;
    };
    std::set<std::string> jobs;
    for (const auto* side : {&now, &then})
      for (const auto& [job, js] : *side) jobs.insert(job);
    for (const std::string& job : jobs)
      if (of(now, job) != of(then, job)) out.push_back(job);
    return out;
  }
  void take_backup() {
    backup = mem.snapshot();
    hist.faults.push_back({clock.now(), "backup of the store taken"});
  }
  /// The store comes back as the backup: what happened since is
  /// forgotten. `noticed`: at once (rules::restore_state), as SQLite
  /// notices a restored file (a new inode). Otherwise not at all
  /// (rules::roll_back), as PostgreSQL and Redis: the marker comes back
  /// with the backup, and only a fence an instance remembers above a
  /// restored counter proves the loss (prove, record_proof); the jobs that
  /// changed since are unproven until then. The history's checks hold it
  /// to "nothing started before the loss starts again after it", like a
  /// loss of everything.
  void restore_backup(bool noticed = true) {
    if (!backup) return;
    if (noticed) {
      mem.restore(*backup);
      unproven.clear();
      hist.faults.push_back({clock.now(), std::string(lost_every_job_fault)});
    } else {
      // Only the jobs that changed since the backup lost anything: the
      // others' state is exact, and a takeover of their runs is as right as
      // before the restore. Each changed job is held to "nothing started
      // before its loss starts again after it".
      hist.faults.push_back({clock.now(), std::string(unnoticed_restore_fault)});
      for (const std::string& job : changed_since_backup()) {
        unproven.insert(job);
        hist.faults.push_back({clock.now(), lost_job_fault(job)});
      }
      mem.roll_back(*backup);
    }
    // The rollback brings back which attempt of each run is the latest won
    // one (I2 holds writes to the store's state, not to a forgotten one): a
    // runner of a restored attempt may renew and finish it; that no two of
    // its handlers run at once is I5's and I9's to check.
    for (const auto& [job, js] : backup->jobs)
      for (const auto& [slot, r] : js.runs) won_token[r.key()] = r.token;
    hist.pauses.push_back({clock.now(), hist.ops.size(), {}, false});  // the backup's pauses, below
    for (const auto& [job, js] : backup->jobs)
      if (js.paused) hist.pauses.push_back({clock.now(), hist.ops.size(), job, true});
    record_restored_triggers();
    last = mem.snapshot();  // rolled back on purpose: not an I7 breach
  }

  /// Redis with `replicas = 1`, over a primary and one asynchronous replica
  /// (cluster::wait_for_replica). While the replica keeps up, every WAIT is
  /// answered at once and nothing changes. Once it lags (replica_lags),
  /// writes apply on the primary only: `replica` holds what the replica had
  /// when the lag began, and a handle's WAIT after a write of its own
  /// connection falls short, with the consequences redis_store draws from a
  /// short WAIT (sim::store: a won claim released and thrown as
  /// not_replicated, a renewal thrown and not counted, a finish kept on the
  /// primary with a notice). A failover (fail_over) brings back `replica`.
  bool replicas = false;
  /// How long a WAIT that falls short blocks its caller (redis_options::
  /// replica_timeout, 200 ms by default). 0 here: blocked calls nest in the
  /// sim, and a backup whose every claim batch waits it out polls for ever
  /// inside another instance's wait, holding that one up far longer than a
  /// real process would be (cluster::store_round_trip says the same).
  duration replica_timeout{0};
  std::optional<rules::run_table> replica;
  /// Which lag this is: a handle remembers the lag in which its connection
  /// last wrote (WAIT counts the replicas that have that connection's writes).
  std::uint64_t lag_epoch = 0;
  time_point lag_since{};
  std::size_t lag_since_op = 0;  ///< hist.ops' size when the lag began
  /// Finishes applied on the primary since the lag began, with their status:
  /// the replica lacks them, and a failover brings their runs back as running.
  std::map<run_key, run_status> unreplicated_ends;
  /// Each failover: when, how many store ops and faults came before it, and
  /// the runs whose finish it lost — the one case in which the design
  /// accepts a second run of a slot (with a notice: check_rerun_after_failover).
  struct failover_record {
    time_point at{};
    std::size_t ops = 0;
    std::size_t faults = 0;  ///< index of the failover's fault in hist.faults
    std::set<run_key> lost_finishes;
    std::size_t lag_ops = 0;  ///< how many store ops came before the lag it ended began: ops from there are forgotten
  };
  std::vector<failover_record> failovers;
  std::uint64_t unreplicated_claims = 0;      ///< claim calls thrown as not_replicated (their wins released)
  std::uint64_t unreplicated_heartbeats = 0;  ///< heartbeat calls thrown as not_replicated (renewals not counted)
  std::uint64_t unreplicated_finishes = 0;    ///< finishes recorded on the primary only
  std::uint64_t unreplicated_other = 0;       ///< triggers, pauses, resumes, stops, purges thrown as not_replicated
  std::uint64_t failovers_without_loss = 0;   ///< failovers that found the replica exactly as the primary

  [[nodiscard]] bool lagging() const { return replica.has_value(); }
  static constexpr std::string_view failover_fault = "store failed over to its lagging replica";
  static std::string failover_job_fault(std::string_view job) {
    return "store failed over: job " + std::string(job) + "'s writes since the lag lost";
  }
  /// From now on the replica receives nothing (a slow link, a replica busy
  /// loading, a partition between the two); the primary goes on.
  void replica_lags() {
    if (!replicas || replica) return;
    replica = mem.snapshot();
    ++lag_epoch;
    lag_since = clock.now();
    lag_since_op = hist.ops.size();
    hist.faults.push_back({clock.now(), "replica lags: writes reach the primary only"});
  }
  /// The replica receives everything it missed: nothing is lost.
  void replica_catches_up() {
    if (!replica) return;
    replica.reset();
    unreplicated_ends.clear();
    hist.faults.push_back({clock.now(), "replica caught up with the primary"});
  }
  /// The primary dies and the replica is promoted: the store is what the
  /// replica had when the lag began. Redis cannot tell: the marker key was
  /// replicated with the rest, so the marker is the one every handle knows
  /// (rules::roll_back, as an unnoticed restore); only a fence a handle saw
  /// in an answer since the lag began (a claim won and released) is above
  /// a restored counter and proves the loss at its next claim (prove).
  /// What a failover here cannot be: one after a loss noticed, unproven or
  /// not yet noticed since the lag began (a new marker written on the
  /// primary alone, which the handles knew, would come back as another
  /// one: a different case) — then the replica catches up instead, and this
  /// returns false.
  bool fail_over() {
    if (!replica) return false;
    if (mem.lost_at() != replica->lost_at || marker_gone || !unproven.empty()) {
      replica_catches_up();
      return false;
    }
    failover_record f{clock.now(), hist.ops.size(), hist.faults.size(), {}, lag_since_op};
    for (const auto& [run, status] : unreplicated_ends) {
      f.lost_finishes.insert(run);
      if (status == run_status::failed) failed.erase(run);  // the replica has it running: it may be retried
    }
    const std::vector<std::string> changed = changed_since(*replica);
    if (changed.empty()) ++failovers_without_loss;
    hist.faults.push_back({clock.now(), std::string(failover_fault)});
    for (const std::string& job : changed) hist.faults.push_back({clock.now(), failover_job_fault(job)});
    // Attempts won on the primary alone were released before any handler
    // started (not_replicated): the same attempt may be won again, once.
    for (auto it = winners.begin(); it != winners.end();) {
      const run_record* r = nullptr;
      if (auto j = replica->jobs.find(it->first.job); j != replica->jobs.end())
        if (auto k = j->second.runs.find(it->first.slot); k != j->second.runs.end()) r = &k->second;
      it = r == nullptr || r->attempt < it->second ? winners.erase(it) : std::next(it);
    }
    for (const auto& [job, js] : replica->jobs)
      for (const auto& [slot, r] : js.runs) won_token[r.key()] = r.token;
    hist.pauses.push_back({clock.now(), hist.ops.size(), {}, false});  // the replica's pauses, below
    for (const auto& [job, js] : replica->jobs)
      if (js.paused) hist.pauses.push_back({clock.now(), hist.ops.size(), job, true});
    mem.roll_back(std::move(*replica));
    replica.reset();
    unreplicated_ends.clear();
    failovers.push_back(std::move(f));
    record_restored_triggers();
    last = mem.snapshot();  // rolled back on purpose: not an I7 breach
    return true;
  }
  /// A finish applied on the primary: the replica lacks it while it lags.
  void finished_on_primary(const run_key& run, run_status status) {
    if (!replica) return;
    unreplicated_ends[run] = status;
    ++unreplicated_finishes;
  }
};

/// An instance's handle on the world's store. Models lease::Store,
/// lease::BatchHeartbeatStore, lease::BatchClaimStore, lease::PushStore,
/// lease::PauseStore, lease::StopStore, lease::RegistryStore,
/// lease::TriggerStore and lease::PushTriggerStore (see
/// polled_store below for a store that cannot push triggers).
/// Not thread-safe (the simulation is one thread).
class store {
 public:
  store(std::shared_ptr<world> w, std::string instance) : w_(std::move(w)), instance_(std::move(instance)) {
    w_->known_fences[instance_].clear();  // a new process remembers nothing
  }

  claim_result claim(const claim_request& req) { return std::move(claim_many(std::span(&req, 1), false).front()); }
  /// BatchClaimStore: one call (one round trip: a slow or failed call is
  /// slow or failed for the whole batch), each claim applied in order.
  std::vector<claim_result> claim_many(std::span<const claim_request> batch) { return claim_many(batch, true); }
  /// A refused heartbeat carries the handle's fence of the job, checked
  /// in the same call (Redis's heartbeat script): it may prove a loss.
  bool heartbeat(const run_key& run, std::string_view token, duration lease) {
    if (late_copy_due()) {
      const heartbeat_request req{run, std::string(token), lease};
      lose_heartbeats(std::span(&req, 1));
    }
    const std::optional<steady_point> sent = w_->steady_of ? w_->steady_of(instance_) : std::nullopt;
    arrive();
    const bool ok = w_->mem.heartbeat(run, token, lease);
    const std::size_t op = renewal(run, token, ok);
    const bool proved = !ok && w_->prove(instance_, run.job);
    if (ok) wrote();
    depart();
    if (proved) w_->record_proof(instance_, run.job, w_->fence_seen(instance_, run.job));
    if (ok && wait_falls_short()) not_replicated("heartbeat", run.job, w_->unreplicated_heartbeats);
    if (!ok) w_->refused.insert(std::string(token));  // I2 applies once the refusal reached the instance
    if (!ok) heard(op);
    if (ok) w_->acknowledged(std::string(token), sent, lease, true);
    return ok;
  }
  /// As redis_store::heartbeat_many: each renewal answered, or, when the
  /// batch failed in part (world::partial_answers, or renewals short of
  /// the replica beside refusals), partial_batch_error<bool> with the
  /// answers that reached the caller; a batch with none throws store_error.
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> batch) {
    if (late_copy_due()) lose_heartbeats(batch);
    const std::optional<steady_point> sent = w_->steady_of ? w_->steady_of(instance_) : std::nullopt;
    arrive();
    const fates fate = fates_of(w_->partial_heartbeat_faults, batch.size());
    std::vector<std::optional<bool>> answers(batch.size());
    std::vector<std::size_t> op_of(batch.size());
    std::vector<std::string> proved;
    bool applied_renewal = false;
    std::size_t lost_replies = 0, dropped = 0;
    std::set<std::string> unanswered;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const part p = fate(i);
      if (p != part::answered) unanswered.insert(batch[i].token);
      if (p == part::never_arrived) {
        ++dropped;
        continue;
      }
      const bool ok = w_->mem.heartbeat(batch[i].run, batch[i].token, batch[i].lease);
      op_of[i] = renewal(batch[i].run, batch[i].token, ok);
      applied_renewal = applied_renewal || ok;
      // The fence check runs in the script on the master: a lost reply
      // loses only the proof's report (record_proof), as a late copy's does.
      const bool proves = !ok && w_->prove(instance_, batch[i].run.job);
      if (p == part::reply_lost) {
        ++lost_replies;
        continue;
      }
      answers[i] = ok;
      if (proves) proved.push_back(batch[i].run.job);
    }
    if (applied_renewal) wrote();
    depart();
    for (const auto& job : proved) w_->record_proof(instance_, job, w_->fence_seen(instance_, job));
    std::optional<store_error> failed;
    if (fate.in_part) {
      ++w_->partial_batches;
      w_->unanswered_applied += lost_replies;
      w_->unanswered_dropped += dropped;
      // Worded to name its instance last: a fault of that instance, but
      // only of the runs it left unanswered (cluster::check_healthy_kept).
      w_->unanswered_in[w_->hist.faults.size()] = std::move(unanswered);
      w_->hist.faults.push_back({w_->clock.now(), "heartbeat batch answered in part (" +
                                                      std::to_string(batch.size() - lost_replies - dropped) + " of " +
                                                      std::to_string(batch.size()) + "; " +
                                                      std::to_string(lost_replies) + " applied, reply lost) " +
                                                      instance_});
      failed.emplace(make_error_code(lost_replies > 0 ? errc::outcome_unknown : errc::unavailable),
                     "simulated partial batch: a master of the cluster did not answer");
    }
    // redis_store WAITs only when an answer says a renewal applied; short
    // of the replica, those renewals are not counted (no answer), while
    // refusals, which need no replica, are still answered (d53fb0d).
    const bool renewed = std::find(answers.begin(), answers.end(), true) != answers.end();
    if (renewed && wait_falls_short()) {
      for (auto& a : answers)
        if (a == true) a.reset();
      const bool refusals = std::any_of(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); });
      if (!refusals) not_replicated("heartbeat", batch.front().run.job, w_->unreplicated_heartbeats);
      ++w_->unreplicated_heartbeats;
      wait_out_replica();
      w_->hist.faults.push_back({w_->clock.now(), "not replicated (refusals answered): a heartbeat of job " +
                                                      batch.front().run.job + " by " + instance_});
      if (!failed) failed.emplace(make_error_code(errc::unavailable), "simulated not_replicated beside refusals");
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (answers[i] == false) w_->refused.insert(batch[i].token);  // I2 applies once the refusal reached the instance
      if (answers[i] == false) heard(op_of[i]);
      if (answers[i] == false && failed) ++w_->partial_refusals;
      if (answers[i] == true) w_->acknowledged(batch[i].token, sent, batch[i].lease, true);
    }
    return answers_or_throw(std::move(answers), failed);
  }
  bool finish(const run_key& run, std::string_view token, run_status status) {
    if (late_copy_due()) {
      const finish_request req{run, std::string(token), status};
      lose_ends(std::span(&req, 1));
    }
    arrive();
    const bool ok = w_->mem.finish(run, token, status);
    const std::size_t op = fenced_write(store_op::kind::finish, run, token, ok);
    if (ok && status == run_status::failed) w_->failed.insert(run);
    if (ok) w_->announce(run.job, run.slot);
    if (ok) ended_on_primary(run, status, 1);
    depart();
    if (!ok) heard(op);
    return ok;
  }
  bool release(const run_key& run, std::string_view token) {
    if (late_copy_due()) {
      const finish_request req{run, std::string(token), std::nullopt};
      lose_ends(std::span(&req, 1));
    }
    arrive();
    const bool ok = w_->mem.release(run, token);
    const std::size_t op = fenced_write(store_op::kind::release, run, token, ok);
    if (ok) w_->announce(run.job);
    if (ok) wrote();  // no WAIT (redis_store::release), but later WAITs of this connection cover it
    depart();
    if (!ok) heard(op);
    return ok;
  }
  /// Finishes and releases in one round trip, each recorded and checked as
  /// its single call is. As redis_store::finish_many on a cluster with one
  /// master down (world::partial_finish_faults), the batch may be answered
  /// in part: partial_batch_error<bool> with the answers that reached the
  /// caller, each unanswered end applied with its reply lost or never
  /// received.
  std::vector<bool> finish_many(std::span<const finish_request> batch) {
    if (late_copy_due()) lose_ends(batch);
    arrive();
    const fates fate = fates_of(w_->partial_finish_faults, batch.size());
    std::vector<std::optional<bool>> out(batch.size());
    ++w_->finish_batches;
    const finish_request* first = nullptr;
    std::size_t finished = 0, lost_replies = 0, dropped = 0;
    std::vector<std::size_t> refusals;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const finish_request& f = batch[i];
      const part p = fate(i);
      if (p == part::never_arrived) {
        ++dropped;
        continue;
      }
      const bool ok = f.status ? w_->mem.finish(f.run, f.token, *f.status) : w_->mem.release(f.run, f.token);
      const std::size_t op = fenced_write(f.status ? store_op::kind::finish : store_op::kind::release, f.run, f.token,
                                          ok, w_->finish_batches);
      if (ok && f.status == run_status::failed) w_->failed.insert(f.run);
      if (ok) w_->announce(f.run.job, f.status ? std::optional(f.run.slot) : std::nullopt);
      if (ok) wrote();
      if (ok && f.status) w_->finished_on_primary(f.run, *f.status);
      if (p == part::reply_lost) {
        ++lost_replies;
        continue;
      }
      if (!ok) refusals.push_back(op);
      if (ok && f.status) {
        if (first == nullptr) first = &f;
        ++finished;
      }
      out[i] = ok;
    }
    if (first != nullptr) ended_on_primary(first->run, *first->status, finished, false);
    depart();
    for (const std::size_t op : refusals) heard(op);
    std::optional<store_error> failed;
    if (fate.in_part) {
      ++w_->partial_finish_batches;
      w_->unanswered_ends_applied += lost_replies;
      w_->unanswered_ends_dropped += dropped;
      // Worded not to end with its instance's name: a finish left
      // unanswered hinders no runner (its heartbeats go on until the end is
      // known), so it excuses no takeover (cluster::check_healthy_kept).
      w_->hist.faults.push_back({w_->clock.now(), "finish batch of " + instance_ + " answered in part (" +
                                                      std::to_string(batch.size() - lost_replies - dropped) + " of " +
                                                      std::to_string(batch.size()) + "; " +
                                                      std::to_string(lost_replies) + " applied, reply lost)"});
      // outcome_unknown even when none of them arrived, as redis_store
      // says it: the caller cannot tell, and reads each back.
      failed.emplace(make_error_code(errc::outcome_unknown),
                     "simulated partial batch: a master of the cluster did not answer");
    }
    return answers_or_throw(std::move(out), failed);
  }
  /// PushStore: this instance's listener for announced releases and ends.
  void listen_releases(release_listener f) {
    if (!f) return listen_ends({});
    listen_ends([f = std::move(f)](std::string_view job, std::optional<time_point>) { f(job); });
  }
  /// EndPushStore: the same, with the slot of a finished run.
  void listen_ends(end_listener f) {
    if (f) {
      if (listener_ == 0) listener_ = ++w_->last_listener;
      w_->listeners[listener_] = std::move(f);
    } else if (listener_ != 0) {
      w_->listeners.erase(listener_);
    }
  }
  /// TriggerStore: through the world (recorded, announced), with this
  /// instance's faults; the poll, with them too.
  time_point trigger(std::string_view job) {
    arrive();
    time_point slot = w_->trigger(std::string(job), instance_);
    const bool marker_gone = w_->marker_gone;  // read after the trigger, as after claims
    wrote();
    depart();  // a lost reply loses the marker's answer too
    if (marker_gone) slot = w_->trigger_after_notice(std::string(job), instance_);
    if (wait_falls_short()) not_replicated("trigger", job, w_->unreplicated_other);
    return slot;
  }
  std::vector<run_key> triggers(std::span<const std::string> jobs) {
    arrive();
    auto out = w_->mem.triggers(jobs);
    ++w_->trigger_polls;
    depart();
    return out;
  }
  /// PushTriggerStore: this instance's listener for triggers.
  void listen_triggers(trigger_listener f) {
    if (f) {
      if (trigger_listener_ == 0) trigger_listener_ = ++w_->last_listener;
      w_->trigger_listeners[trigger_listener_] = {instance_, std::move(f)};
    } else if (trigger_listener_ != 0) {
      w_->trigger_listeners.erase(trigger_listener_);
    }
  }
  // Reads teach the handle fences too, as redis_store's do (saw_fence):
  // once their reply has reached it.
  std::vector<run_record> unfinished(std::string_view job) {
    arrive();
    auto out = w_->mem.unfinished(job);
    depart();
    for (const run_record& r : out) w_->learn_fence(instance_, std::string(job), r.fence);
    return out;
  }
  std::optional<run_record> get(const run_key& run) {
    arrive();
    auto out = w_->mem.get(run);
    depart();
    w_->hist.news.push_back({w_->hist.events.size(), w_->hist.ops.size(), instance_, run, std::nullopt, out});
    if (out) w_->learn_fence(instance_, run.job, out->fence);
    return out;
  }
  [[nodiscard]] time_point now() const { return w_->mem.now(); }
  /// PauseStore: through the world (recorded), with this instance's faults.
  bool pause(std::string_view job) {
    arrive();
    const bool ok = w_->set_paused(std::string(job), true);
    wrote();
    depart();
    if (wait_falls_short()) not_replicated("pause", job, w_->unreplicated_other);
    return ok;
  }
  bool resume(std::string_view job) {
    arrive();
    const bool ok = w_->set_paused(std::string(job), false);
    wrote();
    depart();
    if (wait_falls_short()) not_replicated("resume", job, w_->unreplicated_other);
    return ok;
  }
  bool paused(std::string_view job) {
    arrive();
    const bool ok = w_->mem.paused(job);
    depart();
    return ok;
  }
  /// StopStore: through the world (recorded, announced), with this instance's faults.
  std::size_t stop(std::string_view job) {
    arrive();
    const std::size_t n = w_->stop(std::string(job));
    wrote();
    depart();
    if (wait_falls_short()) not_replicated("stop", job, w_->unreplicated_other);
    return n;
  }
  /// RegistryStore: counted per instance (the idle cost the property
  /// checks). It costs a round trip, but injected faults (fail_store,
  /// delay_store: "the next N calls") pass it by: they target the protocol's
  /// calls, and a registration failing costs only a later last_seen.
  void register_jobs(std::span<const job_registration> regs) {
    travel();
    w_->mem.register_jobs(regs);
    wrote();  // no WAIT of its own (redis_store), but the connection's next WAIT covers it
    ++w_->register_calls[instance_];
    w_->registered_at.emplace_back(w_->clock.now(), instance_);
    travel();
  }
  purge_result purge(std::string_view job, duration unseen_for) {
    arrive();
    purge_result r = w_->purge(std::string(job), unseen_for);
    if (r.outcome == purge_outcome::purged) wrote();
    depart();
    if (r.outcome == purge_outcome::purged && wait_falls_short()) not_replicated("purge", job, w_->unreplicated_other);
    return r;
  }
  /// Applies every request still in the network (world::in_flight) whose
  /// time has come, in the order they are due, each recorded when it is
  /// applied; true if any was. The cluster calls it as time moves.
  static bool deliver_late_copies(const std::shared_ptr<world>& w) {
    bool any = false;
    for (;;) {
      auto due = std::min_element(w->in_flight.begin(), w->in_flight.end(),
                                  [](const auto& a, const auto& b) { return a.at < b.at; });
      if (due == w->in_flight.end() || due->at > w->clock.now()) return any;
      world::late_copy c = std::move(*due);
      w->in_flight.erase(due);
      // Worded to name its instance last: its own fault, as the timeout was.
      w->hist.faults.push_back({w->clock.now(), "late copy of a " + c.what + " reached the store, sent by " + c.instance});
      ++w->late_copies_applied;
      store old(w, c.instance, old_connection{});
      c.apply(old);
      any = true;
    }
  }
  /// InspectStore: an operator's reads; no instance makes them.
  std::vector<stored_job> list_jobs() { return w_->mem.list_jobs(); }
  std::vector<run_record> list_runs(std::string_view job, std::size_t limit) { return w_->mem.list_runs(job, limit); }
  /// NoticeStore: what this handle has to tell an operator (a finish the
  /// lagging replica lacks), as redis_store's take_notices().
  std::vector<std::string> take_notices() { return std::exchange(notices_, {}); }

 private:
  struct old_connection {};
  /// The handle of `instance`'s process as it was when it sent a late
  /// copy: nothing of what the handles remember is reset.
  store(std::shared_ptr<world> w, std::string instance, old_connection) : w_(std::move(w)), instance_(std::move(instance)) {}

  /// This handle's connection wrote to the primary (world::replicas): while
  /// the replica lags, its next WAIT falls short.
  void wrote() {
    if (w_->lagging()) wrote_in_lag_ = w_->lag_epoch;
  }
  /// Whether a WAIT now would be answered by fewer replicas than asked:
  /// the replica lags and lacks a write of this connection.
  [[nodiscard]] bool wait_falls_short() const { return w_->lagging() && wrote_in_lag_ == w_->lag_epoch; }
  /// A WAIT that falls short returns only at its timeout: the caller waits
  /// while the world goes on (world::replica_timeout, 0 by default).
  void wait_out_replica() {
    if (w_->block && w_->replica_timeout > duration::zero()) w_->block(instance_, w_->clock.now() + w_->replica_timeout);
  }
  /// The store_error redis_store throws short of replicas (not_replicated
  /// compares equal to unavailable); recorded as a fault of this instance.
  [[noreturn]] void not_replicated(std::string_view what, std::string_view job, std::uint64_t& count,
                                   bool waited = false) {
    ++count;
    if (!waited) wait_out_replica();
    w_->hist.faults.push_back({w_->clock.now(), "not replicated: a " + std::string(what) + " of job " +
                                                    std::string(job) + " by " + instance_});
    throw store_error(make_error_code(errc::unavailable),
                      "simulated not_replicated: the " + std::string(what) + " of job '" + std::string(job) +
                          "' was acknowledged by 0 of 1 replicas");
  }
  /// A finish (or `count` in a batch) the primary accepted: while the
  /// replica lags, this connection's WAIT falls short and, as redis_store's
  /// check_end_replicated, the handle tells it in a notice. Told before the
  /// reply could be lost: redis_store reads a lost finish back and tells
  /// it then as "unknown".
  void ended_on_primary(const run_key& run, run_status status, std::size_t count, bool record = true) {
    wrote();
    if (record) w_->finished_on_primary(run, status);
    if (!wait_falls_short()) return;
    wait_out_replica();
    notices_.push_back("sim store: the finish of job '" + run.job + "'" +
                       (count > 1 ? " (and " + std::to_string(count - 1) + " more in its batch)" : "") +
                       " was acknowledged by 0 of 1 replicas; it is recorded on the master, but a failover before "
                       "the replicas catch up would bring the run back as running, and a backup would run its slot "
                       "again after its lease");
  }

  /// What became of one element of a batch answered in part.
  enum class part : unsigned char { answered, reply_lost, never_arrived };
  /// Element i's fate under `pattern`: its two bits, 0 or 1 answered, 2
  /// applied with its reply lost, 3 never arrived.
  static part part_of(std::uint64_t pattern, std::size_t i) {
    switch ((pattern >> (2 * (i % 32))) & 3U) {
      case 2: return part::reply_lost;
      case 3: return part::never_arrived;
      default: return part::answered;
    }
  }
  /// The fate of each element of one batch: answered, unless the batch is
  /// answered in part by `pattern`. (Plain values, not an optional pattern:
  /// g++ 12 at -O1 with ThreadSanitizer warned that the optional's value
  /// may be read uninitialized.)
  struct fates {
    bool in_part = false;
    std::uint64_t pattern = 0;
    part operator()(std::size_t i) const { return in_part ? part_of(pattern, i) : part::answered; }
  };
  /// The fates of this instance's next batch of `n` elements (next_partial).
  fates fates_of(std::map<std::string, std::deque<world::partial_answers>>& faults, std::size_t n) {
    if (const std::optional<std::uint64_t> split = next_partial(faults, n)) return {true, *split};
    return {};
  }
  /// The pattern that answers this batch of `n` elements in part, if this
  /// instance has such a fault waiting in `faults` and the batch has two or
  /// more (one element alone fails whole, which fail_store models):
  /// consumed here. The pattern is adjusted so that at least one element is
  /// answered and one is not: otherwise it would not be a partial batch.
  std::optional<std::uint64_t> next_partial(std::map<std::string, std::deque<world::partial_answers>>& faults,
                                            std::size_t n) {
    auto it = faults.find(instance_);
    if (n < 2 || it == faults.end() || it->second.empty()) return std::nullopt;
    std::uint64_t pattern = it->second.front().pattern;
    // A varying fault meets other fates in its next batch (random
    // histories); a fixed one fails the same positions of every batch.
    if (it->second.front().varies) it->second.front().pattern = std::rotl(pattern, 13);
    if (--it->second.front().batches <= 0) it->second.pop_front();
    bool answered = false, unanswered = false;
    for (std::size_t i = 0; i < n; ++i) (part_of(pattern, i) == part::answered ? answered : unanswered) = true;
    const auto set = [&](std::size_t i, std::uint64_t bits) {
      pattern = (pattern & ~(std::uint64_t{3} << (2 * (i % 32)))) | (bits << (2 * (i % 32)));
    };
    if (!answered) set(0, 0);
    if (!unanswered) set(n - 1, 2 + (pattern >> 63));  // lost reply or never arrived, by the top bit
    return pattern;
  }

  /// Whether this instance's next protocol call (a claim, or not) is one
  /// whose request will reach the store only after the caller gave up
  /// (cluster::late_copy_store).
  [[nodiscard]] bool late_copy_due(bool claim = false) const {
    auto it = w_->late_copy_faults.find(instance_);
    return it != w_->late_copy_faults.end() && !it->second.empty() && (claim || !it->second.front().claims_only);
  }
  /// The call times out: the caller waits out the timeout (the world goes
  /// on) and fails, while its request stays in the network, to be applied
  /// by `apply` a while after the failure. Always throws.
  [[noreturn]] void lose_in_network(std::string what, std::function<void(store&)> apply) {
    auto& q = w_->late_copy_faults[instance_];
    const world::late_copy_fault f = q.front();
    if (--q.front().calls <= 0) q.pop_front();
    travel();
    // "hung": it holds up the world as a hung call does (the checks read it so).
    w_->hist.faults.push_back({w_->clock.now(), "hung call (a " + what + ", still in the network) " + instance_});
    if (w_->block) w_->block(instance_, w_->clock.now() + f.timeout);
    w_->in_flight.push_back({w_->clock.now() + f.later, instance_, std::move(what), std::move(apply)});
    throw store_error(make_error_code(f.code), "simulated timeout: the request is still in the network");
  }
  /// A late copy's renewals, judged as the store finds the runs then; the
  /// refusal reaches nobody (world::refused is what an instance heard).
  void lose_heartbeats(std::span<const heartbeat_request> batch) {
    std::vector<std::uint64_t> fences;
    for (const auto& req : batch) fences.push_back(w_->fence_seen(instance_, req.run.job));
    lose_in_network(batch.size() > 1 ? "batch of heartbeats" : "heartbeat",
                    [copy = std::vector<heartbeat_request>(batch.begin(), batch.end()), fences](store& h) {
                      for (std::size_t i = 0; i < copy.size(); ++i) {
                        const bool ok = h.w_->mem.heartbeat(copy[i].run, copy[i].token, copy[i].lease);
                        h.renewal(copy[i].run, copy[i].token, ok);
                        if (!ok) h.w_->prove(h.instance_, copy[i].run.job, fences[i]);
                      }
                    });
  }
  /// A late copy of finishes and releases.
  void lose_ends(std::span<const finish_request> batch) {
    lose_in_network(batch.size() > 1 ? "batch of finishes" : batch.front().status ? "finish" : "release",
                    [copy = std::vector<finish_request>(batch.begin(), batch.end())](store& h) {
                      for (const finish_request& f : copy) {
                        const bool ok = f.status ? h.w_->mem.finish(f.run, f.token, *f.status)
                                                 : h.w_->mem.release(f.run, f.token);
                        h.fenced_write(f.status ? store_op::kind::finish : store_op::kind::release, f.run, f.token, ok);
                        if (ok && f.status == run_status::failed) h.w_->failed.insert(f.run);
                        if (ok) h.w_->announce(f.run.job, f.status ? std::optional(f.run.slot) : std::nullopt);
                        // Nobody WAITs for it (its reply is never read), and nobody is told.
                        if (ok && f.status) h.w_->finished_on_primary(f.run, *f.status);
                      }
                    });
  }

  /// Claims in one round trip: with loss_beside_claims, the claims run on
  /// whatever the store holds, the marker is read after them, and the
  /// reply, if it arrives, brings the marker's answer to hold them to
  /// (beside_loss). A loss may land between the commands (loss_inside_claims).
  std::vector<claim_result> claim_many(std::span<const claim_request> batch, bool batched) {
    for (const auto& req : batch) w_->claim_first_sent.try_emplace(req.token, w_->clock.now());
    const std::optional<steady_point> sent = w_->steady_of ? w_->steady_of(instance_) : std::nullopt;
    if (late_copy_due(true)) {
      // The fences the claims carry are the handle's as it sends them.
      std::vector<std::uint64_t> fences;
      for (const auto& req : batch) fences.push_back(w_->fence_seen(instance_, req.run.job));
      lose_in_network(batched ? "batch of claims" : "claim",
                      [copy = std::vector<claim_request>(batch.begin(), batch.end()), fences](store& h) {
                        for (std::size_t i = 0; i < copy.size(); ++i) {
                          h.w_->prove(h.instance_, copy[i].run.job, fences[i]);
                          if (h.apply_claim(copy[i]).outcome == claim_outcome::won) ++h.w_->late_claim_wins;
                        }
                      });
    }
    arrive();
    const std::optional<time_point> sent_lost = known_lost_;
    if (batched) ++w_->claim_batches;
    std::optional<std::size_t> loss_after;
    if (auto it = w_->loss_inside_claims.find(instance_); it != w_->loss_inside_claims.end()) {
      // A store that notices a loss inside each operation answers the
      // claims after it `quarantined`, and those before it were won before
      // the loss, as wins a moment before any loss are: there it lands
      // before the first claim, the one place where it is news.
      loss_after = w_->loss_beside_claims ? it->second : 0;
      w_->loss_inside_claims.erase(it);
    }
    // A batch answered in part (world::partial_answers): the marker's
    // master answers, some claims' masters do not.
    const fates fate = batched ? fates_of(w_->partial_claim_faults, batch.size()) : fates{};
    std::vector<claim_result> out;
    out.reserve(batch.size());
    std::vector<std::pair<std::string, std::uint64_t>> proofs;  // (job, the fence that proved its loss)
    for (const auto& req : batch) {
      if (loss_after == out.size()) w_->lose_state();
      const part p = fate(out.size());
      if (p == part::never_arrived) {
        out.emplace_back();  // no answer: never read
        continue;
      }
      // The handle's fence of the job travels with the claim, checked
      // first, in the same atomic step (Redis: inside the claim script).
      // A lost reply loses only the proof's report, as a heartbeat's does.
      if (w_->prove(instance_, req.run.job) && p == part::answered)
        proofs.emplace_back(req.run.job, w_->fence_seen(instance_, req.run.job));
      out.push_back(apply_claim(req, batched ? w_->claim_batches : 0));
    }
    if (loss_after && *loss_after >= out.size()) w_->lose_state();
    const bool marker_gone = w_->marker_gone;  // read after the claims
    depart();  // a lost reply throws here: the marker's answer is lost with it
    // The reply arrived: the handle learns the fences in it, and sends
    // each proof to the marker script (a call of its own).
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (fate(i) == part::answered && out[i].record.job == batch[i].run.job)
        w_->learn_fence(instance_, batch[i].run.job, out[i].record.fence);
    if (w_->loss_beside_claims && marker_gone) w_->notice_loss(instance_);
    for (const auto& [job, fence] : proofs) w_->record_proof(instance_, job, fence);
    if (w_->loss_beside_claims) {
      known_lost_ = w_->mem.lost_at();
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (fate(i) == part::answered) out[i] = beside_loss(batch[i], std::move(out[i]), sent_lost);
    }
    if (fate.in_part) answer_in_part(batch, std::move(out), fate.pattern, sent);  // throws
    if (w_->replicas) wait_for_replica(batch, out);
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (starts_handler(batch[i], out[i])) w_->acknowledged(batch[i].token, sent, batch[i].lease);
    return out;
  }

  /// The end of a claim batch answered in part, as redis_store::claim_many
  /// ends it: the answered claims wait for the replica as a whole batch
  /// would (short: the call throws not_replicated, every claim resent),
  /// then the call throws partial_batch_error<claim_result> with them.
  [[noreturn]] void answer_in_part(std::span<const claim_request> batch, std::vector<claim_result> out,
                                   std::uint64_t split, std::optional<steady_point> sent) {
    std::vector<claim_request> asked;
    std::vector<claim_result> answered;
    std::size_t lost_replies = 0, dropped = 0;
    std::set<std::string> unanswered;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const part p = part_of(split, i);
      if (p == part::answered) {
        asked.push_back(batch[i]);
        answered.push_back(out[i]);
        continue;
      }
      unanswered.insert(batch[i].token);
      ++(p == part::reply_lost ? lost_replies : dropped);
    }
    ++w_->partial_claim_batches;
    w_->unanswered_claims_applied += lost_replies;
    w_->unanswered_claims_dropped += dropped;
    // Named after its instance, last: a fault of that instance, but it
    // hinders only the runs it left unanswered (cluster::check_healthy_kept).
    w_->unanswered_in[w_->hist.faults.size()] = std::move(unanswered);
    w_->hist.faults.push_back({w_->clock.now(), "claim batch answered in part (" + std::to_string(asked.size()) +
                                                    " of " + std::to_string(batch.size()) + "; " +
                                                    std::to_string(lost_replies) + " applied, reply lost) " +
                                                    instance_});
    if (w_->replicas) wait_for_replica(asked, answered);
    std::vector<std::optional<claim_result>> answers(batch.size());
    for (std::size_t i = 0, k = 0; i < batch.size(); ++i) {
      if (part_of(split, i) != part::answered) continue;
      if (starts_handler(batch[i], out[i])) w_->acknowledged(batch[i].token, sent, batch[i].lease);
      answers[i] = std::move(answered[k++]);
    }
    throw partial_batch_error<claim_result>(
        make_error_code(lost_replies > 0 ? errc::outcome_unknown : errc::unavailable),
        "simulated partial batch: the master of " + std::to_string(batch.size() - asked.size()) +
            " claims' jobs did not answer",
        std::move(answers));
  }

  /// What redis_store::claim and claim_many do after the reply, with
  /// `replicas = 1`: they WAIT only if a claim would start a handler (a
  /// win, or a resend answered `running` with its own token, whose
  /// write_before_wait heartbeat is a write too). WAIT counts the replicas that have every write of this connection, so
  /// a batch whose claims wrote nothing still falls short if an earlier
  /// call of this handle wrote during the lag. Short: each claim that would
  /// start a handler is released (by the handle, right after) and the call
  /// throws unavailable (redis_errc::not_replicated) — no handler starts.
  void wait_for_replica(std::span<const claim_request> batch, const std::vector<claim_result>& out) {
    bool starts = false;
    for (std::size_t i = 0; i < batch.size(); ++i) starts = starts || starts_handler(batch[i], out[i]);
    if (!starts) return;
    wrote();
    if (!wait_falls_short()) return;
    wait_out_replica();  // the win stays in the store meanwhile
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!starts_handler(batch[i], out[i])) continue;
      // Not announced here, although redis_store's release publishes it:
      // with no WAIT timeout in the sim (world::replica_timeout) backups
      // told at once would win, fall short and release again, for ever, in
      // one instant of the fake clock. They find it at their next check.
      const bool ok = w_->mem.release(batch[i].run, batch[i].token);
      fenced_write(store_op::kind::release, batch[i].run, batch[i].token, ok);
    }
    not_replicated("claim", batch.front().run.job, w_->unreplicated_claims, true);
  }

  /// What redis_store::unless_quarantined does with the marker's answer: a
  /// loss this handle did not know of when it sent the claim (or any known
  /// loss, for a resent claim answered `running` with its own token: its
  /// first copy may have won before the loss was noticed) turns an answer
  /// inside its quarantine into `quarantined`, and a win is handed back.
  claim_result beside_loss(const claim_request& req, claim_result res, std::optional<time_point> sent_lost) {
    if (!known_lost_) return res;
    const bool resent_win = starts_handler(req, res) && res.outcome == claim_outcome::running;
    if (known_lost_ == sent_lost && !resent_win) return res;
    const auto quarantine_end = rules::quarantine_after_loss(req, res, *known_lost_);
    if (!quarantine_end) return res;
    if (starts_handler(req, res)) {
      wrote();
      ++w_->handed_back;
      if (resent_win) ++w_->resent_handed_back;
      // Ended if its slot lies inside the loss's horizon (never to run),
      // else released (a backup takes it over after the quarantine).
      const bool end = *quarantine_end == time_point::max();
      const bool ok = end ? w_->mem.finish(req.run, req.token, run_status::interrupted)
                          : w_->mem.release(req.run, req.token);
      fenced_write(end ? store_op::kind::finish : store_op::kind::release, req.run, req.token, ok);
      if (ok) w_->announce(req.run.job, end ? std::optional(req.run.slot) : std::nullopt);
    }
    return rules::quarantined_answer(req, *quarantine_end, res.store_now);
  }

  /// One claim against the store, recorded and checked (I3, I4, I5).
  claim_result apply_claim(const claim_request& req, std::uint64_t batch = 0) {
    // A claim on a forgotten state (a loss not yet noticed) may win what was
    // won before the loss: the store cannot know, and the handle hands it
    // back when the marker's answer arrives. What must hold is that no
    // handler runs twice (cluster::violations, I5 and I9), not that the
    // store never said `won` twice.
    const bool blind = w_->marker_gone;
    claim_result res = w_->mem.claim(req);
    store_op op = record(store_op::kind::claim, req.run, req.token);
    op.batch = batch;
    op.reason = req.reason;
    op.outcome = res.outcome;
    const time_point now = w_->mem.now();  // the store's clock: lateness is the store's to judge
    // I4: a new run is never won after deadline + 10 s, and the deadline is what the options say.
    const duration allowed = req.reason == claim_reason::catch_up ? w_->opts.catch_up : w_->opts.max_late;
    if (req.reason != claim_reason::takeover && req.deadline != req.run.slot + allowed)
      w_->violation("I4: " + to_text(req.run) + " claimed with deadline " + std::to_string(req.deadline.time_since_epoch().count()) +
                    ", not slot + " + std::to_string(allowed.count()) + " ms");
    if (res.outcome == claim_outcome::won) {
      const run_record& r = res.record;
      // (A manual run has no deadline: an operator's trigger waits for an instance.)
      if (r.attempt == 1 && req.reason != claim_reason::manual && now > req.deadline + late_tolerance)
        w_->violation("I4: " + to_text(req.run) + " won as a new run at " + std::to_string(now.time_since_epoch().count()) +
                      ", after its deadline + 10 s");
      // I5: each (run, attempt) has exactly one winner.
      if (!w_->winners.insert({req.run, r.attempt}).second && !blind)
        w_->violation("I5: " + to_text(req.run) + " attempt " + std::to_string(r.attempt) + " won twice");
      // I3: a failed handler is never retried.
      if (w_->failed.count(req.run) != 0 && !blind)
        w_->violation("I3: " + to_text(req.run) + " won again after it failed");
      w_->won_token[req.run] = req.token;
      w_->faults_at_win.emplace(req.token, w_->hist.faults.size());
    }
    w_->hist.ops.push_back(std::move(op));
    check_table();
    return res;
  }

  /// A slow call blocks the caller while the world goes on (cluster::run_blocked).
  /// An injected failure "before" throws here, having changed nothing.
  void arrive() {
    travel();
    if (world::slowness* sl = next_slow(false)) {
      const world::slowness now = *sl;
      consume_slow();
      w_->hist.faults.push_back({w_->clock.now(), std::string(now.then_fail ? "hung call " : "slow call ") + instance_});
      if (w_->block) w_->block(instance_, w_->clock.now() + now.d);
      if (now.then_fail)
        throw store_error(make_error_code(errc::unavailable), "simulated hung call: no answer before the timeout");
    }
    if (auto it = w_->failures.find(instance_); it != w_->failures.end() && it->second.calls > 0 && !it->second.applied) {
      --it->second.calls;
      w_->hist.faults.push_back({w_->clock.now(), "failed call " + instance_});
      throw store_error(make_error_code(it->second.code), "simulated store failure");
    }
  }
  /// An injected failure "after" throws once the call was applied: the reply was lost.
  void depart() {
    travel();
    if (world::slowness* sl = next_slow(true)) {
      const duration d = sl->d;
      consume_slow();
      w_->hist.faults.push_back({w_->clock.now(), "slow reply " + instance_});
      if (w_->block) w_->block(instance_, w_->clock.now() + d);
    }
    if (auto it = w_->failures.find(instance_); it != w_->failures.end() && it->second.calls > 0 && it->second.applied) {
      --it->second.calls;
      w_->hist.faults.push_back({w_->clock.now(), "failed call " + instance_});
      throw store_error(make_error_code(it->second.code), "simulated lost reply");
    }
  }
  /// Half a round trip (world::round_trip), on the way there or back: the
  /// caller waits while the rest of the world goes on.
  void travel() {
    if (w_->round_trip > duration::zero() && w_->block) w_->block(instance_, w_->clock.now() + w_->round_trip / 2);
  }
  /// The slow-call fault that applies to this call at this point (before
  /// or after applying), if any.
  world::slowness* next_slow(bool after) {
    auto it = w_->slow.find(instance_);
    if (it == w_->slow.end() || it->second.empty()) return nullptr;
    world::slowness& s = it->second.front();
    return s.applied_first == after ? &s : nullptr;
  }
  void consume_slow() {
    auto& q = w_->slow[instance_];
    if (--q.front().calls <= 0) q.pop_front();
  }
  store_op record(store_op::kind k, const run_key& run, std::string_view token) {
    store_op op;
    op.at = w_->clock.now();
    op.instance = instance_;
    op.op = k;
    op.run = run;
    op.token = std::string(token);
    op.after = w_->mem.get(run);
    return op;
  }
  std::size_t renewal(const run_key& run, std::string_view token, bool ok) {
    return fenced_write(store_op::kind::heartbeat, run, token, ok);
  }
  /// I2: after attempt n+1 is won, nothing with attempt n's token is accepted.
  /// Returns the call's index in hist.ops.
  std::size_t fenced_write(store_op::kind k, const run_key& run, std::string_view token, bool ok, std::uint64_t batch = 0) {
    store_op op = record(k, run, token);
    op.accepted = ok;
    op.batch = batch;
    if (ok && w_->won_token[run] != token)
      w_->violation("I2: " + to_text(run) + " accepted a write from " + instance_ + " with a token that is not the latest won one");
    w_->hist.ops.push_back(std::move(op));
    check_table();
    return w_->hist.ops.size() - 1;
  }
  /// The refusal recorded at `op` reached its caller (its reply was read).
  void heard(std::size_t op) {
    const store_op& o = w_->hist.ops.at(op);
    w_->hist.news.push_back({w_->hist.events.size(), w_->hist.ops.size(), instance_, o.run, op, o.after});
  }
  /// I1 (skip: at most one live run per job), I3 (attempts − handovers ≤
  /// max_attempts) and I7 (no state deleted while a claim could still arrive).
  void check_table() {
    const time_point now = w_->mem.now();  // leases and retention are on the store's clock
    rules::run_table t = w_->mem.snapshot();
    const duration retain = std::max(w_->opts.max_late, w_->opts.catch_up);
    for (const auto& [job, js] : t.jobs) {
      int live = 0;
      for (const auto& [slot, r] : js.runs) {
        if (r.live(now)) ++live;
        if (r.attempt - r.handovers > w_->opts.max_attempts)
          w_->violation("I3: " + to_text(r.key()) + " has " + std::to_string(r.attempt) + " attempts and " +
                        std::to_string(r.handovers) + " hand-overs");
      }
      if (w_->skip_mode && live > 1)
        w_->violation("I1: " + std::to_string(live) + " runs of " + job + " hold live leases at " +
                      std::to_string(now.time_since_epoch().count()));
    }
    for (const auto& [job, js] : w_->last.jobs) {
      auto j = t.jobs.find(job);
      for (const auto& [slot, r] : js.runs) {
        const bool gone = j == t.jobs.end() || j->second.runs.count(slot) == 0;
        if (gone && now <= slot + retain + late_tolerance)
          w_->violation("I7: " + to_text(r.key()) + " was deleted while a claim for it could still arrive");
      }
    }
    w_->last = std::move(t);
  }

  std::shared_ptr<world> w_;
  std::string instance_;
  std::uint64_t listener_ = 0;  ///< this handle's listener in the world, 0 when none
  std::uint64_t trigger_listener_ = 0;  ///< its trigger listener, 0 when none
  /// The loss this handle knows of, as read from the marker beside its
  /// last claim (loss_beside_claims).
  std::optional<time_point> known_lost_;
  std::uint64_t wrote_in_lag_ = 0;  ///< the lag (world::lag_epoch) in which this connection last wrote, 0: none
  std::vector<std::string> notices_;  ///< for take_notices()
};

/// lease::sim::store for a store that cannot push triggers (as SQLite): the
/// instances poll triggers() every options.trigger_poll.
class polled_store : public store {
 public:
  using store::store;
  void listen_triggers(trigger_listener) = delete;
};

static_assert(BatchHeartbeatStore<store>);
static_assert(EndPushStore<store>);
static_assert(BatchClaimStore<store>);
static_assert(BatchFinishStore<store>);
static_assert(PauseStore<store>);
static_assert(StopStore<store>);
static_assert(RegistryStore<store> && RegistryStore<polled_store>);
static_assert(PushTriggerStore<store>);
static_assert(NoticeStore<store>);
static_assert(TriggerStore<polled_store> && !PushTriggerStore<polled_store>);

}  // namespace lease::sim
