// lease/store/sqlite/error.hpp — lease::sqlite_category and how SQLite
// failures become lease::store_error.
//
// The category's codes are SQLite's *extended* result codes (kept whole for the
// log: SQLITE_IOERR_WRITE says more than SQLITE_IOERR) plus the conditions
// the store detects itself (lease::sqlite_errc). Its default_error_condition
// maps every code onto the lease::errc that says what the caller should do, so
// `e.code() == lease::errc::unavailable` works for any SQLite failure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include <sqlite3.h>

#include "lease/error.hpp"

namespace lease {

/// Failures lease's SQLite store detects itself, beyond SQLite's result codes.
enum class sqlite_errc {
  /// The file is a SQLite database of another application (it has tables and
  /// no lease schema table).
  foreign_schema = 0x10001,
  /// The file has a lease schema version this library does not know (written
  /// by a newer or older lease), or its lease tables are not the expected ones.
  unknown_schema_version,
  /// A stored value is outside what this library writes (e.g. a status of 7).
  bad_value,
  /// The disk failed (SQLITE_IOERR) while a write was being committed: it may
  /// or may not be on disk (errc::outcome_unknown). The SQLite code is in the
  /// message.
  commit_unknown,
  /// The file has an older lease schema version, and the store was opened
  /// with sqlite_options::upgrade = false (leasectl): errc::unavailable, as
  /// the store works once an instance of this release has upgraded it.
  schema_outdated,
};

namespace detail {

class sqlite_category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "sqlite"; }

  [[nodiscard]] std::string message(int c) const override {
    switch (static_cast<sqlite_errc>(c)) {
      case sqlite_errc::foreign_schema: return "database of another application";
      case sqlite_errc::unknown_schema_version: return "unknown lease schema";
      case sqlite_errc::bad_value: return "stored value not understood";
      case sqlite_errc::commit_unknown: return "I/O error while committing: outcome unknown";
      case sqlite_errc::schema_outdated: return "an older lease schema (this store upgrades none)";
    }
    return sqlite3_errstr(c);
  }

  /// Sorted by what the caller should do (see lease::errc): conditions of the
  /// environment that an operator or time can fix are `unavailable` (the
  /// scheduler keeps retrying with backoff, so it recovers once space is
  /// freed or permissions are fixed); a file we cannot understand is
  /// `corrupt`; a wrong call is `invalid_argument`.
  [[nodiscard]] std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<sqlite_errc>(c)) {
      case sqlite_errc::foreign_schema:
      case sqlite_errc::unknown_schema_version:
      case sqlite_errc::bad_value: return errc::corrupt;
      case sqlite_errc::commit_unknown: return errc::outcome_unknown;
      case sqlite_errc::schema_outdated: return errc::unavailable;
    }
    switch (c & 0xff) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_IOERR:
      case SQLITE_FULL:
      case SQLITE_CANTOPEN:
      case SQLITE_READONLY:
      case SQLITE_NOMEM:
      case SQLITE_INTERRUPT:
      case SQLITE_PROTOCOL:
      case SQLITE_PERM:
      case SQLITE_ABORT:
      case SQLITE_SCHEMA:
      case SQLITE_NOLFS: return errc::unavailable;
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB:
      case SQLITE_FORMAT:
      case SQLITE_MISMATCH:
      case SQLITE_CONSTRAINT:
      case SQLITE_EMPTY:
      case SQLITE_ERROR: return errc::corrupt;  // e.g. "no such table": someone changed the schema
      case SQLITE_MISUSE:
      case SQLITE_RANGE:
      case SQLITE_TOOBIG:
      case SQLITE_AUTH: return errc::invalid_argument;
      default: return {c, *this};
    }
  }
};

}  // namespace detail

/// The category of SQLite extended result codes and lease::sqlite_errc.
[[nodiscard]] inline const std::error_category& sqlite_category() noexcept {
  static const detail::sqlite_category_impl instance;
  return instance;
}

[[nodiscard]] inline std::error_code make_error_code(sqlite_errc e) noexcept {
  return {static_cast<int>(e), sqlite_category()};
}

