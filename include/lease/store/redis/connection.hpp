// lease/store/redis/connection.hpp — one hiredis connection that reconnects
// with backoff, loads the store's scripts, and runs them with EVALSHA.
//
// Failures are store_errors (error.hpp). A failure after a request was
// written is a `transport_error` with maybe_applied() true, so the store can
// resolve it by reading the run back instead of guessing. After a broken
// connection the next call reconnects at once; a failed connect makes the
// calls after it wait out a backoff (doubling up to a cap) and fail fast
// with redis_errc::backing_off meanwhile, so a down server is not hammered.
#pragma once

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <sys/socket.h>
#include <sys/time.h>

#include "lease/store/redis/error.hpp"
#include "lease/store/redis/handle.hpp"
#include "lease/store/redis/scripts.hpp"
#include "lease/store/redis/url.hpp"

namespace lease::detail::redis {

/// A store_error raised by the transport. maybe_applied(): the request had
/// been (at least partly) written when the connection failed.
class transport_error : public store_error {
 public:
  transport_error(std::error_code code, const std::string& what, bool maybe_applied)
      : store_error(code, what), maybe_applied_(maybe_applied) {}
  [[nodiscard]] bool maybe_applied() const noexcept { return maybe_applied_; }

 private:
  bool maybe_applied_;
};

/// Settings of a connection.
struct connection_settings {
  endpoint where;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds command_timeout{2000};
  std::chrono::milliseconds backoff_min{25};
  std::chrono::milliseconds backoff_max{1000};
};

/// One command's arguments (binary-safe views; they must outlive the call).
using argv_t = std::vector<std::string_view>;

/// A reconnecting hiredis connection. Not thread-safe: one thread at a time.
class connection {
 public:
  explicit connection(connection_settings s) : s_(std::move(s)) {}

  /// Runs `cmds` in one round trip (pipelined) and returns their replies in
  /// order; error replies are returned, not thrown.
  std::vector<reply_ptr> exchange(std::span<const argv_t> cmds) {
    ensure();
    return send_and_read(cmds, /*handshake=*/false);
  }

  /// EVALSHA of `which` with `keys` and `args`, for each element of `batch`
  /// (one round trip for all); reloads the scripts and resends once the
  /// commands answered NOSCRIPT (they did not run). Other error replies are
  /// thrown as store_errors.
  template <class MakeArgs>
  std::vector<reply_ptr> eval_many(script which, std::size_t count, MakeArgs&& make_args) {
    ensure();
    std::vector<argv_t> cmds(count);
    for (std::size_t i = 0; i < count; ++i) {
      cmds[i] = {"EVALSHA", sha_[static_cast<unsigned>(which)]};
      make_args(i, cmds[i]);
    }
    std::vector<reply_ptr> replies = send_and_read(cmds, false);
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < count; ++i)
      if (error_code_of(replies[i].get()) == redis_errc::noscript) again.push_back(i);
    if (!again.empty()) {
      load_scripts();  // e.g. SCRIPT FLUSH, or a failover to a node without them
      std::vector<argv_t> retry;
      for (std::size_t i : again) {
        cmds[i][1] = sha_[static_cast<unsigned>(which)];
        retry.push_back(cmds[i]);
      }
      std::vector<reply_ptr> second = send_and_read(retry, false);
      for (std::size_t k = 0; k < again.size(); ++k) replies[again[k]] = std::move(second[k]);
    }
    for (auto& r : replies) throw_if_error(r.get(), "script");
    return replies;
  }

  /// One EVALSHA (see eval_many).
  template <class MakeArgs>
  reply_ptr eval(script which, MakeArgs&& make_args) {
    auto replies = eval_many(which, 1, [&](std::size_t, argv_t& a) { make_args(a); });
    return std::move(replies.front());
  }

