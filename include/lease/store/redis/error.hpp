// lease/store/redis/error.hpp — the Redis error category, and the one place
// where a hiredis failure or a Redis error reply becomes a lease::store_error.
//
// `lease::redis_errc` keeps what actually happened (hiredis's REDIS_ERR_* code,
// a timeout, a Redis error reply such as LOADING or READONLY); its category
// maps each code onto the lease::errc condition that says what the caller
// should do, so `e.code() == lease::errc::unavailable` works for every backend.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include <hiredis/hiredis.h>

#include "lease/error.hpp"
#include "lease/store/redis/printable.hpp"

namespace lease {

/// What went wrong talking to Redis. Values 1–5 are hiredis's REDIS_ERR_* codes.
enum class redis_errc {
  io = REDIS_ERR_IO,            ///< a read or write on the socket failed (errno in the message)
  other = REDIS_ERR_OTHER,      ///< hiredis "everything else", e.g. a failed connect
  eof = REDIS_ERR_EOF,          ///< the server closed the connection
  protocol = REDIS_ERR_PROTOCOL,///< the reply stream could not be parsed
  client_oom = REDIS_ERR_OOM,   ///< hiredis ran out of memory
  timeout = 100,                ///< connect_timeout or command_timeout passed
  reply_lost,                   ///< the connection failed after a request was sent: it may have been applied
  backing_off,                  ///< a recent connect failed; the next attempt waits for the backoff
  loading = 200,                ///< LOADING: the server is loading its dataset
  readonly,                     ///< READONLY: a replica (e.g. after a failover)
  oom,                          ///< OOM: the server is at maxmemory
  busy,                         ///< BUSY: another script is running too long
  masterdown,                   ///< MASTERDOWN: a replica lost its master
  tryagain,                     ///< TRYAGAIN / CLUSTERDOWN
  noscript,                     ///< NOSCRIPT: script cache flushed (the store reloads and retries once)
  auth,                         ///< NOAUTH / WRONGPASS / NOPERM: wrong credentials or ACL
  redirect,                     ///< MOVED / ASK: a cluster node; this client talks to one node only
  wrongtype,                    ///< WRONGTYPE: a key of ours holds something else
  bad_record,                   ///< a stored run record is not what this library wrote
  bad_reply,                    ///< a reply of unexpected shape
  error_reply,                  ///< any other error reply
  bad_db,                       ///< SELECT refused: the url's database number does not exist on the server
  not_replicated,               ///< short of replicas in time: a claim (released), a heartbeat, an operator call
};

namespace detail::redis {

class category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "redis"; }
  [[nodiscard]] std::string message(int c) const override {
    switch (static_cast<redis_errc>(c)) {
      case redis_errc::io: return "I/O error talking to redis";
      case redis_errc::other: return "could not connect to redis";
      case redis_errc::eof: return "redis closed the connection";
      case redis_errc::protocol: return "redis protocol error";
      case redis_errc::client_oom: return "hiredis out of memory";
      case redis_errc::timeout: return "redis timed out";
      case redis_errc::reply_lost: return "connection lost after the request was sent; it may have been applied";
      case redis_errc::backing_off: return "redis unreachable; waiting before reconnecting";
      case redis_errc::loading: return "redis is loading its dataset";
      case redis_errc::readonly: return "redis is a read-only replica";
      case redis_errc::oom: return "redis is out of memory (maxmemory)";
      case redis_errc::busy: return "redis is busy running a script";
      case redis_errc::masterdown: return "redis replica lost its master";
      case redis_errc::tryagain: return "redis cluster asks to try again";
      case redis_errc::noscript: return "redis script cache does not have the script";
      case redis_errc::auth: return "redis refused the credentials";
      case redis_errc::redirect: return "redis cluster redirect (this client talks to one node)";
      case redis_errc::wrongtype: return "a lease key holds a value of the wrong type";
      case redis_errc::bad_record: return "a stored run record is not what lease wrote";
      case redis_errc::bad_reply: return "unexpected reply from redis";
      case redis_errc::error_reply: return "redis error reply";
      case redis_errc::bad_db: return "redis has no such database (the url's /db)";
      case redis_errc::not_replicated: return "not acknowledged by enough replicas in time";
    }
    return "unknown redis error";
  }
  [[nodiscard]] std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<redis_errc>(c)) {
      case redis_errc::reply_lost: return errc::outcome_unknown;
      case redis_errc::auth:
      case redis_errc::bad_db:
      case redis_errc::redirect: return errc::invalid_argument;
      case redis_errc::wrongtype:
      case redis_errc::bad_record:
      case redis_errc::bad_reply:
      case redis_errc::error_reply: return errc::corrupt;
      default: return errc::unavailable;  // transient: reconnect / retry with backoff
    }
  }
};

}  // namespace detail::redis

