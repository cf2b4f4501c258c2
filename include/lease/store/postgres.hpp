// lease/store/postgres.hpp — lease::postgres_store, the Store on PostgreSQL.
//
// Each operation of the store rules (doc/store-rules.md) is one round trip: claim is one call of a
// plpgsql function (lease_claim), claim_many pipelines those calls (one
// round trip, each call its own transaction), heartbeat, finish and release are single
// UPDATEs (finish_many pipelines them like claim_many), heartbeat_many is
// one UPDATE over unnest()ed arrays, get and
// unfinished (and list_jobs, list_runs: InspectStore; triggers: TriggerStore)
// single SELECTs, trigger one INSERT ... ON CONFLICT, stop and purge one
// call each of a plpgsql function (lease_stop, lease_purge: StopStore,
// RegistryStore), register_jobs one INSERT ... ON CONFLICT over unnest()ed
// arrays — all
// prepared once per connection, all atomic,
// correct at READ COMMITTED by row locks (the argument is in
// store/postgres/schema.hpp). The store's clock is the server's
// clock_timestamp() in ms, read inside the statement after its locks are
// held, unless a clock is injected (postgres_options::clock).
//
// The schema (tables and functions in a schema of its own, default "lease")
// is created or migrated at the first connection, under an advisory lock, so
// many instances starting at once migrate once (schema.hpp); a store opened
// with postgres_options::migrate = false (leasectl) creates and migrates
// nothing, and refuses a missing or older schema with a sentence instead.
//
// Loss of state (a failover to a standby that lacked the last writes, a
// restored backup, the schema dropped) is detected, not believed, the way
// redis_store does it: the handle remembers the store's marker (a random id
// written when the schema was created) and the highest fence it saw per job.
// Both travel with every claim and are checked inside lease_claim, under
// the job's lock: another marker, or a job's fence counter below one seen
// before, can only be a loss. It is recorded (lease_store.lost_at) and from
// then on no attempt is won for one lease, a slot that may have run before
// the loss never starts again (claim_outcome::quarantined), and
// take_notices() says what happened. A handle that never saw the state
// before the loss cannot tell (the same blind spot as Redis).
//
// finish() and release() announce the job with pg_notify in the same
// statement, on the channel "<schema>.lease" (a finish names its run's slot
// too), and trigger() on "<schema>.trigger"; listen_ends() and
// listen_triggers() LISTEN on one connection and thread of their own
// (EndPushStore, PushTriggerStore, store/postgres/listener.hpp).
//
// An operator's trigger (TriggerStore) is the job row's `trigger` column,
// set by one statement and answered by lease_claim's manual branch under
// the job row's lock; a run's `manual` flag is a column of its row.
//
// Link lease::postgres (libpq).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "lease/detail/printable.hpp"
#include "lease/error.hpp"
#include "lease/run.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/inspect.hpp"
#include "lease/store/postgres/connection.hpp"
#include "lease/store/postgres/error.hpp"
#include "lease/store/postgres/listener.hpp"
#include "lease/store/postgres/schema.hpp"
#include "lease/time.hpp"

namespace lease {

/// How a postgres_store connects, where it keeps its tables, whose clock it uses.
struct postgres_options {
  /// A libpq connection string or URI, passed to libpq as it is: e.g.
  /// "postgresql://app@db1:5432,db2:5432/jobs?target_session_attrs=read-write&sslmode=verify-full"
  /// or "service=jobs". Passwords are best kept in PGPASSFILE / ~/.pgpass;
  /// one in the string works too and is never printed (messages show only
  /// host, port, dbname, user, sslmode, target_session_attrs, service).
  std::string conninfo = "postgresql:///postgres";
  /// The schema holding the store's tables and functions: letters, digits
  /// and '_', at most 50 bytes, not starting with a digit. Created if
  /// missing (unless `migrate` is false).
  std::string schema = "lease";
  /// True (the default, for instances): the first connection creates the
  /// schema and its tables if missing and upgrades an older layout.
  /// False: it changes nothing, and a schema without lease tables (a typo in
  /// its name; no instance has started yet) or of an older version is an
  /// error (postgres_errc::schema_missing, schema_outdated; both unavailable:
  /// the store works once an instance that migrates has made the schema
  /// current) whose message names the schema, and the versions. For tools
  /// that look at the instances' store (leasectl: a mistyped --namespace
  /// must not leave an empty schema behind), and for roles without CREATE.
  bool migrate = true;
  /// Longest wait for each host of the conninfo to answer a connect, on the
  /// monotonic clock (a step of the wall clock does not stretch it, as it
  /// does libpq's own); then the next host is tried. Above 0. A positive
  /// connect_timeout in the conninfo (seconds, libpq's keyword) wins;
  /// PGCONNECT_TIMEOUT and a service file's do not.
  std::chrono::milliseconds connect_timeout{2000};
  /// Longest wait for one answer; past it the connection is dropped and the
  /// operation fails (unavailable, or resolved by reading back for a claim,
  /// finish or release).
  std::chrono::milliseconds command_timeout{5000};
  /// Non-zero: the session's statement_timeout (a statement stuck on a lock
  /// longer fails with SQLSTATE 57014, nothing applied: unavailable).
  std::chrono::milliseconds statement_timeout{0};
  /// Empty (the default): the store's clock is the server's clock_timestamp().
  /// Set: its now() is sent with each operation instead (the conformance
  /// suite runs on lease::fake_clock this way).
  std::function<lease::time_point()> clock;
  /// After a failed connect, calls fail fast for a backoff that doubles from
  /// 25 ms up to this, so a down server is probed, not hammered.
  std::chrono::milliseconds max_backoff{1000};
  /// The LISTEN connection (push hand-over and pushed triggers) sends
  /// `SELECT 1` when it has heard nothing for this long, and reconnects if
  /// no answer comes within command_timeout: a frozen server or a partition
  /// that resets nothing keeps the socket open while every notification is
  /// lost, and a trigger would wait for the next reconnect (which polls the
  /// pending ones). Also the listener's only traffic while idle: one query
  /// per instance per interval. Must be above 0.
  std::chrono::milliseconds listen_ping_every{30000};
};

/// The Store on PostgreSQL (12+; tested on 15).
///
/// Connects lazily on first use; after a failure the next call reconnects
/// (with backoff after failed connects). Errors are lease::store_error with a
/// lease::postgres_errc code that compares equal to a lease::errc:
/// unavailable (refused or lost connection, server restart, 57P01
/// admin_shutdown, 40001/40P01, a read-only standby 25006 after a failover,
/// statement timeout 57014, class 53), invalid_argument (bad conninfo or
/// schema name, refused credentials, missing privilege), corrupt (a schema
/// version this library does not know, a stored value it did not write), and
/// outcome_unknown only when a claim, finish or release was sent, its answer
/// lost, and reading the run back failed too. A lost answer is otherwise
/// resolved: the run is read back and the token compared; a request proven
/// not applied is sent once more, never blindly. Requests the server refused
/// whole (40001, 40P01, the schema dropped under the connection) are retried
/// once at once; the rest is left to the caller's backoff.
///
/// Movable (a moved-from store may only be destroyed or assigned to), not
/// copyable. Not thread-safe: one thread at a time; the release and trigger
/// listeners run on a thread of their own. Do not carry a store across
/// fork(): open it in the process that uses it.
class postgres_store {
 public:
  /// Checks the options (store_error invalid_argument if bad); does not connect.
  explicit postgres_store(postgres_options opts) : s_(std::make_unique<state>(std::move(opts))) {}

