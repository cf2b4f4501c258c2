// lease/store/sqlite/schema.hpp — the lease tables in a SQLite file (schema
// version 6), and opening a file: create the schema in an empty database,
// upgrade version 1 (add lease_meta), version 2 (add lease_jobs.paused),
// version 3 (add lease_jobs.trigger_slot and lease_runs.manual), version 4
// (add lease_registrations) and version 5 (the claim counter moves from
// lease_meta to lease_jobs), accept our own, refuse everything else with a
// clear error.
//
// Internal (lease::detail); the layout is documented here for operators who
// look at a jobs.db with the sqlite3 shell.
//
//   lease_schema(version)          one row: the schema version (6)
//   lease_meta(name, value)        facts about the file itself, ms on the
//                                  store's clock: 'created_at' (when lease
//                                  created the schema), 'lost_at' (when the
//                                  store last noticed that it had lost its
//                                  state: no attempt is won before lost_at +
//                                  the claim's lease — rules::run_table::lost_at),
//                                  'lost_detected' (1 once a loss was detected,
//                                  not only a new file quarantined: then a new
//                                  run of a slot ≤ lost_at + 1 s never starts)
//   lease_jobs(job, fence, paused, trigger_slot)
//                                  per-job fence counter: +1 on every won
//                                  attempt; never pruned, so fences stay
//                                  unique even after old runs are deleted;
//                                  the row 'claims', a TEXT key (every job's
//                                  name is a BLOB, which never equals TEXT,
//                                  and sorts after it), is the file's claim
//                                  counter, in fence (+1 in every claim
//                                  transaction; a store that finds it not
//                                  above the value it last wrote finds the
//                                  file rewound in place; absent until the
//                                  first claim). It lives here, not in
//                                  lease_meta (version 5), because every won
//                                  claim writes its job's row anyway: while
//                                  the jobs fit on one page (~100 short
//                                  names) both writes dirty the same page,
//                                  one WAL frame fewer per claim than a page
//                                  of lease_meta (benchmark/sqlite: ~3.5 of
//                                  ~23 us). With more jobs it costs what
//                                  version 5 did: two pages.
//                                  paused: 1 while an operator paused the job
//                                  (no claim of it wins: rules::pause);
//                                  trigger_slot: an operator's pending
//                                  trigger, the slot (ms) of the manual run it
//                                  asks for, NULL when none is pending
//                                  (rules::trigger)
//   lease_jobs_triggered           partial index of the pending triggers, so
//                                  an instance's poll reads those few rows,
//                                  not every job
//   lease_runs(job, slot, attempt, token, fence, runner, status, lease_end,
//              released, handovers, manual)
//                                  one row per run with state; key (job, slot)
//                                  job/token/runner: BLOB (any bytes)
//                                  slot/lease_end: ms since the Unix epoch
//                                  status: 0 running, 1 success, 2 failed,
//                                          3 interrupted
//                                  manual: 1 if an operator's trigger made
//                                          the run (claim_reason::manual)
//   lease_runs_running             partial index of running runs, so the
//                                  overlap and interrupt checks of a claim
//                                  touch the few running runs, not the history
//   lease_registrations(job, instance, schedule, zone, last_seen)
//                                  which instances have which jobs
//                                  (register_jobs); key (job, instance), all
//                                  four names BLOB (any bytes; the key orders
//                                  instances by memcmp, as std::string does);
//                                  last_seen: ms on the store's clock. A job
//                                  only registered has no lease_jobs row:
//                                  "the job has state" is a row in either
//                                  table (purge's not_found, list_jobs).
//
// Purge needs nothing more in the file. Unlike PostgreSQL (whose handles
// remember the fences they saw, and take a fence gone back for a wiped
// schema: lease_store.purged_at), a sqlite_store detects a loss of state
// only by the path naming another file (device + inode) than the one it has
// open, or by the file's claim counter going back; a purge deletes rows in
// the same file and leaves the counter alone, so no handle can take it for
// a loss, and the fence of a new attempt after it is at least store-now in
// ms, above the purged one (purge answers too_soon until then).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>

