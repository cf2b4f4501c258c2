// lease/store/redis.hpp — lease::redis_store, the Store on Redis or Valkey.
//
// Each operation of doc/store-rules.md is one Lua script (store/redis/scripts.hpp)
// run with EVALSHA: one round trip, atomic on the server, on the server's
// clock (Redis TIME inside the script) unless a caller-supplied clock is
// given. All keys of a job share one hash tag (store/redis/keys.hpp), so any
// job name (braces, NULs, 10 kB) is safe and every script touches one cluster
// slot: with redis_options::cluster the store routes each job to the master
// owning its slot itself (store/redis/router.hpp), following MOVED and ASK.
// heartbeat_many(), claim_many() and finish_many() run a whole batch with
// pipelined EVALSHAs: one round trip (per master, all at once, on a cluster),
// each element still a separate atomic script (its own cluster slot).
//
// finish() and release() announce the change on the job's release channel
// (sharded pub/sub; a finish's message is its run's slot); listen_ends() and
// listen_releases() subscribe on a connection and thread of their own
// (EndPushStore, store/redis/subscriber.hpp), so a backup takes a hand-over
// over in milliseconds instead of at its next periodic check, and ends its
// watch of a finished run without asking.
//
// trigger() keeps an operator's "run it now" as the job's pending trigger, a
// field of its runs hash (so the claim script answers it atomically, in the
// job's cluster slot), and PUBLISHes the job's name on the store's trigger
// channel; listen_triggers() hears it on a thread and connection of its own
// (PushTriggerStore, store/redis/trigger_subscriber.hpp).
//
// stop() pauses a job and hands its runs over (lease end kept) in one script
// on the job's slot; register_jobs() keeps each instance's registration in
// the job's instances hash (one script per job, pipelined); purge() answers
// rules::purge in one script on the job's slot and leaves a tombstone there
// (scripts.hpp purge_lua: a purged job's fence is not taken for a loss).
//
// A loss of the server's state (restart without persistence, eviction,
// FLUSHALL, failover to a lagging replica) is detected, not believed:
// store/redis/watch.hpp says how, and why that way. Once detected, no attempt
// is won for one lease (claim_outcome::quarantined) and take_notices() says
// what happened.
//
// Link lease::redis (hiredis 0.14 or newer, found with pkg-config).
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lease/detail/string_hash.hpp"
#include "lease/error.hpp"
#include "lease/rules.hpp"
#include "lease/run.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/inspect.hpp"
#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/error.hpp"
#include "lease/store/redis/keys.hpp"
#include "lease/store/redis/router.hpp"
#include "lease/store/redis/scripts.hpp"
#include "lease/store/redis/subscriber.hpp"
#include "lease/store/redis/trigger_subscriber.hpp"
#include "lease/store/redis/url.hpp"
#include "lease/store/redis/watch.hpp"
#include "lease/time.hpp"

namespace lease {

/// How a redis_store connects, and whose clock it uses.
struct redis_options {
  /// `redis://[user:password@]host[:port][/db]`; user and password may be
  /// %-escaped. With a user, AUTH sends both (Redis 6+ ACLs). No TLS.
  std::string url = "redis://127.0.0.1:6379";
  /// Start of every key (no '{' or '}'): separates applications sharing a
  /// server. Not another prefix in use followed by ':' and a number ("lease"
  /// and "lease:5"): the keys of "lease"'s job "3:abc" and of "lease:5"'s job
  /// "abc" are the same (keys.hpp).
  std::string prefix = "lease";
  std::chrono::milliseconds connect_timeout{2000};
  /// Longest wait for one reply; past it the operation fails (unavailable, or
  /// resolved by reading back for a claim, finish or release).
  std::chrono::milliseconds command_timeout{2000};
  /// Empty (the default): the store's clock is Redis TIME, read inside each
  /// script. Set: its now() is sent with each operation instead (the
  /// conformance suite runs on lease::fake_clock this way).
  std::function<lease::time_point()> clock;
  /// After a failed connect, calls fail fast for a backoff that doubles from
  /// 25 ms up to this, so a down server is probed, not hammered.
  std::chrono::milliseconds max_backoff{1000};
  /// Non-zero: a won claim returns won only once this many replicas have
  /// acknowledged it (WAIT replicas replica_timeout; on a cluster, sent to
  /// the master that ran the claim), so a failover cannot
  /// forget a run that has started. If fewer acknowledge in time the claim is
  /// released at once (no handler starts on it; the handover is not counted
  /// against max_attempts) and claim() throws store_error unavailable
  /// (redis_errc::not_replicated): retry later. That keeps a slot from
  /// running twice at the cost of not running it while replicas lag.
  /// Heartbeats wait the same way (short of replicas, no renewal counts);
  /// a finish short of them is told in a notice (heartbeat_many, finish).
  int replicas = 0;
  /// How long a claim waits for the replicas (must be > 0: WAIT 0 blocks forever).
  std::chrono::milliseconds replica_timeout{200};
  /// Redis Cluster: route each job's scripts to the master owning its hash
  /// slot (store/redis/router.hpp). The url's node is the first seed (its
  /// credentials apply to every node; the database must be 0).
  bool cluster = false;
  /// More seed nodes, "host:port", asked for the slot map when the url's is down.
  std::vector<std::string> seeds{};
  /// The trigger listener (listen_triggers) PINGs its connection when it has
  /// heard nothing for this long, and reconnects if the PING is not answered
  /// within command_timeout: a frozen server or a partition that resets
  /// nothing keeps the socket open, and a trigger published meanwhile would
  /// wait until the next reconnect. Also the listener's only traffic while
  /// idle: one PING per instance per interval. Must be above 0.
  std::chrono::milliseconds trigger_ping_every{30000};
};

/// The Store on one Redis or Valkey server (7.0+), or on a Redis Cluster
/// (redis_options::cluster).
///
/// Connects lazily on first use; after a connection failure the next call
/// reconnects (with backoff after failed connects). Errors are
/// lease::store_error with a lease::redis_errc code that compares equal to a
/// lease::errc: unavailable (connection refused or lost, timeout, LOADING,
/// READONLY, OOM, ..., a claim not acknowledged by `replicas`), corrupt
/// (WRONGTYPE, a foreign record), invalid_argument (bad URL or prefix,
/// refused or needless credentials, a database the server lacks: each with
/// a sentence saying what to fix; URLs in messages never show credentials) and
/// outcome_unknown only when a claim, finish or release was sent, its reply
/// lost, and reading the run back failed too. A lost reply is otherwise
/// resolved: the run is read back and the token compared (doc/protocol.md §14); a
/// request proven not applied is sent once more, never blindly.
///
/// Movable (a moved-from store may only be destroyed or assigned to), not
/// copyable. Not thread-safe: one thread at a time (the scheduler calls it
/// from its loop thread); use one store per thread or process, each with its
/// own connection. The release listener (listen_releases) runs on a thread
/// and connection of the store's own; it hears the jobs this store has
/// asked about. The trigger listener (listen_triggers) likewise, hearing
/// every job of the prefix. SIGPIPE is blocked in the
/// calling thread during each exchange (store/redis/sigpipe.hpp).
class redis_store {
 public:
  /// Parses the URL and prefix (store_error invalid_argument if bad); does not connect.
  explicit redis_store(redis_options opts)
      : opts_(std::move(opts)),
        conn_(make_router(opts_)),
        watch_(std::make_unique<detail::redis::watch>()) {
    detail::redis::check_prefix(opts_.prefix);
    if (opts_.replicas < 0 || (opts_.replicas > 0 && opts_.replica_timeout.count() <= 0))
      throw store_error(make_error_code(errc::invalid_argument),
                        "lease::redis_store: replicas must be 0 or more, and replica_timeout above 0 when "
                        "replicas is set (WAIT with timeout 0 would block forever)");
    if (opts_.trigger_ping_every.count() <= 0)
      throw store_error(make_error_code(errc::invalid_argument),
                        "lease::redis_store: trigger_ping_every must be above 0 (how long the trigger listener "
                        "waits in silence before it checks its connection with a PING)");
    // Every connect checks the server before the call that connected sends
    // anything (pointers to heap objects: stable when the store moves).
    conn_->on_connect([r = conn_.get(), w = watch_.get(), prefix = opts_.prefix,
                       clock = opts_.clock](detail::redis::connection& c) {
      std::function<detail::redis::reply_ptr(const argv_t&)> elsewhere;
      if (r->clustered())  // the marker lives on the node owning the store key
        elsewhere = [r](const argv_t& m) { return std::move(r->exchange(std::span(&m, 1)).front()); };
      detail::redis::verify_on_connect(c, *w, prefix, clock ? ms(clock()) : std::string(), elsewhere);
    });
  }

  /// The claim of doc/store-rules.md. A lost reply is resolved by reading the run back.
  /// `quarantined` after a detected loss of state (watch.hpp); with
  /// options().replicas, a won claim not acknowledged by enough replicas is
  /// released and thrown as unavailable (redis_errc::not_replicated).
  claim_result claim(const claim_request& req) {
    claim_result res;
    bool written_here = true;  // a win is this connection's own write
    conn_->forget_writes();
    try {
      res = send_claim(req);
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      res = resolve_claim(req, e);
      written_here = false;  // read back, or sent again on a new connection
    }
    if (opts_.replicas > 0 && starts_handler(req, res)) {
      // A resent claim answered `running` with its own token starts a
      // handler too: its first copy must be on the replicas as a win must.
      if ((res.outcome == claim_outcome::running || !written_here) && !write_before_wait(req)) {
        last_acked_ = -1;  // no WAIT was possible: the run could not be renewed
        release_unreplicated(req);
        not_replicated(req, 1);
      }
      wait_for_replicas(req);
    }
    return res;
  }