  postgres_store(postgres_store&&) noexcept = default;
  postgres_store& operator=(postgres_store&&) noexcept = default;
  postgres_store(const postgres_store&) = delete;
  postgres_store& operator=(const postgres_store&) = delete;
  ~postgres_store() = default;

  /// The claim of doc/store-rules.md, in one call of lease_claim. A lost answer is
  /// resolved by reading the run back.
  claim_result claim(const claim_request& req) {
    try {
      return send_claim(req);
    } catch (const detail::postgres::transport_error& e) {
      if (!e.maybe_applied()) throw;
      return resolve_claim(req, e);
    }
  }

  /// BatchClaimStore: claim() for every element, all in one round trip
  /// (pipelined), each its own call of lease_claim in its own transaction
  /// with its own answer, in order: one refused or failing claim changes
  /// nothing for the others. A lost answer is resolved for each claim it
  /// left in doubt by reading its run back, as claim() does.
  std::vector<claim_result> claim_many(std::span<const claim_request> batch) {
    if (batch.empty()) return {};
    return send_claims(batch);
  }

  /// Extends the lease to store-now + `lease` if `token` is current. A lost
  /// answer is an unavailable error: a heartbeat is safe to repeat. A
  /// refused one is checked against the fence this handle saw of the job
  /// (prove_refused).
  bool heartbeat(const run_key& run, std::string_view token, duration lease) {
    detail::postgres::params p;
    p.opt_i64(now_arg()).bytes(run.job).i64(ms(run.slot)).bytes(token).i64(lease.count());
    auto r = exec(detail::postgres::stmt::heartbeat, p, "heartbeat");
    if (affected(r.get()) == 1) return true;
    prove_refused(run.job);
    return false;
  }

  /// heartbeat() for every element in one statement (one round trip, one
  /// transaction); answers in order. A run named twice with one token is
  /// sent once, as its last element (whose lease stands, as after calls one
  /// by one), and every element of it gets that element's answer: the
  /// statement's UPDATE ... FROM would renew the row once, with either
  /// lease, and answer for one of them.
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> batch) {
    if (batch.empty()) return {};
    const std::vector<std::size_t> same = last_of_each_run(batch);
    std::vector<const heartbeat_request*> xs;
    std::vector<std::size_t> sent_at(batch.size());  // for a sent element: its place in xs
    xs.reserve(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (same[i] == i) {
        sent_at[i] = xs.size();
        xs.push_back(&batch[i]);
      }
    using detail::postgres::params;
    params p;
    p.opt_i64(now_arg());
    p.array(xs, 17, [](const heartbeat_request* h) { return h->run.job; });
    p.array(xs, 20, [](const heartbeat_request* h) { return params::be(static_cast<std::uint64_t>(ms(h->run.slot)), 8); });
    p.array(xs, 17, [](const heartbeat_request* h) { return h->token; });
    p.array(xs, 20, [](const heartbeat_request* h) { return params::be(static_cast<std::uint64_t>(h->lease.count()), 8); });
    auto r = exec(detail::postgres::stmt::heartbeat_many, p, "heartbeat_many");
    if (PQntuples(r.get()) != 1) bad_reply("heartbeat_many");
    // -1: renewed; refused: the job's fence counter (0 if it has no row).
    const std::vector<std::int64_t> answers =
        parse_i64_array(detail::postgres::row{r.get(), 0}.bytes(0), xs.size());
    std::vector<bool> out(batch.size());
    std::set<std::string_view> suspect;  // refused, with a counter below the fence this handle saw
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::int64_t a = answers[sent_at[same[i]]];
      out[i] = a < 0;
      if (a >= 0 && fence_of(batch[i].run.job) > static_cast<std::uint64_t>(a)) suspect.insert(batch[i].run.job);
    }
    for (std::string_view job : suspect) prove_refused(job);
    return out;
  }

  /// For each element of `batch`, the index of the last element naming the
  /// same run with the same token (itself, unless it is repeated later).
  static std::vector<std::size_t> last_of_each_run(std::span<const heartbeat_request> batch) {
    std::vector<std::size_t> order(batch.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key = [&](std::size_t i) {
      const heartbeat_request& h = batch[i];
      return std::tie(h.run.slot, h.run.job, h.token);
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::forward_as_tuple(key(a), a) < std::forward_as_tuple(key(b), b);
    });
    std::vector<std::size_t> last(batch.size());
    for (std::size_t k = 0; k < order.size();) {
      std::size_t end = k + 1;
      while (end < order.size() && key(order[end]) == key(order[k])) ++end;
      for (std::size_t m = k; m < end; ++m) last[order[m]] = order[end - 1];
      k = end;
    }
    return last;
  }

  /// Ends the current attempt with `status` (success, failed or interrupted)
  /// if `token` is current; announces the job to listeners.
  bool finish(const run_key& run, std::string_view token, run_status status) {
    if (status == run_status::running) return false;  // the rules refuse it; no round trip
    return end_run(run, token, checked(status));
  }

  /// Hands the run over: lease end = now, released, handovers + 1, if `token`
  /// is current; announces the job to listeners.
  bool release(const run_key& run, std::string_view token) { return end_run(run, token, std::nullopt); }

  /// BatchFinishStore: finish() (a status) or release() (none) for every
  /// element, all in one round trip (pipelined), each its own UPDATE in its
  /// own transaction with its own answer and its own NOTIFY, in order. A
  /// lost answer is resolved for each element it left in doubt by reading
  /// its run back, as finish() and release() do; when that cannot tell (one
  /// run and token twice among them), store_error outcome_unknown: every outcome
  /// unknown. A status that is not one is invalid_argument before anything
  /// is sent.
  std::vector<bool> finish_many(std::span<const finish_request> batch) {
    for (const finish_request& f : batch)
      if (f.status) (void)checked(*f.status);
    std::vector<bool> out(batch.size(), false);
    std::vector<std::size_t> sent;  // the elements that need the server: not finish(running)
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (!(batch[i].status && *batch[i].status == run_status::running)) sent.push_back(i);
    if (sent.empty()) return out;
    open();
    std::vector<detail::postgres::params> ps;
    ps.reserve(sent.size());
    for (std::size_t i : sent) ps.push_back(end_params(batch[i].run, batch[i].token, batch[i].status));
    auto reply = s_->conn.exec_prepared_pipeline(
        [&](std::size_t k) { return detail::postgres::stmt_names[static_cast<unsigned>(end_stmt(batch[sent[k]].status))]; },
        ps, "finish_many");
    std::size_t k = 0;
    for (; k < reply.results.size(); ++k) {
      const finish_request& f = batch[sent[k]];
      PGresult* r = reply.results[k].get();
      if (r != nullptr && PQresultStatus(r) == PGRES_TUPLES_OK) {
        out[sent[k]] = PQntuples(r) == 1;
        continue;
      }
      try {
        s_->conn.check(r, "finish_many", true);
        bad_reply("finish_many");
      } catch (const detail::postgres::sql_error& e) {
        // Refused whole, nothing applied: what finish() or release() would
        // do next (retry once after a reconnect or at once, or throw) it does now.
        if (!e.schema_missing() && e.code() != postgres_errc::retryable) {
          if (sent.size() == 1) throw;
          // Each element is a transaction of its own, and others of this
          // batch may have committed: "nothing applied" for the batch would
          // have their finishes resent and refused, and recorded results
          // reported lost (found by a review). Each is read back instead.
          detail::postgres::raise(postgres_errc::reply_lost,
                                  std::string(e.what()) + "; other elements of this batch of " +
                                      std::to_string(sent.size()) + " may have been applied",
                                  "outcomes unknown: read each run back");
        }
        if (e.schema_missing()) s_->conn.drop();
        out[sent[k]] = end_run(f.run, f.token, f.status);
      } catch (const detail::postgres::transport_error& e) {
        if (!e.maybe_applied()) throw;
        out[sent[k]] = resolve_end(f.run, f.token, f.status, e);
      }
    }
    if (k < sent.size()) {
      // The connection broke: the rest were sent and may have been applied.
      try {
        std::rethrow_exception(reply.broke);
      } catch (const detail::postgres::transport_error& e) {
        // Reading a run back tells what happened to it under a token, not
        // which of two requests with that token did it: then nothing can be told.
        std::set<std::tuple<std::string_view, time_point, std::string_view>> runs;
        for (std::size_t j = k; j < sent.size(); ++j)
          if (!runs.emplace(batch[sent[j]].run.job, batch[sent[j]].run.slot, batch[sent[j]].token).second)
            detail::postgres::raise(postgres_errc::reply_lost,
                                    std::string(e.what()) + "; one run ended twice with one token among the unanswered",
                                    "outcomes unknown");
        for (; k < sent.size(); ++k) {
          const finish_request& f = batch[sent[k]];
          out[sent[k]] = resolve_end(f.run, f.token, f.status, e);
        }
      }
    }
    return out;
  }

