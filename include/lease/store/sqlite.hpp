// lease/store/sqlite.hpp — lease::sqlite_store, the embedded store: one SQLite
// file shared by every instance (process) on one host.
//
// Design. Every operation is the rule of doc/store-rules.md written by hand in SQL,
// answer for answer the same as lease/rules.hpp (the conformance suite checks
// it against those pure functions):
//   * claim, claim_many, heartbeat_many and finish_many are one `BEGIN IMMEDIATE` transaction each:
//     the write lock is taken first, then the clock is read and the job's rows
//     are examined and written. BEGIN IMMEDIATE (not a deferred BEGIN that
//     upgrades) is what makes busy_timeout cover every wait: a reader that
//     tries to become a writer after another writer committed gets
//     SQLITE_BUSY at once, whatever the timeout.
//   * heartbeat, finish and release are single UPDATE statements whose WHERE
//     clause is the rule (token current, status running, not released);
//     a single statement is its own atomic write transaction.
//   * get, unfinished, paused, list_jobs, list_runs: single SELECTs (one
//     consistent WAL snapshot).
//   * pause and resume (PauseStore) are single statements on the job's row in
//     lease_jobs (an upsert for pause: a job that never ran gets a row with
//     fence 0, which the next won attempt's fence exceeds as ever); a claim
//     reads the flag inside its transaction just before it would win.
//   * trigger (TriggerStore) is one BEGIN IMMEDIATE transaction: read the
//     job's pending trigger (lease_jobs.trigger_slot), else store one at the
//     clock read under the lock. triggers is one SELECT of every pending
//     trigger in the file (a partial index: a poll reads the few pending
//     rows, not every job), filtered by the asked names in C++, so no
//     statement is built from the names. A manual claim reads and clears the
//     trigger inside its own transaction (rules::claim's answer_trigger).
//     SQLite cannot push: instances poll triggers() (not a PushTriggerStore).
//   * stop (StopStore) is one BEGIN IMMEDIATE transaction: the pause's
//     upsert, then one UPDATE of the job's running, unreleased runs
//     (released, handovers + 1, lease end kept); a claim of the job either
//     committed before it (its run is handed over) or comes after and finds
//     the job paused.
//   * register_jobs (RegistryStore) is one BEGIN IMMEDIATE transaction of
//     one prepared upsert per registration into lease_registrations, at one
//     reading of the clock under the lock; purge is one BEGIN IMMEDIATE
//     transaction that reads the job's rows in rules::purge's order and, if
//     nothing holds it, deletes them from the three tables. A claim of the
//     job is wholly before or wholly after it. A purge is no loss of state
//     to any store object on the file (they watch the file's inode, never a
//     job's fence: see schema.hpp).
// Loading the job's rows into a rules::run_table and calling the pure rules
// was the alternative; it costs a read of the job's whole retained history
// (up to history_size + the late-claim window of runs) per claim. The hand
// SQL touches only the run and the next newer one (one index seek answers
// "which state" and "has a newer run started"), the job's running runs (a
// partial index, usually empty), the fence, and the prune range. A won claim
// costs about what the bare INSERT + fence UPDATE costs (benchmark/sqlite).
//
// Statements are prepared once per store (connection) and cached. Job names,
// tokens and runners reach SQL only as bound BLOB parameters, so any bytes
// round-trip (quotes, NUL, 10 kB names).
//
// The file replaced or deleted while open. SQLite keeps using the inode it
// opened: without a check, an instance would go on with an unlinked file while
// an instance started afterwards creates a new one, and every slot would run
// twice. So before every operation the store stat()s the path and compares
// device + inode with the file it has open (benchmark/sqlite measures it),
// unless an inotify watch of the path's directories says that no name on it
// came or went since the last look (store/sqlite/path_watch.hpp: one poll()
// in place of three stat() calls, and why that sees every change they do). The path as the caller named it, made absolute once: not the
// one SQLite resolved through symlinks, so that a symlink in it retargeted
// (`ln -sfn v2 current` under `current/jobs.db`) is a replacement too, where
// the resolved path would keep naming the old file. On a mismatch it closes
// the stale connection *without* a checkpoint
// (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE: a stale handle must not write into, or
// delete, a -wal that may now belong to the new file), opens the path again
// (creating it if gone), records lost_at = now in the file's
// lease_meta unless it holds a later one, queues a notice (take_notices) and
// from then on answers claims by the quarantine rule of rules::claim: no
// attempt is won before lost_at + lease.
//
// Why that keeps a slot from running twice, and the window that remains:
//  * A runner of a run the new file forgot: its instance's next heartbeat
//    first notices the replacement, then is refused (the new file does not
//    know its token), so it stops. Heartbeats it had acknowledged came from
//    the old file, before its instance noticed; so it stops at the latest one
//    lease after that notice (its own self-abort), which is when the
//    quarantine written by that same instance ends. Each old instance that
//    notices later moves lost_at later ("a later one wins"), never earlier.
//    Backdating lost_at would be wrong: it must cover heartbeats the old file
//    acknowledged until this instance noticed.
//  * An instance that opens the path after the replacement has no memory of
//    the old inode, and nothing in a new file tells "first start ever" from
//    "replaced under running instances" (the old -wal/-shm may be gone too).
//    Until the first old instance notices (up to one heartbeat), it could win
//    a slot whose old runner is still running: the double-run window. So a
//    file the store *creates* is treated as a loss noticed at its creation
//    (sqlite_options::quarantine_new_file, on by default): lost_at =
//    created_at, written in the schema's own creating transaction. Every old
//    runner's last acknowledged heartbeat was sent before the creation, so it
//    self-aborts within one lease of it: no window remains. The price is one
//    lease without runs after a store file is first created (first deployment,
//    or a deliberate reset). An existing file replaced by a rename of another
//    lease file (a backup restored) holds no such evidence; the old instances
//    close that window at their next operation, not before (documented on
//    sqlite_options::quarantine_new_file).
//  * The -wal or the -shm deleted or replaced alone (a cleanup script) is a
//    loss too: the deleted -wal is the only copy of the commits since the
//    last checkpoint (gone when the processes holding it die), and a new
//    -shm splits the WAL's write lock, so an instance started since and this
//    one would both win a run. check_file() stat()s both too (two more
//    syscalls) and recovers as for a replaced file. One store object per
//    process recovers at once; several on the file in one process share
//    SQLite's state for it, so a reopen fails as unavailable until each of
//    them has noticed and closed its stale connection. What remains: a
//    -shm replaced (not only deleted) by an instance started since, before
//    every store object of a process has noticed, is joined again as the
//    stale one by the reopen, which cannot tell.
//  * SQLite finds a database's -wal and -shm by name. Replacing or deleting
//    jobs.db while it is open but leaving jobs.db-wal/-shm beside it makes a
//    new connection read the new file through the old WAL (SQLite's "how to
//    corrupt a database", §2.4): remove or replace all three together.
//
// The file rewound in place. A restore that writes into the open file keeps
// its inode (`sqlite3 jobs.db ".restore backup.db"`, the backup API; a file
// system rolled back), so the stat() above sees nothing, and the file forgets what happened since the
// backup: a run that finished shows as running with an expired lease (a
// takeover would run it again), a run won since has no state (a claim would
// win it again as attempt 1). So every claim transaction (claim, claim_many)
// first bumps a store-wide claim counter (lease_jobs' row 'claims', a TEXT
// key no job's BLOB name equals, read with the schema version and written back: schema.hpp says why
// there), and the store remembers the highest value a committed
// claim of its own wrote (0 when it opens a file). A value read that is not
// above it means the file went back under this instance: the loss is
// recorded as for a replaced file (lost_at = now unless a later one is
// recorded), in that same transaction before the claims are judged, so they
// are quarantined (and a run the backup shows as running never taken over:
// forgotten_slot), and a notice is queued. The remembered value and the
// notice take effect only once the transaction commits. The first claim
// after the restore by any instance that claimed since the backup was taken
// notices it; once lost_at is in the file every instance obeys it. A backup
// taken before this release upgraded the file shows in the claim transaction
// as an older schema version: the same loss, recorded, and the file is
// upgraded again (count_claim_after_rewind_to). What it
// cannot see: a restore only instances that have not claimed since the
// backup was taken have open (nothing they remember is newer), or one that
// happened before an instance opened the file (a new instance remembers
// nothing); until an instance that claimed since notices, those win by the
// restored state. Nor does it see the last commits dropped by a power loss
// with sqlite_options::durable = false: the processes that remembered the
// counter went down with them. The cost: a read and a write in each claim
// transaction, on the page a won claim writes anyway while the jobs fit on
// one; heartbeats, finishes and the other writes do not count. An instance that notices late (it
// claims rarely) records a new loss and quarantines every job again, even
// if another instance recorded this rewind already: it cannot tell that one
// from a second restore since, and a lease without runs is the lesser harm.
// A copy written over the live file (`cp`, `rsync --inplace`) is another
// matter: the connections read the pages still in the -wal on top of it,
// so the counter may not even go back, and the file is a mix of old pages
// and new (SQLite's own "how to corrupt a database"). Nothing detects that:
// stop every instance before copying a file into place.
//
// The store's clock: the host's wall clock in ms by default, always read
// while the write lock is held, so the times of successive writes to the file
// follow their commit order (a claim reads std::chrono::system_clock after
// BEGIN IMMEDIATE; a single-statement write lets SQLite read the same
// CLOCK_REALTIME inside the statement). Or a caller-supplied clock
// (sqlite_options::clock), which the conformance suite uses with fake_clock.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <sqlite3.h>
#include <sys/stat.h>

