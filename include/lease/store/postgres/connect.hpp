// lease/store/postgres/connect.hpp — a libpq connect bounded on the
// monotonic clock, host by host.
//
// Why not PQconnectdbParams: libpq measures its connect_timeout with
// time(NULL), the wall clock (libpq 15's connectDBComplete), and rounds any
// value below 2 s up to 2 s. A step back of the wall clock while a server
// does not answer stretches the wait by the step; the connect runs on the
// scheduler's loop thread, so that wait stalls every job of the instance.
//
// Here the connect is libpq's non-blocking one (PQconnectStartParams,
// PQconnectPoll) and each host gets `per_host` on std::chrono::steady_clock,
// as libpq gives each host its connect_timeout. libpq moves on by itself from
// a host that fails (refused, or a standby under
// target_session_attrs=read-write); only the timeout is done here. libpq has
// no call that moves a connect in progress to its next host, so after a
// timeout the connect starts again with the hosts that remain, from the
// options libpq resolved (PQconninfo: the conninfo, the PG* environment and a
// service file already applied), in libpq's order.
//
// The one difference: libpq restarts its timer for each address of a host
// name (localhost: ::1, then 127.0.0.1); here a host's addresses share it.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <libpq-fe.h>
#include <poll.h>

namespace lease::detail::postgres {

struct pg_conn_free {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using conn_ptr = std::unique_ptr<PGconn, pg_conn_free>;

namespace connect_detail {

struct options_free {
  void operator()(PQconninfoOption* o) const noexcept { PQconninfoFree(o); }
};
using options_ptr = std::unique_ptr<PQconninfoOption, options_free>;

/// libpq's list syntax for host, hostaddr and port: comma-separated, no
/// escapes; an empty string is a list of none.
[[nodiscard]] inline std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  for (std::size_t from = 0;;) {
    const std::size_t comma = s.find(',', from);
    out.emplace_back(s.substr(from, comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

[[nodiscard]] inline std::string join(const std::vector<std::string>& v, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < v.size(); ++i) out += (i > from ? "," : "") + v[i];
  return out;
}

/// The hosts a connect tries, in order, as libpq resolved them.
struct host_list {
  std::vector<std::string> host, hostaddr, port;

  [[nodiscard]] std::size_t size() const noexcept { return std::max(host.size(), hostaddr.size()); }
  /// What PQhost() says while host `i` is tried: its name, else its address.
  [[nodiscard]] std::string name(std::size_t i) const {
    if (i < host.size() && !host[i].empty()) return host[i];
    return i < hostaddr.size() ? hostaddr[i] : std::string{};
  }
  /// Host `i`'s port as given; empty if none (libpq's default then).
  [[nodiscard]] std::string port_of(std::size_t i) const {
    if (port.size() == 1) return port[0];
    return i < port.size() ? port[i] : std::string{};
  }
  /// The host `conn` tries now: the first at or after `from` that matches
  /// PQhost and PQport (libpq only moves forward).
  [[nodiscard]] std::size_t current(PGconn* conn, std::size_t from) const {
    const char* h = PQhost(conn);
    const char* p = PQport(conn);
    for (std::size_t i = from; i < size(); ++i) {
      const std::string port_i = port_of(i);
      if (h != nullptr && name(i) == h && (port_i.empty() || (p != nullptr && port_i == p))) return i;
    }
    return from;
  }
};

[[nodiscard]] inline host_list hosts_of(const PQconninfoOption* opts) {
  host_list l;
  for (const PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view k = o->keyword;
    if (k == "host") l.host = split(o->val);
    else if (k == "hostaddr") l.hostaddr = split(o->val);
    else if (k == "port") l.port = split(o->val);
  }
  return l;
}

/// The connect_timeout the options carry (seconds; libpq's keyword), if a
/// positive one: the user's wins over the store's setting.
[[nodiscard]] inline std::optional<std::chrono::milliseconds> timeout_of(const PQconninfoOption* opts) {
  for (const PQconninfoOption* o = opts; o != nullptr && o->keyword != nullptr; ++o) {
    if (o->val == nullptr || std::string_view(o->keyword) != "connect_timeout") continue;
    char* end = nullptr;
    errno = 0;
    const long s = std::strtol(o->val, &end, 10);
    if (errno != 0 || end == o->val || *end != '\0' || s <= 0 || s > INT_MAX / 1000) return std::nullopt;
    return std::chrono::seconds{s};
  }
  return std::nullopt;
}

/// Waits until `conn`'s socket is ready for what PQconnectPoll asked, or
/// `deadline`. False: the deadline passed first.
[[nodiscard]] inline bool wait_socket(PGconn* conn, PostgresPollingStatusType want,
                                      std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    const int fd = PQsocket(conn);
    if (fd < 0) return true;  // nothing to wait on: PQconnectPoll reports why
    pollfd p{fd, static_cast<short>(want == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(ms, INT_MAX)));
    if (r > 0 || (r < 0 && errno != EINTR)) return true;  // ready, or an error PQconnectPoll will find
  }
}

[[nodiscard]] inline std::string trimmed_message(PGconn* c) {
  std::string m = c != nullptr ? PQerrorMessage(c) : "out of memory";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

}  // namespace connect_detail

/// Connects with libpq's keywords `keys`/`vals` (null-terminated arrays, as
/// PQconnectStartParams takes them), giving each host `per_host` unless the
/// options carry a connect_timeout of their own. Returns the connection,
/// CONNECTION_OK; or null with `failure` saying why, host by host.
[[nodiscard]] inline conn_ptr connect_by_deadline(const char* const* keys, const char* const* vals, bool expand_dbname,
                                                  std::chrono::milliseconds per_host, std::string& failure) {
  using namespace connect_detail;
  using std::chrono::steady_clock;
  conn_ptr c{PQconnectStartParams(keys, vals, expand_dbname ? 1 : 0)};
  if (!c || PQstatus(c.get()) == CONNECTION_BAD) {
    failure = trimmed_message(c.get());
    return nullptr;
  }
  const options_ptr resolved{PQconninfo(c.get())};
  const host_list hosts = hosts_of(resolved.get());
  per_host = timeout_of(resolved.get()).value_or(per_host);

  std::string timed_out;  // the hosts left for the next, named in a failure
  std::size_t base = 0;   // hosts[base] is the first host of `c`'s list
  std::size_t at = 0;     // the host `c` tries now, in `c`'s list
  auto deadline = steady_clock::now() + per_host;
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;  // libpq: as if the first poll asked to write
  for (;;) {
    if (st == PGRES_POLLING_OK) return c;
    if (st == PGRES_POLLING_FAILED) {
      failure = timed_out + trimmed_message(c.get());
      return nullptr;
    }
    if (wait_socket(c.get(), st, deadline)) {
      st = PQconnectPoll(c.get());
      const std::size_t now_at = hosts.size() > 1 ? hosts.current(c.get(), base + at) - base : 0;
      if (now_at != at) {  // libpq moved on by itself: the next host's own time
        at = now_at;
        deadline = steady_clock::now() + per_host;
      }
      continue;
    }
    // No answer in time: the next host, from a connect of the rest.
    const std::size_t gone = base + at;
    const std::string port = hosts.port_of(gone);
    timed_out += "no answer from " + (hosts.name(gone).empty() ? std::string("the default host") : hosts.name(gone)) +
                 (port.empty() ? "" : ":" + port) + " within " + std::to_string(per_host.count()) +
                 " ms (connect_timeout); ";
    c.reset();
    if (gone + 1 >= hosts.size()) {
      failure = timed_out.substr(0, timed_out.size() - 2);
      return nullptr;
    }
    base = gone + 1;
    at = 0;
    std::vector<std::string> k, v;
    for (const PQconninfoOption* o = resolved.get(); o->keyword != nullptr; ++o) {
      if (o->val == nullptr) continue;
      const std::string_view key = o->keyword;
      k.emplace_back(key);
      if (key == "host") v.push_back(join(hosts.host, base));
      else if (key == "hostaddr") v.push_back(join(hosts.hostaddr, base));
      else if (key == "port" && hosts.port.size() > 1) v.push_back(join(hosts.port, base));
      else v.emplace_back(o->val);
    }
    std::vector<const char*> kp, vp;
    for (std::size_t i = 0; i < k.size(); ++i) {
      kp.push_back(k[i].c_str());
      vp.push_back(v[i].c_str());
    }
    kp.push_back(nullptr);
    vp.push_back(nullptr);
    c.reset(PQconnectStartParams(kp.data(), vp.data(), 0));
    if (!c || PQstatus(c.get()) == CONNECTION_BAD) {
      failure = timed_out + trimmed_message(c.get());
      return nullptr;
    }
    deadline = steady_clock::now() + per_host;
    st = PGRES_POLLING_WRITING;
  }
}

}  // namespace lease::detail::postgres