/// The category of `lease::redis_errc`.
[[nodiscard]] inline const std::error_category& redis_category() noexcept {
  static const detail::redis::category_impl instance;
  return instance;
}
[[nodiscard]] inline std::error_code make_error_code(redis_errc e) noexcept {
  return {static_cast<int>(e), redis_category()};
}

}  // namespace lease

template <>
struct std::is_error_code_enum<lease::redis_errc> : std::true_type {};

namespace lease::detail::redis {

/// The native code of a Redis error reply, from its first word.
[[nodiscard]] inline redis_errc classify_error_reply(std::string_view msg) noexcept {
  auto starts = [&](std::string_view p) { return msg.substr(0, p.size()) == p; };
  if (starts("LOADING")) return redis_errc::loading;
  if (starts("READONLY")) return redis_errc::readonly;
  if (starts("OOM")) return redis_errc::oom;
  if (starts("BUSY")) return redis_errc::busy;
  if (starts("MASTERDOWN")) return redis_errc::masterdown;
  if (starts("TRYAGAIN") || starts("CLUSTERDOWN")) return redis_errc::tryagain;
  if (starts("NOSCRIPT")) return redis_errc::noscript;
  if (starts("NOAUTH") || starts("WRONGPASS") || starts("NOPERM")) return redis_errc::auth;
  if (starts("MOVED") || starts("ASK ")) return redis_errc::redirect;
  if (starts("WRONGTYPE")) return redis_errc::wrongtype;
  if (starts("LEASECORRUPT")) return redis_errc::bad_record;
  return redis_errc::error_reply;
}

/// The native code of a failed hiredis context: its REDIS_ERR_* code, or
/// `timeout` when the socket read/write gave up (EAGAIN after SO_RCVTIMEO).
[[nodiscard]] inline redis_errc classify_context_error(int err, int saved_errno) noexcept {
  if (err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT))
    return redis_errc::timeout;
  if (err >= REDIS_ERR_IO && err <= REDIS_ERR_OOM) return static_cast<redis_errc>(err);
  return redis_errc::other;
}

/// The prefix of every message this store raises (once: see without_prefix).
inline constexpr std::string_view message_prefix = "lease::redis_store: ";

/// `msg` without a leading message_prefix, to quote one error inside another.
[[nodiscard]] inline std::string_view without_prefix(std::string_view msg) noexcept {
  if (msg.substr(0, message_prefix.size()) == message_prefix) msg.remove_prefix(message_prefix.size());
  return msg;
}

/// The store_error for `code`, with `what` (which operation, which server;
/// our own text) and `detail` (hiredis's errstr or the server's message,
/// which may quote keys with any bytes: made printable) in its text.
[[nodiscard]] inline store_error error(redis_errc code, std::string_view what, std::string_view detail) {
  std::string msg{message_prefix};
  msg.append(without_prefix(what));
  if (!detail.empty()) msg.append(": ").append(printable(without_prefix(detail), 300));
  return store_error(make_error_code(code), msg);
}

/// Throws error(code, what, detail).
[[noreturn]] inline void raise(redis_errc code, std::string_view what, std::string_view detail) {
  throw error(code, what, detail);
}

}  // namespace lease::detail::redis