#include "lease/error.hpp"
#include "lease/run.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/inspect.hpp"
#include "lease/store/sqlite/error.hpp"
#include "lease/store/sqlite/handle.hpp"
#include "lease/store/sqlite/path_watch.hpp"
#include "lease/store/sqlite/schema.hpp"
#include "lease/store/sqlite/statement.hpp"

#if SQLITE_VERSION_NUMBER < 3033000
#error "lease::sqlite_store needs SQLite 3.33 or newer (the sqlite_schema table name)"
#endif

namespace lease {

/// How a sqlite_store opens and uses its file.
struct sqlite_options {
  /// The store's clock. Empty (the default): the host's wall clock in ms.
  /// Set it to decide time yourself (tests: `[c] { return c.now(); }` with a
  /// lease::fake_clock); every process sharing the file must then agree on it.
  std::function<time_point()> clock{};
  /// How long an operation waits for another connection's write lock before
  /// failing with errc::unavailable. Each write holds the lock for
  /// microseconds, so reaching this means something is badly stuck.
  std::chrono::milliseconds busy_timeout{5000};
  /// synchronous=FULL (the default): a commit is on disk before it is
  /// acknowledged, at one fsync per write transaction (about 0.3 ms where
  /// it was measured, `dd oflag=dsync`; disks differ). false: synchronous=NORMAL, where WAL acknowledges a commit
  /// before it is synced, so a power loss or a hypervisor reset can drop the
  /// last commits though the file stays consistent. A dropped won claim is
  /// not harmless: its handler may have done its work (sent the mail, written
  /// elsewhere) before the host went down, and after the reboot the file
  /// shows no run, so the instance's catch-up wins the slot again. Nothing
  /// detects that (the same inode, and the claim counter went back with the
  /// instance that remembered it). Set false only to trade a possible rerun
  /// after a power loss for speed.
  bool durable = true;
  /// Treat a store file that this store creates (no file at the path, or an
  /// empty one) as a loss of state noticed at its creation: no attempt is
  /// won during the first lease after it. A new file may have replaced one
  /// that running instances still use, and nothing in it can tell; this
  /// closes the window before those instances notice (see the design note
  /// at the top of this header). Costs one lease without runs after the
  /// first start of a deployment. Turn it off only if nothing can replace or
  /// delete the file while instances run (tests on fresh files do).
  bool quarantine_new_file = true;
  /// True (the default, for instances): a file of an older lease schema
  /// version is upgraded when opened. Every instance of an older release
  /// that has the file open then claims no more (each claim transaction
  /// reads the version): upgrade all instances together. False: an older
  /// file is refused (sqlite_errc::schema_outdated, errc::unavailable) with
  /// a sentence naming both versions, and nothing is changed; for tools that
  /// look at the instances' file (leasectl: a newer leasectl must not stop
  /// an older fleet's claims).
  bool upgrade = true;
};

/// The Store (store/concept.hpp) on one SQLite file in WAL mode. Several
/// processes on one host can open the same file and coordinate through it.
///
/// Construction opens or creates the file and its schema. It throws
/// lease::store_error (category sqlite_category()) if the path cannot be
/// opened or created, or only for reading although that was not asked
/// (errc::unavailable), if the file is not a database, is
/// another application's database, or has a lease schema version this
/// library does not know (errc::corrupt), or an older one and
/// sqlite_options::upgrade is false (sqlite_errc::schema_outdated,
/// errc::unavailable). A path may be a `file:` URI
/// (`file:jobs.db?mode=ro` opens read-only: get/unfinished work, writes fail
/// with errc::unavailable).
///
/// Every operation throws lease::store_error if it cannot complete: lock not
/// obtained within busy_timeout, disk full, read-only file → errc::unavailable,
/// and nothing was changed (the transaction is rolled back); a stored value
/// lease did not write → errc::corrupt; an I/O error while the write was
/// being committed → errc::outcome_unknown: it may or may not be on disk, so
/// read the run back and compare its token before retrying. Losing a race is
/// an outcome, never an error.
///
/// Thread-safety: one thread at a time per store object (it owns one
/// connection); give each thread or process its own store on the same path.
/// A store must not cross a fork(): open it in the process that uses it
/// (SQLite's rule for connections; the child would share the parent's locks).
/// Movable, not copyable; a moved-from store may only be destroyed or
/// assigned to.
class sqlite_store {
 public:
  /// Opens (or creates) the store file at `path`. See the class comment for errors.
  explicit sqlite_store(std::string path, sqlite_options options = {})
      : path_(std::move(path)), named_(named_file(path_)), options_(std::move(options)) {
    open();
  }

  sqlite_store(sqlite_store&&) noexcept = default;
  sqlite_store& operator=(sqlite_store&&) noexcept = default;
  sqlite_store(const sqlite_store&) = delete;
  sqlite_store& operator=(const sqlite_store&) = delete;
  ~sqlite_store() = default;

  /// A claim (doc/store-rules.md "Claim" / rules::claim), in one BEGIN IMMEDIATE transaction.
  claim_result claim(const claim_request& req) {
    check_file();
    transaction tx(*this, "claim");
    const time_point at = now();
    rewind_check rewound = count_claim(at);
    std::optional<loss_record> loss;
    claim_result res = claim_one(req, at, loss);
    tx.commit();
    claimed(std::move(rewound));
    return res;
  }

  /// BatchClaimStore: the claims in one BEGIN IMMEDIATE transaction (one
  /// fsync instead of one per claim), each by the rule of claim(), in order,
  /// at one reading of the clock. A failure rolls back the whole batch.
  std::vector<claim_result> claim_many(std::span<const claim_request> batch) {
    std::vector<claim_result> out;
    out.reserve(batch.size());
    if (batch.empty()) return out;
    check_file();
    transaction tx(*this, "claim");
    const time_point at = now();
    rewind_check rewound = count_claim(at);
    std::optional<loss_record> loss;  // read once for the batch, if a claim needs it: none writes it
    for (const claim_request& req : batch) out.push_back(claim_one(req, at, loss));
    tx.commit();
    claimed(std::move(rewound));
    return out;
  }

 private:
  /// What the file records of a loss of state (lease_meta): lost_at, and
  /// whether a loss was detected (rather than lost_at being only the
  /// creation of a file the store made, quarantine_new_file).
  struct loss_record {
    std::optional<time_point> lost_at;
    bool detected = false;

    /// When a claim at `at` with `lease` would be quarantined, the end of
    /// the quarantine (lost_at + lease, rules::claim); else empty.
    [[nodiscard]] std::optional<time_point> quarantine_end(time_point at, duration lease) const {
      if (lost_at && at < *lost_at + lease) return *lost_at + lease;
      return std::nullopt;
    }
    /// A slot that could have had state before a detected loss (slot ≤
    /// lost_at + early_tolerance, rules::claim) never starts as a new run:
    /// it may have run already. The quarantine of a file this store created
    /// (no 'lost_detected' row) is no detected loss: a first deployment
    /// still runs its catch-up slot once the quarantine is over, and a
    /// replaced file's old instances record the real loss within a
    /// heartbeat, well inside that quarantine.
    [[nodiscard]] bool forgotten(time_point slot) const {
      return detected && lost_at && slot <= *lost_at + early_tolerance;
    }
  };

  /// What count_claim() found, applied by claimed() once the transaction
  /// has committed (a rolled-back one changed nothing in the file).
  struct rewind_check {
    std::int64_t claims = 0;            ///< the claim counter this transaction wrote
    std::optional<std::string> notice;  ///< the file was found rewound: tell the operator
  };

  /// Inside a claim transaction, before any claim is judged: bumps the
  /// file's claim counter (lease_jobs' row 'claims'). A value not above the
  /// highest this store has seen means the file went back under it (restored
  /// or rewritten in place, same inode): the loss is recorded at `at` in
  /// this transaction, so the claims that follow are judged by it.
  rewind_check count_claim(time_point at) {
    rewind_check out;
    // One read, one write, no RETURNING: an upsert ... RETURNING cost a claim
    // 13 us here, against 20 us for the whole raw claim (benchmark/sqlite);
    // the read and the plain write inside this BEGIN IMMEDIATE transaction
    // are as atomic and cost about a third of that.
    std::optional<std::int64_t> counted;
    std::int64_t older = 0;  // an older schema version found: the file went back
    {
      sqlite3_stmt* s = stmt(q::read_claim_counter);
      detail::stmt_use use(s);
      const bool row = detail::step(s, "cannot read the lease schema version");
      // A newer release that upgraded the file while this instance runs
      // may claim by rules this release does not know: as a store opened
      // now refuses the file (sqlite_check_schema), this one claims no more.
      const std::int64_t v = row && sqlite3_column_type(s, 0) != SQLITE_NULL ? detail::column_int(s, 0) : 0;
      if (v >= 1 && v < detail::sqlite_schema_version && !options_.upgrade)
        detail::throw_sqlite(sqlite_errc::schema_outdated, path_,
                             "went back to lease schema version " + std::to_string(v) +
                                 " (a backup restored into it?), and this store upgrades none "
                                 "(sqlite_options::upgrade = false)");
      if (v >= 1 && v < detail::sqlite_schema_version)
        older = v;  // (upgraded below, once this statement is reset)
      else if (v != detail::sqlite_schema_version)
        detail::throw_sqlite(sqlite_errc::unknown_schema_version, path_,
                             "now has lease schema version " + std::to_string(v) +
                                 " (another release changed it while this instance ran); this library reads and "
                                 "writes only version " + std::to_string(detail::sqlite_schema_version) +
                                 ": run one release on the file");
      if (sqlite3_column_type(s, 1) != SQLITE_NULL) counted = detail::column_int(s, 1);
    }
    if (older != 0) return count_claim_after_rewind_to(older, at);
    if (counted == std::numeric_limits<std::int64_t>::max())
      detail::throw_sqlite(sqlite_errc::bad_value, path_,
                           "lease_jobs' row 'claims' holds a claim counter at its largest value: the file was changed by "
                           "something else; an operator must repair or remove the row");
    out.claims = counted.value_or(0) + 1;
    {
      // A file written before the counter existed has no row: the first claim inserts it.
      sqlite3_stmt* s = stmt(counted ? q::write_claim_counter : q::insert_claim_counter);
      detail::stmt_use use(s);
      detail::bind_int(s, 1, out.claims);
      detail::step(s, "cannot count the claim");
    }
    if (out.claims > claims_seen_) return out;
    const time_point noticed = record_loss(at);
    out.notice = loss_notice(
        "was restored or rewritten in place (same inode " + std::to_string(ino_) +
            ") while this instance had it open (a backup restored into it, a copy written over it, the file "
            "system rolled back?): its claim counter was " + std::to_string(claims_seen_) +
            " at this instance's last claim and is " + std::to_string(out.claims - 1) + " now",
        "may be lost", noticed, "Restore, copy over or roll back a store file only while no instance runs");
    return out;
  }

