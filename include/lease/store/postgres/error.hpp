// lease/store/postgres/error.hpp — the PostgreSQL error category, and the one
// place where a libpq failure or a server error (SQLSTATE) becomes a
// lease::store_error.
//
// `lease::postgres_errc` keeps what happened (a lost connection, a timeout, a
// class of SQLSTATE); its category maps each code onto the lease::errc that
// says what the caller should do. The SQLSTATE itself is in the message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

#include "lease/detail/printable.hpp"
#include "lease/error.hpp"

namespace lease {

/// What went wrong talking to PostgreSQL.
enum class postgres_errc {
  connect_failed = 1,  ///< no server of the conninfo accepted a connection (or none was read-write)
  connection_lost,     ///< the connection broke before the request was sent
  timeout,             ///< no answer within command_timeout (the connection is dropped)
  reply_lost,          ///< the connection failed after a request was sent: it may have been applied
  backing_off,         ///< a recent connect failed; the next attempt waits for the backoff
  shutting_down,       ///< 57P01/57P02/57P03: the server is stopping, crashed or starting
  retryable,           ///< 40001 serialization failure, 40P01 deadlock: nothing was applied
  read_only,           ///< 25006: a standby (e.g. right after a failover)
  statement_timeout,   ///< 57014: statement_timeout or a cancel; nothing was applied
  resources,           ///< class 53 (disk full, out of memory, too many connections)
  auth,                ///< class 28: the server refused the credentials
  privilege,           ///< 42501: the role lacks a privilege on the schema
  bad_option,          ///< a bad conninfo, schema name or option
  schema_version,      ///< the schema holds a version this library does not know
  bad_reply,           ///< a reply of unexpected shape, or a stored value lease did not write
  server_error,        ///< any other server error
  schema_missing,      ///< no lease tables in the schema, and the store may not create them (migrate = false)
  schema_outdated,     ///< an older layout the store may not migrate (migrate = false)
};

namespace detail::postgres {

class category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "postgres"; }
  [[nodiscard]] std::string message(int c) const override {
    switch (static_cast<postgres_errc>(c)) {
      case postgres_errc::connect_failed: return "could not connect to postgres";
      case postgres_errc::connection_lost: return "the connection to postgres broke";
      case postgres_errc::timeout: return "postgres did not answer in time";
      case postgres_errc::reply_lost: return "connection lost after the request was sent; it may have been applied";
      case postgres_errc::backing_off: return "postgres unreachable; waiting before reconnecting";
      case postgres_errc::shutting_down: return "postgres is shutting down or starting";
      case postgres_errc::retryable: return "serialization failure or deadlock (nothing applied)";
      case postgres_errc::read_only: return "postgres is a read-only standby";
      case postgres_errc::statement_timeout: return "statement timeout or cancel (nothing applied)";
      case postgres_errc::resources: return "postgres is out of a resource";
      case postgres_errc::auth: return "postgres refused the credentials";
      case postgres_errc::privilege: return "the role lacks a privilege";
      case postgres_errc::bad_option: return "bad postgres store option";
      case postgres_errc::schema_version: return "unknown lease schema version";
      case postgres_errc::bad_reply: return "unexpected reply or stored value";
      case postgres_errc::server_error: return "postgres error";
      case postgres_errc::schema_missing: return "no lease schema (this store creates none)";
      case postgres_errc::schema_outdated: return "an older lease schema (this store migrates none)";
    }
    return "unknown postgres error";
  }
  [[nodiscard]] std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<postgres_errc>(c)) {
      case postgres_errc::reply_lost: return errc::outcome_unknown;
      case postgres_errc::auth:
      case postgres_errc::privilege:
      case postgres_errc::bad_option: return errc::invalid_argument;
      case postgres_errc::schema_version:
      case postgres_errc::bad_reply:
      case postgres_errc::server_error: return errc::corrupt;
      // schema_missing, schema_outdated: unavailable too. Nothing was
      // changed, and the store works once an instance that migrates has
      // created or upgraded the schema; a wrong schema name is said in the message.
      default: return errc::unavailable;  // transient: reconnect / retry with backoff
    }
  }
};

}  // namespace detail::postgres

