// lease/store/postgres/connection.hpp — one libpq connection that reconnects
// with backoff and runs prepared statements with a deadline.
//
// Built from a libpq conninfo string or URI, which libpq parses itself
// (PQconnectStartParams with expand_dbname), so everything libpq reads works
// as users expect: sslmode and the other ssl* keywords, several hosts with
// target_session_attrs=read-write, PGPASSFILE and ~/.pgpass, service files,
// the PG* environment. The default this store adds (application_name) comes
// before it: the user's own keywords win. The connect waits for each host
// at most connect_timeout on the monotonic clock (connect.hpp: libpq's own
// wait is on the wall clock); a connect_timeout in the conninfo wins. The
// first attempt hands libpq the string unchanged; after a host times out,
// the next attempt is the same keywords as libpq parsed them, with the
// hosts that remain (connect.hpp, rest_of).
//
// Failures are store_errors (error.hpp). A failure after a request was sent
// is a `transport_error` with maybe_applied() true, so the store can resolve
// it by reading the run back. Parameters and results travel in binary
// format: job names, tokens and runners are bytea, any bytes round-trip, and
// they never meet SQL text.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <libpq-fe.h>
#include <poll.h>

#include "lease/store/postgres/connect.hpp"
#include "lease/store/postgres/error.hpp"

namespace lease::detail::postgres {

struct pg_result_free {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, pg_result_free>;

/// The conninfo as something safe to print: the keywords libpq parsed from it
/// that say where it goes (host, hostaddr, port, dbname, user, sslmode,
/// target_session_attrs, service), never a password — whatever the string
/// holds, even when it cannot be parsed.
[[nodiscard]] inline std::string redact_conninfo(const std::string& conninfo) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (err != nullptr) PQfreemem(err);  // it may quote the string: never shown
  if (opts == nullptr) return "(a conninfo that libpq cannot parse)";
  std::string out;
  static constexpr std::string_view shown[] = {"host", "hostaddr", "port", "dbname", "user",
                                               "sslmode", "target_session_attrs", "service"};
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    if (std::find(std::begin(shown), std::end(shown), std::string_view(o->keyword)) == std::end(shown)) continue;
    if (!out.empty()) out += ' ';
    out += o->keyword;
    out += '=';
    out += o->val;
  }
  PQconninfoFree(opts);
  return out.empty() ? std::string("(libpq defaults)") : lease::detail::printable(out, 200);
}

/// Binary parameters for one statement. Values are copied: nothing a caller
/// passes must outlive the call.
class params {
 public:
  params& i64(std::int64_t v) { return raw(be(static_cast<std::uint64_t>(v), 8)); }
  params& i32(std::int32_t v) { return raw(be(static_cast<std::uint32_t>(v), 4)); }
  params& bytes(std::string_view v) { return raw(std::string(v)); }
  params& text(std::string_view v) { return raw(std::string(v)); }
  params& null() {
    values_.emplace_back();
    nulls_.push_back(true);
    return *this;
  }
  params& opt_i64(std::optional<std::int64_t> v) { return v ? i64(*v) : null(); }
  /// A one-dimensional array in PostgreSQL's binary array format.
  template <class T, class F>
  params& array(const std::vector<T>& xs, std::uint32_t elem_oid, F&& encode) {
    std::string a = be(1, 4) + be(0, 4) + be(elem_oid, 4) + be(static_cast<std::uint32_t>(xs.size()), 4) + be(1, 4);
    for (const T& x : xs) {
      const std::string e = encode(x);
      a += be(static_cast<std::uint32_t>(e.size()), 4);
      a += e;
    }
    return raw(std::move(a));
  }
  static std::string be(std::uint64_t v, int n) {
    std::string s(static_cast<std::size_t>(n), '\0');
    for (int i = n - 1; i >= 0; --i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFF);
    return s;
  }

  [[nodiscard]] int size() const noexcept { return static_cast<int>(values_.size()); }
  void pointers(std::vector<const char*>& v, std::vector<int>& len, std::vector<int>& fmt) const {
    for (std::size_t i = 0; i < values_.size(); ++i) {
      v.push_back(nulls_[i] ? nullptr : values_[i].data());
      len.push_back(static_cast<int>(values_[i].size()));
      fmt.push_back(1);
    }
  }