  /// BatchClaimStore: the claims pipelined in one round trip, each its own
  /// script call, answered in order. A lost reply fails the whole batch
  /// (the scheduler resends each claim with its token, which recognises a
  /// claim that was applied). On a cluster, a master that fails (down, cut
  /// off) fails only its own claims: the call throws
  /// partial_batch_error<claim_result> with the others' answers, so one
  /// master down does not hold up the jobs of the others (each of their
  /// batches failed whole before, resent with it, and failed again until
  /// their deadlines passed). With options().replicas, one WAIT (on a
  /// cluster one per master, all at once) covers the batch when a claim in
  /// it would start a handler, as claim() waits only then; when a master
  /// that ran such a claim is short of replicas, every won claim is
  /// released and the batch throws as claim() would. (A batch that starts
  /// nothing waited before, and fell short whenever this connection had
  /// written anything while a replica lagged: every batch of a backup was
  /// thrown, the sim found. Likewise a master whose claims start nothing
  /// does not fail the batch by its lagging replica.)
  std::vector<claim_result> claim_many(std::span<const claim_request> batch) {
    if (batch.empty()) return {};
    if (batch.size() == 1) return {claim(batch.front())};
    conn_->forget_writes();
    std::vector<std::size_t> where;
    std::optional<store_error> failed;
    std::vector<std::optional<claim_result>> out = send_claims(batch, &where, &failed);
    auto starts = [&](std::size_t i) { return out[i] && starts_handler(batch[i], *out[i]); };
    bool any_starts = false;
    for (std::size_t i = 0; i < batch.size(); ++i) any_starts = any_starts || starts(i);
    if (opts_.replicas == 0 || !any_starts) return answers_or_throw(std::move(out), failed);
    const auto acked = replicated_each();
    bool short_of_replicas = false;
    for (std::size_t i = 0; i < batch.size(); ++i)
      short_of_replicas = short_of_replicas || (starts(i) && !enough(acked, where[i]));
    if (short_of_replicas) {
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (starts(i)) release_unreplicated(batch[i]);
      not_replicated(batch.front(), batch.size());
    }
    // A resent claim answered `running` with its own token: its first copy
    // was another connection's write, which the WAIT above did not cover.
    // Each waits for its own (rare: only after a lost reply); one short of
    // replicas is released, and marked so that no handler starts on it.
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!starts(i) || out[i]->outcome != claim_outcome::running) continue;
      if (!write_before_wait(batch[i]) || !replicated()) {
        release_unreplicated(batch[i]);
        out[i]->record.released = true;
      }
    }
    return answers_or_throw(std::move(out), failed);
  }

  /// What this store learnt that an operator should read (NoticeStore): its
  /// durability settings at the first connect (and after a restart), and
  /// each loss of state it detected or learnt of. Each sentence once.
  std::vector<std::string> take_notices() { return std::exchange(watch_->notices, {}); }

  /// Extends the lease to store-now + `lease` if `token` is current.
  /// A lost reply is an unavailable error: a heartbeat is safe to repeat.
  bool heartbeat(const run_key& run, std::string_view token, duration lease) {
    const heartbeat_request one{run, std::string(token), lease};
    return heartbeat_many(std::span(&one, 1)).front();
  }

  /// heartbeat() for every element, pipelined: one round trip; answers in order.
  /// With options().replicas, renewals count only once that many replicas
  /// have them (one WAIT, on a cluster one per master): a failover to a
  /// replica that missed a renewal brings back the earlier lease end, and a
  /// backup would take over a runner that believes itself renewed. Short of
  /// replicas the call throws not_replicated (unavailable): the scheduler
  /// counts no renewal, and its runners self-abort at their deadline unless
  /// a later heartbeat is replicated. On a cluster each master answers for
  /// its own renewals: those of a master short of replicas go unanswered,
  /// the others count (partial_batch_error below). One lagging replica used
  /// to void the renewals on every master (the fewest replicas of any
  /// master stood for all), so its runners on healthy masters self-aborted
  /// as if every master lagged.
  ///
  /// Failed in part — on a cluster a master down while the others answer,
  /// or renewals short of replicas beside refusals (which need none) — it
  /// throws partial_batch_error<bool> with the answers it has, so a runner
  /// on a healthy master keeps its lease and a refused one stops at once.
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> batch) {
    if (opts_.replicas > 0) conn_->forget_writes();
    std::optional<store_error> failed;
    std::vector<std::size_t> where;
    std::vector<std::optional<bool>> answers = send_heartbeats(batch, failed, &where);
    auto renewed = [&] { return std::find(answers.begin(), answers.end(), true) != answers.end(); };
    if (opts_.replicas > 0 && renewed()) {
      const auto acked = replicated_each();
      std::size_t unreplicated = 0;
      const heartbeat_request* first = nullptr;
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (answers[i] == true && !enough(acked, where[i])) {
          answers[i].reset();  // not counted: a failover could take it back
          if (first == nullptr) first = &batch[i];
          ++unreplicated;
        }
      if (!failed && first != nullptr)
        failed.emplace(replication_error(
            "heartbeat", first->run.job, unreplicated,
            "a failover could bring back the earlier lease end, so the renewal does not count: the runner "
            "stops at its lease deadline unless a later heartbeat reaches the replicas"));
    }
    return answers_or_throw(std::move(answers), failed);
  }

  /// Ends the current attempt with `status` (success or failed) if `token` is current.
  /// With options().replicas, a finish the replicas do not acknowledge in
  /// time stays recorded on the master (it cannot be taken back) and a
  /// notice says so: a failover before they catch up would bring the run
  /// back as running, and a backup would run its slot again.
  bool finish(const run_key& run, std::string_view token, run_status status) {
    if (status == run_status::running) return false;  // the rules refuse it; no round trip
    if (opts_.replicas > 0) conn_->forget_writes();
    bool ok = false;
    bool read_back = false;
    try {
      ok = send_finish(run, token, status);
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      read_back = true;
      ok = resolve_finish(run, token, status, e);
    }
    if (ok) check_end_replicated(run.job, 1, read_back);
    return ok;
  }

 private:
  /// Each element's answer, or nullopt where its master failed (a cluster's
  /// other masters still answer; `failed` says why). On one server a
  /// failure is thrown.
  /// `where`, if given: the node each element ran on (router::wait_each).
  std::vector<std::optional<bool>> send_heartbeats(std::span<const heartbeat_request> batch,
                                                   std::optional<store_error>& failed,
                                                   std::vector<std::size_t>* where = nullptr) {
    if (batch.empty()) return {};
    const std::string now = now_arg();
    std::vector<const detail::redis::job_keys*> keys;
    std::vector<std::string> nums;  // slot, lease and known fence of each element
    keys.reserve(batch.size());
    nums.reserve(batch.size() * 3);
    conn_->open();  // connect (and check the server) before reading what this handle knows
    for (const auto& h : batch) {
      keys.push_back(&keys_of(h.run.job));
      nums.push_back(ms(h.run.slot));
      nums.push_back(std::to_string(h.lease.count()));
      nums.push_back(std::to_string(watch_->fence_of(h.run.job)));
    }
    auto replies = conn_->eval_each(
        detail::redis::script::heartbeat, batch.size(),
        [&](std::size_t i, detail::redis::argv_t& a) {
          push_keys(a, *keys[i], detail::redis::script::heartbeat);
          a.insert(a.end(), {now, nums[3 * i], batch[i].token, nums[3 * i + 1], nums[3 * i + 2]});
        },
        failed, where);
    std::vector<std::optional<bool>> out;
    out.reserve(batch.size());
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (!replies[i]) {
        out.emplace_back();
        continue;
      }
      const std::int64_t v = as_int(replies[i].get(), "heartbeat");
      if (v == 2)
        record_loss(nums[3 * i + 2], "a heartbeat of job '" + detail::redis::printable(batch[i].run.job, 80) +
                                          "' found its fence counter below fence " + nums[3 * i + 2] +
                                          " seen before: its keys were flushed, evicted or lost in a failover",
                    std::nullopt);
      out.push_back(v == 1);
    }
    return out;
  }


 public:
  /// Hands the run over: lease end = now, released, handovers + 1, if `token` is current.
  bool release(const run_key& run, std::string_view token) {
    try {
      return send_release(run, token);
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      return resolve_release(run, token, e);
    }
  }

  /// BatchFinishStore: each element exactly finish() (status set) or
  /// release() (status nullopt), pipelined in one round trip (on a cluster,
  /// one per master, all at once); answers in order. Each element is its own
  /// script (atomic on its own, on its job's slot) and announces its job as
  /// the single call does. A lost reply is resolved element by element as
  /// the single calls resolve theirs (read back, resend only what is proven
  /// not applied); any store_error thrown leaves every outcome unknown. On a
  /// cluster a master that fails (down, cut off) leaves only its own
  /// elements unanswered: partial_batch_error<bool> with the others'
  /// answers, its code outcome_unknown (what was sent to that master may
  /// have been applied), so one master down does not hold up the ends of
  /// runs on the others.
  std::vector<bool> finish_many(std::span<const finish_request> batch) {
    std::vector<std::optional<bool>> out(batch.size());
    if (batch.empty()) return {};
    if (opts_.replicas > 0) conn_->forget_writes();
    bool read_back = false;
    std::optional<store_error> failed;
    std::vector<std::size_t> where(batch.size(), unknown_node);
    try {
      send_finishes(batch, out, where, failed);
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      read_back = true;
      failed.reset();
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const finish_request& f = batch[i];
        if (f.status == run_status::running) {
          out[i] = false;  // refused without a round trip
          continue;
        }
        out[i] = f.status ? resolve_finish(f.run, f.token, *f.status, e) : resolve_release(f.run, f.token, e);
      }
    }
    auto finished = [&](std::size_t i) { return out[i] == true && batch[i].status.has_value(); };
    bool any = false;
    for (std::size_t i = 0; i < batch.size(); ++i) any = any || finished(i);
    if (opts_.replicas > 0 && any) {
      // Each master answers for its own finishes: the notice names those on
      // a master short of replicas, not the whole batch (all of it when read
      // back: no WAIT can reach a lost connection's writes).
      std::map<std::size_t, std::int64_t> acked;
      if (!read_back) acked = replicated_each();
      std::size_t unreplicated = 0;
      const finish_request* first = nullptr;
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (finished(i) && (read_back || !enough(acked, where[i]))) {
          ++unreplicated;
          if (first == nullptr) first = &batch[i];
        }
      if (first != nullptr) end_not_replicated(first->run.job, unreplicated, read_back);
    }
    if (failed)
      failed.emplace(make_error_code(errc::outcome_unknown),
                     std::string(failed->what()) +
                         "; the finishes and releases left unanswered may or may not have been applied");
    return answers_or_throw(std::move(out), failed);
  }

  /// The job's running runs, whatever their lease, oldest first.
  std::vector<run_record> unfinished(std::string_view job) {
    const auto& keys = keys_of(job);
    auto reply = conn_->eval(detail::redis::script::unfinished, [&](detail::redis::argv_t& a) {
      push_keys(a, keys, detail::redis::script::unfinished);
      a.push_back("");
    });
    const redisReply* r = reply.get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements % detail::redis::record_width != 0) bad_reply("unfinished");
    std::vector<run_record> out;
    for (std::size_t i = 0; i < r->elements; i += detail::redis::record_width) {
      out.push_back(parse_record(r->element + i, job, "unfinished"));
      watch_->saw_fence(job, out.back().fence);
    }
    return out;
  }

  /// One run's record, if it has state.
  std::optional<run_record> get(const run_key& run) {
    auto reply = eval_on(detail::redis::script::get, run, {});
    const redisReply* r = reply.get();
    if (r->type == REDIS_REPLY_NIL) return std::nullopt;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != detail::redis::record_width) bad_reply("get");
    run_record rec = parse_record(r->element, run.job, "get");
    watch_->saw_fence(run.job, rec.fence);
    return rec;
  }

  /// PauseStore (doc/store-rules.md, "Pause and resume"): the job's "p"
  /// field, in its runs hash (same hash slot as its runs, so the claim script
  /// reads it atomically, on a cluster too). True if it was not paused.
  /// With `replicas` > 0, a pause (or resume) not acknowledged by that many
  /// replicas throws redis_errc::not_replicated: it is applied on the master,
  /// but a failover could forget it, and nothing would detect that (a pause
  /// leaves no fence behind). Repeat it once the replicas catch up.
  bool pause(std::string_view job) {
    conn_->forget_writes();  // its WAIT covers this call's writes, not a heartbeat's master
    const bool changed = job_script(detail::redis::script::pause, job, "pause") == 1;
    require_replicated("pause", job);
    return changed;
  }
  /// Lifts a pause; true if the job was paused.
  bool resume(std::string_view job) {
    conn_->forget_writes();  // its WAIT covers this call's writes, not a heartbeat's master
    const bool changed = job_script(detail::redis::script::resume, job, "resume") == 1;
    require_replicated("resume", job);
    return changed;
  }
  /// Whether `job` is paused.
  bool paused(std::string_view job) { return job_script(detail::redis::script::paused, job, "paused") == 1; }

  /// StopStore (doc/store-rules.md, "Stop"): pauses `job` and hands over
  /// every running, unreleased run of it as its runner's release() would but
  /// keeping its lease end, in one script on the job's slot (claims of the
  /// job are before or after it, whole). Announces the job on its release
  /// channel when it handed one over, as release() does, so backups re-check
  /// it. Returns how many. A lost reply is outcome_unknown: a second stop
  /// would hand over nothing and answer 0, hiding what the first did. With
  /// `replicas` > 0, not_replicated as for pause().
  std::size_t stop(std::string_view job) {
    conn_->forget_writes();  // its WAIT covers this call's writes, not a heartbeat's master
    std::int64_t n = 0;
    try {
      n = job_script(detail::redis::script::stop, job, "stop");
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      detail::redis::raise(redis_errc::reply_lost,
                           std::string(e.what()) + "; the stop of job '" + detail::redis::printable(job, 80) +
                               "' may or may not have been applied",
                           "look at the job (list_jobs, list_runs): stop it again if it is not paused");
    }
    if (n < 0) bad_reply("stop");
    require_replicated("stop", job);
    return static_cast<std::size_t>(n);
  }

  /// RegistryStore (doc/store-rules.md, "Registration and purge"): upserts
  /// each (job, instance) registration with its schedule and zone, last_seen
  /// = the store's clock (Redis TIME read by each job's script, or
  /// options().clock). Each job's registrations are one script on its slot
  /// (its instances hash), all pipelined: one round trip (on a cluster one
  /// per master, all at once). Safe to repeat: a lost reply is unavailable.
  void register_jobs(std::span<const job_registration> regs) {
    if (regs.empty()) return;
    // By job, in the order given (a later registration of the same instance
    // wins). Grouped through a hash index: every job is here at once, and a
    // search of the list per job made a start with 100,000 jobs quadratic.
    std::vector<std::string_view> jobs;
    std::vector<std::vector<const job_registration*>> of;
    std::unordered_map<std::string_view, std::size_t> at;
    at.reserve(regs.size());
    for (const job_registration& g : regs) {
      const auto [it, fresh] = at.try_emplace(g.job, jobs.size());
      if (fresh) {
        jobs.push_back(g.job);
        of.emplace_back();
      }
      of[it->second].push_back(&g);
    }
    std::vector<detail::redis::job_keys> keys;
    keys.reserve(jobs.size());
    for (std::string_view j : jobs) keys.push_back(detail::redis::keys_for(opts_.prefix, j));
    const std::string now = now_arg();
    (void)conn_->eval_many(detail::redis::script::register_jobs, jobs.size(), [&](std::size_t i, argv_t& a) {
      push_keys(a, keys[i], detail::redis::script::register_jobs);
      a.push_back(now);
      for (const job_registration* g : of[i]) a.insert(a.end(), {g->instance, g->schedule, g->zone});
    });
  }

  /// RegistryStore: rules::purge in one script on the job's slot (claims,
  /// stops, registrations of the job are before or after it, whole),
  /// answering in the rules' order. A purge leaves a tombstone in the job's
  /// slot (scripts.hpp purge_lua says why): a fence of the job that a handle
  /// still remembers is not taken for a loss of state. A lost reply is
  /// outcome_unknown: a second purge of a purged job answers not_found.
  purge_result purge(std::string_view job, duration unseen_for) {
    conn_->forget_writes();  // its WAIT covers this call's writes, not a heartbeat's master
    const auto keys = detail::redis::keys_for(opts_.prefix, job);
    const std::string now = now_arg(), unseen = std::to_string(unseen_for.count());
    detail::redis::reply_ptr reply;
    try {
      reply = conn_->eval(detail::redis::script::purge, [&](argv_t& a) {
        push_keys(a, keys, detail::redis::script::purge);
        a.insert(a.end(), {std::string_view(now), std::string_view(unseen)});
      });
    } catch (const detail::redis::transport_error& e) {
      if (!e.maybe_applied()) throw;
      detail::redis::raise(redis_errc::reply_lost,
                           std::string(e.what()) + "; the purge of job '" + detail::redis::printable(job, 80) +
                               "' may or may not have been applied",
                           "look for the job (list_jobs) before purging it again");
    }
    const redisReply* r = reply.get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1) bad_reply("purge");
    const std::int64_t outcome = as_int(r->element[0], "purge");
    if (outcome < 0 || outcome > static_cast<int>(purge_outcome::too_soon)) bad_reply("purge");
    purge_result res;
    res.outcome = static_cast<purge_outcome>(outcome);
    const std::size_t want = res.outcome == purge_outcome::registered ? 5
                             : res.outcome == purge_outcome::running  ? 1 + detail::redis::record_width
                                                                      : 1;
    if (r->elements != want) bad_reply("purge");
    if (res.outcome == purge_outcome::registered) res.instance = parse_registration(r->element + 1, job, "purge");
    if (res.outcome == purge_outcome::running) res.run = parse_record(r->element + 1, job, "purge");
    // The job's fence went with it: a fence this handle saw is no evidence
    // of a loss any more (the other handles' scripts read the tombstone).
    if (res.outcome == purge_outcome::purged) {
      auto it = watch_->fences.find(job);
      if (it != watch_->fences.end()) watch_->fences.erase(it);
      if (auto k = keys_.find(job); k != keys_.end()) keys_.erase(k);
    }
    if (res.outcome == purge_outcome::purged) require_replicated("purge", job);
    return res;
  }

  /// TriggerStore (doc/store-rules.md, "Trigger now"): asks for one manual
  /// run of `job` at slot = the store's clock (the claims' clock: Redis TIME,
  /// or options().clock; just past a loss's horizon, rules::trigger_slot),
  /// unless one is pending; returns the pending
  /// request's slot. One script: the job's "t" field, in its runs hash (same
  /// hash slot as its runs: a manual claim answers it atomically, on a
  /// cluster too), and a PUBLISH of the job's name on the store's trigger
  /// channel for the listeners (listen_triggers). With `replicas` > 0, a
  /// trigger not acknowledged by that many replicas throws
  /// redis_errc::not_replicated, as pause() does: it is pending on the master,
  /// but a failover could forget it unnoticed; repeating it is harmless
  /// (idempotent while pending).
  ///
  /// The store's marker is read beside the trigger, as beside a claim: a
  /// loss nothing had noticed yet (a FLUSHALL) is noticed here, and then the
  /// trigger, asked at a slot that a forgotten scheduled run may share, is
  /// asked again with the loss known: the script moves it past the loss's
  /// horizon (rules::trigger). Had this reply been lost, the trigger stays
  /// inside the horizon, and the first manual claim answers it, not run.
  time_point trigger(std::string_view job) {
    conn_->forget_writes();  // its WAIT covers this call's writes, not a heartbeat's master
    const auto& keys = keys_of(job);
    conn_->open();  // connect (and check the marker) before reading the quarantine this handle knows
    const std::optional<std::int64_t> sent_lost = watch_->lost_at;
    const std::string now = now_arg(), channel = detail::redis::trigger_channel(opts_.prefix);
    auto args = [&](argv_t& a, const std::string& lost) {
      push_keys(a, keys, detail::redis::script::trigger);
      a.insert(a.end(), {std::string_view(now), std::string_view(channel), job, std::string_view(lost)});
    };
    const std::string lost = sent_lost ? std::to_string(*sent_lost) : std::string();
    std::vector<argv_t> cmds(2);
    const std::string store_key = detail::redis::store_key(opts_.prefix);
    cmds[0] = {"EVALSHA", conn_->sha(detail::redis::script::trigger)};
    args(cmds[0], lost);
    cmds[1] = {"HMGET", store_key, "id", "lost"};  // after the script: see send_claims
    auto replies = conn_->exchange(cmds);
    detail::redis::reply_ptr reply = std::move(replies[0]);
    if (detail::redis::connection::error_code_of(reply.get()) == redis_errc::noscript)  // it did not run
      reply = conn_->eval(detail::redis::script::trigger, [&](argv_t& a) { args(a, lost); });
    time_point slot{duration{parse_i64(reply.get(), "trigger")}};
    check_marker(replies[1].get(), sent_lost);
    if (watch_->lost_at != sent_lost) {
      const std::string known = std::to_string(*watch_->lost_at);
      reply = conn_->eval(detail::redis::script::trigger, [&](argv_t& a) { args(a, known); });
      slot = time_point{duration{parse_i64(reply.get(), "trigger")}};
    }
    require_replicated("trigger", job);
    return slot;
  }

  /// TriggerStore: the pending triggers among `jobs`, in the order asked,
  /// each job once. One HGET of each job's "t" field, pipelined: one round
  /// trip (on a cluster one per master, all at once).
  std::vector<run_key> triggers(std::span<const std::string> jobs) {
    std::vector<std::string_view> names;  // each job once, in the order asked
    std::unordered_set<std::string_view> seen;  // (hashed: a poll asks for every job at once)
    seen.reserve(jobs.size());
    for (const std::string& j : jobs)
      if (seen.insert(j).second) names.push_back(j);
    std::vector<run_key> out;
    if (names.empty()) return out;
    std::vector<argv_t> cmds;
    cmds.reserve(names.size());
    for (std::string_view n : names) cmds.push_back({"HGET", keys_of(n).runs, "t"});
    auto replies = conn_->exchange(cmds);
    for (std::size_t i = 0; i < names.size(); ++i) {
      const redisReply* r = replies[i].get();
      detail::redis::connection::throw_if_error(r, "triggers");
      if (r->type == REDIS_REPLY_NIL) continue;
      out.push_back({std::string(names[i]), time_point{duration{parse_i64(r, "triggers")}}});
    }
    return out;
  }

  /// PushTriggerStore: from now on, call `f(job)` after any store's
  /// trigger(job) with this prefix (any job: the caller ignores the ones it
  /// does not have), and `f("")` each time the subscription is confirmed —
  /// the first time and after every reconnect — because what was published
  /// meanwhile was missed (the caller polls triggers() once). From a thread
  /// and connection of the store's own (trigger_subscriber.hpp); on a
  /// cluster, one connection to any node hears every master's triggers.
  /// listen_triggers({}) stops, returning after the last call of `f`.
  void listen_triggers(trigger_listener f) {
    trigger_subscriber_.reset();
    if (f)
      trigger_subscriber_ = std::make_unique<detail::redis::trigger_subscriber>(
          conn_->settings(), detail::redis::trigger_channel(opts_.prefix), std::move(f),
          conn_->clustered() ? conn_->seeds() : std::vector<detail::redis::endpoint>{conn_->settings().where},
          conn_->clustered(), opts_.trigger_ping_every);
  }
  /// The trigger subscriber's connections so far (0 if not listening).
  [[nodiscard]] std::uint64_t trigger_listener_connects() const noexcept {
    return trigger_subscriber_ ? trigger_subscriber_->connects() : 0;
  }
  /// Whether the trigger subscription is confirmed on its current connection.
  [[nodiscard]] bool trigger_listener_subscribed() const noexcept {
    return trigger_subscriber_ && trigger_subscriber_->subscribed();
  }

  /// InspectStore: every job this store's prefix holds a fence, a pause, a
  /// pending trigger, a run or a registration for, ordered by name (bytes),
  /// with its newest run and its registrations by instance id (bytes). The
  /// jobs' runs hashes and registrations are found with SCAN (never KEYS: it would block the server) on
  /// every master, their names read back from the keys (length-prefixed:
  /// keys.hpp), then one read-only script per job, pipelined (one round per
  /// master on a cluster). Not one snapshot: a job changed meanwhile shows
  /// its state at its own read, and a slot migrating during the SCAN may
  /// hide a job from this listing.
  std::vector<stored_job> list_jobs() {
    std::vector<std::string> names = scan_jobs();
    std::vector<stored_job> out;
    if (names.empty()) return out;
    std::vector<detail::redis::job_keys> keys;
    keys.reserve(names.size());
    for (const auto& n : names) keys.push_back(detail::redis::keys_for(opts_.prefix, n));
    auto replies = conn_->eval_many(detail::redis::script::job_summary, names.size(),
                                    [&](std::size_t i, detail::redis::argv_t& a) {
                                      push_keys(a, keys[i], detail::redis::script::job_summary);
                                      a.push_back("");
                                    });
    for (std::size_t i = 0; i < names.size(); ++i) {
      const redisReply* r = replies[i].get();
      if (r->type != REDIS_REPLY_ARRAY || (r->elements != 4 && r->elements != 4 + detail::redis::record_width) ||
          r->element[3]->type != REDIS_REPLY_ARRAY || r->element[3]->elements % 4 != 0)
        bad_reply("job_summary");
      stored_job j;
      const std::int64_t fence = as_int(r->element[0], "job_summary");
      if (fence < 0) detail::redis::raise(redis_errc::bad_record, "job_summary", "negative fence");
      j.fence = static_cast<std::uint64_t>(fence);
      j.paused = as_int(r->element[1], "job_summary") != 0;
      if (r->element[2]->type != REDIS_REPLY_NIL) j.trigger = time_point{duration{parse_i64(r->element[2], "job_summary")}};
      if (r->elements > 4) j.last_run = parse_record(r->element + 4, names[i], "job_summary");
      const redisReply* regs = r->element[3];
      for (std::size_t k = 0; k < regs->elements; k += 4)
        j.instances.push_back(parse_registration(regs->element + k, names[i], "job_summary"));
      // By instance id, bytewise (std::string's order: char_traits compares as unsigned char).
      std::sort(j.instances.begin(), j.instances.end(),
                [](const job_registration& a, const job_registration& b) { return a.instance < b.instance; });
      // Nothing left: a key emptied since the SCAN, a resumed job, a purge's tombstone.
      if (j.fence == 0 && !j.paused && !j.trigger && !j.last_run && j.instances.empty()) continue;
      j.name = std::move(names[i]);
      out.push_back(std::move(j));
    }
    return out;
  }

  /// InspectStore: the job's runs with state, newest slot first, at most
  /// `limit`. One read-only script.
  std::vector<run_record> list_runs(std::string_view job, std::size_t limit) {
    const auto keys = detail::redis::keys_for(opts_.prefix, job);
    const std::string lim = std::to_string(std::min<std::size_t>(limit, std::size_t{1} << 40));
    auto reply = conn_->eval(detail::redis::script::list_runs, [&](detail::redis::argv_t& a) {
      push_keys(a, keys, detail::redis::script::list_runs);
      a.insert(a.end(), {std::string_view(""), std::string_view(lim)});
    });
    const redisReply* r = reply.get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements % detail::redis::record_width != 0) bad_reply("list_runs");
    std::vector<run_record> out;
    out.reserve(r->elements / detail::redis::record_width);
    for (std::size_t i = 0; i < r->elements; i += detail::redis::record_width)
      out.push_back(parse_record(r->element + i, job, "list_runs"));
    return out;
  }

  /// The store's clock: the caller's clock if one was given, else Redis TIME.
  time_point now() {
    if (opts_.clock) return opts_.clock();
    const detail::redis::argv_t time{"TIME"};
    auto replies = conn_->exchange(std::span(&time, 1));
    const redisReply* r = replies.front().get();
    detail::redis::connection::throw_if_error(r, "TIME");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
      bad_reply("TIME");
    const std::int64_t s = parse_i64(r->element[0], "TIME"), us = parse_i64(r->element[1], "TIME");
    return time_point{duration{s * 1000 + us / 1000}};
  }

  /// PushStore: from now on, call `f(job)` after any store's release() or
  /// finish() of a run of a job this store has asked about (claimed,
  /// heartbeated, read) since, from a thread of the store's own.
  /// listen_releases({}) stops, returning after the last call of `f`.
  /// Announcements sent while the subscriber reconnects are lost: that
  /// costs the scheduler time (its periodic checks stay), never safety.
  /// On a cluster each job's channel is subscribed on the master serving
  /// its slot, one connection per such master, following the slot map as it
  /// changes (subscriber.hpp).
  void listen_releases(release_listener f) {
    if (!f) return listen_ends({});
    listen_ends([f = std::move(f)](std::string_view job, std::optional<time_point>) { f(job); });
  }
  /// EndPushStore: as listen_releases, and a finish names its run's slot
  /// (the finish script publishes it), so a backup watching only that run
  /// ends its watch without a takeover check.
  void listen_ends(end_listener f) {
    subscriber_.reset();
    ++listen_generation_;
    if (f)
      subscriber_ = std::make_unique<detail::redis::release_subscriber>(
          conn_->settings(), opts_.prefix, std::move(f),
          conn_->clustered() ? conn_->seeds() : std::vector<detail::redis::endpoint>{});
  }
  /// The release subscriber's connections so far (0 if not listening).
  [[nodiscard]] std::uint64_t listener_connects() const noexcept {
    return subscriber_ ? subscriber_->connects() : 0;
  }
  /// Release channels the servers confirmed on the subscriber's current connections.
  [[nodiscard]] std::uint64_t listener_channels() const noexcept {
    return subscriber_ ? subscriber_->subscribed() : 0;
  }
  /// Slot maps the release subscriber read (cluster; 0 on one server).
  [[nodiscard]] std::uint64_t listener_map_reads() const noexcept {
    return subscriber_ ? subscriber_->map_reads() : 0;
  }

  [[nodiscard]] const redis_options& options() const noexcept { return opts_; }
  /// Round trips to the server so far (a pipelined batch counts once; connection
  /// setup counts too; on a cluster, once per node a batch went to): for
  /// metrics, and to check that batching batches.
  [[nodiscard]] std::uint64_t round_trips() const noexcept { return conn_->round_trips(); }
  /// Cluster redirections followed so far (MOVED, ASK), and slot map reads.
  [[nodiscard]] std::uint64_t moved() const noexcept { return conn_->moved(); }
  [[nodiscard]] std::uint64_t asked() const noexcept { return conn_->asked(); }
  [[nodiscard]] std::uint64_t slot_map_reads() const noexcept { return conn_->refreshes(); }

 private:
  using argv_t = detail::redis::argv_t;

  static std::unique_ptr<detail::redis::router> make_router(const redis_options& o) {
    detail::redis::connection_settings s{detail::redis::parse_url(o.url), o.connect_timeout, o.command_timeout,
                                         std::chrono::milliseconds{25}, o.max_backoff};
    auto bad = [](const std::string& why) {
      throw store_error(make_error_code(errc::invalid_argument), "lease::redis_store: " + why);
    };
    if (!o.cluster) {
      if (!o.seeds.empty()) bad("seeds are for a cluster: set cluster = true, or leave seeds empty");
      return std::make_unique<detail::redis::router>(std::move(s), false);
    }
    if (s.where.db != 0) bad("a Redis Cluster has only database 0: remove the database from the url");
    std::vector<detail::redis::endpoint> seeds{s.where};
    for (const std::string& seed : o.seeds) {
      const auto colon = seed.rfind(':');
      int port = 0;
      bool ok = colon != std::string::npos && colon > 0 && colon + 1 < seed.size();
      for (std::size_t i = ok ? colon + 1 : seed.size(); i < seed.size() && ok; ++i) {
        ok = seed[i] >= '0' && seed[i] <= '9' && port <= 65535;
        port = port * 10 + (seed[i] - '0');
      }
      if (!ok || port == 0 || port > 65535)
        bad("a seed must be \"host:port\", not '" + detail::redis::printable(seed, 100) + "'");
      detail::redis::endpoint e = s.where;
      e.host = seed.substr(0, colon);
      e.port = port;
      seeds.push_back(std::move(e));
    }
    return std::make_unique<detail::redis::router>(std::move(s), true, std::move(seeds));
  }

  /// Every job name with a runs hash or registrations under this store's
  /// prefix: SCAN MATCH "{<prefix>:*}:*" on every master (the prefix's glob
  /// characters escaped), each key decoded and kept only if it is exactly
  /// the runs or instances key keys_for gives its name (another prefix's
  /// keys, and the jobs' other keys, can match the pattern).
  /// Sorted bytewise, without duplicates (a slot that moved between masters
  /// mid-SCAN may be seen on both).
  std::vector<std::string> scan_jobs() {
    conn_->open();
    std::string pattern = "{";
    for (char c : opts_.prefix) {
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern.push_back('\\');
      pattern.push_back(c);
    }
    pattern += ":*}:*";
    const std::string head = "{" + opts_.prefix + ":";
    std::vector<std::string> names;
    for (std::size_t node : conn_->masters()) {
      std::string cursor = "0";
      do {
        const argv_t cmd{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
        auto replies = conn_->exchange_on(node, std::span(&cmd, 1));
        const redisReply* r = replies.front().get();
        detail::redis::connection::throw_if_error(r, "SCAN");
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY)
          bad_reply("SCAN");
        cursor.assign(r->element[0]->str, r->element[0]->len);
        const redisReply* keys = r->element[1];
        for (std::size_t i = 0; i < keys->elements; ++i) {
          if (keys->element[i]->type != REDIS_REPLY_STRING) bad_reply("SCAN");
          const std::string_view key(keys->element[i]->str, keys->element[i]->len);
          if (auto job = job_of(key, head)) names.push_back(std::move(*job));
        }
      } while (cursor != "0");
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  /// The job whose runs or instances key `key` is
  /// ("{<prefix>:<length>:<job>}:runs", `head` = "{<prefix>:"), or nothing if
  /// it is neither, or not one of this prefix's.
  std::optional<std::string> job_of(std::string_view key, std::string_view head) const {
    if (key.substr(0, head.size()) != head) return std::nullopt;
    // The pattern matches every key of a job: skip its ended zset unread.
    if (!key.ends_with("}:runs") && !key.ends_with("}:instances")) return std::nullopt;
    std::size_t length = 0;
    const char* first = key.data() + head.size();
    const auto [end, ec] = std::from_chars(first, key.data() + key.size(), length);
    if (ec != std::errc{} || end == first || end == key.data() + key.size() || *end != ':') return std::nullopt;
    const std::size_t at = static_cast<std::size_t>(end - key.data()) + 1;
    if (key.size() < at || key.size() - at < length) return std::nullopt;
    std::string job(key.substr(at, length));
    const auto keys = detail::redis::keys_for(opts_.prefix, job);
    if (keys.runs != key && keys.instances != key) return std::nullopt;
    return job;
  }

  /// The job's keys; a listening store subscribes to the job's releases too.
  /// Remembered per job: every claim, heartbeat and finish needs them, and
  /// building three strings and taking the subscriber's lock for each was a
  /// tenth of an instance's CPU at 10,000 fires a second. The reference
  /// stays valid until the job is purged (unordered_map nodes do not move).
  [[nodiscard]] const detail::redis::job_keys& keys_of(std::string_view job) {
    auto it = keys_.find(job);
    if (it == keys_.end()) it = keys_.emplace(std::string(job), known_keys{detail::redis::keys_for(opts_.prefix, job), 0}).first;
    // A subscriber made since the job was last watched has never heard of it.
    if (subscriber_ && it->second.watched_by != listen_generation_) {
      subscriber_->watch(job);
      it->second.watched_by = listen_generation_;
    }
    return it->second.keys;
  }
  /// numkeys and the keys `which` declares (scripts.hpp key_sets), in order.
  static void push_keys(argv_t& a, const detail::redis::job_keys& k, detail::redis::script which) {
    static constexpr std::string_view counts[] = {"0", "1", "2", "3"};
    const unsigned set = detail::redis::key_sets[static_cast<unsigned>(which)];
    const std::string_view all[] = {k.runs, k.ended, k.instances};
    const std::size_t at = a.size();
    a.push_back(counts[0]);
    unsigned n = 0;
    for (unsigned i = 0; i < 3; ++i)
      if (set & (1u << i)) {
        a.push_back(all[i]);
        ++n;
      }
    a[at] = counts[n];
  }
  static std::string ms(time_point t) { return std::to_string(t.time_since_epoch().count()); }
  [[nodiscard]] std::string now_arg() const { return opts_.clock ? ms(opts_.clock()) : std::string(); }

  /// EVALSHA of a per-run script: keys of the run's job, ARGV now, slot, `rest`.
  /// `node`, if given: the node it ran on (router::eval).
  detail::redis::reply_ptr eval_on(detail::redis::script which, const run_key& run,
                                   std::initializer_list<std::string_view> rest, std::size_t* node = nullptr) {
    const auto& keys = keys_of(run.job);
    const std::string now = now_arg(), slot = ms(run.slot);
    return conn_->eval(
        which,
        [&](argv_t& a) {
          push_keys(a, keys, which);
          a.insert(a.end(), {now, slot});
          a.insert(a.end(), rest);
        },
        node);
  }

  /// EVALSHA of a per-job script (KEYS: the job's runs hash; ARGV now).
  std::int64_t job_script(detail::redis::script which, std::string_view job, const char* what) {
    const auto& keys = keys_of(job);
    auto reply = conn_->eval(which, [&](argv_t& a) {
      push_keys(a, keys, which);
      a.push_back("");
    });
    return as_int(reply.get(), what);
  }

  /// `node`, if given: the node the script ran on (router::eval).
  bool send_finish(const run_key& run, std::string_view token, run_status status, std::size_t* node = nullptr) {
    const std::string code = std::to_string(static_cast<int>(status));
    return as_int(eval_on(detail::redis::script::finish, run, {token, code}, node).get(), "finish") == 1;
  }
  bool send_release(const run_key& run, std::string_view token, std::size_t* node = nullptr) {
    return as_int(eval_on(detail::redis::script::release, run, {token}, node).get(), "release") == 1;
  }
  /// A finish whose reply was lost: applied iff the run now ended with our token and this status.
  bool resolve_finish(const run_key& run, std::string_view token, run_status status,
                      const detail::redis::transport_error& e) {
    auto rec = read_back(run, e);
    if (rec && rec->token == token && rec->status == status) return true;
    return resend([&] { return send_finish(run, token, status); }, e);
  }
  /// A release whose reply was lost: applied iff the run is released under our token.
  bool resolve_release(const run_key& run, std::string_view token, const detail::redis::transport_error& e) {
    auto rec = read_back(run, e);
    if (rec && rec->token == token && rec->status == run_status::running && rec->released) return true;
    return resend([&] { return send_release(run, token); }, e);
  }

  /// The finish and release scripts of `batch` in one exchange (one
  /// pipeline per node); answers into `out`. A running status is refused
  /// without being sent, as finish() does. A script that answered NOSCRIPT
  /// did not run: it is sent again alone, which reloads the scripts.
  /// `where`: the node each element ran on, a resent one's too: the router
  /// notes its write with the connection it went out on, so the WAIT covers
  /// it, or counts its node short if that connection is not the one the
  /// batch wrote on (router::wait_each).
  /// On a cluster, a master that fails leaves its elements unanswered
  /// (nullopt) and `failed` says why; on one server the failure is thrown.
  void send_finishes(std::span<const finish_request> batch, std::vector<std::optional<bool>>& out,
                     std::vector<std::size_t>& where, std::optional<store_error>& failed) {
    conn_->open();  // connect (and load the scripts) before reading their SHAs
    using detail::redis::script;
    std::deque<std::string> hold;  // argv_t holds views: the numbers live here
    std::vector<argv_t> cmds;
    std::vector<std::size_t> sent;  // index in batch of each command
    const std::string now = now_arg();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const finish_request& f = batch[i];
      if (f.status == run_status::running) {
        out[i] = false;  // refused without a round trip, as finish() does
        continue;
      }
      const script which = f.status ? script::finish : script::release;
      argv_t& a = cmds.emplace_back(argv_t{"EVALSHA", conn_->sha(which)});
      push_keys(a, keys_of(f.run.job), which);
      a.insert(a.end(), {std::string_view(now), std::string_view(hold.emplace_back(ms(f.run.slot))),
                         std::string_view(f.token)});
      if (f.status) a.push_back(hold.emplace_back(std::to_string(static_cast<int>(*f.status))));
      sent.push_back(i);
    }
    if (cmds.empty()) return;
    std::vector<std::size_t> nodes;
    auto replies = conn_->exchange_each(cmds, failed, &nodes);
    for (std::size_t k = 0; k < sent.size(); ++k) {
      if (!replies[k]) continue;  // its master failed: unanswered
      const finish_request& f = batch[sent[k]];
      const char* what = f.status ? "finish" : "release";
      try {
        if (detail::redis::connection::error_code_of(replies[k].get()) == redis_errc::noscript) {
          std::size_t& node = where[sent[k]];
          out[sent[k]] = f.status ? send_finish(f.run, f.token, *f.status, &node) : send_release(f.run, f.token, &node);
          continue;
        }
        where[sent[k]] = nodes[k];
        detail::redis::connection::throw_if_error(replies[k].get(), what);
        out[sent[k]] = as_int(replies[k].get(), what) == 1;
      } catch (const store_error& e) {
        // On one server the batch shares its fate (a lost reply: read back
        // by finish_many). A cluster's masters fail apart, as with claims:
        // an error reply of one (CLUSTERDOWN past the command timeout,
        // LOADING, READONLY) or its NOSCRIPT resend failing leaves only
        // this element unanswered, its outcome unknown.
        if (!conn_->clustered()) throw;
        if (!failed) failed.emplace(e);
        where[sent[k]] = unknown_node;
      }
    }
  }

  /// One round trip: the claim script with what this handle knew when
  /// sending, then the store's marker and quarantine (HMGET). The HMGET runs
  /// last on the server: if it shows no loss this handle did not know of,
  /// none came before the claim either; if it shows one, it may have come
  /// before the claim, and the answer is held to it (unless_quarantined).
  claim_result send_claim(const claim_request& req) { return std::move(*send_claims(std::span(&req, 1)).front()); }

  /// send_claim() for each request, pipelined before one HMGET: one round
  /// trip, each claim its own script call (atomic on its own), in order.
  /// `where`, if given: the node each claim ran on, a resent one's too
  /// (send_finishes says why the WAIT can cover it).
  /// Without `failed`, every claim is answered or the call throws. With it,
  /// on a cluster a master that fails (down, cut off, an error reply) fails
  /// only its own claims: nullopt, and `failed` holds the first such error.
  /// The marker's answer is needed by all (no answer could be held to a
  /// loss without it): its master failing fails the call.
  std::vector<std::optional<claim_result>> send_claims(std::span<const claim_request> batch,
                                                       std::vector<std::size_t>* where = nullptr,
                                                       std::optional<store_error>* failed = nullptr) {
    conn_->open();  // connect (and check the server) before reading what this handle knows
    const std::optional<std::int64_t> sent_lost = watch_->lost_at;
    const std::string now = now_arg(), lost = sent_lost ? std::to_string(*sent_lost) : std::string();
    // argv_t holds views: every string they point to lives in `hold` (a
    // deque: its elements never move) until the round trip is over.
    std::deque<std::string> hold;
    std::vector<const detail::redis::job_keys*> keys;
    std::vector<std::string_view> known;  // the fence this handle saw last, per claim
    std::vector<argv_t> cmds;
    known.reserve(batch.size());
    keys.reserve(batch.size());
    cmds.reserve(batch.size() + 1);
    for (const claim_request& req : batch) {
      known.push_back(hold.emplace_back(std::to_string(watch_->fence_of(req.run.job))));
      keys.push_back(&keys_of(req.run.job));
      argv_t& a = cmds.emplace_back();
      a.reserve(claim_argc);
      a.insert(a.end(), {"EVALSHA", conn_->sha(detail::redis::script::claim)});
      claim_args(a, hold, *keys.back(), req, now, known.back(), lost);
    }
    cmds.push_back({"HMGET", store_key_, "id", "lost"});
    auto replies = failed != nullptr ? conn_->exchange_each(cmds, *failed, where) : conn_->exchange(cmds, where);
    if (!replies.back() && failed != nullptr && *failed) throw **failed;  // the marker's master failed
    if (where != nullptr) where->resize(batch.size());  // the HMGET's dropped
    std::vector<std::optional<claim_result>> out(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      detail::redis::reply_ptr reply = std::move(replies[i]);
      if (!reply) continue;  // its master failed (only with `failed`)
      try {
        if (detail::redis::connection::error_code_of(reply.get()) == redis_errc::noscript) {  // it did not run
          reply = conn_->eval(
              detail::redis::script::claim,
              [&](argv_t& a) {
                claim_args(a, hold, *keys[i], batch[i], now, known[i], lost);  // reloads the scripts
              },
              where != nullptr ? &(*where)[i] : nullptr);
        }
        out[i] = parse_claim(batch[i], reply.get(), std::string(known[i]));
      } catch (const store_error& e) {
        // On one server the batch shares its fate, as with heartbeats: only
        // a cluster's masters fail apart (a malformed reply, too, is
        // trusted for no claim beside it).
        if (failed == nullptr || !conn_->clustered()) throw;
        if (!*failed) failed->emplace(e);
      }
    }
    check_marker(replies.back().get(), sent_lost);
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (out[i]) out[i] = unless_quarantined(batch[i], std::move(*out[i]), sent_lost);
    return out;
  }

  /// EVALSHA, its SHA, numkeys, at most three keys and the claim's 13 arguments.
  static constexpr std::size_t claim_argc = 3 + 3 + 13;

  /// The claim script's keys and arguments for `req`; numbers are written
  /// into `hold`, which must outlive `a`.
  void claim_args(argv_t& a, std::deque<std::string>& hold, const detail::redis::job_keys& keys,
                  const claim_request& req, std::string_view now, std::string_view known, std::string_view lost) {
    push_keys(a, keys, detail::redis::script::claim);
    auto num = [&](std::string v) -> std::string_view { return hold.emplace_back(std::move(v)); };
    a.insert(a.end(), {now, num(ms(req.run.slot)), req.runner, req.token,
                       num(std::to_string(static_cast<int>(req.reason))), num(std::to_string(req.lease.count())),
                       num(std::to_string(req.max_attempts)), num(ms(req.deadline)),
                       num(std::to_string(static_cast<int>(req.overlap))), num(std::to_string(req.history_size)),
                       num(std::to_string(req.retain.count())), known, lost});
  }

  /// The claim script's answer as a claim_result (and a loss it detected recorded).
  claim_result parse_claim(const claim_request& req, const redisReply* r, const std::string& known) {
    detail::redis::connection::throw_if_error(r, "claim");
    if (r->type != REDIS_REPLY_ARRAY ||
        (r->elements != 3 && r->elements != 4 && r->elements != 3 + detail::redis::record_width))
      bad_reply("claim");
    const std::int64_t outcome = as_int(r->element[0], "claim");
    if (outcome < 0 || outcome > static_cast<int>(claim_outcome::paused)) bad_reply("claim");
    claim_result res;
    res.outcome = static_cast<claim_outcome>(outcome);
    res.store_now = time_point{duration{as_int(r->element[1], "claim")}};
    const bool detected = as_int(r->element[2], "claim") != 0;
    res.record.job = req.run.job;
    res.record.slot = req.run.slot;
    if (r->elements == 4) {
      // Four elements: a new run won, the fourth its fence (the rest is what
      // this claim asked for: rules::claim's new run); or a quarantine, the
      // fourth its end (-1: never).
      const std::int64_t fourth = as_int(r->element[3], "claim");
      if (res.outcome == claim_outcome::won) {
        res.record.attempt = 1;
        res.record.token = req.token;
        res.record.fence = static_cast<std::uint64_t>(fourth);
        res.record.runner = req.runner;
        res.record.status = run_status::running;
        res.record.lease_end = res.store_now + req.lease;
        res.record.manual = req.reason == claim_reason::manual;
        watch_->saw_fence(req.run.job, res.record.fence);
      } else if (res.outcome == claim_outcome::quarantined) {
        res.record.lease_end = fourth < 0 ? time_point::max() : time_point{duration{fourth}};
      } else {
        bad_reply("claim");
      }
    } else if (r->elements > 4) {
      res.record = parse_record(r->element + 3, req.run.job, "claim");
      watch_->saw_fence(req.run.job, res.record.fence);
    }
    if (detected)
      record_loss(known, "a claim of job '" + detail::redis::printable(req.run.job, 80) +
                                   "' found its fence counter below fence " + known +
                                   " seen before: its keys were flushed, evicted or lost in a failover",
                  req.lease);
    return res;
  }

  /// The marker showed a quarantine the script did not know of (a loss
  /// detected just now, or by another handle since this one last looked):
  /// a win inside it must not run. Hand it back (ended or released) and
  /// answer as the rules would (rules::quarantine_after_loss).
  ///
  /// A resent claim answered `running` with its own token (its first copy
  /// was applied, its reply lost) starts a handler as a win does, so it is
  /// held to the same test against every loss this handle knows, whatever the
  /// resend told the script: the script answers `running` before it looks at
  /// a quarantine, and the first copy may have won inside one the script
  /// could not see (a FLUSHALL before it, noticed only at the reconnect).
  claim_result unless_quarantined(const claim_request& req, claim_result res, std::optional<std::int64_t> sent_lost) {
    if (!watch_->lost_at) return res;
    const bool resent_win = starts_handler(req, res) && res.outcome == claim_outcome::running;
    if (watch_->lost_at == sent_lost && !resent_win) return res;  // the script knew of every loss
    const auto quarantine_end = rules::quarantine_after_loss(req, res, time_point{duration{*watch_->lost_at}});
    if (!quarantine_end) return res;
    if (starts_handler(req, res)) {
      try {
        // A slot inside the loss's horizon is ended, never to be taken
        // over; a later one is handed to a backup for after the quarantine.
        if (*quarantine_end == time_point::max())
          (void)finish(req.run, req.token, run_status::interrupted);
        else
          (void)release(req.run, req.token);
      } catch (const store_error&) {
        // Left as it is, it expires after one lease, as the quarantine does,
        // and a takeover of it is refused by the script if inside the horizon.
      }
    }
    return rules::quarantined_answer(req, *quarantine_end, res.store_now);
  }

  /// The marker as read before a claim: gone, replaced, or a quarantine this
  /// handle did not know of, is checked with the marker script (watch.hpp).
  void check_marker(const redisReply* m, std::optional<std::int64_t> sent_lost) {
    if (m->type != REDIS_REPLY_ARRAY || m->elements != 2) return;  // an error reply: the claim's own check stands
    const redisReply* id = m->element[0];
    const redisReply* lost = m->element[1];
    const bool same_id = id->type == REDIS_REPLY_STRING && std::string_view(id->str, id->len) == watch_->marker;
    std::optional<std::int64_t> stored_lost;
    if (lost->type == REDIS_REPLY_STRING) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(lost->str, lost->str + lost->len, v);
      if (ec == std::errc{} && p == lost->str + lost->len) stored_lost = v;
    }
    if (same_id && stored_lost == sent_lost) return;
    verify_marker();
  }

  /// Reads the marker with the marker script (watch.hpp): a marker gone or
  /// replaced is a loss, noticed now; a quarantine another handle recorded is
  /// adopted. The handle's lost_at is then every loss the store knows of.
  void verify_marker() {
    const std::string fresh = make_token(watch_->rng);
    const std::string key = detail::redis::store_key(opts_.prefix), now = now_arg();
    const argv_t cmd = detail::redis::marker_command(*conn_, key, now, *watch_, fresh, detail::redis::no_proof);
    auto replies = conn_->exchange(std::span(&cmd, 1));
    const auto a = detail::redis::parse_marker(replies.front().get());
    detail::redis::adopt(*watch_, a, conn_->where(),
                         a.id == fresh ? "the marker key is gone: keys flushed (FLUSHALL, FLUSHDB) or evicted"
                                       : "the marker key holds another store's id: the server was replaced");
  }

  /// Records a loss this handle proved for a job (its counter below `fence`,
  /// decimal) store-wide, so every handle obeys the quarantine (the job's own
  /// script already recorded it for the job). A loss recorded after that
  /// fence was won explains it: the marker script then adopts that loss
  /// instead of moving every job's quarantine on.
  void record_loss(const std::string& fence, const std::string& why, std::optional<duration> lease) {
    try {
      const std::string fresh = make_token(watch_->rng);
      const std::string key = detail::redis::store_key(opts_.prefix), now = now_arg();
      const argv_t cmd = detail::redis::marker_command(*conn_, key, now, *watch_, fresh, fence);
      auto replies = conn_->exchange(std::span(&cmd, 1));
      detail::redis::adopt(*watch_, detail::redis::parse_marker(replies.front().get()), conn_->where(), why, lease);
    } catch (const store_error& e) {
      watch_->notices.push_back("redis at " + conn_->where() + " lost its state (" + why +
                                "); the job's own claims are quarantined, but recording the loss for every job "
                                "failed: " + std::string(detail::redis::without_prefix(e.what())));
    }
  }

  /// WAIT for opts_.replicas; short of them, release the claim and throw.
  void wait_for_replicas(const claim_request& req) {
    if (replicated()) return;
    release_unreplicated(req);
    not_replicated(req, 1);
  }

  /// WAIT counts the replicas that have this connection's last write. A run
  /// won by another connection's write (a first copy whose reply was lost)
  /// is covered only once this connection writes after it on the same
  /// master: a heartbeat of the run (the replication stream is in order, so
  /// a replica that has the heartbeat has the win). False if the run is no
  /// longer ours to renew.
  bool write_before_wait(const claim_request& req) {
    try {
      const heartbeat_request one{req.run, req.token, req.lease};
      std::optional<store_error> failed;
      // Not heartbeat(): its own WAIT would come first. A failed one is nullopt.
      return send_heartbeats(std::span(&one, 1), failed).front().value_or(false);
    } catch (const store_error&) {
      return false;
    }
  }

  /// Whether opts_.replicas acknowledged every write so far (one WAIT; on a
  /// cluster one per master the claims went to, all at once: router.hpp).
  bool replicated() {
    // argv_t holds views: the numbers must outlive the exchange.
    const std::string n = std::to_string(opts_.replicas), t = std::to_string(opts_.replica_timeout.count());
    const argv_t cmd{"WAIT", n, t};
    try {
      last_acked_ = conn_->wait_replicas(cmd);
    } catch (const store_error&) {
      last_acked_ = -1;  // unknown: as bad as too few
    }
    return last_acked_ >= opts_.replicas;
  }

  /// replicated(), node by node (router::wait_each): each node that ran
  /// scripts since forget_writes() -> the replicas that acknowledged its
  /// writes (-1: unknown). last_acked_ is the fewest, for the sentence.
  std::map<std::size_t, std::int64_t> replicated_each() {
    const std::string n = std::to_string(opts_.replicas), t = std::to_string(opts_.replica_timeout.count());
    const argv_t cmd{"WAIT", n, t};
    std::map<std::size_t, std::int64_t> acked;
    try {
      acked = conn_->wait_each(cmd);
    } catch (const store_error&) {
      acked.clear();  // unknown: as bad as too few
    }
    last_acked_ = -1;
    for (auto it = acked.begin(); it != acked.end(); ++it)
      last_acked_ = it == acked.begin() ? it->second : std::min(last_acked_, it->second);
    return acked;
  }

  /// Whether the writes on `node` reached opts_.replicas (an unknown node: no).
  [[nodiscard]] bool enough(const std::map<std::size_t, std::int64_t>& acked, std::size_t node) const {
    const auto it = acked.find(node);
    return it != acked.end() && it->second >= opts_.replicas;
  }

  void release_unreplicated(const claim_request& req) {
    try {
      (void)release(req.run, req.token);
    } catch (const store_error&) {
      // Unreleased, the claim expires after its lease; no handler started on it.
    }
  }

  void require_replicated(const char* what, std::string_view job) {
    if (opts_.replicas <= 0 || replicated()) return;
    not_replicated(what, job, 1,
                   "a failover could forget it (and nothing would notice); it is applied on the master: repeat it "
                   "once the replicas catch up");
  }

  /// What the replicas acknowledged in the last WAIT, for a sentence.
  [[nodiscard]] std::string acknowledged_by() const {
    return "acknowledged by " +
           (last_acked_ < 0 ? std::string("an unknown number of") : std::to_string(last_acked_)) + " of " +
           std::to_string(opts_.replicas) + " replicas within " + std::to_string(opts_.replica_timeout.count()) +
           " ms";
  }

  [[nodiscard]] store_error replication_error(const char* what, std::string_view job, std::size_t count,
                                              std::string_view consequence) const {
    return detail::redis::error(redis_errc::not_replicated,
                                "redis at " + conn_->where() + ": the " + what + " of job '" +
                                    detail::redis::printable(job, 80) + "'" +
                                    (count > 1 ? " (and " + std::to_string(count - 1) + " more in its batch)" : "") +
                                    " was " + acknowledged_by() + "; " + std::string(consequence),
                                "");
  }

  [[noreturn]] void not_replicated(const char* what, std::string_view job, std::size_t count,
                                   std::string_view consequence) const {
    throw replication_error(what, job, count, consequence);
  }

  /// A finish is applied on the master and cannot be taken back: short of
  /// replicas, the operator is told what a failover now would do.
  /// `read_back`: the finish was settled by reading it back after a lost
  /// reply: its write was on the lost connection, which no WAIT can reach
  /// (a review found a WAIT then answering for nothing), so it is told as
  /// unknown.
  void check_end_replicated(std::string_view job, std::size_t finishes, bool read_back) {
    if (opts_.replicas <= 0) return;
    if (!read_back && replicated()) return;
    end_not_replicated(job, finishes, read_back);
  }
  void end_not_replicated(std::string_view job, std::size_t finishes, bool read_back) {
    watch_->notices.push_back(
        "redis at " + conn_->where() + ": the finish of job '" + detail::redis::printable(job, 80) + "'" +
        (finishes > 1 ? " (and " + std::to_string(finishes - 1) + " more in its batch)" : "") + " was " +
        (read_back ? "settled by reading it back after a lost reply, so whether " + std::to_string(opts_.replicas) +
                         " replicas have it is unknown"
                   : acknowledged_by()) +
        "; it is recorded on the master, but a failover before the replicas catch up would bring the run back "
        "as running, and a backup would run its slot again after its lease. Check the replicas' lag "
        "(INFO replication)");
  }

  [[noreturn]] void not_replicated(const claim_request& first, std::size_t claims) {
    not_replicated("claim", first.run.job, claims,
                   "a failover could forget it, so it was released and no handler runs on it: retry once the "
                   "replicas catch up");
  }

  /// The claim's reply was lost. Our token in the run ⇒ it was applied: won
  /// (store_now is then the record's lease end − lease, when it was applied).
  /// Otherwise it had not won when read back, so sending it again — same
  /// token — lets the rules answer on the state now.
  claim_result resolve_claim(const claim_request& req, const detail::redis::transport_error& e) {
    auto rec = read_back(req.run, e);
    if (rec && rec->token == req.token) {
      // Applied. Still ours unless something ended it since (e.g. a newer run
      // started after our lease ran out): then it is finished for us.
      const bool ours = rec->status == run_status::running && !rec->released;
      const time_point applied_at = rec->lease_end - req.lease;
      claim_result res{ours ? claim_outcome::won : claim_outcome::finished, *rec, applied_at};
      if (!ours) return res;
      // The marker the lost claim was sent behind never answered: a loss
      // before the claim (a FLUSHALL, which keeps connections open) let the
      // script win a run it could not see was forgotten. Read the marker now,
      // and hold the win to every loss known, as send_claims does.
      try {
        verify_marker();
      } catch (const store_error& again) {
        detail::redis::raise(redis_errc::reply_lost,
                             std::string(e.what()) + "; the run read back is ours, but reading the store's marker "
                                                     "(has it lost its state?) failed",
                             again.what());
      }
      return unless_quarantined(req, std::move(res), std::nullopt);
    }
    // A manual claim's lost copy may have answered the trigger with a
    // refusal (overlap in skip mode, the job paused, a loss's horizon),
    // which clears it: sent again at once it would be answered `none` and
    // the trigger dropped without a word. Left unknown, the scheduler sends
    // it again after a backoff and explains a `none` then (claim_answered,
    // doc/protocol.md §14).
    if (req.reason == claim_reason::manual)
      detail::redis::raise(redis_errc::reply_lost, e.what(),
                           "the run read back is not this manual claim's, and its trigger may have been answered by "
                           "the lost copy: left to the caller to send again");
    claim_result res = resend([&] { return send_claim(req); }, e);
    // The lost copy may still have run before the resent one (it was queued
    // on the old connection): then the run holds our token and is ours.
    if (res.outcome == claim_outcome::running && res.record.token == req.token && !res.record.released)
      res.outcome = claim_outcome::won;
    return res;
  }

  /// Reads the run back after a lost reply; if even that fails, the outcome is unknown.
  std::optional<run_record> read_back(const run_key& run, const detail::redis::transport_error& lost) {
    try {
      return get(run);
    } catch (const store_error& again) {
      detail::redis::raise(redis_errc::reply_lost, std::string(lost.what()) + "; reading the run back failed",
                           again.what());
    }
  }

  /// Sends a request proven not applied once more; a second lost reply is outcome_unknown.
  template <class Send>
  auto resend(Send&& send, const detail::redis::transport_error& lost) -> decltype(send()) {
    try {
      return send();
    } catch (const detail::redis::transport_error& again) {
      if (!again.maybe_applied()) throw;
      detail::redis::raise(redis_errc::reply_lost, std::string(lost.what()) + "; then again", again.what());
    }
  }

  [[noreturn]] static void bad_reply(std::string_view what) {
    detail::redis::raise(redis_errc::bad_reply, what, "reply of unexpected shape");
  }
  static std::int64_t as_int(const redisReply* r, std::string_view what) {
    if (r->type != REDIS_REPLY_INTEGER) bad_reply(what);
    return r->integer;
  }
  static std::string_view as_str(const redisReply* r, std::string_view what) {
    if (r->type != REDIS_REPLY_STRING) bad_reply(what);
    return {r->str, r->len};
  }
  static std::int64_t parse_i64(const redisReply* r, std::string_view what) {
    std::string_view s = as_str(r, what);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size()) bad_reply(what);
    return v;
  }
  static run_record parse_record(redisReply* const* f, std::string_view job, std::string_view what) {
    run_record rec;
    rec.job = std::string(job);
    rec.slot = time_point{duration{parse_i64(f[0], what)}};
    rec.attempt = static_cast<std::uint32_t>(as_int(f[1], what));
    rec.token = std::string(as_str(f[2], what));
    rec.fence = static_cast<std::uint64_t>(as_int(f[3], what));
    rec.runner = std::string(as_str(f[4], what));
    const std::int64_t status = as_int(f[5], what);
    if (status < 0 || status > static_cast<int>(run_status::interrupted))
      detail::redis::raise(redis_errc::bad_record, what, "status out of range");
    rec.status = static_cast<run_status>(status);
    rec.lease_end = time_point{duration{as_int(f[6], what)}};
    rec.released = as_int(f[7], what) != 0;
    rec.handovers = static_cast<std::uint32_t>(as_int(f[8], what));
    rec.manual = as_int(f[9], what) != 0;
    return rec;
  }

  /// {instance, schedule, zone, last_seen} of a reply as a registration of `job`.
  static job_registration parse_registration(redisReply* const* f, std::string_view job, std::string_view what) {
    job_registration g;
    g.job = std::string(job);
    g.instance = std::string(as_str(f[0], what));
    g.schedule = std::string(as_str(f[1], what));
    g.zone = std::string(as_str(f[2], what));
    g.last_seen = time_point{duration{as_int(f[3], what)}};
    return g;
  }

  redis_options opts_;
  std::string store_key_ = detail::redis::store_key(opts_.prefix);  ///< read after every claim: built once
  std::unique_ptr<detail::redis::router> conn_;
  std::unique_ptr<detail::redis::watch> watch_;
  std::int64_t last_acked_ = 0;  ///< replicas that acknowledged the last WAIT (-1: unknown)
  /// A batch element whose node is not known (not sent): never counted as replicated.
  static constexpr std::size_t unknown_node = static_cast<std::size_t>(-1);
  /// A job's keys, and the subscriber (by listen_generation_) that watches it.
  struct known_keys {
    detail::redis::job_keys keys;
    std::uint64_t watched_by;
  };
  std::unordered_map<std::string, known_keys, detail::string_hash, std::equal_to<>> keys_;  ///< keys_of()
  std::uint64_t listen_generation_ = 1;  ///< subscribers made so far (0: none yet watched the job)
  // The subscribers last: stopped first.
  std::unique_ptr<detail::redis::release_subscriber> subscriber_;
  std::unique_ptr<detail::redis::trigger_subscriber> trigger_subscriber_;
};

static_assert(Store<redis_store>);
static_assert(BatchHeartbeatStore<redis_store>);
static_assert(BatchClaimStore<redis_store>);
static_assert(BatchFinishStore<redis_store>);
static_assert(NoticeStore<redis_store>);
static_assert(EndPushStore<redis_store>);
static_assert(InspectStore<redis_store>);
static_assert(PauseStore<redis_store>);
static_assert(PushTriggerStore<redis_store>);
static_assert(StopStore<redis_store>);
static_assert(RegistryStore<redis_store>);

}  // namespace lease