#include "lease/store/sqlite/error.hpp"
#include "lease/store/sqlite/handle.hpp"
#include "lease/store/sqlite/statement.hpp"

namespace lease::detail {

/// The schema version this library reads and writes.
inline constexpr std::int64_t sqlite_schema_version = 6;

inline constexpr const char* sqlite_schema_ddl = R"sql(
CREATE TABLE lease_schema (version INTEGER NOT NULL);
INSERT INTO lease_schema (version) VALUES (6);
CREATE TABLE lease_meta (
  name  TEXT    NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE lease_jobs (
  job          BLOB    NOT NULL PRIMARY KEY,
  fence        INTEGER NOT NULL,
  paused       INTEGER NOT NULL DEFAULT 0,
  trigger_slot INTEGER
) WITHOUT ROWID;
CREATE INDEX lease_jobs_triggered ON lease_jobs (trigger_slot) WHERE trigger_slot IS NOT NULL;
CREATE TABLE lease_runs (
  job       BLOB    NOT NULL,
  slot      INTEGER NOT NULL,
  attempt   INTEGER NOT NULL,
  token     BLOB    NOT NULL,
  fence     INTEGER NOT NULL,
  runner    BLOB    NOT NULL,
  status    INTEGER NOT NULL,
  lease_end INTEGER NOT NULL,
  released  INTEGER NOT NULL,
  handovers INTEGER NOT NULL,
  manual    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job, slot)
) WITHOUT ROWID;
CREATE INDEX lease_runs_running ON lease_runs (job, slot) WHERE status = 0;
CREATE TABLE lease_registrations (
  job       BLOB    NOT NULL,
  instance  BLOB    NOT NULL,
  schedule  BLOB    NOT NULL,
  zone      BLOB    NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (job, instance)
) WITHOUT ROWID;
)sql";

/// Version 1 → 2: the meta table. A version-1 file lost nothing by being
/// upgraded, so it gets no lost_at.
inline constexpr const char* sqlite_upgrade_1_to_2 = R"sql(
CREATE TABLE lease_meta (
  name  TEXT    NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
UPDATE lease_schema SET version = 2;
)sql";

/// Version 2 → 3: the job's pause. Every job of a version-2 file runs (was
/// never paused): the column's default. (ADD COLUMN with a constant default
/// rewrites nothing: existing rows read the default.)
inline constexpr const char* sqlite_upgrade_2_to_3 = R"sql(
ALTER TABLE lease_jobs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
UPDATE lease_schema SET version = 3;
)sql";

/// Version 3 → 4: an operator's trigger. No job of a version-3 file has a
/// pending trigger (NULL) and none of its runs was manual (the default):
/// nothing is rewritten, existing rows read the defaults.
inline constexpr const char* sqlite_upgrade_3_to_4 = R"sql(
ALTER TABLE lease_jobs ADD COLUMN trigger_slot INTEGER;
CREATE INDEX lease_jobs_triggered ON lease_jobs (trigger_slot) WHERE trigger_slot IS NOT NULL;
ALTER TABLE lease_runs ADD COLUMN manual INTEGER NOT NULL DEFAULT 0;
UPDATE lease_schema SET version = 4;
)sql";

/// Version 4 → 5: instances' registrations of their jobs. A version-4 file
/// has none (its instances did not register): the table starts empty, and
/// the instances of this release fill it at their start.
inline constexpr const char* sqlite_upgrade_4_to_5 = R"sql(
CREATE TABLE lease_registrations (
  job       BLOB    NOT NULL,
  instance  BLOB    NOT NULL,
  schedule  BLOB    NOT NULL,
  zone      BLOB    NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (job, instance)
) WITHOUT ROWID;
UPDATE lease_schema SET version = 5;
)sql";