 private:
  params& raw(std::string v) {
    values_.push_back(std::move(v));
    nulls_.push_back(false);
    return *this;
  }
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

/// Reading binary result columns.
struct row {
  const PGresult* r;
  int i;
  [[nodiscard]] bool is_null(int c) const { return PQgetisnull(r, i, c) != 0; }
  [[nodiscard]] std::string_view bytes(int c) const {
    return {PQgetvalue(r, i, c), static_cast<std::size_t>(PQgetlength(r, i, c))};
  }
  [[nodiscard]] std::uint64_t be(int c, int n, std::string_view what) const {
    const std::string_view b = bytes(c);
    if (is_null(c) || b.size() != static_cast<std::size_t>(n)) raise(postgres_errc::bad_reply, what, "a column of unexpected size");
    std::uint64_t v = 0;
    for (char ch : b) v = (v << 8) | static_cast<unsigned char>(ch);
    return v;
  }
  [[nodiscard]] std::int64_t i64(int c, std::string_view what) const { return static_cast<std::int64_t>(be(c, 8, what)); }
  [[nodiscard]] std::int32_t i32(int c, std::string_view what) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(be(c, 4, what)));
  }
  [[nodiscard]] bool boolean(int c, std::string_view what) const { return be(c, 1, what) != 0; }
  [[nodiscard]] std::optional<std::int64_t> opt_i64(int c, std::string_view what) const {
    if (is_null(c)) return std::nullopt;
    return i64(c, what);
  }
};

/// Settings of a connection.
struct connection_settings {
  std::string conninfo;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds backoff_min{25};
  std::chrono::milliseconds backoff_max{1000};
  std::string application_name = "lease";  ///< unless the conninfo names one
};

/// A reconnecting libpq connection. Not thread-safe: one thread at a time.
class connection {
 public:
  explicit connection(connection_settings s) : s_(std::move(s)), where_(redact_conninfo(s_.conninfo)) {}
  // Neither copied nor moved: libpq holds the address of *closing_ as the
  // notice receiver's argument, and a member-wise move assignment would free
  // the old flag before PQfinish() of the old connection (c_ is assigned
  // after closing_, see the members). Nothing moves a connection.
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Where it connects, printable and without a password.
  [[nodiscard]] std::string where() const {
    if (c_ && PQstatus(c_.get()) == CONNECTION_OK) {
      const char* h = PQhost(c_.get());
      const char* p = PQport(c_.get());
      return std::string(h != nullptr ? h : "?") + ":" + (p != nullptr ? p : "?") + " (" + where_ + ")";
    }
    return where_;
  }
  [[nodiscard]] const std::string& conninfo_redacted() const noexcept { return where_; }

  /// Connects if not connected (or the connection broke while idle).
  /// Returns true if this call made a new connection: the caller then
  /// prepares its statements and checks the schema.
  bool open() {
    if (c_) {
      if (alive_after_idle()) return false;
      c_.reset();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < retry_at_)
      raise(postgres_errc::backing_off, "postgres at " + where_ + ": the last connect or its setup failed (" +
                                            readable(last_failure_, 300) +
                                            "); retrying after a backoff");
    ++round_trips_;
    std::string failure;
    conn_ptr c = connect_by_deadline(s_.conninfo, {{"application_name", s_.application_name}}, s_.connect_timeout, failure);
    if (!c || PQstatus(c.get()) != CONNECTION_OK) {
      // Kept as libpq wrote it: made readable() once, where it is shown
      // (raise() below; the backoff message above). Escaping it here too
      // showed every quote of libpq's message as \\\" (escaped twice).
      last_failure_ = std::move(failure);
      backoff_ = backoff_.count() == 0 ? s_.backoff_min : std::min(backoff_ * 2, s_.backoff_max);
      retry_at_ = now + backoff_;
      const bool auth = last_failure_.find("password authentication failed") != std::string::npos ||
                        last_failure_.find("no password supplied") != std::string::npos;
      raise(auth ? postgres_errc::auth : postgres_errc::connect_failed,
            "cannot connect to postgres at " + where_, last_failure_);
    }
    backoff_ = {};
    retry_at_ = {};
    // libpq prints server NOTICEs to stderr by default: a library must not.
    // An error that arrives while no request is in flight comes this way
    // too: a FATAL one is the server's goodbye, the close comes after it.
    *closing_ = false;
    PQsetNoticeReceiver(c.get(), &connection::on_notice, closing_.get());
    c_ = std::move(c);
    ++connects_;
    return true;
  }