namespace detail {

/// `s` made safe for a message or a log line: valid UTF-8 is kept, control
/// characters (C0, DEL, C1) are escaped as \n, \t, \r, \\ or \xNN / \u{NN},
/// and each byte that is not part of valid UTF-8 becomes \xNN. Paths and job
/// names are arbitrary bytes; a message must not break a terminal or a
/// JSON log. TODO: replace with lease/detail/printable.hpp once it is merged.
[[nodiscard]] inline std::string sqlite_printable(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto byte = [&](unsigned char c) { out.append("\\x").push_back(hex[c >> 4]); out.push_back(hex[c & 15]); };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n') out.append("\\n");
      else if (c == '\t') out.append("\\t");
      else if (c == '\r') out.append("\\r");
      else if (c == '\\') out.append("\\\\");
      else if (c < 0x20 || c == 0x7f) byte(c);
      else out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    // The length and the smallest code point of a sequence led by c.
    const std::size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    std::uint32_t cp = n == 2 ? c & 0x1fu : n == 3 ? c & 0x0fu : c & 0x07u;
    bool ok = n != 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3fu);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    ok = ok && !(n == 3 && cp < 0x800) && !(n == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
         !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      byte(c);
      ++i;
    } else if (cp >= 0x80 && cp <= 0x9f) {  // C1 controls
      out.append("\\u{").push_back(hex[cp >> 4]);
      out.push_back(hex[cp & 15]);
      out.push_back('}');
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// What to do about a failure, for the exception's message.
[[nodiscard]] inline std::string_view sqlite_advice(int rc) noexcept {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another connection held the database longer than busy_timeout; retry with backoff";
    case SQLITE_FULL:
      return "the disk (or the database's page limit) is full; free space, then retry";
    case SQLITE_READONLY:
      return "the database is read-only for this process; make the file and its directory writable "
             "(SQLite also writes the -wal and -shm files beside it)";
    case SQLITE_CANTOPEN:
      return "check that the directory exists and this process may create and write files in it";
    case SQLITE_IOERR: return "the disk reported an I/O error; check it, then retry";
    case SQLITE_PERM: return "the operating system denied access; check permissions";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return "the file is not a SQLite database lease can use; point the store at another file "
             "or restore this one from a backup";
    case SQLITE_ERROR:
    case SQLITE_MISMATCH:
    case SQLITE_CONSTRAINT:
      return "the file's lease tables are not the ones this library writes; was the schema changed "
             "by hand? point the store at another file";
    default: return "";
  }
}

/// Throws the store_error for SQLite result `rc` while doing `what` on `path`.
/// The message says what happened (SQLite's own message, more precise than
/// the code's) and what to do.
[[noreturn]] inline void throw_sqlite(sqlite3* db, int rc, std::string_view path, std::string_view what) {
  std::string msg = "lease::sqlite_store '";
  msg.append(sqlite_printable(path)).append("': ").append(what);
  if (db != nullptr) {
    const std::string_view detail = sqlite3_errmsg(db);
    if (!detail.empty() && detail != sqlite3_errstr(rc) && detail != "not an error")
      msg.append(" (").append(detail).append(")");
  }
  if (const auto advice = sqlite_advice(rc); !advice.empty()) msg.append(": ").append(advice);
  throw store_error(std::error_code(rc, sqlite_category()), msg);
}

/// Throws the outcome-unknown store_error for an I/O error `rc` met while a
/// write was committing. Once SQLite has started writing a commit to the WAL,
/// a failure can leave it recoverable from the file (e.g. a failed fsync
/// after the commit frame was written), so "not applied" cannot be promised.
[[noreturn]] inline void throw_commit_unknown(sqlite3* db, int rc, std::string_view path, std::string_view what) {
  std::string msg = "lease::sqlite_store '";
  msg.append(sqlite_printable(path)).append("': ").append(what).append(": the disk failed while committing (SQLite code ");
  msg.append(std::to_string(rc)).append(", ").append(db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  msg.append("); the change may or may not have been applied: read the run back and compare its token "
             "before retrying, and check the disk");
  throw store_error(make_error_code(sqlite_errc::commit_unknown), msg);
}

/// Throws the store_error for a condition the store detected itself.
[[noreturn]] inline void throw_sqlite(sqlite_errc e, std::string_view path, std::string_view what) {
  std::string msg = "lease::sqlite_store '";
  msg.append(sqlite_printable(path)).append("': ").append(what);
  throw store_error(make_error_code(e), msg);
}

}  // namespace detail
}  // namespace lease

template <>
struct std::is_error_code_enum<lease::sqlite_errc> : std::true_type {};
