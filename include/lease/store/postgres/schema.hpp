// lease/store/postgres/schema.hpp — the store's tables and functions in its
// own schema, created (or migrated) on first use, and the statements each
// operation prepares.
//
// Tables (all in the store's schema):
//   lease_schema_version(version)   one row: the layout below is version 9
//       (version 1: a slower lease_claim; version 2: an index of running
//       runs that made every finish a non-HOT update; version 3: no pause;
//       version 4: no trigger; version 5: lease_runs' pages filled, so most
//       heartbeats were non-HOT updates too; version 6: a lease_claim that
//       took each job's first claim after a loss for a new one, and took
//       over runs inside a loss's horizon; version 7: a lease_claim that
//       planned one of its conditions at every call; version 8: a slower
//       lease_claim, and a CHECK on lease_runs.status compiled at every
//       write of a run; migrated on connect)
//   lease_store(id = 1, marker, lost_at, purged_at)
//       marker: a random id written when the schema is created; a handle
//       that finds another one than it saw before knows the state was
//       replaced (schema dropped and recreated, a restored backup).
//       lost_at: when a loss of state was detected (store clock, ms), if ever.
//   lease_jobs(job, fence, paused, trigger, placeholder)  one row per job: its fence
//       counter, whether an operator paused it (rules::pause; a job that
//       never ran gets its row from pause() or trigger()), its pending
//       trigger's slot (rules::trigger; NULL if none), and the row every
//       claim of the job locks first
//   lease_runs(job, slot, attempt, token, fence, runner, status, lease_end,
//              released, handovers, manual)  one row per run, key (job, slot)
//   lease_registrations(job, instance, schedule, zone, last_seen)  one row
//       per instance's registration of a job (rules::register_jobs); stop
//       and purge are functions (lease_stop, lease_purge: registry_v5 below)
// Job names, tokens and runners are bytea (any bytes, NUL included); times
// are int8 ms since the epoch on the store's clock; status is run_status.
//
// Why it is correct at READ COMMITTED, by row locks (no SERIALIZABLE, no
// luck): every write of a run happens either in lease_claim, which first
// locks the job's lease_jobs row (SELECT ... FOR UPDATE, the row created by
// INSERT ... ON CONFLICT DO NOTHING if new), or in a single UPDATE of one
// run row (heartbeat, finish, release; heartbeat_many is one UPDATE of its
// rows). So:
//   * two claims of one job run one after the other: the second waits on the
//     job row until the first commits, and every later statement of the
//     second (a new snapshot per statement in a VOLATILE plpgsql function at
//     READ COMMITTED) sees all of the first's writes. New runs of a job are
//     inserted only under that lock, so "has a newer run" and "which runs
//     are running" cannot change under a claim.
//   * the pause is a column of that row: a claim reads it with the lock
//     (SELECT ... FOR UPDATE), and pause() and resume() are single
//     statements that write it (an UPDATE, or an INSERT ... ON CONFLICT DO
//     UPDATE), so they wait for a claim holding the row and a claim waits
//     for them: each claim sees the pause as of a point in that order.
//   * the pending trigger is a column of that row too: trigger() is one
//     INSERT ... ON CONFLICT DO UPDATE of it, which takes the row's lock (or
//     creates the row) before it reads the clock and the pending value
//     (the DO UPDATE's expressions are evaluated on the locked, latest
//     version of the row). So a trigger() and a claim of the job run one
//     after the other, whichever way round: a manual claim that holds the
//     row sees a trigger committed before it and makes a trigger() wait
//     until it has answered (cleared) the pending one; a trigger() then
//     sees the cleared value and asks anew. Two manual claims of one
//     trigger (any instances, any store objects) are two claims of one job:
//     the second sees the first's answer — the trigger cleared, the run
//     created — and gets `running` (or `finished`), never a second win.
//     A new job's row created by trigger() races with a first claim exactly
//     as pause()'s does (below).
//   * stop (lease_stop) and purge (lease_purge) take the job row's lock
//     first, as a claim does, and do the rest in later statements of the
//     function (new snapshots): a claim of the job is wholly before or
//     after them. Purge then locks the job's registrations and running runs
//     before it reads the clock, so a register_jobs or a heartbeat of them
//     is wholly before or after it too. register_jobs takes no job row: it
//     orders with a purge on the registration rows (a new registration
//     committed after the purge's read is simply after the purge).
//   * a claim then locks the run it asks for, the job's newer runs and its
//     running runs (one SELECT ... FOR UPDATE, in slot order, which also
//     reads them) before reading the clock and deciding. A
//     heartbeat, finish or release of one of those rows either committed
//     before (the claim sees it) or waits for the claim to commit and then
//     re-checks its WHERE clause (token current, running, not released) on
//     the claim's version of the row (PostgreSQL's EvalPlanQual), and
//     computes its lease end then. Either order is one of the rules' orders.
//   * the clock (clock_timestamp(); since version 9 a PL/pgSQL assignment
//     just before the statement that reads the store's row) is read after
//     the locks are held, so the times of conflicting writes follow their
//     commit order.
//   * a job's first claim (no row for it yet, version 2) has nothing to lock
//     but the row it creates: it reads the clock, then inserts the job's row
//     and its run in one statement (INSERT ... ON CONFLICT DO NOTHING). A
//     concurrent first claim of the same job waits on that insert and, once
//     it commits, finds the row and does nothing; it then takes the general
//     path (lock the row, read the runs, read the clock again), so it is
//     ordered after the first, with a later clock reading. Runs exist only
//     under their job's row, so a job without one has no run to examine,
//     and no pause either (pause() creates the row); a pause() that inserts
//     the row meanwhile makes the first claim's insert wait, do nothing, and
//     take the general path, which reads the pause under the lock. Since
//     version 9 a first claim does not lock a row to find that there is
//     none: it reads the clock, then finds no row in the snapshot of the
//     statement that decides (a row there: the general path). A purge
//     needs a clock past every fence of the job, so a fence won from that
//     reading is above every fence the job had before the snapshot.
//   * heartbeat_many locks its rows in whatever order the join meets them;
//     two batches sharing runs in opposite orders could deadlock (40P01):
//     PostgreSQL aborts one, nothing of it is applied, and the store
//     retries it. Claims never wait on a batch while holding a run row a
//     batch waits for in another order: a claim locks its run rows in one
//     statement, after the job row that no batch takes.
//
// Migrations run under pg_advisory_xact_lock on a key derived from the
// schema name, in one transaction: many instances starting at once migrate
// once; the others wait, then find the current version. A version above the
// one this library knows is an error (an older library must not write a
// newer layout).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace lease::detail::postgres {

/// The layout version this library writes.
inline constexpr int schema_version = 9;

/// `sql` with every '@' replaced by the quoted schema name (a validated
/// identifier: letters, digits, '_').
[[nodiscard]] inline std::string in_schema(std::string_view sql, const std::string& schema) {
  std::string out;
  out.reserve(sql.size() + 64);
  for (char c : sql) {
    if (c == '@') out += '"' + schema + '"';
    else out += c;
  }
  return out;
}

/// Version 1's tables and functions but its lease_claim: a new schema is
/// this, then upgrade_to_v2 (which creates lease_claim) and the steps after
/// it, all in the migration's transaction.
inline constexpr std::string_view create_v1 = R"SQL(
CREATE SCHEMA IF NOT EXISTS @;
CREATE TABLE @.lease_schema_version (version int4 NOT NULL);
INSERT INTO @.lease_schema_version VALUES (1);
CREATE TABLE @.lease_store (id int4 PRIMARY KEY CHECK (id = 1), marker text NOT NULL, lost_at int8);
INSERT INTO @.lease_store VALUES (1, gen_random_uuid()::text, NULL);
CREATE TABLE @.lease_jobs (job bytea PRIMARY KEY, fence int8 NOT NULL);
CREATE TABLE @.lease_runs (
  job bytea NOT NULL, slot int8 NOT NULL, attempt int4 NOT NULL, token bytea NOT NULL, fence int8 NOT NULL,
  runner bytea NOT NULL, status int2 NOT NULL CHECK (status BETWEEN 0 AND 3), lease_end int8 NOT NULL,
  released bool NOT NULL, handovers int4 NOT NULL, PRIMARY KEY (job, slot));
CREATE INDEX lease_runs_running ON @.lease_runs (job, slot) WHERE status = 0;

-- The store's clock: the caller's (p_now) or the server's, in ms.
CREATE FUNCTION @.lease_now(p_now int8) RETURNS int8 LANGUAGE sql VOLATILE AS
$f$ SELECT coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8) $f$;

-- A loss of state noticed now: the quarantine starts now unless a later one is recorded.
CREATE FUNCTION @.lease_note_loss(p_now int8) RETURNS int8 LANGUAGE sql VOLATILE AS
$f$ UPDATE @.lease_store SET lost_at = greatest(lost_at, @.lease_now(p_now)) WHERE id = 1 RETURNING lost_at $f$;

)SQL";