/// Version 5 → 6: the claim counter moves to lease_jobs' row 'claims' (TEXT:
/// every key there so far is a job's BLOB name). The value carries over, so
/// the file's counter never goes back. (A store of version 5 that still has
/// the file open claims no more: every claim transaction reads the version.)
inline constexpr const char* sqlite_upgrade_5_to_6 = R"sql(
INSERT INTO lease_jobs (job, fence) SELECT 'claims', value FROM lease_meta WHERE name = 'claims';
DELETE FROM lease_meta WHERE name = 'claims';
UPDATE lease_schema SET version = 6;
)sql";

/// Upgrades a file of lease schema version `from` (1 to the current one less
/// one) to the current one, inside the caller's write transaction.
inline void sqlite_upgrade(sqlite3* db, std::string_view path, std::int64_t from) {
  if (from == 1) exec(db, sqlite_upgrade_1_to_2, path, "cannot upgrade the lease schema from version 1 to 2");
  if (from <= 2) exec(db, sqlite_upgrade_2_to_3, path, "cannot upgrade the lease schema from version 2 to 3");
  if (from <= 3) exec(db, sqlite_upgrade_3_to_4, path, "cannot upgrade the lease schema from version 3 to 4");
  if (from <= 4) exec(db, sqlite_upgrade_4_to_5, path, "cannot upgrade the lease schema from version 4 to 5");
  if (from <= 5) exec(db, sqlite_upgrade_5_to_6, path, "cannot upgrade the lease schema from version 5 to 6");
}

/// Names of the schema objects the user put in the file (SQLite's own
/// sqlite_* objects excluded).
[[nodiscard]] inline std::vector<std::string> sqlite_object_names(sqlite3* db) {
  sqlite_stmt s = sqlite_prepare(db, "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                                 "cannot read the file's schema");
  std::vector<std::string> names;
  while (step(s.get(), "cannot read the database's schema")) names.push_back(column_bytes(s.get(), 0));
  return names;
}

/// Checks that the file holds lease schema version 1 to 6 with its tables.
/// Returns the version, or 0 if the database is empty (nothing to check:
/// create it).
[[nodiscard]] inline std::int64_t sqlite_check_schema(sqlite3* db, std::string_view path) {
  const std::vector<std::string> names = sqlite_object_names(db);
  if (names.empty()) return 0;
  auto has = [&](std::string_view n) {
    for (const auto& x : names)
      if (x == n) return true;
    return false;
  };
  if (!has("lease_schema")) {
    std::string listed;
    for (std::size_t i = 0; i < names.size() && i < 5; ++i) listed.append(i ? ", " : "").append(names[i]);
    if (names.size() > 5) listed.append(", ...");
    throw_sqlite(sqlite_errc::foreign_schema, path,
                 "is a SQLite database of another application (it has " + listed +
                     " and no lease_schema table); lease keeps its runs in a file of its own: "
                     "give the store a new path");
  }
  sqlite_stmt s = sqlite_prepare(db, "SELECT version FROM lease_schema");
  std::vector<std::int64_t> versions;
  while (step(s.get(), "cannot read the lease schema version")) {
    if (sqlite3_column_type(s.get(), 0) != SQLITE_INTEGER)
      throw_sqlite(sqlite_errc::unknown_schema_version, path,
                   "has a lease_schema table whose version is not a number; it was not written by "
                   "lease: give the store another path");
    versions.push_back(sqlite3_column_int64(s.get(), 0));
  }
  if (versions.size() != 1)
    throw_sqlite(sqlite_errc::unknown_schema_version, path,
                 "has " + std::to_string(versions.size()) +
                     " rows in lease_schema (lease writes exactly one): the file was changed by "
                     "something else; give the store another path");
  if (versions[0] < 1 || versions[0] > sqlite_schema_version)
    throw_sqlite(sqlite_errc::unknown_schema_version, path,
                 "has lease schema version " + std::to_string(versions[0]) +
                     "; this library reads and writes only version " +
                     std::to_string(sqlite_schema_version) +
                     " (and upgrades versions 1 to " + std::to_string(sqlite_schema_version - 1) +
                     "): open it with the lease release that wrote it, or give "
                     "the store another path");
  for (std::string_view t :
       {"lease_jobs", "lease_runs", "lease_runs_running", "lease_meta", "lease_jobs_triggered", "lease_registrations"})
    if (!has(t) && (t != "lease_meta" || versions[0] >= 2) && (t != "lease_jobs_triggered" || versions[0] >= 4) &&
        (t != "lease_registrations" || versions[0] >= 5))
      throw_sqlite(sqlite_errc::unknown_schema_version, path,
                   "says lease schema version " + std::to_string(versions[0]) + " but has no " + std::string(t) +
                       ": the file was changed by something else; give the store another path");
  return versions[0];
}

/// Switches the file to WAL (a no-op once it is). Leaving rollback mode needs
/// an exclusive lock for which SQLite does not call the busy handler, so
/// processes opening a new file at the same moment would fail at once: retry,
/// for up to the busy timeout like any other lock wait.
inline void sqlite_enable_wal(sqlite3* db, std::string_view path, std::int64_t busy_timeout_ms) {
  std::int64_t waited = 0;
  for (int pause = 1;; pause = pause < 32 ? pause * 2 : pause) {
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || waited >= busy_timeout_ms) throw_sqlite(db, rc, path, "cannot switch the database to WAL mode");
    sqlite3_sleep(pause);
    waited += pause;
  }
}