  /// A server that restarted or a terminated backend (57P01) closed the
  /// socket while we were idle: notice it now, before sending anything. It
  /// sends a FATAL message, then closes: one read takes the message (libpq
  /// hands it to the notice receiver and the status stays OK), only the
  /// next sees the end. So read while the socket has more (a review found
  /// a request then sent on the dead socket, and a trigger or stop never
  /// executed reported as "may have been applied"), and take a FATAL
  /// message as the end even when the close has not arrived yet: the
  /// backend leaves pg_stat_activity before its socket closes (CI found a
  /// heartbeat sent in that gap).
  bool alive_after_idle() {
    for (int reads = 0; reads < 4; ++reads) {
      if (PQstatus(c_.get()) != CONNECTION_OK || PQconsumeInput(c_.get()) != 1 ||
          PQstatus(c_.get()) != CONNECTION_OK)
        return false;
      (void)PQisBusy(c_.get());  // parses what was read: a message waiting there reaches on_notice
      if (*closing_) return false;
      pollfd p{PQsocket(c_.get()), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return true;  // nothing more to read: alive
    }
    return true;
  }

  /// What the caller does right after a connect (session checks, schema,
  /// LISTEN) failed: the connection is dropped, and the next open() waits a
  /// backoff that doubles while that keeps failing, as after a failed
  /// connect. A server that accepts connections but cannot serve the session
  /// (a standby without target_session_attrs) is probed, not hammered (a
  /// review counted 38 sessions a second from the listener).
  void setup_failed(std::string why) {
    c_.reset();
    last_failure_ = std::move(why);
    setup_backoff_ = setup_backoff_.count() == 0 ? s_.backoff_min : std::min(setup_backoff_ * 2, s_.backoff_max);
    retry_at_ = std::chrono::steady_clock::now() + setup_backoff_;
  }
  /// The session is set up: the next setup failure backs off from the start.
  void setup_done() noexcept { setup_backoff_ = {}; }

  [[nodiscard]] bool connected() const noexcept { return c_ != nullptr; }
  void drop() noexcept { c_.reset(); }
  [[nodiscard]] PGconn* get() const noexcept { return c_.get(); }
  [[nodiscard]] std::uint64_t round_trips() const noexcept { return round_trips_; }
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }
  /// The backend's process id (for tests that terminate it), 0 when not connected.
  [[nodiscard]] int backend_pid() const noexcept { return c_ ? PQbackendPID(c_.get()) : 0; }

  /// Prepares `sql` as statement `name` on the current connection.
  void prepare(const char* name, const std::string& sql) {
    result_ptr r{PQprepare(c_.get(), name, sql.c_str(), 0, nullptr)};
    ++round_trips_;
    check(r.get(), std::string("preparing ") + name, false);
  }

  /// Runs a plain statement (no parameters, text results): setup only.
  result_ptr exec_simple(const std::string& sql, std::string_view what) {
    return wait_for(PQsendQuery(c_.get(), sql.c_str()), what);
  }

  /// Runs a statement with binary parameters and binary results.
  result_ptr exec_params(const std::string& sql, const params& p, std::string_view what) {
    std::vector<const char*> v;
    std::vector<int> len, fmt;
    p.pointers(v, len, fmt);
    return wait_for(PQsendQueryParams(c_.get(), sql.c_str(), p.size(), nullptr, v.data(), len.data(), fmt.data(), 1),
                    what);
  }

  /// Runs prepared statement `name` with binary parameters and results.
  result_ptr exec_prepared(const char* name, const params& p, std::string_view what) {
    std::vector<const char*> v;
    std::vector<int> len, fmt;
    p.pointers(v, len, fmt);
    return wait_for(PQsendQueryPrepared(c_.get(), name, p.size(), v.data(), len.data(), fmt.data(), 1), what);
  }

  /// What a pipelined batch brought back: one result per statement, in
  /// order (an error result stays a result: check() it), as many as arrived
  /// before the connection broke. `broke` is set iff fewer than all arrived;
  /// the statements past `results.size()` were sent and may have been applied.
  struct pipeline_reply {
    std::vector<result_ptr> results;
    std::exception_ptr broke;  ///< a transport_error with maybe_applied() true
  };

  /// Runs prepared statement `name` once per element of `batch`, all in one
  /// round trip (libpq's pipeline mode), each followed by a Sync: each is
  /// its own implicit transaction, committed or failed on its own, exactly
  /// as if sent alone; one failing does not abort the others. The socket is
  /// non-blocking meanwhile, and answers are read while requests are still
  /// being written, so a large batch cannot deadlock on full socket buffers.
  pipeline_reply exec_prepared_pipeline(const char* name, std::span<const params> batch, std::string_view what) {
    return exec_prepared_pipeline([name](std::size_t) { return name; }, batch, what);
  }