/// Version 2: the same tables; lease_claim does the same in fewer
/// statements and writes (a job's first claim: its row and run in one
/// statement, without the locking read of runs it cannot have; the fence, the
/// new run and the pruning in one statement; the clock and the store's state
/// in one read). Same arguments and answers: instances of version 1 still
/// connected go on calling it. Run inside the migration's transaction, on a
/// version 1 schema.
inline constexpr std::string_view upgrade_to_v2 = R"SQL(
-- A claim: rules::claim of lease/rules.hpp, answer for answer. Outcomes are
-- claim_outcome's values (won 0, running 1, overlap 2, late 3, superseded 4,
-- finished 5, none 6, early 7, quarantined 8); reasons and overlap modes
-- likewise. p_marker: the store marker the caller saw ('' if none);
-- p_known: the highest fence of the job the caller saw (0 if none): a
-- stored fence below it can only be a loss of state.
CREATE OR REPLACE FUNCTION @.lease_claim(p_now int8, p_marker text, p_known int8, p_job bytea, p_slot int8, p_runner bytea,
    p_token bytea, p_reason int4, p_lease int8, p_max_attempts int4, p_deadline int8, p_overlap int4,
    p_history int4, p_retain int8,
    OUT o_outcome int4, OUT o_now int8, OUT o_detected bool, OUT o_marker text, OUT o_lost_at int8,
    OUT o_slot int8, OUT o_attempt int4, OUT o_token bytea, OUT o_fence int8, OUT o_runner bytea,
    OUT o_status int4, OUT o_lease_end int8, OUT o_released bool, OUT o_handovers int4)
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE
  v_fence int8;
  v_row @.lease_runs%ROWTYPE;
  v_run @.lease_runs%ROWTYPE;
  v_found bool := false;
  v_newer bool := false;
  v_others int4 := 0;
BEGIN
  o_detected := false;
  o_slot := p_slot;
  -- 1. The job's row: every claim of the job waits here for the one before.
  SELECT j.fence INTO v_fence FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;
  IF NOT FOUND AND p_known = 0 THEN
    -- A job never claimed has no runs (runs are inserted only under its
    -- row), so with no loss in sight the rules come down to none, late,
    -- early or won. Won: the job's row (its fence already the won one) and
    -- the run in one statement. A claim of the same job that got there
    -- first makes the row's insert wait for it and then do nothing: this
    -- claim then takes the long way below, locks and clock read again.
    SELECT coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8), s.marker, s.lost_at
      INTO o_now, o_marker, o_lost_at FROM @.lease_store s WHERE s.id = 1;
    IF (p_marker = '' OR p_marker = o_marker) AND o_lost_at IS NULL THEN
      IF p_reason = 2 THEN o_outcome := 6; RETURN; END IF;
      IF o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;
      IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;
      WITH j AS (INSERT INTO @.lease_jobs (job, fence) VALUES (p_job, greatest(1, o_now))
                   ON CONFLICT (job) DO NOTHING RETURNING fence)
      INSERT INTO @.lease_runs SELECT p_job, p_slot, 1, p_token, j.fence, p_runner, 0, o_now + p_lease, false, 0 FROM j
        RETURNING * INTO v_run;
      IF FOUND THEN
        o_outcome := 0;
        o_attempt := 1; o_token := p_token; o_fence := v_run.fence; o_runner := p_runner; o_status := 0;
        o_lease_end := v_run.lease_end; o_released := false; o_handovers := 0;
        RETURN;
      END IF;
    END IF;
  END IF;
  IF v_fence IS NULL THEN
    INSERT INTO @.lease_jobs AS j (job, fence) VALUES (p_job, 0)
      ON CONFLICT (job) DO UPDATE SET fence = j.fence RETURNING j.fence INTO v_fence;
  END IF;
  -- 2. The run, the job's newer runs and its running runs, locked (slot
  --    order) and read in one pass, so heartbeats, finishes and releases of
  --    them order with this claim.
  FOR v_row IN SELECT * FROM @.lease_runs r WHERE r.job = p_job AND (r.slot >= p_slot OR r.status = 0)
                 ORDER BY r.slot FOR UPDATE LOOP
    IF v_row.slot = p_slot THEN
      v_run := v_row;
      v_found := true;
    ELSE
      IF v_row.slot > p_slot THEN v_newer := true; END IF;
      IF v_row.status = 0 THEN v_others := v_others + 1; END IF;
    END IF;
  END LOOP;
  -- 3. The clock, once every lock is held, and the evidence of a loss of state.
  SELECT coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8), s.marker, s.lost_at
    INTO o_now, o_marker, o_lost_at FROM @.lease_store s WHERE s.id = 1;
  IF p_marker <> '' AND p_marker <> o_marker THEN
    o_detected := true;
  ELSIF p_known > v_fence THEN
    o_detected := true;
    v_fence := p_known;  -- fences never go back, not even after a loss
    UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job;
  END IF;
  IF o_detected THEN
    UPDATE @.lease_store s SET lost_at = greatest(s.lost_at, o_now) WHERE s.id = 1 RETURNING s.lost_at INTO o_lost_at;
  END IF;
  -- 4. The rules.
  IF v_found THEN
    IF v_run.status <> 0 THEN
      o_outcome := 5;
    ELSIF o_now < v_run.lease_end THEN
      o_outcome := 1;
    ELSIF v_newer OR v_run.attempt - v_run.handovers >= p_max_attempts THEN
      UPDATE @.lease_runs r SET status = 3 WHERE r.job = p_job AND r.slot = p_slot;
      v_run.status := 3;
      o_outcome := 5;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSE
      v_fence := greatest(v_fence + 1, o_now);
      WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job)
      UPDATE @.lease_runs r SET attempt = r.attempt + 1, token = p_token, runner = p_runner, fence = v_fence,
          status = 0, lease_end = o_now + p_lease, released = false
        WHERE r.job = p_job AND r.slot = p_slot RETURNING r.* INTO v_run;
      o_outcome := 0;
    END IF;
  ELSE
    IF p_reason = 2 THEN o_outcome := 6; RETURN; END IF;
    IF o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;
    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;
    IF v_newer THEN o_outcome := 4; RETURN; END IF;
    IF v_others > 0 AND p_overlap IN (0, 2) THEN
      SELECT * INTO v_run FROM @.lease_runs r
        WHERE r.job = p_job AND r.status = 0 AND o_now < r.lease_end ORDER BY r.slot DESC LIMIT 1;
      v_found := FOUND;
    END IF;
    IF v_found THEN
      o_outcome := 2;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSIF o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN
      o_outcome := 8;  -- a slot that may have run before the loss never starts (lease end: never)
      RETURN;
    ELSE
      IF v_others > 0 THEN
        UPDATE @.lease_runs r SET status = 3
          WHERE r.job = p_job AND r.status = 0 AND (r.lease_end <= o_now OR p_overlap = 3);
      END IF;
      v_fence := greatest(v_fence + 1, o_now);
      -- The fence, the new run and the pruning in one statement. Pruning:
      -- ended runs past the horizon, except the newest p_history ended ones
      -- (the statement's snapshot: the new run, running, is not among them).
      WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job),
           d AS (DELETE FROM @.lease_runs r
                   WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000
                     AND r.slot < coalesce((SELECT min(k.slot) FROM (SELECT k2.slot FROM @.lease_runs k2
                                             WHERE k2.job = p_job AND k2.status <> 0 ORDER BY k2.slot DESC LIMIT p_history) k),
                                           9223372036854775807))
      INSERT INTO @.lease_runs VALUES (p_job, p_slot, 1, p_token, v_fence, p_runner, 0, o_now + p_lease, false, 0)
        RETURNING * INTO v_run;
      o_outcome := 0;
    END IF;
  END IF;
  o_slot := v_run.slot; o_attempt := v_run.attempt; o_token := v_run.token; o_fence := v_run.fence;
  o_runner := v_run.runner; o_status := v_run.status; o_lease_end := v_run.lease_end;
  o_released := v_run.released; o_handovers := v_run.handovers;
END
$f$;
UPDATE @.lease_schema_version SET version = 2;
)SQL";

/// Version 3: the same tables without the index of running runs. Every
/// finish changed a column of its predicate, so no finish was a HOT update
/// (each wrote a new entry in the primary key too), and its dead entries,
/// met by bitmap scans that never mark them dead, made every claim of a
/// busy job slower until a vacuum. A job's runs are few (pruned to its
/// history and retention), so its running runs are found on the primary
/// key's (job, slot) range. Instances of version 2 still connected work on
/// it unchanged (the index was a speed-up only). Run inside the migration's
/// transaction, on a version 2 schema.
inline constexpr std::string_view upgrade_to_v3 = R"SQL(
DROP INDEX IF EXISTS @.lease_runs_running;
UPDATE @.lease_schema_version SET version = 3;
)SQL";