/// The category of `lease::postgres_errc`.
[[nodiscard]] inline const std::error_category& postgres_category() noexcept {
  static const detail::postgres::category_impl instance;
  return instance;
}
[[nodiscard]] inline std::error_code make_error_code(postgres_errc e) noexcept {
  return {static_cast<int>(e), postgres_category()};
}

}  // namespace lease

template <>
struct std::is_error_code_enum<lease::postgres_errc> : std::true_type {};

namespace lease::detail::postgres {

/// The native code of a server error, from its SQLSTATE.
[[nodiscard]] inline postgres_errc classify_sqlstate(std::string_view s) noexcept {
  auto cls = [&](std::string_view c) { return s.substr(0, 2) == c; };
  if (s == "57P01" || s == "57P02" || s == "57P03") return postgres_errc::shutting_down;
  if (s == "40001" || s == "40P01") return postgres_errc::retryable;
  if (s == "25006") return postgres_errc::read_only;
  if (s == "57014") return postgres_errc::statement_timeout;
  if (cls("08")) return postgres_errc::connection_lost;
  if (cls("53")) return postgres_errc::resources;
  if (cls("28")) return postgres_errc::auth;
  if (s == "42501") return postgres_errc::privilege;
  return postgres_errc::server_error;
}

/// True for the SQLSTATEs after which this connection should not be reused:
/// a standby, a shutting-down server (the connection is closing anyway).
[[nodiscard]] inline bool drop_connection_after(postgres_errc e) noexcept {
  return e == postgres_errc::read_only || e == postgres_errc::shutting_down || e == postgres_errc::connection_lost;
}

/// The prefix of every message this store raises.
inline constexpr std::string_view message_prefix = "lease::postgres_store: ";

[[nodiscard]] inline std::string_view without_prefix(std::string_view msg) noexcept {
  if (msg.substr(0, message_prefix.size()) == message_prefix) msg.remove_prefix(message_prefix.size());
  return msg;
}

/// A store_error raised by the transport. maybe_applied(): the request had
/// been sent when the connection failed, so it may have been applied.
class transport_error : public store_error {
 public:
  transport_error(std::error_code code, const std::string& what, bool maybe_applied)
      : store_error(code, what), maybe_applied_(maybe_applied) {}
  [[nodiscard]] bool maybe_applied() const noexcept { return maybe_applied_; }

 private:
  bool maybe_applied_;
};

/// A store_error for an error the server answered (the request did not
/// apply), with its SQLSTATE.
class sql_error : public store_error {
 public:
  sql_error(std::error_code code, const std::string& what, std::string sqlstate)
      : store_error(code, what), sqlstate_(std::move(sqlstate)) {}
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }
  /// The schema, a table, a function or a prepared statement is missing:
  /// the schema was dropped (or never made) under this connection.
  [[nodiscard]] bool schema_missing() const noexcept {
    return sqlstate_ == "3F000" || sqlstate_ == "42P01" || sqlstate_ == "42883" || sqlstate_ == "26000";
  }

 private:
  std::string sqlstate_;
};

/// A message of libpq's or the server's as it wrote it, made safe to show
/// on one line: printable()'s escapes for control characters, bytes that
/// are not UTF-8 and characters that reorder text, but quotes and
/// backslashes as they are (`connection to server at "127.0.0.1"`, not
/// `\"127.0.0.1\"`): it goes into an exception's text, not into JSON
/// (a JSON writer escapes it there). Applied once, where the message is shown.
[[nodiscard]] inline std::string readable(std::string_view s, std::size_t max_bytes) {
  const std::string p = lease::detail::printable(s, max_bytes);
  std::string out;
  out.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    // Every backslash of printable's output starts an escape: undo only \\ and \".
    if (p[i] == '\\' && i + 1 < p.size() && (p[i + 1] == '\\' || p[i + 1] == '"')) ++i;
    out += p[i];
  }
  return out;
}

/// Throws the store_error for `code` with `what` (our text: which operation,
/// which server, already redacted) and `detail` (libpq's or the server's
/// message as it is: readable() makes it safe to show).
[[noreturn]] inline void raise(postgres_errc code, std::string_view what, std::string_view detail = {}) {
  std::string msg{message_prefix};
  msg.append(without_prefix(what));
  if (!detail.empty()) msg.append(": ").append(readable(without_prefix(detail), 400));
  throw store_error(make_error_code(code), msg);
}

}  // namespace lease::detail::postgres