  /// The same, statement `name_of(i)` for element i (finish_many mixes
  /// finishes and releases).
  template <class NameOf>
  pipeline_reply exec_prepared_pipeline(NameOf name_of, std::span<const params> batch, std::string_view what) {
    pipeline_reply out;
    out.results.reserve(batch.size());
    ++round_trips_;
    PGconn* c = c_.get();
    auto broken = [&](const std::string& why, bool sent) {
      const std::string msg = trimmed(PQerrorMessage(c));
      c_.reset();
      return transport_error(make_error_code(postgres_errc::connection_lost),
                             std::string(message_prefix) + "postgres at " + where_ + ": " + std::string(what) + ": " +
                                 why + ": " + readable(msg, 300),
                             sent);
    };
    if (PQsetnonblocking(c, 1) != 0 || PQenterPipelineMode(c) != 1) throw broken("cannot enter pipeline mode", false);
    std::vector<const char*> v;
    std::vector<int> len, fmt;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const params& p = batch[i];
      v.clear();
      len.clear();
      fmt.clear();
      p.pointers(v, len, fmt);
      if (PQsendQueryPrepared(c, name_of(i), p.size(), v.data(), len.data(), fmt.data(), 1) != 1 || PQpipelineSync(c) != 1) {
        // Nothing is flushed before the first PQflush below unless the buffer
        // filled up; some statements may have gone out: maybe applied.
        out.broke = std::make_exception_ptr(broken("cannot queue the batch", true));
        return out;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + s_.command_timeout;
    bool flushing = true;
    // Per statement: its result(s), then NULL, then the Sync's PGRES_PIPELINE_SYNC.
    result_ptr first;  // the current statement's first error, else its last result
    bool ended = false;  // the current statement's NULL was seen: its Sync is next
    while (out.results.size() < batch.size()) {
      if (flushing) {
        const int f = PQflush(c);
        if (f < 0) {
          out.broke = std::make_exception_ptr(broken("the connection broke while sending the batch", true));
          return out;
        }
        flushing = f == 1;
      }
      while (out.results.size() < batch.size() && PQisBusy(c) == 0) {
        result_ptr r{PQgetResult(c)};
        if (!ended) {
          if (!r) {
            ended = true;
            continue;
          }
          const ExecStatusType st = PQresultStatus(r.get());
          if (!first || PQresultStatus(first.get()) == PGRES_COMMAND_OK || PQresultStatus(first.get()) == PGRES_TUPLES_OK)
            if (st != PGRES_PIPELINE_SYNC) first = std::move(r);
          continue;
        }
        if (!r || PQresultStatus(r.get()) != PGRES_PIPELINE_SYNC) {
          out.broke = std::make_exception_ptr(broken("the batch's answers came out of order", true));
          return out;
        }
        out.results.push_back(std::move(first));
        ended = false;
      }
      if (out.results.size() == batch.size()) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        c_.reset();  // the statements may still commit on the server
        out.broke = std::make_exception_ptr(
            transport_error(make_error_code(postgres_errc::timeout),
                            std::string(message_prefix) + "postgres at " + where_ + ": " + std::string(what) +
                                ": no answer within " + std::to_string(s_.command_timeout.count()) + " ms",
                            true));
        return out;
      }
      pollfd p{PQsocket(c), static_cast<short>(POLLIN | (flushing ? POLLOUT : 0)), 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
      if (PQconsumeInput(c) != 1) {
        out.broke = std::make_exception_ptr(broken("the connection broke after the batch was sent", true));
        return out;
      }
    }
    if (PQexitPipelineMode(c) != 1 || PQsetnonblocking(c, 0) != 0) c_.reset();  // unusable: the next call reconnects
    return out;
  }

  /// Throws for an error result. `sent`: the request reached the server, so
  /// if the connection is gone now it may have been applied.
  void check(PGresult* r, std::string_view what, bool sent) {
    const ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string msg = trimmed(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(c_.get()));
    const bool broken = !c_ || PQstatus(c_.get()) != CONNECTION_OK;
    postgres_errc code = state != nullptr ? classify_sqlstate(state) : postgres_errc::connection_lost;
    const std::string text = "postgres at " + where() + ": " + std::string(what) +
                             (state != nullptr ? std::string(" (SQLSTATE ") + state + ")" : std::string());
    if (broken || drop_connection_after(code)) c_.reset();
    if (broken && sent) {
      // The request was sent and the connection died before a clean answer
      // (a restart, 57P01, a cut): it may have been applied.
      throw transport_error(make_error_code(code == postgres_errc::server_error ? postgres_errc::connection_lost : code),
                            std::string(message_prefix) + text + ": " + readable(msg, 400), true);
    }
    if (broken) throw transport_error(make_error_code(postgres_errc::connection_lost),
                                      std::string(message_prefix) + text + ": " + readable(msg, 400), false);
    if (state == nullptr) raise(code, text, msg);
    throw sql_error(make_error_code(code),
                    std::string(message_prefix) + text + ": " + readable(msg, 400), state);
  }

  /// Notifications received on this connection (LISTEN), in order, each as
  /// {channel, payload}.
  std::vector<std::pair<std::string, std::string>> take_notifications() {
    std::vector<std::pair<std::string, std::string>> out;
    if (!c_) return out;
    while (PGnotify* n = PQnotifies(c_.get())) {
      out.emplace_back(n->relname != nullptr ? n->relname : "", n->extra != nullptr ? n->extra : "");
      PQfreemem(n);
    }
    return out;
  }

  /// Waits up to `ms` for input (notifications); false if the connection broke.
  bool wait_input(int ms) {
    if (!c_) return false;
    pollfd p{PQsocket(c_.get()), POLLIN, 0};
    if (::poll(&p, 1, ms) < 0) return true;
    if (PQconsumeInput(c_.get()) != 1 || PQstatus(c_.get()) != CONNECTION_OK) {
      c_.reset();
      return false;
    }
    return true;
  }

 private:
  /// After a PQsend*: waits for the whole answer until command_timeout.
  result_ptr wait_for(int sent_ok, std::string_view what) {
    ++round_trips_;
    if (sent_ok != 1) {
      const std::string msg = trimmed(PQerrorMessage(c_.get()));
      c_.reset();
      throw transport_error(make_error_code(postgres_errc::connection_lost),
                            std::string(message_prefix) + "postgres at " + where_ + ": " + std::string(what) +
                                ": cannot send: " + readable(msg, 300),
                            false);
    }
    const auto deadline = std::chrono::steady_clock::now() + s_.command_timeout;
    result_ptr last;
    for (;;) {
      while (PQisBusy(c_.get()) == 0) {
        result_ptr r{PQgetResult(c_.get())};
        if (!r) {
          if (!last) check(nullptr, what, true);
          check(last.get(), what, true);
          return last;
        }
        // Keep the first error, else the last result.
        if (!last || PQresultStatus(last.get()) == PGRES_COMMAND_OK || PQresultStatus(last.get()) == PGRES_TUPLES_OK)
          last = std::move(r);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        c_.reset();  // the statement may still commit on the server
        throw transport_error(make_error_code(postgres_errc::timeout),
                              std::string(message_prefix) + "postgres at " + where_ + ": " + std::string(what) +
                                  ": no answer within " + std::to_string(s_.command_timeout.count()) + " ms",
                              true);
      }
      pollfd p{PQsocket(c_.get()), POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
      if (PQconsumeInput(c_.get()) != 1) {
        // The connection broke while the request was in flight: maybe applied.
        const std::string msg = trimmed(PQerrorMessage(c_.get()));
        c_.reset();
        throw transport_error(make_error_code(postgres_errc::connection_lost),
                              std::string(message_prefix) + "postgres at " + where_ + ": " + std::string(what) +
                                  ": the connection broke after the request was sent: " +
                                  readable(msg, 300),
                              true);
      }
    }
  }

  /// Notices are dropped, but a FATAL (or PANIC) error received outside a
  /// request marks the connection as closing.
  static void on_notice(void* closing, const PGresult* r) {
    const char* severity = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity != nullptr && (std::strcmp(severity, "FATAL") == 0 || std::strcmp(severity, "PANIC") == 0))
      *static_cast<bool*>(closing) = true;
  }

  connection_settings s_;
  std::string where_;
  // The flag on_notice sets, on the heap: libpq holds its address. Declared
  // before c_ so that it is destroyed after it: PQfinish() in c_'s deleter
  // runs while the flag still exists, whatever libpq does there.
  std::unique_ptr<bool> closing_ = std::make_unique<bool>(false);
  conn_ptr c_;
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  std::chrono::milliseconds setup_backoff_{0};  // after failed setups of connections that opened
  std::string last_failure_;
  std::uint64_t round_trips_ = 0;
  std::uint64_t connects_ = 0;
};

}  // namespace lease::detail::postgres