/// Version 4: the job's pause (lease_jobs.paused, false for every job of an
/// older schema), and lease_claim checking it: version 2's function with the
/// pause read under the job row's lock and a claim that would win answered
/// paused (9) instead, changing nothing (rules::claim, cases 6 and 15).
/// Built from upgrade_to_v2's text by the replacements below, so the diff
/// between the two claims is exactly these lines; each must match once (a
/// test migrates every version). Instances of version 3 still connected call
/// the same function and get the same answers until a job is paused (then an
/// outcome they do not know, a store_error: upgrade them before pausing).
/// Run inside the migration's transaction, on a version 3 schema.
namespace detail_schema {
/// Replaces the one occurrence of `from` in `f` by `to`; a text that does not
/// match exactly once is a bug of this file (a test migrates every version).
inline void replace_once(std::string& f, std::string_view from, std::string_view to, const char* step) {
  const auto at = f.find(from);
  if (at == std::string::npos || f.find(from, at + 1) != std::string::npos)
    throw std::logic_error(std::string("lease postgres schema: ") + step + " does not match the lease_claim it edits");
  f.replace(at, from.size(), to);
}
}  // namespace detail_schema

[[nodiscard]] inline std::string upgrade_to_v4() {
  std::string f(upgrade_to_v2);
  auto replace = [&](std::string_view from, std::string_view to) {
    detail_schema::replace_once(f, from, to, "upgrade_to_v4");
  };
  replace("finished 5, none 6, early 7, quarantined 8)", "finished 5, none 6, early 7, quarantined 8, paused 9)");
  replace("  v_others int4 := 0;\n", "  v_others int4 := 0;\n  v_paused bool := false;\n");
  replace("SELECT j.fence INTO v_fence FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;",
          "SELECT j.fence, j.paused INTO v_fence, v_paused FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;");
  replace("ON CONFLICT (job) DO UPDATE SET fence = j.fence RETURNING j.fence INTO v_fence;",
          "ON CONFLICT (job) DO UPDATE SET fence = j.fence RETURNING j.fence, j.paused INTO v_fence, v_paused;");
  // The next attempt of an expired run (case 6): paused, the run left as it is.
  replace("      o_lease_end := o_lost_at + p_lease;\n      RETURN;\n    ELSE\n      v_fence := greatest(v_fence + 1, o_now);\n",
          "      o_lease_end := o_lost_at + p_lease;\n      RETURN;\n    ELSIF v_paused THEN\n      o_outcome := 9;\n"
          "      RETURN;\n    ELSE\n      v_fence := greatest(v_fence + 1, o_now);\n");
  // A new run (case 15): paused, nothing created.
  replace("      o_outcome := 8;  -- a slot that may have run before the loss never starts (lease end: never)\n"
          "      RETURN;\n    ELSE\n",
          "      o_outcome := 8;  -- a slot that may have run before the loss never starts (lease end: never)\n"
          "      RETURN;\n    ELSIF v_paused THEN\n      o_outcome := 9;\n      RETURN;\n    ELSE\n");
  replace("UPDATE @.lease_schema_version SET version = 2;", "UPDATE @.lease_schema_version SET version = 4;");
  return "ALTER TABLE @.lease_jobs ADD COLUMN paused bool NOT NULL DEFAULT false;\n" + f;
}

/// Version 5's stop, registrations and purge (doc/store-rules.md, "Pause and
/// resume": stop; "Registration and purge"), appended to upgrade_to_v5:
///   lease_registrations(job, instance, schedule, zone, last_seen)  one row
///       per (job, instance) registration (rules::register_jobs), bytea
///       like every name, last_seen on the store's clock. Independent of
///       lease_jobs: a job with only registrations has no job row (it is
///       listed all the same, see list_jobs).
///   lease_jobs.placeholder  true for the row a claim created only to lock
///       it and did not win (after a loss of state): no state of the rules'
///       (rules::purge answers not_found for it) until a win, a pause, a
///       trigger or a stop; false for every row of an older schema.
///   lease_store.purged_at  the store clock of the last purge (NULL if
///       none): lease_claim's loss check does not take a purged job for a
///       lost one (a handle's known fence of it is below it).
///   lease_stop, lease_purge  functions, so that each statement after the
///       first (which takes the job row's lock, as a claim does) gets a new
///       snapshot at READ COMMITTED: a claim that committed while it waited
///       for the lock is seen (one statement would read with the snapshot
///       taken before the wait, and miss the run that claim won).
inline constexpr std::string_view registry_v5 = R"SQL(
CREATE TABLE @.lease_registrations (
  job bytea NOT NULL, instance bytea NOT NULL, schedule bytea NOT NULL, zone bytea NOT NULL, last_seen int8 NOT NULL,
  PRIMARY KEY (job, instance));
ALTER TABLE @.lease_store ADD COLUMN purged_at int8;

-- rules::stop: the pause (the job row created if none, its lock taken as a
-- claim takes it, so claims of the job wait, and then see the pause), then
-- the job's running runs locked, and each unreleased one handed over as
-- release() does but with its lease end kept (its handler runs until the
-- runner's next heartbeat is refused: no attempt may start before the lease
-- ends); the job announced on p_channel when a run was handed over (backups
-- re-check it). The count. (p_now is unused: stop reads no clock.)
CREATE FUNCTION @.lease_stop(p_now int8, p_job bytea, p_channel text) RETURNS int8
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE
  v_n int8;
BEGIN
  INSERT INTO @.lease_jobs AS j (job, fence, paused) VALUES (p_job, 0, true)
    ON CONFLICT (job) DO UPDATE SET paused = true, placeholder = false;
  PERFORM 1 FROM @.lease_runs r WHERE r.job = p_job AND r.status = 0 ORDER BY r.slot FOR UPDATE;
  UPDATE @.lease_runs r SET released = true, handovers = r.handovers + 1
    WHERE r.job = p_job AND r.status = 0 AND NOT r.released;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n > 0 THEN
    PERFORM pg_notify(p_channel, CASE WHEN octet_length(p_job) <= 3900 THEN encode(p_job, 'hex') ELSE '' END);
  END IF;
  RETURN v_n;
END
$f$;

-- rules::purge, in its order. Outcomes are purge_outcome's values (purged 0,
-- not_found 1, registered 2, running 3, too_soon 4). The job row's lock
-- first (claims, stop, pause and trigger of the job wait, or are waited
-- for), then its registrations' and running runs' (a register_jobs or a
-- heartbeat of them is before or after, whole), then the clock; each read
-- after that is a new snapshot that sees every write ordered before.
CREATE FUNCTION @.lease_purge(p_now int8, p_job bytea, p_unseen int8,
    OUT o_outcome int4, OUT o_instance bytea, OUT o_schedule bytea, OUT o_zone bytea, OUT o_last_seen int8,
    OUT o_slot int8, OUT o_attempt int4, OUT o_token bytea, OUT o_fence int8, OUT o_runner bytea,
    OUT o_status int4, OUT o_lease_end int8, OUT o_released bool, OUT o_handovers int4, OUT o_manual bool)
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE
  v_fence int8;
  v_row bool;
  v_now int8;
BEGIN
  SELECT j.fence, NOT j.placeholder OR j.fence <> 0 INTO v_fence, v_row FROM @.lease_jobs j WHERE j.job = p_job
    FOR UPDATE;
  v_row := coalesce(v_row, false);
  PERFORM 1 FROM @.lease_registrations g WHERE g.job = p_job ORDER BY g.instance FOR UPDATE;
  PERFORM 1 FROM @.lease_runs r WHERE r.job = p_job AND r.status = 0 ORDER BY r.slot FOR UPDATE;
  v_now := @.lease_now(p_now);
  -- The newest registration seen within p_unseen; ties: the first by instance id (bytes).
  SELECT g.instance, g.schedule, g.zone, g.last_seen INTO o_instance, o_schedule, o_zone, o_last_seen
    FROM @.lease_registrations g WHERE g.job = p_job AND v_now - g.last_seen < p_unseen
    ORDER BY g.last_seen DESC, g.instance LIMIT 1;
  IF FOUND THEN o_outcome := 2; RETURN; END IF;
  IF NOT v_row AND NOT EXISTS (SELECT 1 FROM @.lease_registrations g WHERE g.job = p_job) THEN
    o_outcome := 1;
    RETURN;
  END IF;
  -- The newest live run.
  SELECT r.slot, r.attempt, r.token, r.fence, r.runner, r.status, r.lease_end, r.released, r.handovers, r.manual
    INTO o_slot, o_attempt, o_token, o_fence, o_runner, o_status, o_lease_end, o_released, o_handovers, o_manual
    FROM @.lease_runs r WHERE r.job = p_job AND r.status = 0 AND v_now < r.lease_end ORDER BY r.slot DESC LIMIT 1;
  IF FOUND THEN o_outcome := 3; RETURN; END IF;
  -- The fence goes with the job: the next won fence (at least store-now in
  -- ms) must still be above it.
  IF v_now <= 0 OR v_now <= coalesce(v_fence, 0) THEN o_outcome := 4; RETURN; END IF;
  DELETE FROM @.lease_runs r WHERE r.job = p_job;
  DELETE FROM @.lease_registrations g WHERE g.job = p_job;
  DELETE FROM @.lease_jobs j WHERE j.job = p_job;
  UPDATE @.lease_store s SET purged_at = greatest(s.purged_at, v_now) WHERE s.id = 1;
  o_outcome := 0;