  /// count_claim() found the file at an older schema version than the one
  /// it had when this store opened it. No release writes an older version
  /// into a file a newer one upgraded, so the file was restored in place
  /// from a backup taken before the upgrade: whatever its counter says, its
  /// state went back. Upgraded again and the loss recorded, in this claim
  /// transaction, so the claims that follow are quarantined. (Refusing the
  /// file, as for a newer version, would leave every instance failing its
  /// claims until someone restarted them, and the restarted stores would
  /// upgrade the file with no loss recorded: they remember nothing.) Until a
  /// claim notices, the other operations on a file restored to version 4 or
  /// older fail (errc::corrupt: a column or table they name is missing);
  /// heartbeats, finishes and releases work on every version.
  rewind_check count_claim_after_rewind_to(std::int64_t version, time_point at) {
    detail::sqlite_upgrade(db_.get(), path_, version);
    const time_point noticed = record_loss(at);
    rewind_check out = count_claim(at);
    out.notice = loss_notice("went back to lease schema version " + std::to_string(version) +
                                 " while this instance had it open at version " +
                                 std::to_string(detail::sqlite_schema_version) +
                                 " (a backup taken before this release upgraded it, restored into the file?); it is "
                                 "upgraded again",
                             "may be lost", noticed, "Restore or roll back a store file only while no instance runs");
    return out;
  }

  /// After a claim transaction committed: what count_claim() found takes effect.
  void claimed(rewind_check&& c) {
    claims_seen_ = c.claims;
    if (c.notice) notices_.push_back(std::move(*c.notice));
  }

  /// One claim inside the caller's transaction, at store time `at`. `loss`:
  /// the loss the file records, read by the first claim of the transaction
  /// that needs it (a claim that finds its run running does not; none
  /// writes it: count_claim records a rewind before the first claim).
  claim_result claim_one(const claim_request& req, time_point at, std::optional<loss_record>& loss) {
    auto recorded = [&]() -> const loss_record& {
      if (!loss) loss = read_loss();
      return *loss;
    };
    claim_result res;
    res.store_now = at;
    res.record.job = req.run.job;
    res.record.slot = req.run.slot;
    // A manual claim answers the job's pending trigger for this very slot
    // when it wins, finds the run's state, overlaps in skip mode or finds the
    // job paused; after early, quarantined or an overlap in buffer_one mode
    // the trigger stays pending (rules::claim, doc/store-rules.md "Trigger now").
    const bool manual = req.reason == claim_reason::manual;

    auto [found, newer] = find_run(req.run);
    if (found) {
      // The run already has state (a scheduled slot of that very ms, or the
      // trigger's own run): that run is the trigger's answer.
      if (manual) answer_trigger(req.run);
      run_record& r = *found;
      if (r.status != run_status::running) {
        res.outcome = claim_outcome::finished;
      } else if (r.live(at)) {
        res.outcome = claim_outcome::running;
      } else if (newer || r.attempt - r.handovers >= req.max_attempts) {
        // A newer run started first, or dead runners used up the attempts.
        set_status(req.run, run_status::interrupted);
        r.status = run_status::interrupted;
        res.outcome = claim_outcome::finished;
      } else if (recorded().forgotten(r.slot)) {
        // Inside a detected loss's horizon (case 4a): a file restored from
        // a backup holds the runs that were running then, though they may
        // have run to the end since (their finish went with the loss). It
        // is never taken over.
        set_status(req.run, run_status::interrupted);
        r.status = run_status::interrupted;
        res.outcome = claim_outcome::finished;
      } else if (const auto until = recorded().quarantine_end(at, req.lease)) {
        res.outcome = claim_outcome::quarantined;
        res.record.lease_end = *until;
        return res;
      } else if (const job_row j = read_job(req.run.job); j.paused) {
        res.outcome = claim_outcome::paused;  // the expired run stays as it is
        return res;
      } else {
        r.attempt += 1;
        r.token = req.token;
        r.runner = req.runner;
        r.fence = bump_fence(req.run.job, at, j.fence);
        r.status = run_status::running;
        r.lease_end = at + req.lease;
        r.released = false;
        take_over(r);
        res.outcome = claim_outcome::won;
      }
      res.record = std::move(r);
      return res;
    }

    // No state for this run.
    if (req.reason == claim_reason::takeover) {
      res.outcome = claim_outcome::none;
    } else if (manual && read_trigger(req.run.job) != req.run.slot) {
      // A manual run exists only as the answer to a pending trigger: none
      // is made up, and a trigger already answered is not run twice.
      res.outcome = claim_outcome::none;
    } else if (!manual && at > req.deadline + late_tolerance) {
      res.outcome = claim_outcome::late;  // (never manual: an operator's request waits however long it takes)
    } else if (req.run.slot > at + early_tolerance) {
      res.outcome = claim_outcome::early;
    } else if (!manual && newer) {
      // (A manual run may be older than a run the schedule started meanwhile.)
      res.outcome = claim_outcome::superseded;
    } else if (auto blocking = scan_running(req, at); blocking.live) {
      res.outcome = claim_outcome::overlap;
      res.record = std::move(*blocking.live);
      if (manual && req.overlap == overlap_mode::skip) answer_trigger(req.run);  // dropped, as a skipped slot
    } else if (const auto until = recorded().quarantine_end(at, req.lease)) {
      res.outcome = claim_outcome::quarantined;
      res.record.lease_end = *until;
    } else if (recorded().forgotten(req.run.slot)) {
      // A pending trigger inside the horizon was asked before the loss (a
      // file restored from a backup keeps the triggers pending then): its
      // slot may be a forgotten scheduled run's. Answered, not run.
      if (manual) answer_trigger(req.run);
      res.outcome = claim_outcome::quarantined;
      res.record.lease_end = time_point::max();
    } else if (const job_row j = read_job(req.run.job); j.paused) {
      if (manual) answer_trigger(req.run);  // a paused job's trigger does not wait for the resume
      res.outcome = claim_outcome::paused;
    } else {
      if (manual) answer_trigger(req.run);
      // Running runs end here: expired ones because a newer run started
      // first (or, for a manual run, so no takeover wins beside it), older
      // live ones too in replace mode (allow leaves them running).
      if (blocking.to_interrupt)
        interrupt_older(req.run.job, req.run.slot, at, req.overlap == overlap_mode::replace);
      run_record& r = res.record;
      r.attempt = 1;
      r.token = req.token;
      r.fence = bump_fence(req.run.job, at, j.fence);
      r.runner = req.runner;
      r.status = run_status::running;
      r.lease_end = at + req.lease;
      r.released = false;
      r.handovers = 0;
      r.manual = manual;
      insert_run(r);
      prune(req.run.job, at - req.retain - late_tolerance, req.history_size);
      res.outcome = claim_outcome::won;
    }
    return res;
  }

 public:

  /// Extends the lease to now + lease, only for the current token of a
  /// running, unreleased run (one UPDATE). True if it did.
  bool heartbeat(const run_key& run, std::string_view token, duration lease) {
    check_file();
    return heartbeat_one(run, token, lease, std::nullopt);
  }

  /// heartbeat() for each element, in one transaction at one store time;
  /// answers in order.
  std::vector<bool> heartbeat_many(std::span<const heartbeat_request> batch) {
    std::vector<bool> out;
    out.reserve(batch.size());
    if (batch.empty()) return out;
    check_file();
    transaction tx(*this, "heartbeat");
    const time_point t = now();
    for (const heartbeat_request& h : batch) out.push_back(heartbeat_one(h.run, h.token, h.lease, t));
    tx.commit();
    return out;
  }

  /// Records the end of the current attempt with `status` (success, failed or
  /// interrupted), only for the current token of a running, unreleased run.
  bool finish(const run_key& run, std::string_view token, run_status status) {
    check_file();
    return finish_one(run, token, status, false);
  }

  /// Hands the run over: lease end = now, released, one more handover; only
  /// for the current token of a running, unreleased run.
  bool release(const run_key& run, std::string_view token) {
    check_file();
    return release_one(run, token, std::nullopt);
  }

  /// Finishes and releases in one write transaction, each by its own
  /// statement's rule, answered in order (BatchFinishStore).
  std::vector<bool> finish_many(std::span<const finish_request> batch) {
    std::vector<bool> out;
    out.reserve(batch.size());
    if (batch.empty()) return out;
    check_file();
    transaction tx(*this, "finish");
    const time_point t = now();
    for (const finish_request& f : batch)
      out.push_back(f.status ? finish_one(f.run, f.token, *f.status, true) : release_one(f.run, f.token, t));
    tx.commit();
    return out;
  }