  /// The two halves of exchange(), for a caller talking to many nodes at
  /// once (router.hpp): send() writes `cmds` out (connect first with
  /// open()); receive() reads their `count` replies. Between the two the
  /// connection must not be used otherwise.
  /// A connection dropped earlier in the caller's exchange (another round
  /// of a batch, a connect hook's nested call) fails as not connected,
  /// never as a null context (a review found a crash there).
  void send(std::span<const argv_t> cmds) {
    if (!ctx_) fail(ENOTCONN, false, "not connected (dropped earlier in this call) to");
    write_out(cmds);
  }
  std::vector<reply_ptr> receive(std::size_t count) {
    if (!ctx_) fail(ENOTCONN, true, "not connected (dropped after its commands were sent) to");
    ++round_trips_;
    return read(count, false);
  }

  /// Loads the store's scripts again (after NOSCRIPT: a flushed script cache,
  /// or a node that had not run them yet).
  void reload_scripts() {
    ensure();
    load_scripts();
  }

  /// Runs `hook` right after every successful connect, before the call that
  /// connected sends anything: the store checks there that the server still
  /// holds its state (redis.hpp). If the hook throws, the connect failed.
  void on_connect(std::function<void()> hook) { on_connect_ = std::move(hook); }

  /// The SHA1 of a loaded script (valid once connected).
  [[nodiscard]] const std::string& sha(script which) const noexcept { return sha_[static_cast<unsigned>(which)]; }

  /// Connects now if not connected (or fails fast while backing off).
  void open() { ensure(); }

  /// "host:port", never credentials: for messages.
  [[nodiscard]] std::string where() const { return printable(s_.where.host, 100) + ":" + std::to_string(s_.where.port); }

  /// Drops the connection; the next call reconnects at once.
  void disconnect() noexcept {
    ctx_.reset();
    retry_at_ = {};
  }
  [[nodiscard]] bool connected() const noexcept { return ctx_ != nullptr; }
  /// Which connection this is: one more at every connect. WAIT counts the
  /// writes of the connection it is sent on, so a caller that waits for
  /// replicas compares this with the generation its writes went out on
  /// (router::wait_each).
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  /// Round trips made so far (pipelined commands count once), handshakes included.
  [[nodiscard]] std::uint64_t round_trips() const noexcept { return round_trips_; }
  [[nodiscard]] const connection_settings& settings() const noexcept { return s_; }

  /// The native code of an error reply, or nothing for another reply.
  [[nodiscard]] static std::optional<redis_errc> error_code_of(const redisReply* r) noexcept {
    if (r == nullptr || r->type != REDIS_REPLY_ERROR) return std::nullopt;
    return classify_error_reply(std::string_view(r->str, r->len));
  }

  /// Throws the store_error of an error reply; does nothing for another reply.
  static void throw_if_error(const redisReply* r, std::string_view what) {
    if (auto code = error_code_of(r)) raise(*code, what, std::string_view(r->str, r->len));
  }

 private:
  static timeval to_timeval(std::chrono::milliseconds d) {
    return {static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>((d.count() % 1000) * 1000)};
  }

  [[noreturn]] void fail(int saved_errno, bool maybe_applied, std::string_view what) {
    const redis_errc code = classify_context_error(ctx_ ? ctx_->err : REDIS_ERR_OTHER, saved_errno);
    std::string msg = "lease::redis_store: " + std::string(what) + " " + where();
    if (ctx_ && ctx_->errstr[0] != '\0') msg.append(": ").append(ctx_->errstr);
    disconnect();  // a hiredis context is unusable after an error
    throw transport_error(make_error_code(code), msg, maybe_applied);
  }

