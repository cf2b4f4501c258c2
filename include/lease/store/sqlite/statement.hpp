// lease/store/sqlite/statement.hpp — thin, throwing helpers over sqlite3_stmt:
// prepare, bind, step, read a column, run a script.
//
// Internal (lease::detail). Every failure becomes a lease::store_error whose
// message names the database file (sqlite3_db_filename) and says what to do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "lease/store/sqlite/error.hpp"
#include "lease/store/sqlite/handle.hpp"

namespace lease::detail {

/// The file a connection is open on, for messages ("" for a temporary database).
[[nodiscard]] inline std::string_view sqlite_path(sqlite3* db) noexcept {
  const char* f = sqlite3_db_filename(db, "main");
  return f != nullptr ? f : "";
}

/// Prepares `sql` for repeated use (SQLITE_PREPARE_PERSISTENT: it lives in
/// the connection's statement cache for the store's lifetime).
[[nodiscard]] inline sqlite_stmt sqlite_prepare(sqlite3* db, std::string_view sql,
                                              std::string_view what = "cannot prepare a statement on its tables") {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  sqlite_stmt owned(s);
  if (rc != SQLITE_OK) throw_sqlite(db, rc, sqlite_path(db), what);
  return owned;
}

/// Binds bytes as a BLOB. Strings (job names, tokens, runners) are always
/// stored and compared as BLOBs, so any bytes — quotes, NUL, invalid UTF-8 —
/// round-trip, and a bound value never meets a TEXT value it cannot equal.
/// SQLITE_STATIC: the caller's bytes outlive the step that reads them.
inline void bind_bytes(sqlite3_stmt* s, int i, std::string_view v) {
  // A null pointer would bind SQL NULL, not an empty string.
  const char* p = v.data() != nullptr ? v.data() : "";
  const int rc = sqlite3_bind_blob64(s, i, p, v.size(), SQLITE_STATIC);
  if (rc != SQLITE_OK) {
    sqlite3* db = sqlite3_db_handle(s);
    throw_sqlite(db, rc, sqlite_path(db), "cannot bind a value (too long?)");
  }
}

inline void bind_int(sqlite3_stmt* s, int i, std::int64_t v) {
  const int rc = sqlite3_bind_int64(s, i, v);
  if (rc != SQLITE_OK) {
    sqlite3* db = sqlite3_db_handle(s);
    throw_sqlite(db, rc, sqlite_path(db), "cannot bind a value");
  }
}

inline void bind_null(sqlite3_stmt* s, int i) {
  const int rc = sqlite3_bind_null(s, i);
  if (rc != SQLITE_OK) {
    sqlite3* db = sqlite3_db_handle(s);
    throw_sqlite(db, rc, sqlite_path(db), "cannot bind a value");
  }
}

/// One step: true for a row, false when done; throws on any failure.
inline bool step(sqlite3_stmt* s, std::string_view what) {
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(s);
  throw_sqlite(db, rc, sqlite_path(db), what);
}

/// step() for a statement that commits a write (COMMIT, or a write in
/// autocommit mode): an I/O error is an outcome-unknown error, except a
/// failed read: SQLite reads a write's pages before it writes any frame, and
/// a read failing while a commit is written (its frames' checksums being
/// rewritten) leaves the commit frame invalid, so nothing was applied.
inline void step_commit(sqlite3_stmt* s, std::string_view what) {
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) return;
  sqlite3* db = sqlite3_db_handle(s);
  if ((rc & 0xff) == SQLITE_IOERR && rc != SQLITE_IOERR_READ && rc != SQLITE_IOERR_SHORT_READ)
    throw_commit_unknown(db, rc, sqlite_path(db), what);
  throw_sqlite(db, rc, sqlite_path(db), what);
}

/// Runs SQL text that returns no rows needed (pragmas, DDL).
inline void exec(sqlite3* db, const char* sql, std::string_view path, std::string_view what) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw_sqlite(db, rc, path, what);
}

/// An INTEGER column; any other type means the row was not written by lease.
[[nodiscard]] inline std::int64_t column_int(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) != SQLITE_INTEGER) {
    sqlite3* db = sqlite3_db_handle(s);
    throw_sqlite(sqlite_errc::bad_value, sqlite_path(db),
                 std::string("column '") + sqlite3_column_name(s, i) +
                     "' holds a non-integer: the lease tables were changed by something else; "
                     "an operator must repair or remove the row");
  }
  return sqlite3_column_int64(s, i);
}

/// A BLOB (or TEXT, if edited by hand) column as bytes.
[[nodiscard]] inline std::string column_bytes(sqlite3_stmt* s, int i) {
  const int t = sqlite3_column_type(s, i);
  if (t != SQLITE_BLOB && t != SQLITE_TEXT) {
    sqlite3* db = sqlite3_db_handle(s);
    throw_sqlite(sqlite_errc::bad_value, sqlite_path(db),
                 std::string("column '") + sqlite3_column_name(s, i) +
                     "' holds neither bytes nor text: the lease tables were changed by something else; "
                     "an operator must repair or remove the row");
  }
  const void* p = sqlite3_column_blob(s, i);  // before column_bytes, as SQLite asks
  const int n = sqlite3_column_bytes(s, i);
  return p != nullptr ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

}  // namespace lease::detail