  /// The job's running runs, whatever their lease, oldest first.
  std::vector<run_record> unfinished(std::string_view job) {
    check_file();
    sqlite3_stmt* s = stmt(q::unfinished);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    std::vector<run_record> out;
    while (detail::step(s, "cannot read the unfinished runs")) out.push_back(read_record(s));
    return out;
  }

  /// One run's record, if it has state.
  std::optional<run_record> get(const run_key& run) {
    check_file();
    return select_run(run);
  }

  /// PauseStore (doc/store-rules.md, "Pause and resume"): from now on no
  /// claim of `job` wins, on any instance sharing the file, until resume().
  /// One statement; true if the job was not paused before.
  bool pause(std::string_view job) { return pause_write(q::pause, job, "cannot pause a job"); }
  /// Lifts a pause; true if the job was paused.
  bool resume(std::string_view job) { return pause_write(q::resume, job, "cannot resume a job"); }
  /// Whether `job` is paused.
  bool paused(std::string_view job) {
    check_file();
    return read_job(job).paused;
  }

  /// TriggerStore (doc/store-rules.md, "Trigger now"): asks for one manual
  /// run of `job` at slot = store-now (just past a loss's horizon,
  /// rules::trigger_slot), unless one is pending already; returns
  /// the pending request's slot. One BEGIN IMMEDIATE transaction: the clock
  /// is read under the write lock, as for a claim. A job that never ran gets
  /// a row with fence 0 (as a pause does).
  time_point trigger(std::string_view job) {
    check_file();
    transaction tx(*this, "trigger");
    time_point slot;
    // A pending trigger inside a detected loss's horizon was asked before
    // the loss (a restored file keeps it): it moves past the horizon, as
    // one asked now would be placed (rules::trigger).
    if (const auto pending = read_trigger(job); pending && !forgotten_slot(*pending)) {
      slot = *pending;
    } else {
      slot = now();
      // Within a detected loss's horizon, a scheduled run of this very
      // millisecond may have run before the loss: just past it instead
      // (rules::trigger_slot).
      if (forgotten_slot(slot)) slot = *read_lost_at() + early_tolerance + duration{1};
      sqlite3_stmt* s = stmt(q::set_trigger);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      detail::bind_int(s, 2, ms(slot));
      detail::step(s, "cannot store the trigger");
    }
    tx.commit();
    return slot;
  }

  /// TriggerStore: the pending triggers among `jobs`, in the order asked,
  /// each job once: what an instance polls. One SELECT of every pending
  /// trigger in the file (partial index lease_jobs_triggered: usually a few
  /// rows or none, however many jobs there are), matched with `jobs` here.
  std::vector<run_key> triggers(std::span<const std::string> jobs) {
    check_file();
    std::vector<std::pair<std::string, time_point>> pending;
    {
      sqlite3_stmt* s = stmt(q::pending_triggers);
      detail::stmt_use use(s);
      while (detail::step(s, "cannot read the pending triggers"))
        pending.emplace_back(detail::column_bytes(s, 0), time_point{duration{detail::column_int(s, 1)}});
    }
    std::vector<run_key> out;
    if (pending.empty()) return out;
    std::sort(pending.begin(), pending.end());
    std::vector<bool> listed(pending.size(), false);
    for (const std::string& name : jobs) {
      auto it = std::lower_bound(pending.begin(), pending.end(), name,
                                 [](const auto& p, const std::string& n) { return p.first < n; });
      if (it == pending.end() || it->first != name) continue;
      const auto i = static_cast<std::size_t>(it - pending.begin());
      if (listed[i]) continue;  // asked twice: listed once
      listed[i] = true;
      out.push_back({name, it->second});
    }
    return out;
  }

  /// StopStore (doc/store-rules.md, "Stop"): pauses `job` and hands over
  /// every running, unreleased run of it (released, one more handover, its
  /// lease end kept: the old handler may run until then, so no attempt
  /// starts before). One BEGIN IMMEDIATE transaction, so a claim of the job
  /// is wholly before it (its run is handed over) or after it (paused).
  /// Returns how many runs were handed over.
  std::size_t stop(std::string_view job) {
    check_file();
    transaction tx(*this, "stop");
    {
      sqlite3_stmt* s = stmt(q::pause);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      detail::step(s, "cannot pause the job to stop");
    }
    std::size_t stopped = 0;
    {
      sqlite3_stmt* s = stmt(q::stop_runs);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      detail::step(s, "cannot hand over the job's runs");
      stopped = static_cast<std::size_t>(sqlite3_changes(db_.get()));
    }
    tx.commit();
    return stopped;
  }

  /// RegistryStore (doc/store-rules.md, "Registration and purge"): stores
  /// each (job, instance) registration with its schedule and zone, last_seen
  /// = store-now, replacing that pair's earlier one (a later element of the
  /// same call wins). One BEGIN IMMEDIATE transaction, one prepared upsert
  /// per element: an instance's every job in one write.
  void register_jobs(std::span<const job_registration> regs) {
    if (regs.empty()) return;
    check_file();
    transaction tx(*this, "registration of jobs");
    const std::int64_t at = ms(now());
    sqlite3_stmt* s = stmt(q::register_job);
    for (const job_registration& r : regs) {
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, r.job);
      detail::bind_bytes(s, 2, r.instance);
      detail::bind_bytes(s, 3, r.schedule);
      detail::bind_bytes(s, 4, r.zone);
      detail::bind_int(s, 5, at);
      detail::step(s, "cannot register a job");
    }
    tx.commit();
  }

  /// RegistryStore: deletes every trace of `job` (runs, fence, pause,
  /// trigger, registrations) unless it has none (not_found), an instance
  /// registered it within `unseen_for` (registered, the newest registration),
  /// a run of it is live (running, the newest live run), or store-now in ms
  /// is not past its fence (too_soon) — rules::purge, in that order. One
  /// BEGIN IMMEDIATE transaction: no claim of the job interleaves.
  purge_result purge(std::string_view job, duration unseen_for) {
    check_file();
    transaction tx(*this, "purge");
    const time_point at = now();
    purge_result res;
    // Has the job state at all: a job row (fence, pause, trigger; every run
    // is inserted with its job's fence) or a registration.
    std::optional<std::int64_t> fence;
    {
      sqlite3_stmt* s = stmt(q::read_fence);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      if (detail::step(s, "cannot read the job's fence")) fence = detail::column_int(s, 0);
    }
    bool registered = false;
    {
      sqlite3_stmt* s = stmt(q::newest_registration);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      detail::bind_int(s, 2, ms(at));
      detail::bind_int(s, 3, unseen_for.count());
      if (detail::step(s, "cannot read the job's registrations")) {
        registered = true;
        if (detail::column_int(s, 5) != 0) res.instance = read_registration(s);
      }
    }
    if (!fence && !registered) return res;  // not_found (nothing written: the rollback ends the transaction)
    if (res.instance) {
      res.outcome = purge_outcome::registered;
      return res;
    }
    {
      sqlite3_stmt* s = stmt(q::running);  // newest first
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      while (detail::step(s, "cannot read the job's running runs")) {
        if (at < time_point{duration{detail::column_int(s, 7)}}) {
          res.outcome = purge_outcome::running;
          res.run = read_record(s);
          return res;
        }
      }
    }
    if (fence && *fence < 0)
      detail::throw_sqlite(sqlite_errc::bad_value, path_, "lease_jobs holds a negative fence");
    if (ms(at) <= 0 || ms(at) <= fence.value_or(0)) {
      res.outcome = purge_outcome::too_soon;
      return res;
    }
    for (q which : {q::purge_runs, q::purge_job, q::purge_registrations}) {
      sqlite3_stmt* s = stmt(which);
      detail::stmt_use use(s);
      detail::bind_bytes(s, 1, job);
      detail::step(s, "cannot delete the job's state");
    }
    tx.commit();
    res.outcome = purge_outcome::purged;
    return res;
  }

  /// InspectStore: every job the file holds a fence, a pause, a pending
  /// trigger, a run or a registration for, ordered by name (bytes), with its
  /// newest run and its registrations ordered by instance id (bytes). One
  /// SELECT (one snapshot), one row per registration.
  std::vector<stored_job> list_jobs() {
    check_file();
    sqlite3_stmt* s = stmt(q::list_jobs);
    detail::stmt_use use(s);
    std::vector<stored_job> out;
    while (detail::step(s, "cannot list the jobs")) {
      std::string name = detail::column_bytes(s, 0);
      if (!out.empty() && out.back().name == name) {  // the job's next registration
        out.back().instances.push_back(read_registration(s, 15));
        continue;
      }
      stored_job j;
      j.name = std::move(name);
      const std::int64_t fence = detail::column_int(s, 11);
      if (fence < 0)
        detail::throw_sqlite(sqlite_errc::bad_value, path_,
                             "lease_jobs holds a negative fence: the file was changed by something else; an "
                             "operator must repair or remove the row");
      j.fence = static_cast<std::uint64_t>(fence);
      j.paused = detail::column_int(s, 12) != 0;
      j.trigger = column_time(s, 13);
      if (detail::column_int(s, 14) != 0) j.last_run = read_record(s);
      if (detail::column_int(s, 20) != 0) j.instances.push_back(read_registration(s, 15));
      out.push_back(std::move(j));
    }
    return out;
  }