END
$f$;
)SQL";

/// Version 5: "trigger now" (doc/store-rules.md, "Trigger now"). The job's
/// pending trigger (lease_jobs.trigger: the slot of the manual run asked
/// for, store clock in ms; NULL when none is pending, as for every job of an
/// older schema), the manual flag of a run (lease_runs.manual, false for
/// every run of an older schema), and lease_claim with rules::claim's manual
/// branch (reason 3): version 4's function with the trigger read under the
/// job row's lock and the lines below changed, each of which must match once
/// (a test migrates every version). The function gains an output (o_manual),
/// so it is dropped and created again in the migration's transaction: an
/// instance of version 4 still connected names the columns it reads and gets
/// the same answers until a trigger is claimed (a claim reason it never
/// sends). Both new columns are added without a table rewrite (a NULL and a
/// constant default), and neither is indexed, so finishes stay HOT updates.
/// Run inside the migration's transaction, on a version 4 schema.
[[nodiscard]] inline std::string upgrade_to_v5() {
  std::string f = upgrade_to_v4();
  // upgrade_to_v4() starts with its ALTER TABLE; the function follows it.
  const std::string_view alter_v4 = "ALTER TABLE @.lease_jobs ADD COLUMN paused bool NOT NULL DEFAULT false;\n";
  if (f.compare(0, alter_v4.size(), alter_v4) != 0)
    throw std::logic_error("lease postgres schema: upgrade_to_v5 does not match upgrade_to_v4");
  f.erase(0, alter_v4.size());
  auto replace = [&](std::string_view from, std::string_view to) {
    detail_schema::replace_once(f, from, to, "upgrade_to_v5");
  };
  replace("paused 9); reasons and overlap modes\n-- likewise.",
          "paused 9); reasons (manual 3) and overlap modes\n"
          "-- likewise. A manual claim is rules::claim's manual branch: it wins only the\n"
          "-- job's pending trigger (lease_jobs.trigger = p_slot), and each of its\n"
          "-- answers that rules::claim says answers the trigger clears it, under the\n"
          "-- job row's lock. o_manual: the run's manual flag.");
  replace("CREATE OR REPLACE FUNCTION @.lease_claim(",
          "DROP FUNCTION @.lease_claim(int8, text, int8, bytea, int8, bytea, bytea, int4, int8, int4, int8, int4, int4, "
          "int8);\nCREATE FUNCTION @.lease_claim(");
  replace("OUT o_released bool, OUT o_handovers int4)", "OUT o_released bool, OUT o_handovers int4, OUT o_manual bool)");
  replace("  v_paused bool := false;\n",
          "  v_paused bool := false;\n  v_trigger int8;\n  v_manual bool := p_reason = 3;\n");
  replace("SELECT j.fence, j.paused INTO v_fence, v_paused FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;",
          "SELECT j.fence, j.paused, j.trigger INTO v_fence, v_paused, v_trigger FROM @.lease_jobs j WHERE j.job = p_job "
          "FOR UPDATE;");
  // A job without a row has no pending trigger: a manual claim is none.
  replace("\n      IF p_reason = 2 THEN o_outcome := 6; RETURN; END IF;",
          "\n      IF p_reason IN (2, 3) THEN o_outcome := 6; RETURN; END IF;");
  replace("o_lease_end := v_run.lease_end; o_released := false; o_handovers := 0;",
          "o_lease_end := v_run.lease_end; o_released := false; o_handovers := 0; o_manual := false;");
  replace("RETURNING j.fence, j.paused INTO v_fence, v_paused;",
          "RETURNING j.fence, j.paused, j.trigger INTO v_fence, v_paused, v_trigger;");
  // The run has state: it is the trigger's answer (a scheduled slot of that
  // very millisecond, or the trigger's own run), whatever the claim's outcome.
  replace("  -- 4. The rules.\n  IF v_found THEN\n",
          "  -- 4. The rules.\n"
          "  IF v_found AND v_manual AND v_trigger = p_slot THEN\n"
          "    UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job;\n"
          "  END IF;\n"
          "  IF v_found THEN\n");
  // No state: a manual claim needs the pending trigger of this very slot;
  // it is never late nor superseded.
  replace("\n    IF p_reason = 2 THEN o_outcome := 6; RETURN; END IF;\n"
          "    IF o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;\n"
          "    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;\n"
          "    IF v_newer THEN o_outcome := 4; RETURN; END IF;\n",
          "\n    IF p_reason = 2 OR (v_manual AND v_trigger IS DISTINCT FROM p_slot) THEN o_outcome := 6; RETURN; END IF;\n"
          "    IF NOT v_manual AND o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;\n"
          "    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;\n"
          "    IF v_newer AND NOT v_manual THEN o_outcome := 4; RETURN; END IF;\n");
  // Overlap in skip mode drops the trigger (buffer_one keeps it pending).
  replace("    IF v_found THEN\n      o_outcome := 2;\n",
          "    IF v_found THEN\n      o_outcome := 2;\n"
          "      IF v_manual AND p_overlap = 0 THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;\n");
  // Case 14 does not apply: a loss forgot every trigger asked before it.
  replace("    ELSIF o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN\n",
          "    ELSIF NOT v_manual AND o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN\n");
  // Paused answers the trigger (it does not wait for the resume).
  replace("    ELSIF v_paused THEN\n      o_outcome := 9;\n      RETURN;\n    ELSE\n      IF v_others > 0 THEN\n",
          "    ELSIF v_paused THEN\n      o_outcome := 9;\n"
          "      IF v_manual THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;\n"
          "      RETURN;\n    ELSE\n      IF v_others > 0 THEN\n");
  // A new run interrupts every expired running run, and in replace mode the
  // older live ones (a manual run may be older than runs of the schedule; any
  // other new run has no newer one).
  replace("WHERE r.job = p_job AND r.status = 0 AND (r.lease_end <= o_now OR p_overlap = 3);",
          "WHERE r.job = p_job AND r.status = 0 AND (r.lease_end <= o_now OR (p_overlap = 3 AND r.slot < p_slot));");
  // Winning answers the trigger, and the run is marked manual.
  replace("WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job),\n",
          "WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence, trigger = CASE WHEN v_manual THEN NULL ELSE j.trigger END\n"
          "                 WHERE j.job = p_job),\n");
  // Pruning keeps the run at the pending trigger's slot (it answers the
  // trigger; v_trigger is the trigger before this claim, which a manual win
  // answers: its slot is then the new, running run's).
  replace("WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000\n",
          "WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000\n"
          "                     AND r.slot IS DISTINCT FROM v_trigger\n");
  replace("VALUES (p_job, p_slot, 1, p_token, v_fence, p_runner, 0, o_now + p_lease, false, 0)",
          "VALUES (p_job, p_slot, 1, p_token, v_fence, p_runner, 0, o_now + p_lease, false, 0, v_manual)");
  replace("o_released := v_run.released; o_handovers := v_run.handovers;",
          "o_released := v_run.released; o_handovers := v_run.handovers; o_manual := v_run.manual;");
  // A job purged (lease_purge) is not a loss: a claim of a handle that saw
  // its fence finds no fence, or a fence of 0 (the row of a pause or trigger
  // since), and knows no fence above the last purge's clock.
  replace("  ELSIF p_known > v_fence THEN\n",
          "  ELSIF p_known > v_fence AND NOT (v_fence = 0 AND p_known <= (SELECT coalesce(s.purged_at, 0)\n"
          "                                     FROM @.lease_store s WHERE s.id = 1)) THEN\n");
  // The job row a claim creates only to lock it (no win: none, late,
  // early, quarantined, paused) is a placeholder, no state of the rules'.
  replace("INSERT INTO @.lease_jobs AS j (job, fence) VALUES (p_job, 0)",
          "INSERT INTO @.lease_jobs AS j (job, fence, placeholder) VALUES (p_job, 0, true)");
  replace("UPDATE @.lease_schema_version SET version = 4;", "UPDATE @.lease_schema_version SET version = 5;");
  return "ALTER TABLE @.lease_jobs ADD COLUMN trigger int8;\n"
         "ALTER TABLE @.lease_runs ADD COLUMN manual bool NOT NULL DEFAULT false;\n"
         "ALTER TABLE @.lease_jobs ADD COLUMN placeholder bool NOT NULL DEFAULT false;\n" + f + std::string(registry_v5);
}

