// lease/store/sqlite/handle.hpp — RAII owners of SQLite's C handles.
//
// One std::unique_ptr with a stateless noexcept deleter per handle type, so
// the owners cost one pointer, move for free, and can never leak or double
// free. Raw pointers appear only at the C call.
#pragma once

#include <memory>

#include <sqlite3.h>

namespace lease::detail {

/// Closes a connection. sqlite3_close_v2 (not sqlite3_close) so that a
/// connection is released even if a statement somehow outlives it: SQLite
/// then defers the close until the last statement is finalized.
struct sqlite_db_deleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};

/// Finalizes a prepared statement.
struct sqlite_stmt_deleter {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

/// An owned connection.
using sqlite_db = std::unique_ptr<sqlite3, sqlite_db_deleter>;
/// An owned prepared statement.
using sqlite_stmt = std::unique_ptr<sqlite3_stmt, sqlite_stmt_deleter>;

/// Resets a cached statement when a use of it ends, however it ends (result,
/// exception), so the next use starts clean and no read transaction is held
/// open by a statement left mid-step.
class stmt_use {
 public:
  explicit stmt_use(sqlite3_stmt* s) noexcept : s_(s) {}
  stmt_use(const stmt_use&) = delete;
  stmt_use& operator=(const stmt_use&) = delete;
  ~stmt_use() { sqlite3_reset(s_); }
  [[nodiscard]] sqlite3_stmt* get() const noexcept { return s_; }

 private:
  sqlite3_stmt* s_;
};

}  // namespace lease::detail