  /// InspectStore: the job's runs with state, newest slot first, at most
  /// `limit`. One SELECT.
  std::vector<run_record> list_runs(std::string_view job, std::size_t limit) {
    check_file();
    sqlite3_stmt* s = stmt(q::list_runs);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    detail::bind_int(s, 2, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
    std::vector<run_record> out;
    while (detail::step(s, "cannot list the job's runs")) out.push_back(read_record(s));
    return out;
  }

  /// When the store last noticed that it had lost its state (the file
  /// replaced or deleted while open, or created new with
  /// quarantine_new_file), on the store's clock; claims win no attempt
  /// before this + their lease. Empty if it never did.
  std::optional<time_point> lost_at() {
    check_file();
    return read_lost_at();
  }

  /// What the store learnt that an operator should know (NoticeStore): a
  /// store file replaced or deleted while open, a new file created. Each
  /// sentence is returned once.
  std::vector<std::string> take_notices() { return std::exchange(notices_, {}); }

  /// The store's clock: the caller's clock if one was given, else the host's
  /// wall clock in ms.
  [[nodiscard]] time_point now() const {
    if (options_.clock) return options_.clock();
    return std::chrono::floor<duration>(std::chrono::system_clock::now());
  }

  /// The path (or URI) the store was opened with.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// The connection, for what the store does not offer (inspection, pragmas).
  /// Do not leave a transaction open on it.
  [[nodiscard]] sqlite3* native_handle() const noexcept { return db_.get(); }

 private:
  enum class q : std::uint8_t {
    begin, commit, rollback, get, find, running, interrupt_older, set_status, read_fence, write_fence,
    insert_run, take_over, prune, heartbeat, finish, release, unfinished, read_lost_at, write_lost_at, read_claim_counter,
    write_claim_counter, insert_claim_counter,
    pause, resume, list_jobs, list_runs, read_trigger, set_trigger, answer_trigger,
    pending_triggers, stop_runs, register_job, newest_registration, purge_runs, purge_job, purge_registrations,
    schema_version, count_
  };

#define LEASE_SQLITE_COLUMNS "job, slot, attempt, token, fence, runner, status, lease_end, released, handovers, manual"
  // The host clock in SQL, read by SQLite inside the statement (under the
  // write lock). julianday is exact to ~40 µs, so rounding gives the exact ms.
  // (unixepoch('subsec') would be simpler but needs SQLite 3.42.)
#define LEASE_SQLITE_NOW "coalesce(?3, CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER))"
  // INDEXED BY: without statistics the planner would walk the job's whole
  // history by primary key to find its few running runs.
  static constexpr std::array<const char*, static_cast<std::size_t>(q::count_)> sql_ = {
      "BEGIN IMMEDIATE",
      "COMMIT",
      "ROLLBACK",
      "SELECT " LEASE_SQLITE_COLUMNS " FROM lease_runs WHERE job = ?1 AND slot = ?2",
      // The run itself (if it has state) and the next newer run: one seek
      // answers both "which state" and "has a newer run started".
      "SELECT " LEASE_SQLITE_COLUMNS " FROM lease_runs WHERE job = ?1 AND slot >= ?2 ORDER BY slot LIMIT 2",
      "SELECT " LEASE_SQLITE_COLUMNS " FROM lease_runs INDEXED BY lease_runs_running "
      "WHERE job = ?1 AND status = 0 ORDER BY slot DESC",
      // Expired running runs, and in replace mode (?3) live ones older than
      // the new one (?4): a manual run may be older than running runs of the
      // schedule; it ends expired ones (their takeover could win beside it)
      // but leaves newer live ones alone.
      "UPDATE lease_runs INDEXED BY lease_runs_running SET status = 3 "
      "WHERE job = ?1 AND status = 0 AND (lease_end <= ?2 OR (?3 AND slot < ?4))",
      "UPDATE lease_runs SET status = ?3 WHERE job = ?1 AND slot = ?2",
      // read_fence: the fence first (purge reads only it), then the pause (a claim's read_job).
      "SELECT fence, paused FROM lease_jobs WHERE job = ?1",
      // An upsert, not INSERT OR REPLACE: that would reset the job's pause.
      "INSERT INTO lease_jobs (job, fence) VALUES (?1, ?2) ON CONFLICT (job) DO UPDATE SET fence = excluded.fence",
      "INSERT INTO lease_runs (" LEASE_SQLITE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, 0, ?8, ?9)",
      "UPDATE lease_runs SET attempt = ?3, token = ?4, fence = ?5, runner = ?6, status = 0, "
      "lease_end = ?7, released = 0 WHERE job = ?1 AND slot = ?2",
      // Ended runs beyond the newest ?3 ended ones whose late-claim window
      // has passed (slot < now - retain - tolerance), except the run at the
      // job's pending trigger slot, which answers the trigger — rules::prune.
      "DELETE FROM lease_runs WHERE job = ?1 AND status <> 0 AND slot < ?2 AND slot NOT IN "
      "(SELECT slot FROM lease_runs WHERE job = ?1 AND status <> 0 ORDER BY slot DESC LIMIT ?3) "
      "AND slot IS NOT (SELECT trigger_slot FROM lease_jobs WHERE job = ?1)",
      "UPDATE lease_runs SET lease_end = " LEASE_SQLITE_NOW " + ?4 "
      "WHERE job = ?1 AND slot = ?2 AND token = ?5 AND status = 0 AND released = 0",
      "UPDATE lease_runs SET status = ?3 "
      "WHERE job = ?1 AND slot = ?2 AND token = ?4 AND status = 0 AND released = 0",
      "UPDATE lease_runs SET lease_end = " LEASE_SQLITE_NOW ", released = 1, handovers = handovers + 1 "
      "WHERE job = ?1 AND slot = ?2 AND token = ?4 AND status = 0 AND released = 0",
      "SELECT " LEASE_SQLITE_COLUMNS " FROM lease_runs INDEXED BY lease_runs_running "
      "WHERE job = ?1 AND status = 0 ORDER BY slot",
      "SELECT l.value, coalesce(d.value, 0) FROM lease_meta l LEFT JOIN lease_meta d ON d.name = 'lost_detected' "
      "WHERE l.name = 'lost_at'",
      "INSERT OR REPLACE INTO lease_meta (name, value) VALUES ('lost_at', ?1), ('lost_detected', 1)",
      // Every claim transaction's first read and write: the schema version
      // and the store-wide claim counter (NULL in a file no claim wrote
      // yet): the fence of lease_jobs' row 'claims', TEXT, which no job's
      // name (a BLOB) equals (schema.hpp).
      "SELECT (SELECT version FROM lease_schema), (SELECT fence FROM lease_jobs WHERE job = 'claims')",
      "UPDATE lease_jobs SET fence = ?1 WHERE job = 'claims'",
      "INSERT INTO lease_jobs (job, fence) VALUES ('claims', ?1)",
      // changes() is 1 exactly when the pause was set by this statement.
      "INSERT INTO lease_jobs (job, fence, paused) VALUES (?1, 0, 1) "
      "ON CONFLICT (job) DO UPDATE SET paused = 1 WHERE paused = 0",
      "UPDATE lease_jobs SET paused = 0 WHERE job = ?1 AND paused <> 0",
      // Every job with a fence, a pause, a pending trigger, a run or a
      // registration, its newest run (a primary-key seek per job) and its
      // registrations (one row each), ordered by name, then instance id, as
      // bytes (BLOB: memcmp). A run is only inserted with its job's fence,
      // so lease_jobs and lease_registrations name every job (every BLOB
      // key: the TEXT one is the claim counter, no job's).
      "WITH n(job) AS (SELECT job FROM lease_jobs WHERE typeof(job) = 'blob' UNION SELECT job FROM lease_registrations) "
      "SELECT n.job, r.slot, r.attempt, r.token, r.fence, r.runner, r.status, r.lease_end, r.released, r.handovers, "
      "r.manual, coalesce(j.fence, 0), coalesce(j.paused, 0), j.trigger_slot, r.job IS NOT NULL, "
      "g.job, g.instance, g.schedule, g.zone, g.last_seen, g.job IS NOT NULL "
      "FROM n LEFT JOIN lease_jobs j ON j.job = n.job "
      "LEFT JOIN lease_runs r ON r.job = n.job AND r.slot = (SELECT max(slot) FROM lease_runs WHERE job = n.job) "
      "LEFT JOIN lease_registrations g ON g.job = n.job "
      "WHERE j.fence <> 0 OR j.paused <> 0 OR j.trigger_slot IS NOT NULL OR r.job IS NOT NULL OR g.job IS NOT NULL "
      "ORDER BY n.job, g.instance",
      "SELECT " LEASE_SQLITE_COLUMNS " FROM lease_runs WHERE job = ?1 ORDER BY slot DESC LIMIT ?2",
      "SELECT trigger_slot FROM lease_jobs WHERE job = ?1",
      // Only when none is pending, or the pending one is inside a loss's horizon
      // (trigger() read it in the same transaction);
      // an upsert, not INSERT OR REPLACE, which would reset fence and pause.
      "INSERT INTO lease_jobs (job, fence, trigger_slot) VALUES (?1, 0, ?2) "
      "ON CONFLICT (job) DO UPDATE SET trigger_slot = excluded.trigger_slot",
      // A manual claim answers the pending trigger of its very slot only.
      "UPDATE lease_jobs SET trigger_slot = NULL WHERE job = ?1 AND trigger_slot = ?2",
      "SELECT job, trigger_slot FROM lease_jobs INDEXED BY lease_jobs_triggered WHERE trigger_slot IS NOT NULL",
      // stop: every running, unreleased run handed over, its lease end kept.
      "UPDATE lease_runs INDEXED BY lease_runs_running SET released = 1, handovers = handovers + 1 "
      "WHERE job = ?1 AND status = 0 AND released = 0",
      "INSERT INTO lease_registrations (job, instance, schedule, zone, last_seen) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (job, instance) DO UPDATE SET schedule = excluded.schedule, zone = excluded.zone, "
      "last_seen = excluded.last_seen",
      // purge: a row if the job has any registration; the newest one seen
      // within unseen_for (?3) of now (?2) first, ties by the smallest
      // instance id (rules::purge keeps the first of equals, in id order).
      "SELECT job, instance, schedule, zone, last_seen, ?2 - last_seen < ?3 FROM lease_registrations WHERE job = ?1 "
      "ORDER BY ?2 - last_seen < ?3 DESC, last_seen DESC, instance LIMIT 1",
      "DELETE FROM lease_runs WHERE job = ?1",
      "DELETE FROM lease_jobs WHERE job = ?1",
      "DELETE FROM lease_registrations WHERE job = ?1",
      // Read when the store opens the file (each claim transaction reads
      // it again with the claim counter: read_claim_counter).
      "SELECT version FROM lease_schema",
  };
#undef LEASE_SQLITE_NOW
#undef LEASE_SQLITE_COLUMNS