/// Version 6: lease_runs leaves half of each page free (fillfactor 50), so
/// that renewing a lease, finishing or releasing a run (an UPDATE of
/// lease_end, status or released, none of them indexed) finds room for the
/// new row version on its own page: a HOT update, with no new entry in the
/// primary key. At fillfactor 100 most of them were not (a page is full from
/// its inserts), and a batch of 1,000 heartbeats took ~1.7× as long
/// (postgres_bench). Pages written before the migration keep their fill
/// until rewritten; instances of version 5 still connected are unaffected
/// (a storage parameter only).
inline constexpr std::string_view upgrade_to_v6 = R"SQL(
ALTER TABLE @.lease_runs SET (fillfactor = 50);
UPDATE @.lease_schema_version SET version = 6;
)SQL";

/// Version 7: lease_claim after a loss, as rules::claim (doc/store-rules.md):
///  * a fence a handle saw, above the job's counter, proves a loss only if
///    it was won after the loss recorded (a fence is at least the store's
///    clock when it was won): the first claim of each job after one loss
///    finds its counter behind again, and moving lost_at at each of them
///    restarted the store-wide quarantine and skipped slots for hours;
///  * case 4a: a running, expired run inside the loss's horizon (slot ≤
///    lost_at + 1 s) is marked interrupted, never taken over. A restored
///    backup or a failover to a replica that lacked the last writes shows a
///    run as running that may have run to its end since;
///  * case 14 for manual claims too: a trigger still pending inside the
///    horizon was asked before the loss (a restored backup keeps it), at a
///    slot a forgotten scheduled run may share. It is answered, not run.
/// (A trigger asked again moves past the horizon: the trigger statement,
/// which is the library's, not the schema's.) Version 5's function with
/// these replacements, each matching once; the same signature, so instances
/// of version 6 still connected call it and get answers they know.
[[nodiscard]] inline std::string upgrade_to_v7() {
  std::string f = upgrade_to_v5();
  // upgrade_to_v5() is its ALTER TABLEs, the function, then registry_v5.
  const auto begin = f.find("\n-- A claim: rules::claim");
  if (begin == std::string::npos || f.size() < registry_v5.size() ||
      f.compare(f.size() - registry_v5.size(), registry_v5.size(), registry_v5) != 0)
    throw std::logic_error("lease postgres schema: upgrade_to_v7 does not match upgrade_to_v5");
  f = f.substr(begin, f.size() - registry_v5.size() - begin);
  auto replace = [&](std::string_view from, std::string_view to) {
    detail_schema::replace_once(f, from, to, "upgrade_to_v7");
  };
  replace("DROP FUNCTION @.lease_claim(int8, text, int8, bytea, int8, bytea, bytea, int4, int8, int4, int8, int4, int4, "
          "int8);\nCREATE FUNCTION @.lease_claim(",
          "CREATE OR REPLACE FUNCTION @.lease_claim(");
  replace("    o_detected := true;\n    v_fence := p_known;",
          "    -- Won before the loss recorded (fence >= store clock at the win): that loss explains it.\n"
          "    o_detected := o_lost_at IS NULL OR p_known > o_lost_at;\n    v_fence := p_known;");
  replace("    ELSIF v_newer OR v_run.attempt - v_run.handovers >= p_max_attempts THEN\n",
          "    ELSIF v_newer OR v_run.attempt - v_run.handovers >= p_max_attempts\n"
          "          OR (o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000) THEN  -- case 4a: may have run\n");
  replace("    ELSIF NOT v_manual AND o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN\n",
          "    ELSIF o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN\n"
          "      IF v_manual THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;\n");
  replace("UPDATE @.lease_schema_version SET version = 5;", "UPDATE @.lease_schema_version SET version = 7;");
  return f;
}

/// Version 8: lease_claim reads the store's purged_at with its marker and
/// lost_at (step 3) instead of in a subquery of the condition that tests a
/// fence the caller saw. A PL/pgSQL condition with a subquery is a query of
/// its own, and this one was planned at every claim of a job with a row:
/// its custom plan folds to a constant when the fence is not above the
/// counter (nearly always), so the plan cache never chose the generic plan
/// (pg_stat_statements: as many plans as calls, ~4 µs each, of ~75 µs of
/// server time per claim of a job's next slot). Same answers: the purge
/// that matters, the job's own, locks the job's row, which the claim holds
/// from step 1 on, so step 3 sees it as the subquery did. Same signature:
/// instances of version 7 still connected call it and get answers they know.
[[nodiscard]] inline std::string upgrade_to_v8() {
  std::string f = upgrade_to_v7();
  auto replace = [&](std::string_view from, std::string_view to) {
    detail_schema::replace_once(f, from, to, "upgrade_to_v8");
  };
  replace("  v_manual bool := p_reason = 3;\n", "  v_manual bool := p_reason = 3;\n  v_purged int8;\n");
  replace("s.marker, s.lost_at\n    INTO o_now, o_marker, o_lost_at FROM @.lease_store s WHERE s.id = 1;\n  IF p_marker",
          "s.marker, s.lost_at, s.purged_at\n    INTO o_now, o_marker, o_lost_at, v_purged FROM @.lease_store s "
          "WHERE s.id = 1;\n  IF p_marker");
  replace("p_known <= (SELECT coalesce(s.purged_at, 0)\n                                     FROM @.lease_store s "
          "WHERE s.id = 1)) THEN",
          "p_known <= coalesce(v_purged, 0)) THEN");
  replace("UPDATE @.lease_schema_version SET version = 7;", "UPDATE @.lease_schema_version SET version = 8;");
  return f;
}

/// Version 9: version 8's lease_claim, answer for answer, in fewer steps, and
/// no CHECK on lease_runs.status. Where a claim's server time went
/// (pg_stat_statements, perf, postgres_bench): each statement of the
/// function costs its executor start-up (every plan node initialised again
/// at each call), each PL/pgSQL assignment or IF an expression compiled again
/// in each transaction (a claim of a new job ran ~25 of them), and the CHECK
/// was parsed from its catalog text and compiled at every statement that
/// wrote a run (claims, heartbeats, finishes). So:
///   * a first claim (p_known = 0) reads the clock, then in one small
///     statement whether the job has a row, the store's row and the outcome
///     (a CASE: 0 won, 6 none, 3 late, 7 early; -1 the job has a row, a
///     stranger's marker or a loss recorded: the long way, which locks the
///     row, as version 8 did after its probe found it), and wins with one
///     insert whose RETURNING is the answer: 2 statements (version 8: 3, the
///     first of them that probe, FOR UPDATE). The row must be absent from
///     a snapshot taken after the clock reading: a purge needs a clock past
///     every fence of the job, so a fence won from this reading is above
///     them (a first version without this check let a purge between the
///     reading and the insert send a fence back).
///   * the long way reads the run and the job's newer and running runs with
///     one aggregate over the locked rows (no cursor, no step per row), then
///     decides in the statement that reads the store's row the outcomes that
///     write nothing (1, 3, 4, 5, 6, 7) and a new run with nothing else to
///     change (0); everything else (-1) runs version 8's code unchanged.
///     A loss recorded sends a claim there only inside its quarantine or
///     for a slot that may have run before it, where version 8's rules
///     look at it.
///   * the clock is a PL/pgSQL assignment, still read once every lock is
///     held, and now before the snapshot that reads the store's row: a loss
///     recorded before the clock reading is always seen.
/// The statuses written are run_status values only (finish() checks them),
/// and a read of a run refuses any other as a bad reply. Merging more (the
/// clock's statement with the new run's, or a first claim into one CTE
/// statement) was measured slower: a bigger plan costs more to start than
/// a statement saves. Same signature: instances of version 8 still
/// connected call it and get the same answers.
inline constexpr std::string_view upgrade_to_v9 = R"SQL(
CREATE OR REPLACE FUNCTION @.lease_claim(p_now int8, p_marker text, p_known int8, p_job bytea, p_slot int8, p_runner bytea,
    p_token bytea, p_reason int4, p_lease int8, p_max_attempts int4, p_deadline int8, p_overlap int4,
    p_history int4, p_retain int8,
    OUT o_outcome int4, OUT o_now int8, OUT o_detected bool, OUT o_marker text, OUT o_lost_at int8,
    OUT o_slot int8, OUT o_attempt int4, OUT o_token bytea, OUT o_fence int8, OUT o_runner bytea,
    OUT o_status int4, OUT o_lease_end int8, OUT o_released bool, OUT o_handovers int4, OUT o_manual bool)
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE
  v_fence int8;
  v_paused bool;
  v_trigger int8;
  v_found bool;
  v_newer bool;
  v_others int4;
  v_purged int8;
  v_raise bool;
  v_manual bool;
  v_run @.lease_runs%ROWTYPE;