  /// Connects if not connected, or fails fast while backing off.
  void ensure() {
    if (ctx_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < retry_at_)
      raise(redis_errc::backing_off, "not reconnecting to " + where() + " yet",
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now).count()) +
                " ms of backoff left");
    try {
      connect();
      if (on_connect_) {
        try {
          on_connect_();
        } catch (const transport_error& e) {  // nothing of the caller's was sent yet
          throw transport_error(e.code(), e.what(), false);
        }
      }
      backoff_ = {};
    } catch (...) {
      ctx_.reset();
      backoff_ = backoff_ == std::chrono::milliseconds{} ? s_.backoff_min : std::min(backoff_ * 2, s_.backoff_max);
      retry_at_ = std::chrono::steady_clock::now() + backoff_;
      throw;
    }
  }

  void connect() {
    errno = 0;
    ++generation_;  // a new connection, even if this connect fails
    ctx_.reset(redisConnectWithTimeout(s_.where.host.c_str(), s_.where.port, to_timeval(s_.connect_timeout)));
    const int saved = errno;
    if (!ctx_) raise(redis_errc::client_oom, "connecting to " + where(), "hiredis could not allocate a context");
    if (ctx_->err != 0) fail(saved, false, "connecting to");
    if (redisSetTimeout(ctx_.get(), to_timeval(s_.command_timeout)) != REDIS_OK) fail(errno, false, "configuring");
    redisEnableKeepAlive(ctx_.get());  // notice a peer that vanished without a FIN
    // hiredis frees its read buffer whenever it is empty with more than
    // 16 kB spare, and grows a new one for the next batch's replies: at
    // thousands of claims a second each such large free or allocation makes
    // glibc consolidate its free lists (malloc_consolidate and _int_malloc
    // together were a sixth of an instance's time under perf at 10,000
    // fires a second). A buffer up to 1 MB is kept.
    ctx_->reader->maxbuf = std::size_t{1} << 20;
    // AUTH and SELECT, pipelined with the script loads: one round trip.
    std::vector<argv_t> cmds;
    if (s_.where.password) {
      if (s_.where.user)
        cmds.push_back({"AUTH", *s_.where.user, *s_.where.password});
      else
        cmds.push_back({"AUTH", *s_.where.password});
    }
    std::string db = std::to_string(s_.where.db);
    if (s_.where.db != 0) cmds.push_back({"SELECT", db});
    const std::size_t setup = cmds.size();
    for (auto text : scripts) cmds.push_back({"SCRIPT", "LOAD", text});
    auto replies = send_and_read(cmds, /*handshake=*/true);
    // What the caller must fix, in a sentence: a refused AUTH or SELECT is
    // not a server failure (retrying won't help), and is never "corrupt".
    for (std::size_t i = 0; i < replies.size(); ++i) {
      const redisReply* r = replies[i].get();
      auto code = error_code_of(r);
      if (!code) continue;
      const std::string_view text(r->str, r->len);
      const bool is_auth = s_.where.password && i == 0, is_select = s_.where.db != 0 && i + 1 == setup;
      if (is_auth && text.find("without any password configured") != std::string_view::npos)
        raise(redis_errc::auth, "redis at " + where() + " has no password set, but the url gives one: "
                                "remove it from the url, or configure one on the server (requirepass or ACL)", text);
      if (is_auth)
        raise(redis_errc::auth, "redis at " + where() + " refused the url's user or password: fix the "
                                "credentials in the url (escape '%', '/' and '@' as %25, %2F and %40)", text);
      if (is_select)
        raise(redis_errc::bad_db, "redis at " + where() + " refused SELECT " + db + ": use a database "
                                  "number below the server's `databases` setting (16 by default; "
                                  "cluster nodes have only database 0)", text);
      if (*code == redis_errc::auth)
        raise(redis_errc::auth, "redis at " + where() + " needs credentials: put them in the url "
                                "(redis://user:password@host)", text);
      throw_if_error(r, "setting up " + where());
    }
    store_shas(std::span(replies).subspan(setup));
  }

  void load_scripts() {
    std::vector<argv_t> cmds;
    for (auto text : scripts) cmds.push_back({"SCRIPT", "LOAD", text});
    auto replies = send_and_read(cmds, true);
    for (auto& r : replies) throw_if_error(r.get(), "loading scripts");
    store_shas(replies);
  }

  void store_shas(std::span<const reply_ptr> replies) {
    for (std::size_t i = 0; i < script_count; ++i) {
      const redisReply* r = replies[i].get();
      if (r->type != REDIS_REPLY_STRING) raise(redis_errc::bad_reply, "SCRIPT LOAD", "not a string");
      sha_[i].assign(r->str, r->len);
    }
  }

  std::vector<reply_ptr> send_and_read(std::span<const argv_t> cmds, bool handshake) {
    ++round_trips_;
    write_out(cmds, handshake);
    return read(cmds.size(), handshake);
  }

  /// Writes the commands in RESP into one buffer, kept between calls, and
  /// that to the socket: hiredis then only reads the replies.
  /// redisAppendCommandArgv would format each command into a buffer of its
  /// own (an allocation and a copy per command, and the argv and length
  /// arrays built for it), and hiredis's output buffer is allocated for
  /// each exchange and freed once written: work paid per round trip at
  /// thousands of claims a second. send() with MSG_NOSIGNAL also makes a
  /// write to a connection the server closed an EPIPE error, not a SIGPIPE
  /// (hiredis writes with write(2): sigpipe.hpp), with no signal-mask calls.
  /// Arguments are length-prefixed bulk strings, so any bytes (NUL, CR LF)
  /// pass unchanged. `handshake`: the connect's own commands (AUTH, SELECT,
  /// SCRIPT LOAD), whose failure cannot have applied anything of the caller's.
  /// The buffer is sized once for the whole pipeline and written through a
  /// pointer: two appends per argument (each a capacity check, the "\r\n"
  /// one a strlen too) were a fifth of a claim's client instructions.
  void write_out(std::span<const argv_t> cmds, bool handshake = false) {
    std::string& out = resp_;
    // "*<n>\r\n" per command, "$<n>\r\n<arg>\r\n" per argument; a size_t
    // has at most 20 digits, so this bounds the text from above.
    constexpr std::size_t header = 1 + 20 + 2;
    std::size_t bound = 0;
    for (const argv_t& cmd : cmds) {
      bound += header;
      for (std::string_view a : cmd) bound += header + a.size() + 2;
    }
    out.resize(bound);
    char* p = out.data();
    const auto put_header = [&p](char kind, std::size_t n) {
      *p++ = kind;
      p = std::to_chars(p, p + 20, n).ptr;  // 20 digits hold any size_t
      *p++ = '\r';
      *p++ = '\n';
    };
    for (const argv_t& cmd : cmds) {
      put_header('*', cmd.size());
      for (std::string_view a : cmd) {
        put_header('$', a.size());
        if (!a.empty()) std::memcpy(p, a.data(), a.size());
        p += a.size();
        *p++ = '\r';
        *p++ = '\n';
      }
    }
    out.resize(static_cast<std::size_t>(p - out.data()));
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = ::send(ctx_->fd, out.data() + at, out.size() - at, MSG_NOSIGNAL);
      if (n >= 0) {
        at += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      // What hiredis records for a failed write (EAGAIN: the command
      // timeout ran out), so fail() says it the same way. Some of the
      // caller's commands may have reached the server: maybe applied.
      const int saved = errno;
      ctx_->err = REDIS_ERR_IO;
      std::snprintf(ctx_->errstr, sizeof ctx_->errstr, "%s", std::strerror(saved));
      fail(saved, !handshake, handshake ? "setting up" : "talking to");
    }
    if (out.capacity() > (std::size_t{1} << 20)) std::string().swap(out);  // keep no megabytes after a burst
  }

  std::vector<reply_ptr> read(std::size_t count, bool handshake) {
    std::vector<reply_ptr> replies;
    replies.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      void* raw = nullptr;
      errno = 0;
      if (redisGetReply(ctx_.get(), &raw) != REDIS_OK || raw == nullptr)
        fail(errno, !handshake, handshake ? "setting up" : "talking to");
      replies.emplace_back(static_cast<redisReply*>(raw));
    }
    return replies;
  }

  connection_settings s_;
  std::function<void()> on_connect_;
  context_ptr ctx_;
  std::array<std::string, script_count> sha_{};
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{};
  std::uint64_t round_trips_ = 0;
  std::uint64_t generation_ = 0;  ///< connects so far: generation()
  std::string resp_;  ///< write_out()'s buffer, kept between calls
};

}  // namespace lease::detail::redis