/// What sqlite_open found or did.
struct sqlite_opened {
  sqlite_db db;
  bool created = false;  ///< this connection created the lease schema
};

/// Opens `path` (created if missing; a `file:` URI is accepted, e.g.
/// `file:jobs.db?mode=ro` for a read-only inspector; a file that can only be
/// read without that is refused: errc::unavailable), sets the busy timeout,
/// WAL and the sync level, and makes sure the file holds the lease schema
/// (upgrading versions 1 to 5). If it creates the schema, it records `created_at`
/// and, if `lost_at` is set, that lost_at, in the same transaction: no
/// moment exists at which the new file is visible without them.
[[nodiscard]] inline sqlite_opened sqlite_open(const std::string& path, std::int64_t busy_timeout_ms, bool durable,
                                              std::int64_t created_at_ms = 0,
                                              std::optional<std::int64_t> lost_at_ms = std::nullopt,
                                              bool must_write = false, bool upgrade = true) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI |
                                     SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  sqlite_db db(raw);
  if (rc != SQLITE_OK) throw_sqlite(db.get(), rc, path, "cannot open the database file");
  sqlite3_extended_result_codes(db.get(), 1);
  const bool read_only = sqlite3_db_readonly(db.get(), "main") == 1;
  // Asked for read-write, SQLite falls back silently to a read-only
  // connection when it cannot open the file for writing (EACCES, EROFS: e.g.
  // a file restored as root). A store reopening a replaced file it could
  // write before (`must_write`) must not be served so: it could never record
  // the loss, and would stay read-only after the owner is fixed (the inode
  // does not change). A first open is served read-only (an operator's
  // leasectl as another user reads; writes fail as unavailable). A
  // temporary or in-memory database ("" here) has no file to fall back on.
  if (const char* name = sqlite3_db_filename(db.get(), "main");
      must_write && read_only && name != nullptr && *name != '\0') {
    const char* mode = sqlite3_uri_parameter(name, "mode");
    const bool asked = (mode != nullptr && std::string_view(mode) == "ro") || sqlite3_uri_boolean(name, "immutable", 0);
    if (!asked)
      throw_sqlite(db.get(), SQLITE_READONLY, path,
                   "was opened read-only although read-write was asked (SQLite falls back to read-only when this "
                   "process cannot write the file: restored as another user? a read-only filesystem?), and a store "
                   "must write to record runs and losses (a read-only inspector asks for it with a file: URI and "
                   "?mode=ro)");
  }
  // Every lock wait below and in every later operation is bounded by this.
  sqlite3_busy_timeout(db.get(), static_cast<int>(std::clamp<std::int64_t>(busy_timeout_ms, 0, INT_MAX)));

  // Look before touching anything: a foreign database must be refused before
  // we switch it to WAL. A file that is not a database fails here (NOTADB).
  const std::int64_t version = sqlite_check_schema(db.get(), path);
  const bool exists = version != 0;
  // Before the switch to WAL: a store that upgrades nothing changes nothing.
  if (exists && version < sqlite_schema_version && !upgrade)
    throw_sqlite(sqlite_errc::schema_outdated, path,
                 "has lease schema version " + std::to_string(version) + ", older than this release's " +
                     std::to_string(sqlite_schema_version) +
                     ", and this store upgrades none (sqlite_options::upgrade = false; leasectl opens it so): "
                     "open it with the release the instances run, or upgrade the instances first (an instance "
                     "of this release upgrades the file when it opens it)");

  if (!read_only) {
    // WAL: readers never block the writer and vice versa; writers queue on
    // the write lock (BEGIN IMMEDIATE + busy_timeout), which is exactly the
    // one-writer-at-a-time atomicity the rules need across processes.
    sqlite_enable_wal(db.get(), path, busy_timeout_ms);
  }
  // FULL (durable, the default): a commit is synced before it is
  // acknowledged. NORMAL in WAL acknowledges it before the sync: a power
  // loss keeps the file consistent but may drop the last commits, and a
  // dropped won claim whose handler already acted is won again by the
  // rebooted instance's catch-up; NORMAL is for users who accept that rerun
  // for speed (sqlite_options::durable).
  exec(db.get(), durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", path,
       "cannot set the sync level");

  bool created = false;
  if (version != sqlite_schema_version) {
    if (read_only && !exists)
      throw_sqlite(db.get(), SQLITE_READONLY, path,
                   "has no lease schema yet and is opened read-only, so it cannot be created");
    // An older version, read-only: its tables lack what this release's
    // statements name (lease_meta, the pause, trigger and manual columns, the
    // registrations) or keep it elsewhere (version 5: the claim counter),
    // and it cannot be upgraded here. Say so, rather than fail on "no such
    // column" or read a layout this release does not write.
    if (read_only)
      throw_sqlite(db.get(), SQLITE_READONLY, path,
                   "has lease schema version " + std::to_string(version) + ", older than this release's " +
                       std::to_string(sqlite_schema_version) +
                       ", and is opened read-only, so it cannot be upgraded: open it once read-write (any instance "
                       "of this release does) and read it after");
    // Several processes may open a new file at once: create (or upgrade)
    // under the write lock and look again, so exactly one of them does it.
    exec(db.get(), "BEGIN IMMEDIATE", path, "cannot lock the database to create the lease schema");
    try {
      const std::int64_t now_version = sqlite_check_schema(db.get(), path);
      if (now_version == 0) {
        exec(db.get(), sqlite_schema_ddl, path, "cannot create the lease schema");
        sqlite_stmt s = sqlite_prepare(db.get(), "INSERT INTO lease_meta (name, value) VALUES (?1, ?2)");
        auto put = [&](const char* name, std::int64_t v) {
          stmt_use use(s.get());
          sqlite3_bind_text(s.get(), 1, name, -1, SQLITE_STATIC);
          bind_int(s.get(), 2, v);
          step(s.get(), "cannot record when the file was created");
        };
        put("created_at", created_at_ms);
        if (lost_at_ms) put("lost_at", *lost_at_ms);
        created = true;
      } else {
        sqlite_upgrade(db.get(), path, now_version);
      }
      exec(db.get(), "COMMIT", path, "cannot commit the lease schema");
    } catch (...) {
      sqlite3_exec(db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return {std::move(db), created};
}

}  // namespace lease::detail