BEGIN
  -- 1. A job never claimed (no row: runs are inserted only under it, so
  --    it has none) by a caller that saw no fence of it: with no loss in
  --    sight the rules come down to none (6), late (3), early (7) or won
  --    (0). -1: the long way below (the job has a row, a stranger's marker
  --    or a loss recorded). No row in a snapshot taken after the clock
  --    reading: every fence the job had is below it (a purge needs a clock
  --    past them), unless, within the next two statements, others create
  --    the job, win it, finish and purge it: version 8's window too (its
  --    probe, then the clock, then the insert).
  IF p_known = 0 THEN
    o_now := coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8);
    SELECT false, p_slot, s.marker, s.lost_at,
           CASE WHEN EXISTS (SELECT 1 FROM @.lease_jobs x WHERE x.job = p_job)
                  OR (p_marker <> '' AND p_marker <> s.marker) OR s.lost_at IS NOT NULL THEN -1
                WHEN p_reason IN (2, 3) THEN 6
                WHEN o_now > p_deadline + 10000 THEN 3
                WHEN p_slot > o_now + 1000 THEN 7
                ELSE 0 END
      INTO o_detected, o_slot, o_marker, o_lost_at, o_outcome
      FROM @.lease_store s WHERE s.id = 1;
    IF o_outcome = 0 THEN
      -- Won: the job's row (its fence already the won one) and the run in
      -- one statement. A claim of the same job that got there first makes
      -- the row's insert wait for it and then do nothing: this claim then
      -- takes the long way below, locks and clock read again.
      WITH j AS (INSERT INTO @.lease_jobs (job, fence) VALUES (p_job, greatest(1, o_now))
                   ON CONFLICT (job) DO NOTHING RETURNING fence)
      INSERT INTO @.lease_runs AS r SELECT p_job, p_slot, 1, p_token, j.fence, p_runner, 0, o_now + p_lease, false, 0 FROM j
        RETURNING r.attempt, r.token, r.fence, r.runner, r.status, r.lease_end, r.released, r.handovers, r.manual
        INTO o_attempt, o_token, o_fence, o_runner, o_status, o_lease_end, o_released, o_handovers, o_manual;
      IF FOUND THEN RETURN; END IF;
    ELSIF o_outcome > 0 THEN
      RETURN;  -- none, late or early, as the rules answer a job without state
    END IF;
  END IF;
  -- The job's row: every claim of the job waits here for the one before.
  SELECT j.fence, j.paused, j.trigger INTO v_fence, v_paused, v_trigger FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO @.lease_jobs AS j (job, fence, placeholder) VALUES (p_job, 0, true)
      ON CONFLICT (job) DO UPDATE SET fence = j.fence RETURNING j.fence, j.paused, j.trigger INTO v_fence, v_paused, v_trigger;
  END IF;
  -- 2. The run, the job's newer runs and its running runs, locked (slot
  --    order) and read, so heartbeats, finishes and releases of them order
  --    with this claim.
  SELECT p_slot, (a.run).attempt, (a.run).token, (a.run).fence, (a.run).runner, (a.run).status, (a.run).lease_end,
         (a.run).released, (a.run).handovers, (a.run).manual, a.run IS NOT NULL, a.newer, a.others
    INTO o_slot, o_attempt, o_token, o_fence, o_runner, o_status, o_lease_end, o_released, o_handovers, o_manual,
         v_found, v_newer, v_others
    FROM (SELECT (array_agg(r.run) FILTER (WHERE r.slot = p_slot))[1] AS run, coalesce(bool_or(r.slot > p_slot), false) AS newer,
                 (count(*) FILTER (WHERE r.slot <> p_slot AND r.status = 0))::int4 AS others
            FROM (SELECT x AS run, x.slot, x.status FROM @.lease_runs x WHERE x.job = p_job AND (x.slot >= p_slot OR x.status = 0)
                    ORDER BY x.slot FOR UPDATE) r) a;
  -- 3. The clock, once every lock is held, the evidence of a loss of state,
  --    and the outcome when it is one the rules reach without writing
  --    (1, 3, 4, 5, 6, 7) or a new run with nothing else to change (0);
  --    -1: the rules below.
  o_now := coalesce(p_now, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8);
  SELECT s.marker, s.lost_at, s.purged_at,
         p_marker <> '' AND p_marker <> s.marker,
         p_known > v_fence AND NOT (v_fence = 0 AND p_known <= coalesce(s.purged_at, 0)),
         CASE WHEN (p_marker <> '' AND p_marker <> s.marker) OR p_known > v_fence THEN -1
              -- a loss recorded matters inside its quarantine, and to slots that may have run before it
              WHEN s.lost_at IS NOT NULL AND (o_now < s.lost_at + p_lease OR p_slot <= s.lost_at + 1000) THEN -1
              WHEN v_found THEN
                CASE WHEN p_reason = 3 AND v_trigger = p_slot THEN -1
                     WHEN o_status <> 0 THEN 5
                     WHEN o_now < o_lease_end THEN 1
                     ELSE -1 END
              WHEN p_reason = 2 OR (p_reason = 3 AND v_trigger IS DISTINCT FROM p_slot) THEN 6
              WHEN p_reason <> 3 AND o_now > p_deadline + 10000 THEN 3
              WHEN p_slot > o_now + 1000 THEN 7
              WHEN v_newer AND p_reason <> 3 THEN 4
              WHEN v_others > 0 OR v_paused OR p_reason = 3 THEN -1
              ELSE 0 END
    INTO o_marker, o_lost_at, v_purged, o_detected, v_raise, o_outcome
    FROM @.lease_store s WHERE s.id = 1;
  IF o_outcome = 0 THEN
    -- A new run: the fence, the run and the pruning in one statement.
    -- Pruning: ended runs past the horizon, except the newest p_history
    -- ended ones (the statement's snapshot: the new run, running, is not
    -- among them) and the one at a pending trigger's slot.
    WITH f AS (UPDATE @.lease_jobs j SET fence = greatest(v_fence + 1, o_now) WHERE j.job = p_job),
         d AS (DELETE FROM @.lease_runs r
                 WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000
                   AND r.slot IS DISTINCT FROM v_trigger
                   AND r.slot < coalesce((SELECT min(k.slot) FROM (SELECT k2.slot FROM @.lease_runs k2
                                           WHERE k2.job = p_job AND k2.status <> 0 ORDER BY k2.slot DESC LIMIT p_history) k),
                                         9223372036854775807))
    INSERT INTO @.lease_runs AS r VALUES (p_job, p_slot, 1, p_token, greatest(v_fence + 1, o_now), p_runner, 0, o_now + p_lease,
                                     false, 0, false)
      RETURNING r.attempt, r.token, r.fence, r.runner, r.status, r.lease_end, r.released, r.handovers, r.manual
      INTO o_attempt, o_token, o_fence, o_runner, o_status, o_lease_end, o_released, o_handovers, o_manual;
    RETURN;
  ELSIF o_outcome > 0 THEN
    RETURN;  -- the run as read (1, 5), or none (3, 4, 6, 7)
  END IF;
  -- The rules, case by case (the found run moves from the answer to v_run:
  -- an outcome below answers it only where it says so).
  v_manual := p_reason = 3;
  v_run := ROW(p_job, p_slot, o_attempt, o_token, o_fence, o_runner, o_status, o_lease_end, o_released, o_handovers, o_manual);
  o_attempt := NULL; o_token := NULL; o_fence := NULL; o_runner := NULL; o_status := NULL; o_lease_end := NULL;
  o_released := NULL; o_handovers := NULL; o_manual := NULL;
  IF o_detected THEN
    NULL;
  ELSIF v_raise THEN
    -- Won before the loss recorded (fence >= store clock at the win): that loss explains it.
    o_detected := o_lost_at IS NULL OR p_known > o_lost_at;
    v_fence := p_known;  -- fences never go back, not even after a loss
    UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job;
  END IF;
  IF o_detected THEN
    UPDATE @.lease_store s SET lost_at = greatest(s.lost_at, o_now) WHERE s.id = 1 RETURNING s.lost_at INTO o_lost_at;
  END IF;
  IF v_found AND v_manual AND v_trigger = p_slot THEN
    UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job;
  END IF;
  IF v_found THEN
    IF v_run.status <> 0 THEN
      o_outcome := 5;
    ELSIF o_now < v_run.lease_end THEN
      o_outcome := 1;
    ELSIF v_newer OR v_run.attempt - v_run.handovers >= p_max_attempts
          OR (o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000) THEN  -- case 4a: may have run
      UPDATE @.lease_runs r SET status = 3 WHERE r.job = p_job AND r.slot = p_slot;
      v_run.status := 3;
      o_outcome := 5;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSIF v_paused THEN
      o_outcome := 9;
      RETURN;
    ELSE
      v_fence := greatest(v_fence + 1, o_now);
      WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job)
      UPDATE @.lease_runs r SET attempt = r.attempt + 1, token = p_token, runner = p_runner, fence = v_fence,
          status = 0, lease_end = o_now + p_lease, released = false
        WHERE r.job = p_job AND r.slot = p_slot RETURNING r.* INTO v_run;
      o_outcome := 0;
    END IF;
  ELSE
    IF p_reason = 2 OR (v_manual AND v_trigger IS DISTINCT FROM p_slot) THEN o_outcome := 6; RETURN; END IF;
    IF NOT v_manual AND o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;
    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;
    IF v_newer AND NOT v_manual THEN o_outcome := 4; RETURN; END IF;
    IF v_others > 0 AND p_overlap IN (0, 2) THEN
      SELECT * INTO v_run FROM @.lease_runs r
        WHERE r.job = p_job AND r.status = 0 AND o_now < r.lease_end ORDER BY r.slot DESC LIMIT 1;
      v_found := FOUND;
    END IF;
    IF v_found THEN
      o_outcome := 2;
      IF v_manual AND p_overlap = 0 THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSIF o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN
      IF v_manual THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;
      o_outcome := 8;  -- a slot that may have run before the loss never starts (lease end: never)
      RETURN;
    ELSIF v_paused THEN
      o_outcome := 9;
      IF v_manual THEN UPDATE @.lease_jobs j SET trigger = NULL WHERE j.job = p_job; END IF;
      RETURN;
    ELSE
      IF v_others > 0 THEN
        UPDATE @.lease_runs r SET status = 3
          WHERE r.job = p_job AND r.status = 0 AND (r.lease_end <= o_now OR (p_overlap = 3 AND r.slot < p_slot));
      END IF;
      v_fence := greatest(v_fence + 1, o_now);
      WITH f AS (UPDATE @.lease_jobs j SET fence = v_fence, trigger = CASE WHEN v_manual THEN NULL ELSE j.trigger END
                 WHERE j.job = p_job),
           d AS (DELETE FROM @.lease_runs r
                   WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000
                     AND r.slot IS DISTINCT FROM v_trigger
                     AND r.slot < coalesce((SELECT min(k.slot) FROM (SELECT k2.slot FROM @.lease_runs k2
                                             WHERE k2.job = p_job AND k2.status <> 0 ORDER BY k2.slot DESC LIMIT p_history) k),
                                           9223372036854775807))
      INSERT INTO @.lease_runs VALUES (p_job, p_slot, 1, p_token, v_fence, p_runner, 0, o_now + p_lease, false, 0, v_manual)
        RETURNING * INTO v_run;
      o_outcome := 0;
    END IF;
  END IF;
  o_slot := v_run.slot; o_attempt := v_run.attempt; o_token := v_run.token; o_fence := v_run.fence;
  o_runner := v_run.runner; o_status := v_run.status; o_lease_end := v_run.lease_end;
  o_released := v_run.released; o_handovers := v_run.handovers; o_manual := v_run.manual;