  /// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless committed.
  class transaction {
   public:
    transaction(sqlite_store& s, std::string_view what) : s_(s) {
      if (!s_.db_) throw_moved_from();
      sqlite3_stmt* b = s_.stmt(q::begin);
      detail::stmt_use use(b);
      detail::step(b, std::string("cannot lock the database for a ").append(what));
    }
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    void commit() {
      sqlite3_stmt* c = s_.stmt(q::commit);
      detail::stmt_use use(c);
      detail::step_commit(c, "cannot commit");
      done_ = true;
    }
    ~transaction() {
      if (done_ || sqlite3_get_autocommit(s_.db_.get())) return;
      sqlite3_stmt* r = s_.stmts_[static_cast<std::size_t>(q::rollback)].get();
      sqlite3_step(r);  // nothing to do if it fails: SQLite rolls back on its own then
      sqlite3_reset(r);
    }

   private:
    sqlite_store& s_;
    bool done_ = false;
  };

  [[noreturn]] static void throw_moved_from() {
    throw store_error(make_error_code(errc::invalid_argument), "lease::sqlite_store used after it was moved from");
  }


  sqlite3_stmt* stmt(q which) const {
    sqlite3_stmt* s = stmts_[static_cast<std::size_t>(which)].get();
    if (s == nullptr) throw_moved_from();
    return s;
  }

  static std::int64_t ms(time_point t) noexcept { return t.time_since_epoch().count(); }

  /// Binds the store time: an explicit one, the caller's clock, or NULL for
  /// "SQLite reads the host clock inside the statement".
  void bind_now(sqlite3_stmt* s, int i, std::optional<time_point> t) const {
    if (!t && options_.clock) t = options_.clock();
    if (t) detail::bind_int(s, i, ms(*t));
    else detail::bind_null(s, i);
  }

  /// finish(), inside finish_many's transaction when `in_tx`.
  bool finish_one(const run_key& run, std::string_view token, run_status status, bool in_tx) {
    if (status == run_status::running) return false;
    if (static_cast<int>(status) > static_cast<int>(run_status::interrupted))
      detail::throw_sqlite(db_.get(), SQLITE_RANGE, path_, "finish: not a run_status");
    sqlite3_stmt* s = stmt(q::finish);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    detail::bind_int(s, 3, static_cast<std::int64_t>(status));
    detail::bind_bytes(s, 4, token);
    if (in_tx) detail::step(s, "cannot record the end of a run");
    else detail::step_commit(s, "cannot record the end of a run");
    return sqlite3_changes(db_.get()) == 1;
  }

  /// release(), at store time `t` inside finish_many's transaction, or alone
  /// (nullopt: SQLite reads the clock inside the statement).
  bool release_one(const run_key& run, std::string_view token, std::optional<time_point> t) {
    sqlite3_stmt* s = stmt(q::release);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    bind_now(s, 3, t);
    detail::bind_bytes(s, 4, token);
    if (t) detail::step(s, "cannot release a run");
    else detail::step_commit(s, "cannot release a run");
    return sqlite3_changes(db_.get()) == 1;
  }

  bool heartbeat_one(const run_key& run, std::string_view token, duration lease, std::optional<time_point> t) {
    sqlite3_stmt* s = stmt(q::heartbeat);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    bind_now(s, 3, t);
    detail::bind_int(s, 4, lease.count());
    detail::bind_bytes(s, 5, token);
    if (t) detail::step(s, "cannot renew a lease");  // inside heartbeat_many's transaction
    else detail::step_commit(s, "cannot renew a lease");
    return sqlite3_changes(db_.get()) == 1;
  }

  /// A row in LEASE_SQLITE_COLUMNS order; any value lease would not write is
  /// errc::corrupt (bad_value), never silently misread.
  run_record read_record(sqlite3_stmt* s) const {
    auto bad = [&](const char* what) {
      detail::throw_sqlite(sqlite_errc::bad_value, path_,
                           std::string("lease_runs holds ") + what +
                               ": the file was changed by something else; an operator must repair "
                               "or remove the row");
    };
    auto u32 = [&](int col, const char* what) {
      const std::int64_t v = detail::column_int(s, col);
      if (v < 0 || v > static_cast<std::int64_t>(UINT32_MAX)) bad(what);
      return static_cast<std::uint32_t>(v);
    };
    run_record r;
    r.job = detail::column_bytes(s, 0);
    r.slot = time_point{duration{detail::column_int(s, 1)}};
    r.attempt = u32(2, "an attempt out of range");
    r.token = detail::column_bytes(s, 3);
    const std::int64_t fence = detail::column_int(s, 4);
    if (fence < 0) bad("a negative fence");
    r.fence = static_cast<std::uint64_t>(fence);
    r.runner = detail::column_bytes(s, 5);
    const std::int64_t status = detail::column_int(s, 6);
    if (status < 0 || status > 3) bad("an unknown status");
    r.status = static_cast<run_status>(status);
    r.lease_end = time_point{duration{detail::column_int(s, 7)}};
    const std::int64_t released = detail::column_int(s, 8);
    if (released != 0 && released != 1) bad("a released flag that is neither 0 nor 1");
    r.released = released == 1;
    r.handovers = u32(9, "a handover count out of range");
    const std::int64_t manual = detail::column_int(s, 10);
    if (manual != 0 && manual != 1) bad("a manual flag that is neither 0 nor 1");
    r.manual = manual == 1;
    return r;
  }

  /// A registration from columns job, instance, schedule, zone, last_seen
  /// starting at `first`.
  static job_registration read_registration(sqlite3_stmt* s, int first = 0) {
    job_registration r;
    r.job = detail::column_bytes(s, first);
    r.instance = detail::column_bytes(s, first + 1);
    r.schedule = detail::column_bytes(s, first + 2);
    r.zone = detail::column_bytes(s, first + 3);
    r.last_seen = time_point{duration{detail::column_int(s, first + 4)}};
    return r;
  }

  std::optional<run_record> select_run(const run_key& run) {
    sqlite3_stmt* s = stmt(q::get);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    if (!detail::step(s, "cannot read a run")) return std::nullopt;
    return read_record(s);
  }

  struct found_run {
    std::optional<run_record> run;
    bool newer = false;  ///< a newer run of the job has state
  };
  found_run find_run(const run_key& run) {
    sqlite3_stmt* s = stmt(q::find);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    found_run out;
    if (!detail::step(s, "cannot read a run")) return out;
    if (detail::column_int(s, 1) != ms(run.slot)) {
      out.newer = true;
      return out;
    }
    out.run = read_record(s);
    out.newer = detail::step(s, "cannot look for a newer run");
    return out;
  }