  /// The job's running runs, whatever their lease, oldest first.
  std::vector<run_record> unfinished(std::string_view job) {
    detail::postgres::params p;
    p.bytes(job);
    auto r = exec(detail::postgres::stmt::unfinished, p, "unfinished");
    std::vector<run_record> out;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      out.push_back(parse_record(detail::postgres::row{r.get(), i}, 0, job, "unfinished"));
      saw_fence(job, out.back().fence);
    }
    return out;
  }

  /// One run's record, if it has state.
  std::optional<run_record> get(const run_key& run) {
    detail::postgres::params p;
    p.bytes(run.job).i64(ms(run.slot));
    auto r = exec(detail::postgres::stmt::get, p, "get");
    if (PQntuples(r.get()) == 0) return std::nullopt;
    run_record rec = parse_record(detail::postgres::row{r.get(), 0}, 0, run.job, "get");
    saw_fence(run.job, rec.fence);
    return rec;
  }

  /// PauseStore (doc/store-rules.md, "Pause and resume"): the job's row in
  /// lease_jobs, read by every claim under the row's lock. One statement
  /// each; pause() is true if the job was not paused, resume() if it was.
  bool pause(std::string_view job) { return job_statement(detail::postgres::stmt::pause, job, "pause"); }
  bool resume(std::string_view job) { return job_statement(detail::postgres::stmt::resume, job, "resume"); }
  bool paused(std::string_view job) { return job_statement(detail::postgres::stmt::paused, job, "paused"); }

  /// TriggerStore (doc/store-rules.md, "Trigger now"): asks for one manual
  /// run of `job` at slot = store-now (just past a recorded loss's horizon,
  /// rules::trigger_slot), unless one is pending; returns the
  /// pending request's slot. One statement on the job's lease_jobs row
  /// (its `trigger` column), atomic against the job's claims (the argument
  /// is in store/postgres/schema.hpp), which also announces the job on the
  /// trigger channel when it commits (PushTriggerStore). A lost answer is
  /// outcome_unknown, never sent again blindly: the trigger may have been
  /// recorded and even claimed meanwhile, and a second one would be a
  /// second run.
  time_point trigger(std::string_view job) {
    detail::postgres::params p;
    p.opt_i64(now_arg()).bytes(job).text(trigger_channel());
    try {
      auto r = exec(stmt::trigger, p, "trigger");
      if (PQntuples(r.get()) != 1) bad_reply("trigger");
      return time_point{duration{detail::postgres::row{r.get(), 0}.i64(0, "trigger")}};
    } catch (const detail::postgres::transport_error& e) {
      if (!e.maybe_applied()) throw;
      detail::postgres::raise(postgres_errc::reply_lost,
                              std::string(e.what()) + "; the trigger of job '" + lease::detail::printable(job, 80) +
                                  "' may or may not have been recorded",
                              "look at the job's pending trigger and its runs (list_jobs, list_runs) before "
                              "triggering it again");
    }
  }

  /// TriggerStore: the pending triggers among `jobs`, in the order asked,
  /// each job once. One SELECT (job = ANY of the names, as one bytea[]
  /// parameter).
  std::vector<run_key> triggers(std::span<const std::string> jobs) {
    if (jobs.empty()) return {};
    std::vector<const std::string*> xs;
    xs.reserve(jobs.size());
    for (const auto& j : jobs) xs.push_back(&j);
    detail::postgres::params p;
    p.array(xs, 17, [](const std::string* j) { return *j; });
    auto r = exec(stmt::triggers, p, "triggers");
    std::map<std::string, time_point, std::less<>> pending;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      const detail::postgres::row x{r.get(), i};
      pending.emplace(std::string(x.bytes(0)), time_point{duration{x.i64(1, "triggers")}});
    }
    std::vector<run_key> out;
    for (const auto& name : jobs) {
      auto it = pending.find(name);
      if (it == pending.end()) continue;
      out.push_back({name, it->second});
      pending.erase(it);  // each job once
    }
    return out;
  }

  /// PushTriggerStore: from now on call `f(job)` (from the listener's thread,
  /// store/postgres/listener.hpp, shared with listen_releases) whenever any
  /// store on this schema triggers `job`, and f("") whenever pushes may have
  /// been missed (the listening connection was (re)established: poll
  /// triggers() once). An empty `f` stops; it returns after the last call of
  /// the previous listener has returned.
  void listen_triggers(trigger_listener f) { set_listener({}, std::move(f), false); }

  /// StopStore (doc/store-rules.md, "Pause and resume": stop): pauses `job`
  /// and hands over every running, unreleased run of it as its runner's
  /// release() would, in one call of lease_stop (one transaction, under the
  /// job row's lock that every claim of it takes first); announces the job
  /// to release listeners when it handed one over. Returns how many. A lost
  /// answer is outcome_unknown: a second stop would hand over nothing and
  /// answer 0, hiding what the first did.
  std::size_t stop(std::string_view job) {
    detail::postgres::params p;
    p.opt_i64(now_arg()).bytes(job).text(channel());
    try {
      auto r = exec(stmt::stop, p, "stop");
      if (PQntuples(r.get()) != 1) bad_reply("stop");
      const std::int64_t n = detail::postgres::row{r.get(), 0}.i64(0, "stop");
      if (n < 0) bad_reply("stop");
      return static_cast<std::size_t>(n);
    } catch (const detail::postgres::transport_error& e) {
      if (!e.maybe_applied()) throw;
      detail::postgres::raise(postgres_errc::reply_lost,
                              std::string(e.what()) + "; the stop of job '" + lease::detail::printable(job, 80) +
                                  "' may or may not have been applied",
                              "look at the job (list_jobs, list_runs): stop it again if it is not paused");
    }
  }

  /// RegistryStore: upserts each (job, instance) registration with its
  /// schedule and zone, last_seen = store-now (one reading for all). One
  /// INSERT ... ON CONFLICT over unnest()ed arrays; safe to repeat, so a
  /// lost answer is an unavailable error.
  void register_jobs(std::span<const job_registration> regs) {
    if (regs.empty()) return;
    std::vector<const job_registration*> xs;
    xs.reserve(regs.size());
    for (const auto& g : regs) xs.push_back(&g);
    detail::postgres::params p;
    p.opt_i64(now_arg());
    p.array(xs, 17, [](const job_registration* g) { return g->job; });
    p.array(xs, 17, [](const job_registration* g) { return g->instance; });
    p.array(xs, 17, [](const job_registration* g) { return g->schedule; });
    p.array(xs, 17, [](const job_registration* g) { return g->zone; });
    (void)exec(stmt::register_jobs, p, "register_jobs");
  }

  /// RegistryStore: rules::purge in one call of lease_purge (one
  /// transaction, under the job row's lock, then its registrations' and
  /// running runs'). A lost answer is outcome_unknown: a second purge of a
  /// purged job answers not_found.
  purge_result purge(std::string_view job, duration unseen_for) {
    detail::postgres::params p;
    p.opt_i64(now_arg()).bytes(job).i64(unseen_for.count());
    detail::postgres::result_ptr r;
    try {
      r = exec(stmt::purge, p, "purge");
    } catch (const detail::postgres::transport_error& e) {
      if (!e.maybe_applied()) throw;
      detail::postgres::raise(postgres_errc::reply_lost,
                              std::string(e.what()) + "; the purge of job '" + lease::detail::printable(job, 80) +
                                  "' may or may not have been applied",
                              "look for the job (list_jobs) before purging it again");
    }
    if (PQntuples(r.get()) != 1 || PQnfields(r.get()) != 15) bad_reply("purge");
    const detail::postgres::row x{r.get(), 0};
    const std::int32_t outcome = x.i32(0, "purge");
    if (outcome < 0 || outcome > static_cast<int>(purge_outcome::too_soon)) bad_reply("purge");
    purge_result res;
    res.outcome = static_cast<purge_outcome>(outcome);
    if (res.outcome == purge_outcome::registered) res.instance = parse_registration(x, 1, job, "purge");
    if (res.outcome == purge_outcome::running) res.run = parse_record(x, 5, job, "purge");
    // The job's fence is gone with it: a fence this handle saw is no
    // evidence of a loss any more (lease_claim knows it too: purged_at).
    if (res.outcome == purge_outcome::purged) {
      auto it = s_->fences.find(job);
      if (it != s_->fences.end()) s_->fences.erase(it);
    }
    return res;
  }

  /// InspectStore: every job the schema holds a fence, a pause, a pending
  /// trigger, a run or a registration for, ordered by name (bytes), with its
  /// newest run and its registrations by instance id (bytes). One SELECT
  /// (one snapshot): one row per registration, or one for a job without.
  std::vector<stored_job> list_jobs() {
    auto r = exec(detail::postgres::stmt::list_jobs, {}, "list_jobs");
    std::vector<stored_job> out;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      const detail::postgres::row x{r.get(), i};
      const std::string_view name = x.bytes(0);
      if (out.empty() || out.back().name != name) {
        stored_job j;
        j.name = std::string(name);
        const std::int64_t fence = x.i64(1, "list_jobs");
        if (fence < 0) detail::postgres::raise(postgres_errc::bad_reply, "list_jobs", "a job's fence is negative");
        j.fence = static_cast<std::uint64_t>(fence);
        j.paused = x.boolean(2, "list_jobs");
        if (const auto t = x.opt_i64(3, "list_jobs")) j.trigger = time_point{duration{*t}};
        if (!x.is_null(4)) j.last_run = parse_record(x, 4, j.name, "list_jobs");
        out.push_back(std::move(j));
      }
      if (!x.is_null(14)) out.back().instances.push_back(parse_registration(x, 14, name, "list_jobs"));
    }
    return out;
  }

  /// InspectStore: the job's runs with state, newest slot first, at most
  /// `limit`. One SELECT.
  std::vector<run_record> list_runs(std::string_view job, std::size_t limit) {
    detail::postgres::params p;
    p.bytes(job).i64(static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
    auto r = exec(detail::postgres::stmt::list_runs, p, "list_runs");
    std::vector<run_record> out;
    out.reserve(static_cast<std::size_t>(PQntuples(r.get())));
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(parse_record(detail::postgres::row{r.get(), i}, 0, job, "list_runs"));
    return out;
  }

  /// The store's clock: the injected clock if any, else the server's.
  time_point now() {
    if (s_->opts.clock) return s_->opts.clock();
    auto r = exec(detail::postgres::stmt::now, {}, "now");
    if (PQntuples(r.get()) != 1) bad_reply("now");
    return time_point{duration{detail::postgres::row{r.get(), 0}.i64(0, "now")}};
  }

  /// What this store learnt that an operator should read (NoticeStore): the
  /// server's durability settings at the first connect, each loss of state
  /// detected or learnt of. Each sentence once.
  std::vector<std::string> take_notices() { return std::exchange(s_->notices, {}); }

  /// EndPushStore: from now on call `f(job, slot)` (from a thread of the
  /// store's own) whenever any store on this schema finishes the run of
  /// `job` at `slot`, and `f(job, nullopt)` when it releases or stops one.
  /// An empty `f` stops; it returns after the last call of the previous
  /// listener has returned.
  void listen_ends(end_listener f) { set_listener(std::move(f), {}, true); }
  /// PushStore: the same, told the job only (a finish too).
  void listen_releases(release_listener f) {
    if (!f) return listen_ends({});
    listen_ends([f = std::move(f)](std::string_view job, std::optional<time_point>) { f(job); });
  }

  /// When the store noticed a loss of its state (store clock), if ever. Checks
  /// the store now (one round trip; a schema replaced under this handle is
  /// noticed here).
  std::optional<time_point> lost_at() {
    auto r = exec(detail::postgres::stmt::state, {}, "reading the store's state");
    if (PQntuples(r.get()) != 1) bad_reply("state");
    adopt_state(detail::postgres::row{r.get(), 0});
    if (!s_->lost_at) return std::nullopt;
    return time_point{duration{*s_->lost_at}};
  }

  [[nodiscard]] const postgres_options& options() const noexcept { return s_->opts; }
  /// Round trips to the server so far (connection setup counts too): to
  /// check that batching batches.
  [[nodiscard]] std::uint64_t round_trips() const noexcept { return s_->conn.round_trips(); }
  /// The server process of this store's connection (0 if not connected), for
  /// tests that terminate it and operators that look for it in pg_stat_activity.
  [[nodiscard]] int backend_pid() const noexcept { return s_->conn.backend_pid(); }
  /// The listener's connections so far (0 if none): releases and triggers share one.
  [[nodiscard]] std::uint64_t listener_connects() const noexcept {
    return s_->listener ? s_->listener->connects() : 0;
  }

 private:
  using stmt = detail::postgres::stmt;

  static detail::postgres::connection_settings settings_of(const postgres_options& o) {
    return {o.conninfo, o.connect_timeout, o.command_timeout, std::chrono::milliseconds{25}, o.max_backoff, "lease"};
  }
  static const std::string& checked_schema(const std::string& s) {
    bool ok = !s.empty() && s.size() <= 50 && !(s[0] >= '0' && s[0] <= '9');
    for (char c : s)
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    if (!ok)
      detail::postgres::raise(postgres_errc::bad_option,
                              "bad schema name '" + lease::detail::printable(s, 80) +
                                  "': use 1 to 50 letters, digits and '_', not starting with a digit");
    return s;
  }

  /// Everything a store owns, on the heap: a store moves as one pointer, and
  /// the listener thread never sees the store move.
  struct state {
    explicit state(postgres_options o)
        : opts(std::move(o)), schema(checked_schema(opts.schema)), conn(settings_of(opts)) {
      if (opts.connect_timeout.count() <= 0)
        detail::postgres::raise(postgres_errc::bad_option,
                                "connect_timeout must be above 0 (how long a connect waits for each host to answer "
                                "before it tries the next)");
      if (opts.listen_ping_every.count() <= 0)
        detail::postgres::raise(postgres_errc::bad_option,
                                "listen_ping_every must be above 0 (how long the LISTEN connection waits in silence "
                                "before it checks itself with SELECT 1)");
      if (opts.conninfo.find('\0') != std::string::npos)
        detail::postgres::raise(postgres_errc::bad_option, "the conninfo contains a NUL byte");
      char* err = nullptr;
      PQconninfoOption* parsed = PQconninfoParse(opts.conninfo.c_str(), &err);
      if (err != nullptr) PQfreemem(err);  // it may quote the password: not shown
      if (parsed == nullptr)
        detail::postgres::raise(postgres_errc::bad_option,
                                "the conninfo is neither a libpq connection string (key=value ...) nor a "
                                "postgresql:// URI that libpq can parse (its text is not shown: it may hold a password)");
      // An unescaped '@' in a URI's password: libpq splits at the first
      // one, and the password's tail becomes the host, then shown in every
      // message and sent to DNS (found by a review).
      bool at_in_host = false;
      for (PQconninfoOption* x = parsed; x->keyword != nullptr; ++x)
        if (x->val != nullptr && (std::string_view(x->keyword) == "host" || std::string_view(x->keyword) == "hostaddr"))
          at_in_host = at_in_host || std::string_view(x->val).find('@') != std::string_view::npos;
      PQconninfoFree(parsed);
      if (at_in_host)
        detail::postgres::raise(postgres_errc::bad_option,
                                "the conninfo's host contains '@' (not shown: it may be part of a password): in a "
                                "postgresql:// URI, write an '@' of the user or password as %40");
      for (std::size_t i = 0; i < sql.size(); ++i)
        sql[i] = detail::postgres::in_schema(detail::postgres::stmt_sql[i], schema);
    }
    postgres_options opts;
    std::string schema;
    detail::postgres::connection conn;
    std::array<std::string, static_cast<std::size_t>(stmt::count_)> sql{};
    std::string marker;                  ///< the store's marker last seen; "" before the first connect
    std::optional<std::int64_t> lost_at; ///< the recorded loss, if any
    std::map<std::string, std::uint64_t, std::less<>> fences;  ///< highest fence seen, per job
    std::vector<std::string> notices;
    bool told_settings = false;
    std::unique_ptr<detail::postgres::listener_thread> listener;  ///< last: stopped first
  };

  static std::int64_t ms(time_point t) { return t.time_since_epoch().count(); }
  [[nodiscard]] std::optional<std::int64_t> now_arg() const {
    if (s_->opts.clock) return ms(s_->opts.clock());
    return std::nullopt;
  }
  [[nodiscard]] std::string channel() const { return s_->schema + ".lease"; }
  /// Triggers are announced on a channel of their own (at most 58 bytes:
  /// under PostgreSQL's 63).
  [[nodiscard]] std::string trigger_channel() const { return s_->schema + ".trigger"; }

  /// Sets the release listener (`release`) or the trigger listener, on the
  /// one listener thread, started when the first is set and stopped (after
  /// the last call) when neither is.
  void set_listener(end_listener r, trigger_listener t, bool release) {
    if (!s_) detail::postgres::raise(postgres_errc::bad_option, "this store was moved from");
    auto& l = s_->listener;
    if (!l) {
      if (!r && !t) return;
      l = std::make_unique<detail::postgres::listener_thread>(settings_of(s_->opts), channel(), trigger_channel(),
                                                              std::move(r), std::move(t), s_->opts.listen_ping_every);
      return;
    }
    if (release) l->on_release(std::move(r));
    else l->on_trigger(std::move(t));
    if (l->idle()) l.reset();
  }
  [[nodiscard]] std::string where() const { return s_->conn.where(); }

  void saw_fence(std::string_view job, std::uint64_t f) {
    auto it = s_->fences.find(job);
    if (it == s_->fences.end()) s_->fences.emplace(std::string(job), f);
    else if (f > it->second) it->second = f;
  }
  [[nodiscard]] std::uint64_t fence_of(std::string_view job) const {
    auto it = s_->fences.find(job);
    return it == s_->fences.end() ? 0 : it->second;
  }

  /// Connects if needed; a new connection is set up before anything is sent on it.
  void open() {
    if (!s_) detail::postgres::raise(postgres_errc::bad_option, "this store was moved from");
    if (!s_->conn.open()) return;
    try {
      setup();
    } catch (const detail::postgres::transport_error& e) {
      // The caller's request was not sent yet: whatever setup's own
      // statements did, it is not "maybe applied" (a review found a trigger
      // never sent reported as an unknown outcome).
      s_->conn.setup_failed(e.what());
      throw detail::postgres::transport_error(make_error_code(postgres_errc::connection_lost), e.what(), false);
    } catch (const store_error& e) {
      // A standby accepts connections but cannot serve: probed, not
      // hammered. Other refusals (a schema to fix) keep their own code.
      if (e.code() == postgres_errc::read_only) s_->conn.setup_failed(e.what());
      else s_->conn.drop();
      throw;
    }
    s_->conn.setup_done();
  }

  /// A new connection: session settings, the schema (created or migrated
  /// under the advisory lock), the prepared statements, the durability
  /// notice and the marker check.
  void setup() {
    auto& c = s_->conn;
    // A standby first: it can neither migrate nor write (a conninfo without
    // target_session_attrs=read-write may land on one after a failover).
    auto rec = c.exec_simple("SELECT pg_is_in_recovery()::text", "checking for a standby");
    if (PQntuples(rec.get()) == 1 && std::string_view(PQgetvalue(rec.get(), 0, 0)) == "true")
      detail::postgres::raise(postgres_errc::read_only,
                              "postgres at " + where() +
                                  " is a standby (in recovery): add target_session_attrs=read-write to the conninfo "
                                  "so that libpq picks the primary");
    if (s_->opts.statement_timeout.count() > 0)
      c.exec_simple("SET statement_timeout = " + std::to_string(s_->opts.statement_timeout.count()), "SET statement_timeout");
    migrate();
    for (std::size_t i = 0; i < s_->sql.size(); ++i) c.prepare(detail::postgres::stmt_names[i], s_->sql[i]);
    auto r = c.exec_params(
        "SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'), "
        "current_setting('fsync'), marker, coalesce(lost_at::text, '') FROM " +
            detail::postgres::in_schema("@.lease_store", s_->schema) + " WHERE id = 1",
        {}, "reading the server's settings");
    if (PQntuples(r.get()) != 1) bad_reply("settings");
    const detail::postgres::row x{r.get(), 0};
    const std::string sync(x.bytes(0)), standbys(x.bytes(1)), fsync(x.bytes(2));
    if (!s_->told_settings) {
      s_->told_settings = true;
      std::string s = "postgres at " + where() + ": synchronous_commit=" + lease::detail::printable(sync, 20) +
                      ", fsync=" + lease::detail::printable(fsync, 10) + ", synchronous_standby_names='" +
                      lease::detail::printable(standbys, 80) + "'";
      if (fsync != "on" || sync == "off")
        s += ": a crash of the server may lose the last acknowledged runs";
      else if (standbys.empty() || sync == "local")
        s += ": a crash keeps every acknowledged run, but a failover to a standby may lose the last ones (" +
             std::string(standbys.empty() ? "no synchronous standby" : "synchronous_commit=local does not wait for it") +
             "; set synchronous_standby_names and synchronous_commit=on or remote_apply for failover without loss)";
      else
        s += ": acknowledged runs survive a crash and a failover to a synchronous standby";
      s += ". A lost run is detected by the store's marker or when an instance's claim or refused heartbeat "
           "carries a fence above the job's counter; no run starts for one lease after, and no slot that may have "
           "run before the loss starts again. A job whose only lost write was a run's end shows nothing until "
           "then (doc/protocol.md §15, \"What detection cannot see\").";
      s_->notices.push_back(std::move(s));
    }
    check_marker(std::string(x.bytes(3)), x.bytes(4).empty() ? std::nullopt
                                                             : std::optional<std::int64_t>(std::stoll(std::string(x.bytes(4)))));
  }

  /// Creates the schema or checks its version, in one transaction under an
  /// advisory lock on the schema's name.
  void migrate() {
    auto& c = s_->conn;
    c.exec_simple("BEGIN", "migration");
    try {
      detail::postgres::params p;
      p.text("lease:" + s_->schema);
      c.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))", p, "taking the migration lock");
      detail::postgres::params q;
      q.text(detail::postgres::in_schema("@.lease_schema_version", s_->schema));
      auto r = c.exec_params("SELECT (to_regclass($1::text) IS NOT NULL)::int4", q, "looking for the schema");
      std::string ver = "0";
      const bool exists = detail::postgres::row{r.get(), 0}.i32(0, "migration") != 0;
      if (!exists && !s_->opts.migrate)
        detail::postgres::raise(postgres_errc::schema_missing,
                                "PostgreSQL schema '" + s_->schema + "' has no lease tables (postgres at " + where() +
                                    "): check the schema name (leasectl: --namespace, the instances' schema), or "
                                    "start an instance first; this store creates nothing (migrate = false)");
      if (!exists) {
        c.exec_simple(detail::postgres::in_schema(detail::postgres::create_v1, s_->schema), "creating the schema");
        ver = "1";
      } else {
        auto v = c.exec_simple(detail::postgres::in_schema("SELECT max(version)::text FROM @.lease_schema_version", s_->schema),
                               "reading the schema version");
        ver = PQntuples(v.get()) == 1 && PQgetisnull(v.get(), 0, 0) == 0 ? PQgetvalue(v.get(), 0, 0) : "";
      }
      // An older layout that this store may not upgrade: say so, change nothing.
      bool older = false;
      for (int v = 1; v < detail::postgres::schema_version; ++v) older = older || ver == std::to_string(v);
      if (!s_->opts.migrate && older)
        detail::postgres::raise(postgres_errc::schema_outdated,
                                "PostgreSQL schema '" + s_->schema + "' holds lease tables of version " + ver +
                                    " (postgres at " + where() + "); this lease needs version " +
                                    std::to_string(detail::postgres::schema_version) +
                                    " and migrates nothing here (migrate = false): upgrade the schema by starting "
                                    "an upgraded instance, then retry");
      // Each step takes the layout one version up, in this transaction.
      for (int v = 1; v < detail::postgres::schema_version; ++v) {
        if (ver != std::to_string(v)) continue;
        c.exec_simple(detail::postgres::in_schema(detail::postgres::upgrade_from(v), s_->schema),
                      "migrating to version " + std::to_string(v + 1));
        ver = std::to_string(v + 1);
      }
      if (ver != std::to_string(detail::postgres::schema_version))
        detail::postgres::raise(postgres_errc::schema_version,
                                "postgres at " + where() + ": schema \"" + s_->schema + "\" has lease schema version '" +
                                    lease::detail::printable(ver, 20) + "', this library knows version " +
                                    std::to_string(detail::postgres::schema_version) +
                                    " and the ones before it only: use a newer lease, or another schema");
      c.exec_simple("COMMIT", "migration");
    } catch (...) {
      if (c.connected()) {
        try {
          c.exec_simple("ROLLBACK", "migration");
        } catch (const store_error&) {
          c.drop();
        }
      }
      throw;
    }
  }

  /// A heartbeat of `job` was refused: its run was taken over, ended or
  /// released — or the store lost it (a failover to a standby that lacked
  /// the last writes, a restored backup). If this handle saw a fence of the
  /// job, one statement checks it against the job's counter and records the
  /// loss it proves, as a claim does (stmt::prove), so that no backup takes
  /// over again a run whose takeover the store forgot while its runner still
  /// runs. Done before the refusal is answered: the runner stops only after
  /// the loss is recorded. One round trip per job, only when there may be
  /// something to prove: after a single heartbeat refused (heartbeat_many's
  /// answer names the counter, and this runs only when it is below the
  /// fence seen); a failure is the heartbeat's. Not atomic with the
  /// refusal: a takeover won in between raises the counter past the fence,
  /// and proves nothing (doc/protocol.md §15).
  void prove_refused(std::string_view job) {
    const std::uint64_t known = fence_of(job);
    if (known == 0) return;
    detail::postgres::params p;
    p.opt_i64(now_arg()).bytes(job).i64(static_cast<std::int64_t>(known));
    auto r = exec(detail::postgres::stmt::prove, p, "checking a refused heartbeat's fence");
    if (PQntuples(r.get()) != 1) bad_reply("prove");
    const detail::postgres::row x{r.get(), 0};
    if (const auto at = x.opt_i64(0, "prove")) {
      s_->lost_at = at;
      s_->notices.push_back(loss_notice("a refused heartbeat of job '" + lease::detail::printable(job, 80) +
                                            "' carried a fence above its counter: a failover to a standby that "
                                            "lacked the last writes, or a restore",
                                        *at));
    } else {
      learn_lost(x.opt_i64(1, "prove"));
    }
  }

  /// A marker other than the one this handle saw before: the state was
  /// replaced (schema dropped and recreated, a restore). Record the loss.
  void check_marker(const std::string& marker, std::optional<std::int64_t> lost) {
    const bool replaced = !s_->marker.empty() && marker != s_->marker;
    if (replaced) {
      // The new marker is adopted only once the loss is recorded: if that
      // fails (the connection lost again), the next check sees the change
      // again and records it then, before any claim is sent with it.
      detail::postgres::params p;
      p.opt_i64(now_arg());
      auto r = s_->conn.exec_prepared(detail::postgres::stmt_names[static_cast<unsigned>(stmt::note_loss)], p,
                                      "recording a loss of state");
      if (PQntuples(r.get()) != 1) bad_reply("note_loss");
      const std::int64_t at = detail::postgres::row{r.get(), 0}.i64(0, "note_loss");
      s_->marker = marker;
      s_->fences.clear();  // fences seen in the old state prove nothing about the new one
      s_->lost_at = at;
      s_->notices.push_back(loss_notice("the store's marker changed: its schema was dropped and created again, or "
                                        "restored from a backup",
                                        at));
      return;
    }
    s_->marker = marker;
    learn_lost(lost);
  }

  /// Adopts a loss recorded in the store (by another handle, or this one).
  void learn_lost(std::optional<std::int64_t> lost) {
    if (lost && (!s_->lost_at || *lost > *s_->lost_at)) {
      s_->lost_at = lost;
      s_->notices.push_back(loss_notice("another instance noticed it", *lost));
    }
  }

  void adopt_state(const detail::postgres::row& x) {
    const std::string marker(x.bytes(0));
    if (!s_->marker.empty() && marker != s_->marker) {
      check_marker(marker, std::nullopt);
      return;
    }
    s_->marker = marker;
    learn_lost(x.opt_i64(1, "state"));
  }

  [[nodiscard]] std::string loss_notice(std::string_view why, std::int64_t at) const {
    return "postgres at " + where() + " lost its state (" + std::string(why) + "); loss noticed at " +
           iso_utc(at) + " (store clock): no run starts until one lease after it, when any runner of a forgotten "
           "run has stopped, and a slot that may have run before the loss never starts again; a job paused in "
           "the lost state is no longer paused (pause it again)";
  }

  static std::string iso_utc(std::int64_t ms) {
    using namespace std::chrono;
    const sys_time<milliseconds> t{milliseconds{ms}};
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss<milliseconds> hms{t - day};
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                  static_cast<long long>(hms.seconds().count()), static_cast<long long>(hms.subseconds().count()));
    return buf;
  }

  /// Runs prepared statement `which`. Refused whole for a reason that a
  /// second try fixes (a deadlock or serialization failure, the schema
  /// dropped under this connection, which setup() recreates): once more.
  detail::postgres::result_ptr exec(stmt which, const detail::postgres::params& p, std::string_view what) {
    for (int attempt = 0;; ++attempt) {
      open();
      try {
        return s_->conn.exec_prepared(detail::postgres::stmt_names[static_cast<unsigned>(which)], p, what);
      } catch (const detail::postgres::sql_error& e) {
        if (attempt > 0) throw;
        if (e.schema_missing()) {
          s_->conn.drop();  // the next open() migrates again and checks the marker
          continue;
        }
        if (e.code() == postgres_errc::retryable) continue;
        throw;
      }
    }
  }

  static int affected(PGresult* r) {
    const char* n = PQcmdTuples(r);
    return n != nullptr && *n != '\0' ? std::atoi(n) : 0;
  }

  detail::postgres::params claim_params(const claim_request& req) const {
    detail::postgres::params p;
    p.opt_i64(now_arg())
        .text(s_->marker)
        .i64(static_cast<std::int64_t>(fence_of(req.run.job)))
        .bytes(req.run.job)
        .i64(ms(req.run.slot))
        .bytes(req.runner)
        .bytes(req.token)
        .i32(static_cast<std::int32_t>(req.reason))
        .i64(req.lease.count())
        .i32(static_cast<std::int32_t>(req.max_attempts))
        .i64(ms(req.deadline))
        .i32(static_cast<std::int32_t>(req.overlap))
        .i32(static_cast<std::int32_t>(req.history_size))
        .i64(req.retain.count());
    return p;
  }

  /// finish() (a status) or release() (none): one UPDATE, its answer lost resolved by reading the run back.
  bool end_run(const run_key& run, std::string_view token, std::optional<run_status> status) {
    auto send = [&] { return send_end(run, token, status); };
    try {
      return send();
    } catch (const detail::postgres::transport_error& e) {
      if (!e.maybe_applied()) throw;
      return resolve_end(run, token, status, e);
    }
  }

  bool send_end(const run_key& run, std::string_view token, std::optional<run_status> status) {
    auto r = exec(end_stmt(status), end_params(run, token, status), status ? "finish" : "release");
    return PQntuples(r.get()) == 1;
  }

  static stmt end_stmt(std::optional<run_status> status) { return status ? stmt::finish : stmt::release; }

  detail::postgres::params end_params(const run_key& run, std::string_view token, std::optional<run_status> status) const {
    detail::postgres::params p;
    if (status)
      p.bytes(run.job).i64(ms(run.slot)).bytes(token).i32(static_cast<std::int32_t>(*status)).text(channel());
    else
      p.opt_i64(now_arg()).bytes(run.job).i64(ms(run.slot)).bytes(token).text(channel());
    return p;
  }

  /// A finish or release whose answer was lost: applied iff the run ended
  /// with our token and this status (finish), or is released under our
  /// token (release); otherwise proven not applied, so sent once more.
  bool resolve_end(const run_key& run, std::string_view token, std::optional<run_status> status,
                   const detail::postgres::transport_error& e) {
    auto rec = read_back(run, e);
    if (rec && rec->token == token &&
        (status ? rec->status == *status : rec->status == run_status::running && rec->released))
      return true;
    return resend([&] { return send_end(run, token, status); }, e);
  }

  static run_status checked(run_status status) {
    if (static_cast<int>(status) > static_cast<int>(run_status::interrupted))
      detail::postgres::raise(postgres_errc::bad_option, "finish: not a run_status");
    return status;
  }

  /// pause, resume or paused: one statement on the job's row; true when it
  /// returned a row (it changed the pause, or the job is paused).
  bool job_statement(detail::postgres::stmt which, std::string_view job, const char* what) {
    detail::postgres::params p;
    p.bytes(job);
    auto r = exec(which, p, what);
    return PQntuples(r.get()) > 0;
  }

  claim_result send_claim(const claim_request& req) {
    open();  // connect (and check the marker) before reading what this handle knows
    const std::string sent_marker = s_->marker;
    auto r = exec(stmt::claim, claim_params(req), "claim");
    return claim_reply(req, r.get(), sent_marker);
  }

  /// A claim's answer (one row of lease_claim). `sent_marker`: the marker the
  /// request carried (a batch carries the one known when it was sent, so a
  /// replaced state is noticed by each of its claims, and reported once).
  claim_result claim_reply(const claim_request& req, PGresult* r, const std::string& sent_marker) {
    if (PQntuples(r) != 1 || PQnfields(r) != 15) bad_reply("claim");
    const detail::postgres::row x{r, 0};
    const std::int32_t outcome = x.i32(0, "claim");
    if (outcome < 0 || outcome > static_cast<int>(claim_outcome::paused)) bad_reply("claim");
    claim_result res;
    res.outcome = static_cast<claim_outcome>(outcome);
    res.store_now = time_point{duration{x.i64(1, "claim")}};
    const bool detected = x.boolean(2, "claim");
    const std::string marker(x.bytes(3));
    const auto lost = x.opt_i64(4, "claim");
    res.record.job = req.run.job;
    res.record.slot = req.run.slot;
    if (res.outcome == claim_outcome::quarantined) {
      const auto end = x.opt_i64(11, "claim");
      res.record.lease_end = end ? time_point{duration{*end}} : time_point::max();
    } else if (!x.is_null(6)) {
      res.record = parse_record(x, 5, req.run.job, "claim");
      saw_fence(req.run.job, res.record.fence);
    }
    const bool by_marker = detected && marker != sent_marker;
    if (detected && !(by_marker && marker == s_->marker)) {  // not one an earlier claim of the batch reported
      s_->marker = marker;
      if (by_marker) s_->fences.clear();
      s_->lost_at = lost;
      s_->notices.push_back(loss_notice(by_marker ? "the store's marker changed under this connection: its schema "
                                                    "was replaced or restored from a backup"
                                                  : "a claim of job '" + lease::detail::printable(req.run.job, 80) +
                                                        "' found its fence counter below a fence seen before: a "
                                                        "failover to a standby that lacked the last writes, or a restore",
                                        lost.value_or(0)));
    } else {
      learn_lost(lost);
    }
    return res;
  }

  /// claim_many: every claim pipelined (connection.hpp), each its own
  /// transaction; an answer refused whole for a reason a second try fixes is
  /// sent again alone, as claim() does; one whose answer was lost is read
  /// back, as claim() does.
  std::vector<claim_result> send_claims(std::span<const claim_request> batch) {
    open();
    const std::string sent_marker = s_->marker;
    std::vector<detail::postgres::params> ps;
    ps.reserve(batch.size());
    for (const claim_request& req : batch) ps.push_back(claim_params(req));
    auto reply = s_->conn.exec_prepared_pipeline(detail::postgres::stmt_names[static_cast<unsigned>(stmt::claim)], ps,
                                                 "claim_many");
    std::vector<claim_result> out;
    out.reserve(batch.size());
    std::size_t i = 0;
    for (; i < reply.results.size(); ++i) {
      PGresult* r = reply.results[i].get();
      const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
      if (st == PGRES_TUPLES_OK) {
        out.push_back(claim_reply(batch[i], r, sent_marker));
        continue;
      }
      try {
        s_->conn.check(r, "claim", true);
        bad_reply("claim");
      } catch (const detail::postgres::sql_error& e) {
        // Refused whole, nothing applied: what claim() would do next (retry
        // once after a reconnect or at once, or throw) it does now.
        if (!e.schema_missing() && e.code() != postgres_errc::retryable) throw;
        if (e.schema_missing()) s_->conn.drop();
        out.push_back(claim(batch[i]));
      } catch (const detail::postgres::transport_error& e) {
        if (!e.maybe_applied()) throw;
        out.push_back(resolve_claim(batch[i], e));
      }
    }
    if (i < batch.size()) {
      // The connection broke: the rest were sent and may have been applied.
      try {
        std::rethrow_exception(reply.broke);
      } catch (const detail::postgres::transport_error& e) {
        for (; i < batch.size(); ++i) out.push_back(resolve_claim(batch[i], e));
      }
    }
    return out;
  }

  /// The claim's answer was lost. Our token in the run ⇒ it was applied:
  /// won (store_now is then the record's lease end − lease). Otherwise it
  /// had not won when read back, so sending it again — same token — lets the
  /// rules answer on the state now.
  claim_result resolve_claim(const claim_request& req, const detail::postgres::transport_error& e) {
    auto rec = read_back(req.run, e);
    if (rec && rec->token == req.token) {
      const bool ours = rec->status == run_status::running && !rec->released;
      return claim_result{ours ? claim_outcome::won : claim_outcome::finished, *rec, rec->lease_end - req.lease};
    }
    if (req.reason == claim_reason::manual) unknown_manual(e);
    claim_result res = resend([&] { return send_claim(req); }, e);
    if (res.outcome == claim_outcome::running && res.record.token == req.token && !res.record.released)
      res.outcome = claim_outcome::won;
    return res;
  }

  /// A manual claim whose answer was lost and whose run is not ours: its
  /// lost copy may have answered the trigger with a refusal (overlap in skip
  /// mode, the job paused, a loss's horizon), which clears it. Sent again at
  /// once it would be answered `none` and the trigger dropped without a
  /// word; left unknown, the scheduler sends it again after a backoff and
  /// explains a `none` then (claim_answered, doc/protocol.md §14).
  [[noreturn]] static void unknown_manual(const detail::postgres::transport_error& lost) {
    detail::postgres::raise(postgres_errc::reply_lost, lost.what(),
                            "the run read back is not this manual claim's, and its trigger may have been answered by "
                            "the lost copy: left to the caller to send again");
  }

  /// Reads the run back after a lost answer; if even that fails, the outcome is unknown.
  std::optional<run_record> read_back(const run_key& run, const detail::postgres::transport_error& lost) {
    try {
      return get(run);
    } catch (const store_error& again) {
      detail::postgres::raise(postgres_errc::reply_lost, std::string(lost.what()) + "; reading the run back failed",
                              again.what());
    }
  }

  /// Sends a request proven not applied once more; a second lost answer is outcome_unknown.
  template <class Send>
  auto resend(Send&& send, const detail::postgres::transport_error& lost) -> decltype(send()) {
    try {
      return send();
    } catch (const detail::postgres::transport_error& again) {
      if (!again.maybe_applied()) throw;
      detail::postgres::raise(postgres_errc::reply_lost, std::string(lost.what()) + "; then again", again.what());
    }
  }

  [[noreturn]] void bad_reply(std::string_view what) const {
    detail::postgres::raise(postgres_errc::bad_reply, "postgres at " + where() + ": " + std::string(what),
                            "reply of unexpected shape");
  }

  static std::vector<std::int64_t> parse_i64_array(std::string_view b, std::size_t n) {
    // Binary array: ndim, has_null, elem oid, [size, lbound], then (len, 8 bytes) per element.
    std::vector<std::int64_t> out;
    auto be = [&](std::size_t at, std::size_t bytes) {
      std::uint64_t v = 0;
      for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
      return v;
    };
    if (b.size() < 20 + n * 12 || be(0, 4) != 1 || be(12, 4) != n)
      detail::postgres::raise(postgres_errc::bad_reply, "heartbeat_many", "an answer array of unexpected shape");
    for (std::size_t i = 0, at = 20; i < n; ++i, at += 12) {
      if (be(at, 4) != 8) detail::postgres::raise(postgres_errc::bad_reply, "heartbeat_many", "a NULL answer");
      out.push_back(static_cast<std::int64_t>(be(at + 4, 8)));
    }
    return out;
  }

  /// A registration from 4 columns starting at `c` (instance, schedule, zone, last_seen).
  static job_registration parse_registration(const detail::postgres::row& x, int c, std::string_view job,
                                             std::string_view what) {
    job_registration g;
    g.job = std::string(job);
    g.instance = std::string(x.bytes(c));
    g.schedule = std::string(x.bytes(c + 1));
    g.zone = std::string(x.bytes(c + 2));
    g.last_seen = time_point{duration{x.i64(c + 3, what)}};
    return g;
  }

  /// A record from 10 columns starting at `c` (slot, attempt, token, fence,
  /// runner, status, lease_end, released, handovers, manual).
  static run_record parse_record(const detail::postgres::row& x, int c, std::string_view job, std::string_view what) {
    run_record rec;
    rec.job = std::string(job);
    rec.slot = time_point{duration{x.i64(c, what)}};
    const std::int32_t attempt = x.i32(c + 1, what), status = x.i32(c + 5, what), handovers = x.i32(c + 8, what);
    const std::int64_t fence = x.i64(c + 3, what);
    if (attempt < 0 || handovers < 0 || fence < 0 || status < 0 || status > 3)
      detail::postgres::raise(postgres_errc::bad_reply, what, "a stored run holds a value lease did not write");
    rec.attempt = static_cast<std::uint32_t>(attempt);
    rec.token = std::string(x.bytes(c + 2));
    rec.fence = static_cast<std::uint64_t>(fence);
    rec.runner = std::string(x.bytes(c + 4));
    rec.status = static_cast<run_status>(status);
    rec.lease_end = time_point{duration{x.i64(c + 6, what)}};
    rec.released = x.boolean(c + 7, what);
    rec.handovers = static_cast<std::uint32_t>(handovers);
    rec.manual = x.boolean(c + 9, what);
    return rec;
  }

  std::unique_ptr<state> s_;
};

static_assert(Store<postgres_store>);
static_assert(BatchHeartbeatStore<postgres_store>);
static_assert(BatchClaimStore<postgres_store>);
static_assert(BatchFinishStore<postgres_store>);
static_assert(NoticeStore<postgres_store>);
static_assert(EndPushStore<postgres_store>);
static_assert(PauseStore<postgres_store>);
static_assert(InspectStore<postgres_store>);
static_assert(PushTriggerStore<postgres_store>);
static_assert(StopStore<postgres_store>);
static_assert(RegistryStore<postgres_store>);

}  // namespace lease