END
$f$;
ALTER TABLE @.lease_runs DROP CONSTRAINT IF EXISTS lease_runs_status_check;
UPDATE @.lease_schema_version SET version = 9;
)SQL";

/// The step that takes a schema from version `from` to `from + 1`
/// (1 <= from < schema_version): the text that upgrade runs, unchanged
/// since its release. migrate() runs the steps from a schema's version on,
/// in one transaction; the tests build an older schema from them.
[[nodiscard]] inline std::string upgrade_from(int from) {
  switch (from) {
    case 1: return std::string(upgrade_to_v2);
    case 2: return std::string(upgrade_to_v3);
    case 3: return upgrade_to_v4();
    case 4: return upgrade_to_v5();
    case 5: return std::string(upgrade_to_v6);
    case 6: return upgrade_to_v7();
    case 7: return upgrade_to_v8();
    case 8: return std::string(upgrade_to_v9);
    default: throw std::logic_error("lease postgres schema: no step from version " + std::to_string(from));
  }
}

/// A schema as version `version` of this library left it ('@' = the
/// schema): version 1's tables, then each step up to `version`. Exact from
/// version 2 on; version 1's own lease_claim is not kept here (version 2
/// replaced it: the migration test of version 1 carries its copy).
[[nodiscard]] inline std::string schema_at(int version) {
  std::string sql(create_v1);
  for (int v = 1; v < version; ++v) sql += upgrade_from(v);
  return sql;
}

/// The prepared statements, by index.
enum class stmt : unsigned {
  claim, heartbeat, heartbeat_many, finish, release, get, unfinished, now, note_loss, state, pause, resume, paused,
  list_jobs, list_runs, trigger, triggers, stop, register_jobs, purge, prove, count_
};

inline constexpr const char* stmt_names[] = {"lease_claim", "lease_heartbeat", "lease_heartbeat_many", "lease_finish",
                                             "lease_release", "lease_get", "lease_unfinished", "lease_now",
                                             "lease_note_loss", "lease_state", "lease_pause", "lease_resume",
                                             "lease_paused", "lease_list_jobs", "lease_list_runs",
                                             "lease_trigger", "lease_triggers", "lease_stop",
                                             "lease_register_jobs", "lease_purge", "lease_prove"};

#define LEASE_PG_RECORD "slot, attempt, token, fence, runner, status::int4, lease_end, released, handovers, manual"
#define LEASE_PG_PAYLOAD "CASE WHEN octet_length(job) <= 3900 THEN encode(job, 'hex') ELSE '' END"
// A finish names its run: "<hex job>:<slot ms>" (store/postgres/listener.hpp,
// parse_announcement). A listener of a version before it reads no job from
// it (':' is not hex) and drops it: during a rolling upgrade its backups
// learn of finishes at their periodic checks, as without a push.
#define LEASE_PG_FINISH_PAYLOAD                                                                    \
  "CASE WHEN octet_length(job) <= 3900 THEN encode(job, 'hex') || ':' || slot::text ELSE '' END"

/// A trigger's slot (rules::trigger_slot): the store's clock, or the first
/// ms past a recorded loss's horizon (lost_at + early_tolerance).
#define LEASE_PG_TRIGGER_SLOT \
  "greatest(@.lease_now($1::int8), (SELECT s.lost_at + 1001 FROM @.lease_store s WHERE s.id = 1))"