  struct running_runs {
    std::optional<run_record> live;  ///< the newest live run, if it blocks (skip, buffer_one)
    bool to_interrupt = false;       ///< some older running run ends when the new run starts
  };
  /// The job's running runs, newest first (usually none or one).
  running_runs scan_running(const claim_request& req, time_point at) {
    const bool blocks = req.overlap == overlap_mode::skip || req.overlap == overlap_mode::buffer_one;
    const bool replace = req.overlap == overlap_mode::replace;
    sqlite3_stmt* s = stmt(q::running);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, req.run.job);
    running_runs out;
    while (detail::step(s, "cannot read the running runs")) {
      const bool live = at < time_point{duration{detail::column_int(s, 7)}};
      if (live && blocks) {
        out.live = read_record(s);
        return out;
      }
      // Expired runs end, and live ones in replace mode if older (a manual
      // run may be older than running runs of the schedule).
      const bool older = detail::column_int(s, 1) < ms(req.run.slot);
      if (!live || (replace && older)) out.to_interrupt = true;
    }
    return out;
  }

  /// Marks the job's running runs older than `slot` interrupted: expired
  /// ones, and live ones too if `live_too` (replace mode).
  void interrupt_older(std::string_view job, time_point slot, time_point now, bool live_too) {
    sqlite3_stmt* s = stmt(q::interrupt_older);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    detail::bind_int(s, 2, ms(now));
    detail::bind_int(s, 3, live_too ? 1 : 0);
    detail::bind_int(s, 4, ms(slot));
    detail::step(s, "cannot interrupt older runs");
  }

  void set_status(const run_key& run, run_status status) {
    sqlite3_stmt* s = stmt(q::set_status);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    detail::bind_int(s, 3, static_cast<std::int64_t>(status));
    detail::step(s, "cannot mark a run interrupted");
  }

  /// The job's row as a claim reads it: its pause and fence counter (not
  /// paused, 0 for a job without a row). One read for both: a claim that
  /// wins needs both.
  struct job_row {
    bool paused = false;
    std::int64_t fence = 0;
  };
  job_row read_job(std::string_view job) {
    sqlite3_stmt* s = stmt(q::read_fence);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    if (!detail::step(s, "cannot read the job's fence and pause")) return {};
    return {detail::column_int(s, 1) != 0, detail::column_int(s, 0)};
  }

  /// The next fence for the job, stored: max(`fence` + 1, store-now in ms)
  /// (rules::detail::next_fence), where `fence` is its counter as read_job()
  /// read it in this transaction; so fences keep growing even in a file that
  /// replaced a lost one. A read and a write rather than an UPSERT ...
  /// RETURNING, which costs SQLite three times as much; atomic all the same
  /// inside the claim's transaction.
  std::uint64_t bump_fence(std::string_view job, time_point at, std::int64_t fence) {
    if (fence < 0) detail::throw_sqlite(sqlite_errc::bad_value, path_, "lease_jobs holds a negative fence");
    fence = std::max(fence + 1, ms(at));
    sqlite3_stmt* s = stmt(q::write_fence);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    detail::bind_int(s, 2, fence);
    detail::step(s, "cannot advance the job's fence");
    return static_cast<std::uint64_t>(fence);
  }

  /// The job's pending trigger (its slot), if it has one.
  std::optional<time_point> read_trigger(std::string_view job) {
    sqlite3_stmt* s = stmt(q::read_trigger);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    if (!detail::step(s, "cannot read the job's pending trigger")) return std::nullopt;
    return column_time(s, 0);
  }

  /// A manual claim answered the pending trigger of `run`'s slot (if that
  /// is the one pending): it is pending no more.
  void answer_trigger(const run_key& run) {
    sqlite3_stmt* s = stmt(q::answer_trigger);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, run.job);
    detail::bind_int(s, 2, ms(run.slot));
    detail::step(s, "cannot mark the trigger answered");
  }

  /// A nullable ms column (NULL: none).
  static std::optional<time_point> column_time(sqlite3_stmt* s, int i) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return time_point{duration{detail::column_int(s, i)}};
  }

  /// pause() or resume(): one statement (its own write transaction).
  bool pause_write(q which, std::string_view job, const char* what) {
    check_file();
    sqlite3_stmt* s = stmt(which);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    detail::step_commit(s, what);
    return sqlite3_changes(db_.get()) == 1;
  }

  void insert_run(const run_record& r) {
    sqlite3_stmt* s = stmt(q::insert_run);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, r.job);
    detail::bind_int(s, 2, ms(r.slot));
    detail::bind_int(s, 3, r.attempt);
    detail::bind_bytes(s, 4, r.token);
    detail::bind_int(s, 5, static_cast<std::int64_t>(r.fence));
    detail::bind_bytes(s, 6, r.runner);
    detail::bind_int(s, 7, ms(r.lease_end));
    detail::bind_int(s, 8, r.handovers);
    detail::bind_int(s, 9, r.manual ? 1 : 0);
    detail::step(s, "cannot record a new run");
  }

  void take_over(const run_record& r) {
    sqlite3_stmt* s = stmt(q::take_over);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, r.job);
    detail::bind_int(s, 2, ms(r.slot));
    detail::bind_int(s, 3, r.attempt);
    detail::bind_bytes(s, 4, r.token);
    detail::bind_int(s, 5, static_cast<std::int64_t>(r.fence));
    detail::bind_bytes(s, 6, r.runner);
    detail::bind_int(s, 7, ms(r.lease_end));
    detail::step(s, "cannot record the next attempt");
  }

  void prune(std::string_view job, time_point before, std::uint32_t history_size) {
    sqlite3_stmt* s = stmt(q::prune);
    detail::stmt_use use(s);
    detail::bind_bytes(s, 1, job);
    detail::bind_int(s, 2, ms(before));
    detail::bind_int(s, 3, history_size);
    detail::step(s, "cannot prune old runs");
  }

  /// A slot that could have had state before a detected loss (rules::claim;
  /// loss_record::forgotten).
  bool forgotten_slot(time_point slot) { return read_loss().forgotten(slot); }

  /// The loss the file records (lease_meta), read now.
  loss_record read_loss() {
    sqlite3_stmt* s = stmt(q::read_lost_at);
    detail::stmt_use use(s);
    loss_record out;
    if (!detail::step(s, "cannot read when the store lost its state")) return out;
    out.lost_at = time_point{duration{detail::column_int(s, 0)}};
    out.detected = detail::column_int(s, 1) != 0;
    return out;
  }

  std::optional<time_point> read_lost_at() { return read_loss().lost_at; }

  /// Opens (or creates) the file at path_ and prepares the statements; then
  /// remembers which file that is (device + inode), for check_file().
  void open() {
    const std::int64_t t = ms(now());
    for (int tries = 0;; ++tries) {
      detail::sqlite_opened o = detail::sqlite_open(
          path_, options_.busy_timeout.count(), options_.durable, t,
          options_.quarantine_new_file ? std::optional<std::int64_t>(t) : std::nullopt, writable_,
          options_.upgrade);
      std::array<detail::sqlite_stmt, static_cast<std::size_t>(q::count_)> stmts{};
      for (std::size_t i = 0; i < sql_.size(); ++i) stmts[i] = detail::sqlite_prepare(o.db.get(), sql_[i]);
      {
        // One read: a file just switched to WAL has no -wal and -shm until
        // its first read transaction, and check_side_files() watches those
        // that exist once open() returns.
        sqlite3_stmt* v = stmts[static_cast<std::size_t>(q::schema_version)].get();
        detail::stmt_use use(v);
        (void)detail::step(v, "cannot read the lease schema version");
      }
      // The path SQLite resolved (through symlinks); "" for a temporary or
      // in-memory database, which has no file to watch.
      const char* f = sqlite3_db_filename(o.db.get(), "main");
      const std::string resolved = f != nullptr ? f : "";
      // Watched before the stat() calls below record which inodes are open:
      // a change after them raises an event (check_file), one before them
      // they see. Only a path SQLite resolved to itself (no symlink in it).
      detail::path_watch watch;
      if (!resolved.empty() && resolved == named_) (void)watch.start(named_);
      struct ::stat st {};
      if (!resolved.empty()) {
        // stat() the path as named and the resolved one: one inode (a
        // symlink retargeted in between would part them); then ask SQLite
        // whether the inode it has open is still the one at the resolved
        // path: if so, st is that inode (a replacement in between would have
        // to be undone again in microseconds).
        struct ::stat rst {};
        int moved = 0;
        const bool named = ::stat(named_.c_str(), &st) == 0 && ::stat(resolved.c_str(), &rst) == 0 &&
                           st.st_dev == rst.st_dev && st.st_ino == rst.st_ino &&
                           sqlite3_file_control(o.db.get(), "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK &&
                           moved == 0;
        if (!named) {
          if (tries < 3) continue;
          detail::throw_sqlite(o.db.get(), SQLITE_CANTOPEN, path_,
                               "the file was replaced again and again while being opened (the path kept naming "
                               "another file than the one SQLite opened, '" + detail::sqlite_printable(resolved) +
                                   "')");
        }
      }
      // Statements before the connection they belong to, as in the destructor.
      for (auto& x : stmts_) x.reset();
      db_ = std::move(o.db);
      stmts_ = std::move(stmts);
      file_ = resolved.empty() ? std::string() : named_;
      watchable_ = watch.active();
      watch_ = std::move(watch);
      recheck_ = false;
      claims_seen_ = 0;  // another file, or the first: nothing seen in it yet
      dev_ = static_cast<std::uint64_t>(st.st_dev);
      ino_ = static_cast<std::uint64_t>(st.st_ino);
      // The -wal and -shm SQLite opened beside the file it resolved (a
      // connection in WAL mode has both once it has read: see the read
      // above), watched by check_side_files() if they exist now.
      sides_[0] = {resolved + "-wal", "had its -wal deleted or replaced (the commits not yet copied into the file "
                                      "went with it)"};
      sides_[1] = {resolved + "-shm", "had its -shm deleted or replaced (the WAL's lock and index: an instance "
                                      "that opened the file since did not see this one's locks and commits)"};
      for (side_file& f : sides_) {
        struct ::stat fs {};
        f.watched = !resolved.empty() && ::stat(f.path.c_str(), &fs) == 0;
        f.dev = static_cast<std::uint64_t>(fs.st_dev);
        f.ino = static_cast<std::uint64_t>(fs.st_ino);
      }
      writable_ = sqlite3_db_readonly(db_.get(), "main") != 1;
      if (o.created && options_.quarantine_new_file)
        notices_.push_back("lease::sqlite_store: created a new store file '" + detail::sqlite_printable(path_) +
                           "' (inode " + std::to_string(ino_) + ") at " + iso(time_point{duration{t}}) +
                           " (store clock); a new file may have replaced one that running instances still use, "
                           "so no run starts until one lease after its creation, when any runner of a run "
                           "it cannot know of has stopped");
      return;
    }
  }

  /// The file `path` names, as the caller named it, for check_file(): a
  /// `file:` URI's path part (SQLite's parse: an authority "" or "localhost"
  /// skipped, cut at '?' or '#', %HH decoded, %00 ends it), made absolute
  /// against the working directory now, without resolving symlinks.
  static std::string named_file(const std::string& path) {
    std::string p = path;
    if (std::string_view(path).starts_with("file:")) {  // SQLite takes a URI only in lower case
      std::string_view rest = std::string_view(path).substr(5);
      if (rest.starts_with("//")) rest = rest.substr(std::min(rest.find('/', 2), rest.size()));
      rest = rest.substr(0, rest.find_first_of("?#"));
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      p.clear();
      for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
          const int octet = hex(rest[i + 1]) * 16 + hex(rest[i + 2]);
          if (octet == 0) break;
          p.push_back(static_cast<char>(octet));
          i += 2;
        } else {
          p.push_back(rest[i]);
        }
      }
    }
    if (p.empty()) return p;
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(p, ec);
    return ec ? p : abs.string();  // no working directory: the path as given
  }

  /// Before every operation: does the path (as named: named_) still name the
  /// file that is open? Nothing on it changed (watch_: one poll()), or one
  /// stat() of it and of each side file; on a mismatch, recover (file_replaced).
  void check_file() {
    if (loss_) return file_replaced();  // an earlier recovery did not finish: finish it first
    if (!db_) throw_moved_from();
    if (file_.empty()) return;  // a temporary or in-memory database: no path
    if (!recheck_ && watch_.quiet()) return;  // no name on the path came or went: the stat()s would find the same inodes
    // Something may have changed, or the watch cannot tell: until the
    // stat() calls below have all passed, every operation makes them (an
    // error thrown on the way must not let the event be forgotten). A watch
    // lost (an overflow, a mount) is started again first, so that a change
    // after these stat() calls raises an event.
    recheck_ = true;
    if (watchable_ && !watch_.active()) watchable_ = watch_.start(file_);  // failing: stat() until reopened
    struct ::stat st {};
    if (::stat(file_.c_str(), &st) == 0) {
      if (static_cast<std::uint64_t>(st.st_ino) == ino_ && static_cast<std::uint64_t>(st.st_dev) == dev_)
        return check_side_files();
      loss_ = loss{ino_, "was replaced"};
      file_replaced();
    } else if (errno == ENOENT) {
      loss_ = loss{ino_, "was deleted"};
      file_replaced();
    } else {
      const int e = errno;
      detail::throw_sqlite(db_.get(), SQLITE_IOERR_ACCESS, path_,
                           std::string("cannot check that the path still names the open store file (") +
                               std::strerror(e) + ")");
    }
  }

  /// The -wal and -shm beside the open file, when they existed at open:
  /// still the same files? While this connection is open nothing deletes or
  /// replaces them legitimately (the last connection's close needs an
  /// exclusive lock this one's shared lock denies). A -wal deleted is the
  /// only copy of every commit since the last checkpoint, kept by the
  /// connections that have it open and lost when they die; a -shm deleted
  /// holds the WAL's write lock and index, so an instance started after it
  /// takes the write lock beside this one and neither sees the other's
  /// commits. Either is a loss: recover as for a replaced file.
  void check_side_files() {
    for (const side_file& f : sides_) {
      if (!f.watched) continue;
      struct ::stat st {};
      if (::stat(f.path.c_str(), &st) == 0) {
        if (static_cast<std::uint64_t>(st.st_ino) == f.ino && static_cast<std::uint64_t>(st.st_dev) == f.dev) continue;
      } else if (errno != ENOENT) {
        const int e = errno;
        detail::throw_sqlite(db_.get(), SQLITE_IOERR_ACCESS, path_,
                             "cannot check that '" + detail::sqlite_printable(f.path) +
                                 "' is still the open store file's (" + std::strerror(e) + ")");
      }
      loss_ = loss{ino_, f.what};
      return file_replaced();
    }
    recheck_ = false;  // the path names the open files: the watch's events are accounted for
  }

  /// The path names another file, or none (loss_): the state this store had
  /// is lost to it. Close the stale connection without touching anything by
  /// name, open the path again, record the loss in the file, tell the
  /// operator. If a step fails (the directory is gone, the lock is busy, the
  /// new file cannot be written: sqlite_open), the
  /// error is thrown and the next operation resumes here: no operation runs
  /// on the new file before lost_at is recorded in it.
  void file_replaced() {
    loss& l = *loss_;
    if (!l.reopened) {
      if (db_) {
        for (std::size_t i = 0; i < sides_.size(); ++i) l.sides_watched[i] = sides_[i].watched;
        close_stale();
      }
      open();
      // A -wal or -shm there before and missing now: this connection did
      // not open one by its name but joined the state SQLite keeps for the
      // file in this process, which another store object here still holds
      // with the deleted one (an instance started since would not see its
      // locks). Retried at the next operation, once that one has noticed too.
      for (std::size_t i = 0; i < sides_.size(); ++i)
        if (ino_ == l.old_ino && l.sides_watched[i] && !sides_[i].watched) {
          const std::string missing = sides_[i].path;
          close_stale();
          detail::throw_sqlite(nullptr, SQLITE_PROTOCOL, path_,
                               "cannot recover from a lost store file yet: another connection in this process "
                               "still uses the deleted '" + detail::sqlite_printable(missing) +
                                   "' (another store object on the file recovers at its next operation; then retry)");
        }
      l.reopened = true;
    }
    std::optional<time_point> noticed;
    // Read-only only if asked (mode=ro: an inspector; sqlite_open refuses a
    // silent read-only fallback), and then it records nothing.
    const bool inspector = sqlite3_db_readonly(db_.get(), "main") == 1;
    if (!inspector) {
      transaction tx(*this, "record of a lost store file");
      noticed = record_loss(now());
      tx.commit();
    }
    const std::uint64_t old_ino = l.old_ino;
    const char* what = l.what;
    loss_.reset();
    notices_.push_back(loss_notice(std::string(what) + " while this instance had it open (inode " +
                                       std::to_string(old_ino) + " -> " + std::to_string(ino_) + ")",
                                   "is lost", noticed,
                                   "Replace or delete a store file (with its -wal and -shm) only while no instance "
                                   "runs"));
  }

  /// Closes the connection without the last-close checkpoint: a stale
  /// handle must not checkpoint into or delete a -wal that may now belong to
  /// the new file.
  void close_stale() noexcept {
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    for (auto& x : stmts_) x.reset();
    db_.reset();
  }

  /// Records a loss noticed at `at`, inside the caller's write transaction:
  /// lost_at = at unless the file holds a later one (an instance that
  /// noticed later wins, never an earlier one). Returns the lost_at the
  /// file then holds.
  time_point record_loss(time_point at) {
    const std::optional<time_point> lost = read_lost_at();
    if (lost && *lost > at) return *lost;
    sqlite3_stmt* s = stmt(q::write_lost_at);
    detail::stmt_use use(s);
    detail::bind_int(s, 1, ms(at));
    detail::step(s, "cannot record that the store lost its state");
    return at;
  }

  /// The notice of a loss: the store file `what` (what happened to it),
  /// the state this instance knew of `lost` ("is lost", "may be lost"),
  /// when the loss was recorded (empty: a read-only store recorded none),
  /// and what not to do again.
  std::string loss_notice(const std::string& what, const char* lost, std::optional<time_point> recorded,
                          const char* advice) const {
    return "lease::sqlite_store: the store file '" + detail::sqlite_printable(path_) + "' " + what +
           ": every run, fence and pause of a job this instance knew of " + lost +
           " to the store (pause such jobs again), and a run may still be running whose state is gone. " +
           (recorded ? "Loss recorded at " + iso(*recorded) +
                           " (store clock): no run starts until one lease after it, when every runner of a "
                           "forgotten run has stopped"
                     : std::string("This store is read-only and recorded no loss: an instance that writes the file "
                                   "records it when it notices")) +
           ". " + advice;
  }

  /// A store time as an ISO 8601 UTC string, for notices.
  static std::string iso(time_point t) {
    const auto day = std::chrono::floor<std::chrono::days>(t);
    const std::chrono::year_month_day ymd{day};
    const std::chrono::hh_mm_ss hms{t - day};
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()), static_cast<int>(hms.subseconds().count()));
    return buf;
  }

  std::string path_;
  std::string named_;  ///< the file path_ names, absolute, symlinks kept (named_file)
  sqlite_options options_;
  std::string file_;       ///< the path check_file() watches: named_; "" for a temporary or in-memory database
  std::uint64_t dev_ = 0;  ///< the open file's device and inode, when it was opened
  std::uint64_t ino_ = 0;
  /// Tells check_file() when nothing on file_'s path changed, so that it
  /// need not stat() (inactive where it cannot tell: path_watch.hpp).
  detail::path_watch watch_;
  /// The path could be watched when opened: a watch lost since is started again.
  bool watchable_ = false;
  /// The watch saw something that check_file()'s stat() calls have not yet
  /// cleared (they threw): they run at every operation until they pass.
  bool recheck_ = false;
  /// The file was opened read-write: a reopen (a replaced file) must be too.
  bool writable_ = false;
  /// A loss noticed whose recovery has not finished (file_replaced).
  struct loss {
    std::uint64_t old_ino = 0;
    const char* what = "";
    bool reopened = false;  ///< the path is open again; lost_at not yet recorded
    std::array<bool, 2> sides_watched{};  ///< sides_[i].watched before the stale connection closed
  };
  std::optional<loss> loss_;
  /// The open file's -wal and -shm (check_side_files).
  struct side_file {
    std::string path;
    const char* what = "";   ///< for the notice (loss::what)
    bool watched = false;    ///< it existed when the file was opened
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
  };
  std::array<side_file, 2> sides_{};
  /// The highest claim counter (lease_jobs' row 'claims') a committed claim
  /// transaction of this store wrote in the file it has open; 0 for a file
  /// (re)opened. A claim that finds the counter not above it finds the file
  /// rewound (count_claim).
  std::int64_t claims_seen_ = 0;
  std::vector<std::string> notices_;
  // Declared before the statements: members are destroyed in reverse, so the
  // statements are finalized before the connection closes.
  detail::sqlite_db db_;
  std::array<detail::sqlite_stmt, static_cast<std::size_t>(q::count_)> stmts_{};
};

static_assert(Store<sqlite_store>);
static_assert(BatchHeartbeatStore<sqlite_store>);
static_assert(BatchClaimStore<sqlite_store>);
static_assert(BatchFinishStore<sqlite_store>);
static_assert(NoticeStore<sqlite_store>);
static_assert(PauseStore<sqlite_store>);
static_assert(InspectStore<sqlite_store>);
static_assert(TriggerStore<sqlite_store>);
static_assert(!PushTriggerStore<sqlite_store>);  // SQLite cannot push: instances poll triggers()
static_assert(StopStore<sqlite_store>);
static_assert(RegistryStore<sqlite_store>);

}  // namespace lease
