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
// timeout the connect starts again (rest_of): the caller's conninfo as
// parsed, its host lists replaced by the hosts that remain, in libpq's
// order, as libpq resolved them (PQconninfo: the conninfo, the PG*
// environment and a service file applied).
//
// Differences from libpq's own wait, none of which a store that needs a
// primary meets: a host's addresses share its time (libpq restarts the timer
// for each address of a host name: localhost is ::1, then 127.0.0.1); a
// host name's lookup (getaddrinfo) is not bounded, as it is not in libpq
// (give an address to bound it); and target_session_attrs=prefer-standby,
// which ends with a second pass from the first host, does not go back to
// the hosts before one that timed out.
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

/// libpq's messages end with a newline; messages of ours should not.
[[nodiscard]] inline std::string trimmed(const char* s) {
  std::string out = s != nullptr ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

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
  /// The host `conn` tries now, once it moved on: the first at or after
  /// `from` whose name and port are PQhost's and PQport's (an entry with
  /// neither name nor address is the socket directory, any name). libpq
  /// only moves forward, but for prefer-standby's second pass: that stays
  /// on the last host.
  [[nodiscard]] std::size_t current(PGconn* conn, std::size_t from) const {
    if (size() == 0) return 0;
    const char* h = PQhost(conn);
    const char* p = PQport(conn);
    for (std::size_t i = from; i < size(); ++i)
      if ((name(i).empty() || (h != nullptr && name(i) == h)) && p != nullptr && port_of(i) == p) return i;
    return std::min(from, size() - 1);
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

/// The connect_timeout the caller's own conninfo gives, as libpq reads it
/// (seconds; 1 is taken as 2; a day at most), if a positive one: it wins
/// over the store's setting, and the PG* environment does not (the setting
/// is as explicit as a keyword). 0, libpq's "wait forever", is not kept: a connect runs on
/// the scheduler's loop thread, and must end.
[[nodiscard]] inline std::optional<std::chrono::milliseconds> conninfo_timeout(const char* conninfo) {
  char* err = nullptr;
  const options_ptr parsed{PQconninfoParse(conninfo, &err)};
  if (err != nullptr) PQfreemem(err);
  for (const PQconninfoOption* o = parsed.get(); o != nullptr && o->keyword != nullptr; ++o) {
    if (o->val == nullptr || std::string_view(o->keyword) != "connect_timeout") continue;
    char* end = nullptr;
    errno = 0;
    const long s = std::strtol(o->val, &end, 10);
    while (end != nullptr && (*end == ' ' || *end == '\t')) ++end;  // libpq allows trailing spaces
    if (errno != 0 || end == o->val || *end != '\0' || s <= 0) return std::nullopt;
    return std::chrono::seconds{std::clamp(s, 2L, 86400L)};
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

/// libpq's message about connection `c` (null: PQconnectStartParams could
/// not allocate one).
[[nodiscard]] inline std::string trimmed_message(PGconn* c) {
  return c != nullptr ? trimmed(PQerrorMessage(c)) : "out of memory";
}

/// libpq's message so far about a connect that is abandoned: what it said
/// of the hosts it left, less the header it wrote for the attempt in
/// progress ("connection to server at ..., port ... failed:").
[[nodiscard]] inline std::string abandoned_message(PGconn* c) {
  std::string m = trimmed_message(c);
  const std::size_t line = m.rfind('\n');
  const std::string_view last = line == std::string::npos ? std::string_view(m) : std::string_view(m).substr(line + 1);
  if (last.size() >= 7 && last.substr(last.size() - 7) == "failed:") m.resize(line == std::string::npos ? 0 : line);
  return trimmed(m.c_str());
}

/// The keywords of a connect to hosts[from...] only: the caller's conninfo
/// as parsed (its own keywords, `service` among them; not the environment,
/// which fills in what is missing again), its host lists replaced by what
/// remains of them, then the caller's defaults where it gave none. A part
/// of a list left empty is not passed (libpq ignores an empty value, and
/// the whole list would come back from the conninfo): an empty port is
/// libpq's default port, an empty host the default one.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> rest_of(
    const std::string& conninfo, const std::vector<std::pair<std::string, std::string>>& defaults,
    const host_list& hosts, std::size_t from) {
  std::vector<std::pair<std::string, std::string>> out;
  char* err = nullptr;
  const options_ptr parsed{PQconninfoParse(conninfo.c_str(), &err)};
  if (err != nullptr) PQfreemem(err);
  for (const PQconninfoOption* o = parsed.get(); o != nullptr && o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    const std::string_view k = o->keyword;
    if ((k == "host" || k == "hostaddr") && hosts.size() > 0) continue;
    if (k == "port" && hosts.port.size() > 1) continue;
    out.emplace_back(o->keyword, o->val);
  }
  auto add = [&](const char* key, const std::vector<std::string>& list, const char* if_empty) {
    if (list.empty()) return;
    std::string v = join(list, from);
    if (v.empty()) v = if_empty;
    if (!v.empty()) out.emplace_back(key, std::move(v));
  };
  add("host", hosts.host, "");
  add("hostaddr", hosts.hostaddr, "");
  if (hosts.port.size() > 1) add("port", hosts.port, "5432");  // libpq's DEF_PGPORT_STR
  for (const auto& d : defaults)
    if (std::none_of(out.begin(), out.end(), [&](const auto& kv) { return kv.first == d.first; })) out.push_back(d);
  return out;
}

[[nodiscard]] inline conn_ptr start_connect(const std::vector<std::pair<std::string, std::string>>& kv, bool expand_dbname) {
  std::vector<const char*> k, v;
  for (const auto& [key, val] : kv) {
    k.push_back(key.c_str());
    v.push_back(val.c_str());
  }
  k.push_back(nullptr);
  v.push_back(nullptr);
  return conn_ptr{PQconnectStartParams(k.data(), v.data(), expand_dbname ? 1 : 0)};
}

}  // namespace connect_detail

/// Connects to `conninfo` (a libpq connection string or URI; `defaults`,
/// such as application_name, apply where it gives none), giving each host
/// `per_host` (above 0) unless the conninfo gives a connect_timeout of its
/// own. Returns the connection, CONNECTION_OK; or null with `failure`
/// saying why, host by host.
[[nodiscard]] inline conn_ptr connect_by_deadline(const std::string& conninfo,
                                                  const std::vector<std::pair<std::string, std::string>>& defaults,
                                                  std::chrono::milliseconds per_host, std::string& failure) {
  using namespace connect_detail;
  using std::chrono::steady_clock;
  per_host = std::min<std::chrono::milliseconds>(conninfo_timeout(conninfo.c_str()).value_or(per_host),
                                                 std::chrono::hours{24});  // no overflow of now() + per_host

  // libpq's own reading of the conninfo: the defaults first, so that the
  // conninfo's keywords win.
  std::vector<std::pair<std::string, std::string>> first = defaults;
  first.emplace_back("dbname", conninfo);
  conn_ptr c = start_connect(first, /*expand_dbname=*/true);
  if (!c || PQstatus(c.get()) == CONNECTION_BAD) {
    failure = trimmed_message(c.get());
    return nullptr;
  }
  const options_ptr resolved{PQconninfo(c.get())};
  const host_list hosts = hosts_of(resolved.get());

  std::string earlier;  // what became of the hosts left behind, for a failure
  // The host `c` tries now, in `hosts`: libpq may have left some already
  // (a name that does not resolve, a missing socket: PQconnectStartParams
  // polls once).
  std::size_t at = hosts.current(c.get(), 0);
  const char* seen_host = PQhost(c.get());  // they point into the host's own entry of `c`:
  const char* seen_port = PQport(c.get());  // another pointer, another host
  auto deadline = steady_clock::now() + per_host;
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;  // libpq: as if the first poll asked to write
  for (;;) {
    if (st == PGRES_POLLING_OK) return c;
    if (st == PGRES_POLLING_FAILED) {
      failure = earlier + trimmed_message(c.get());
      return nullptr;
    }
    if (wait_socket(c.get(), st, deadline)) {
      st = PQconnectPoll(c.get());
      const char* h = PQhost(c.get());
      const char* p = PQport(c.get());
      if (h != seen_host || p != seen_port) {  // libpq moved on by itself: the next host's own time
        seen_host = h;
        seen_port = p;
        at = hosts.current(c.get(), at + 1);
        deadline = steady_clock::now() + per_host;
      }
      continue;
    }
    // No answer in time: the next host, from a connect of the rest.
    const std::string port = hosts.port_of(at);
    const std::string before = abandoned_message(c.get());  // libpq's word on the hosts it left
    earlier += (before.empty() ? "" : before + "; ") + "no answer from " +
               (hosts.name(at).empty() ? std::string("the default host") : hosts.name(at)) +
               (port.empty() ? "" : ":" + port) + " within " + std::to_string(per_host.count()) +
               " ms (connect_timeout); ";
    c.reset();
    if (at + 1 >= hosts.size()) {
      failure = earlier.substr(0, earlier.size() - 2);
      return nullptr;
    }
    const std::size_t from = at + 1;
    c = start_connect(rest_of(conninfo, defaults, hosts, from), /*expand_dbname=*/false);
    if (!c || PQstatus(c.get()) == CONNECTION_BAD) {
      failure = earlier + trimmed_message(c.get());
      return nullptr;
    }
    at = hosts.current(c.get(), from);  // `c`'s hosts are hosts[from...]
    seen_host = PQhost(c.get());
    seen_port = PQport(c.get());
    deadline = steady_clock::now() + per_host;
    st = PGRES_POLLING_WRITING;
  }
}

}  // namespace lease::detail::postgres