/// Each statement's text ('@' = the schema). The channel of NOTIFY is $5
/// (finish, release: the release channel) or $3 (trigger: the trigger channel).
inline constexpr std::string_view stmt_sql[] = {
    // claim (lease_claim). A one-statement fast path for the common claims
    // (CTEs, lease_claim only as the fallback) was measured slower: its
    // plan's start-up outweighed the plpgsql statements it saved. Where a
    // claim's time goes, against the floor: benchmark/postgres/postgres_bench.cpp.
    "SELECT o_outcome, o_now, o_detected, o_marker, o_lost_at, o_slot, o_attempt, o_token, o_fence, o_runner, "
    "o_status, o_lease_end, o_released, o_handovers, o_manual FROM @.lease_claim($1::int8, $2::text, $3::int8, $4::bytea, "
    "$5::int8, $6::bytea, $7::bytea, $8::int4, $9::int8, $10::int4, $11::int8, $12::int4, $13::int4, $14::int8)",
    // heartbeat: now, job, slot, token, lease
    "UPDATE @.lease_runs SET lease_end = @.lease_now($1::int8) + $5::int8 "
    "WHERE job = $2::bytea AND slot = $3::int8 AND token = $4::bytea AND status = 0 AND NOT released",
    // heartbeat_many: now, jobs[], slots[], tokens[], leases[], no run twice
    // with one token (heartbeat_many() sends such a run once). The clock is
    // read once (n: a CTE with a volatile function is not inlined), and the
    // answers are matched by position, not by (job, slot, token): ~10 % of
    // the statement's time at 1,000 runs (postgres_bench). An answer is -1
    // (renewed) or, refused, the job's fence counter (0: no row), which the
    // handle compares with the fence it saw (prove_refused); the counter is
    // read only for the refused ones.
    "WITH n AS (SELECT @.lease_now($1::int8) AS now), "
    "     b AS (SELECT * FROM unnest($2::bytea[], $3::int8[], $4::bytea[], $5::int8[]) WITH ORDINALITY "
    "             AS b(job, slot, token, lease, i)), "
    "     u AS (UPDATE @.lease_runs r SET lease_end = n.now + b.lease FROM n, b "
    "           WHERE r.job = b.job AND r.slot = b.slot AND r.token = b.token AND r.status = 0 AND NOT r.released "
    "           RETURNING b.i) "
    "SELECT array_agg(CASE WHEN u.i IS NOT NULL THEN -1 ELSE coalesce((SELECT j.fence FROM @.lease_jobs j "
    "                 WHERE j.job = b.job), 0) END ORDER BY b.i)::int8[] FROM b LEFT JOIN u ON u.i = b.i",
    // finish: job, slot, token, status, channel
    "UPDATE @.lease_runs SET status = $4::int4 "
    "WHERE job = $1::bytea AND slot = $2::int8 AND token = $3::bytea AND status = 0 AND NOT released "
    "RETURNING pg_notify($5::text, " LEASE_PG_FINISH_PAYLOAD ")::text",
    // release: now, job, slot, token, channel
    "UPDATE @.lease_runs SET lease_end = @.lease_now($1::int8), released = true, handovers = handovers + 1 "
    "WHERE job = $2::bytea AND slot = $3::int8 AND token = $4::bytea AND status = 0 AND NOT released "
    "RETURNING pg_notify($5::text, " LEASE_PG_PAYLOAD ")::text",
    // get: job, slot
    "SELECT " LEASE_PG_RECORD " FROM @.lease_runs WHERE job = $1::bytea AND slot = $2::int8",
    // unfinished: job
    "SELECT " LEASE_PG_RECORD " FROM @.lease_runs WHERE job = $1::bytea AND status = 0 ORDER BY slot",
    // now
    "SELECT @.lease_now(NULL)",
    // note_loss: now
    "SELECT @.lease_note_loss($1::int8)",
    // state
    "SELECT marker, lost_at FROM @.lease_store WHERE id = 1",
    // pause: job. A row only when this statement set the pause (a job that
    // never ran gets its row, fence 0, which the next won fence exceeds).
    "INSERT INTO @.lease_jobs AS j (job, fence, paused) VALUES ($1::bytea, 0, true) "
    "ON CONFLICT (job) DO UPDATE SET paused = true, placeholder = false WHERE NOT j.paused RETURNING 1",
    // resume: job. A row only when it was paused.
    "UPDATE @.lease_jobs SET paused = false WHERE job = $1::bytea AND paused RETURNING 1",
    // paused: job
    "SELECT paused::int4 FROM @.lease_jobs WHERE job = $1::bytea AND paused",
    // list_jobs (InspectStore): every job with a fence, a pause, a pending
    // trigger, a run or a registration, its newest run (one index seek per
    // job), one row per registration (by instance id) or one without, by
    // name as bytes (bytea compares bytewise, whatever the database's
    // collation). A run is only inserted under its job's row; a
    // registration needs none, so the jobs are both tables'.
    "WITH k AS (SELECT job FROM @.lease_jobs UNION SELECT job FROM @.lease_registrations) "
    "SELECT k.job, coalesce(j.fence, 0), coalesce(j.paused, false), j.trigger, r.slot, r.attempt, r.token, r.fence, "
    "r.runner, r.status::int4, r.lease_end, r.released, r.handovers, r.manual, g.instance, g.schedule, g.zone, "
    "g.last_seen FROM k LEFT JOIN @.lease_jobs j ON j.job = k.job LEFT JOIN LATERAL (SELECT * FROM "
    "@.lease_runs x WHERE x.job = k.job ORDER BY x.slot DESC LIMIT 1) r ON true "
    "LEFT JOIN @.lease_registrations g ON g.job = k.job "
    "WHERE j.fence <> 0 OR j.paused OR j.trigger IS NOT NULL OR r.slot IS NOT NULL OR g.job IS NOT NULL "
    "ORDER BY k.job, g.instance",
    // list_runs (InspectStore): job, limit
    "SELECT " LEASE_PG_RECORD " FROM @.lease_runs WHERE job = $1::bytea ORDER BY slot DESC LIMIT $2::int8",
    // trigger (TriggerStore): now, job, channel. One statement, atomic
    // against the job's claims: ON CONFLICT DO UPDATE locks the job's row
    // (waiting for a claim that holds it, as a claim waits for it) and
    // evaluates its SET on the row's latest committed version, so the clock
    // (lease_now, the injected clock if any) is read and the pending trigger
    // kept or set under that lock. A job without a row gets one (fence 0,
    // which the next won fence exceeds), its clock read before the insert, as
    // a job's first claim does: a claim of the job that inserts first makes
    // this insert wait for it, then take the update path. The NOTIFY (on the
    // trigger channel, not the release one) is sent when the statement
    // commits, and also for a trigger already pending (a listener then polls
    // and finds it: harmless). The slot is the clock, or just past a
    // recorded loss's horizon (rules::trigger_slot: greatest() skips a NULL
    // lost_at). A pending trigger inside that horizon was asked before the
    // loss (a restored backup keeps it): it moves past it (rules::trigger).
    "INSERT INTO @.lease_jobs AS j (job, fence, trigger) VALUES ($2::bytea, 0, " LEASE_PG_TRIGGER_SLOT ") "
    "ON CONFLICT (job) DO UPDATE SET trigger = CASE WHEN j.trigger IS NULL OR j.trigger <= "
    "(SELECT s.lost_at + 1000 FROM @.lease_store s WHERE s.id = 1) THEN " LEASE_PG_TRIGGER_SLOT " ELSE j.trigger END, "
    "placeholder = false "
    "RETURNING j.trigger, pg_notify($3::text, " LEASE_PG_PAYLOAD ")::text",
    // triggers (TriggerStore): jobs[]. The pending ones among them (the
    // store orders them as asked, each job once).
    "SELECT job, trigger FROM @.lease_jobs WHERE job = ANY($1::bytea[]) AND trigger IS NOT NULL",
    // stop (StopStore): now, job, channel (lease_stop, in registry_v5).
    "SELECT @.lease_stop($1::int8, $2::bytea, $3::text)",
    // register_jobs (RegistryStore): now, jobs[], instances[], schedules[],
    // zones[]. One clock reading for all; the same (job, instance) twice:
    // the later one, as in sequential calls (ON CONFLICT may not touch a
    // row twice). A concurrent purge of the job orders with it on the
    // registration rows it locks (lease_purge).
    "WITH n AS (SELECT @.lease_now($1::int8) AS now), "
    "     b AS (SELECT * FROM unnest($2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[]) WITH ORDINALITY "
    "             AS b(job, instance, schedule, zone, i)), "
    "     l AS (SELECT DISTINCT ON (job, instance) job, instance, schedule, zone FROM b ORDER BY job, instance, i DESC) "
    "INSERT INTO @.lease_registrations AS g (job, instance, schedule, zone, last_seen) "
    "SELECT l.job, l.instance, l.schedule, l.zone, n.now FROM l, n "
    "ON CONFLICT (job, instance) DO UPDATE SET schedule = excluded.schedule, zone = excluded.zone, "
    "last_seen = excluded.last_seen",
    // purge (RegistryStore): now, job, unseen_for in ms (lease_purge, in registry_v5).
    "SELECT o_outcome, o_instance, o_schedule, o_zone, o_last_seen, o_slot, o_attempt, o_token, o_fence, o_runner, "
    "o_status, o_lease_end, o_released, o_handovers, o_manual FROM @.lease_purge($1::int8, $2::bytea, $3::int8)",
    // prove: now, job, known fence. After a refused heartbeat: the fence the
    // handle saw of the job, above the job's counter, proves a loss of state
    // (lease_claim's rule, step 3, in one statement of the library's, so no
    // schema change): the counter goes back up to it (fences never go back),
    // and lost_at moves to now unless the loss recorded explains the fence
    // (won before it) or the job was purged since (a counter of 0, a fence at
    // most the purge's clock). Locks as a claim does when the job has a row:
    // that row first (j, waiting for a claim of the job that holds it, then
    // reading its latest fence), then the store's row (u, whose lost_at and
    // purged_at are tested at that row's latest version; s is the
    // statement's snapshot, for f and the answer). With no row, f's insert
    // may come after u's lock while a claim inserts the row, then waits for
    // the store's row: a deadlock, which PostgreSQL breaks and exec()
    // retries. Answers the lost_at it recorded (NULL: nothing proved) and
    // the one recorded before.
    "WITH j AS (SELECT coalesce((SELECT x.fence FROM @.lease_jobs x WHERE x.job = $2::bytea FOR UPDATE), 0) AS fence), "
    "     s AS (SELECT t.lost_at, t.purged_at FROM @.lease_store t WHERE t.id = 1), "
    "     c AS (SELECT j.fence, $3::int8 > j.fence AND NOT (j.fence = 0 AND $3::int8 <= coalesce(s.purged_at, 0)) "
    "             AS below FROM j, s), "
    "     f AS (INSERT INTO @.lease_jobs AS x (job, fence) SELECT $2::bytea, $3::int8 FROM c WHERE c.below "
    "             ON CONFLICT (job) DO UPDATE SET fence = greatest(x.fence, excluded.fence)), "
    "     u AS (UPDATE @.lease_store t SET lost_at = greatest(t.lost_at, @.lease_now($1::int8)) FROM c "
    "             WHERE t.id = 1 AND c.below AND NOT (c.fence = 0 AND $3::int8 <= coalesce(t.purged_at, 0)) "
    "               AND (t.lost_at IS NULL OR $3::int8 > t.lost_at) RETURNING t.lost_at) "
    "SELECT (SELECT u.lost_at FROM u), (SELECT s.lost_at FROM s)",
};

#undef LEASE_PG_RECORD
#undef LEASE_PG_PAYLOAD
#undef LEASE_PG_TRIGGER_SLOT

}  // namespace lease::detail::postgres
