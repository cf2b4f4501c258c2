// lease/store/redis/trigger_subscriber.hpp — the listening side of push
// triggers on Redis (PushTriggerStore): a thread and a connection of its own,
// subscribed to the store's trigger channel (keys.hpp trigger_channel),
// calling the listener with the name of each job triggered.
//
// The trigger script PUBLISHes the job's name when an operator triggers it,
// on one channel for the whole prefix. Classic pub/sub, not sharded like the
// release channels (subscriber.hpp): on a cluster a PUBLISH is broadcast to
// every node, so one connection to any node hears the triggers of every
// master — the url's node, else a seed, else a master the slot map names,
// whichever answers. Triggers are rare (an operator's request), so the
// broadcast costs nothing that matters and saves a connection per master.
//
// What is published while nobody is subscribed is lost, and an instance
// that relies on pushes does not poll. So:
//   - each time the subscription is confirmed (the first time, and after
//     every reconnect) the listener is called with "": "you may have missed
//     pushes; poll triggers() once";
//   - a connection that went silent (a frozen server, a partition that
//     resets nothing) is found by a PING sent when nothing was heard for
//     redis_options::trigger_ping_every (30 s), which must be answered
//     within the command timeout; otherwise the connection is dropped and
//     made again (TCP keepalive alone would take minutes, and would not see
//     a stopped server process at all). Not every second: that PING is all
//     an idle instance would send, and triggers are an operator's requests,
//     for which a rare fault may cost half a minute, never the trigger (it
//     stays pending in the store, and the reconnect polls it);
//   - a refused SUBSCRIBE (an ACL without the channel) or a failed connect
//     is retried with backoff (25 ms doubling up to max_backoff), the next
//     candidate node each time on a cluster.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "lease/store/concept.hpp"
#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/handle.hpp"
#include "lease/store/redis/sigpipe.hpp"
#include "lease/store/redis/slot_map.hpp"

namespace lease::detail::redis {

/// One trigger subscriber thread; destroying it stops the thread after the
/// last call of the listener has returned.
class trigger_subscriber {
 public:
  /// `nodes`: where to subscribe, in order of preference (one server: just
  /// it; a cluster: its seeds, the url's node first). `cluster`: the masters
  /// of the slot map, read at each connect, are candidates too.
  trigger_subscriber(connection_settings s, std::string channel, trigger_listener f, std::vector<endpoint> nodes,
                     bool cluster, std::chrono::milliseconds ping_every)
      : s_(std::move(s)),
        channel_(std::move(channel)),
        f_(std::move(f)),
        nodes_(std::move(nodes)),
        cluster_(cluster),
        ping_every_(ping_every) {
    if (nodes_.empty()) nodes_.push_back(s_.where);
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      raise(redis_errc::client_oom, "starting the trigger subscriber", "pipe2 failed");
    thread_ = std::thread([this] { loop(); });
  }
  ~trigger_subscriber() {
    stop_ = true;
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  trigger_subscriber(const trigger_subscriber&) = delete;
  trigger_subscriber& operator=(const trigger_subscriber&) = delete;

  /// Connections made so far (a reconnect counts again).
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }
  /// Whether the server confirmed the subscription on the current connection.
  [[nodiscard]] bool subscribed() const noexcept { return subscribed_; }

 private:
  using clock = std::chrono::steady_clock;

  void loop() {
    while (!stop_) {
      const auto now = clock::now();
      if (!ctx_) {
        if (now >= next_try_ && open()) continue;
        poll_once(std::max<int>(1, static_cast<int>(ms_until(next_try_))));
        continue;
      }
      if (ping_sent_ && now - *ping_sent_ > s_.command_timeout) {
        fail();  // silent: dead or partitioned; make a new connection
        continue;
      }
      if (!ping_sent_ && now - last_heard_ >= ping_every_) {
        ping();
        continue;
      }
      const auto deadline = ping_sent_ ? *ping_sent_ + s_.command_timeout : last_heard_ + ping_every_;
      poll_once(std::clamp<int>(static_cast<int>(ms_until(deadline)) + 1, 1, 1000));
    }
    ctx_.reset();
  }

  static std::int64_t ms_until(clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t - clock::now()).count();
  }

  /// Connects to the current candidate (AUTH if the url has credentials)
  /// and sends SUBSCRIBE; its confirmation arrives in read_messages().
  bool open() {
    sigpipe_guard guard;
    if (cluster_ && at_ % nodes_.size() == 0) learn_masters();  // first, and once per round of candidates
    const endpoint& e = nodes_[at_ % nodes_.size()];
    const timeval t{static_cast<time_t>(s_.connect_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.connect_timeout.count() % 1000) * 1000)};
    ctx_.reset(redisConnectWithTimeout(e.host.c_str(), e.port, t));
    bool ok = ctx_ && ctx_->err == 0;
    const timeval c{static_cast<time_t>(s_.command_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.command_timeout.count() % 1000) * 1000)};
    ok = ok && redisSetTimeout(ctx_.get(), c) == REDIS_OK;
    if (ok) redisEnableKeepAlive(ctx_.get());
    if (ok && s_.where.password) {
      const auto& u = s_.where.user;
      const auto& p = *s_.where.password;
      void* raw = u ? redisCommand(ctx_.get(), "AUTH %b %b", u->data(), u->size(), p.data(), p.size())
                    : redisCommand(ctx_.get(), "AUTH %b", p.data(), p.size());
      reply_ptr r{static_cast<redisReply*>(raw)};
      ok = r && r->type != REDIS_REPLY_ERROR;
    }
    if (ok) {
      const char* argv[] = {"SUBSCRIBE", channel_.data()};
      const std::size_t lens[] = {9, channel_.size()};
      ok = redisAppendCommandArgv(ctx_.get(), 2, argv, lens) == REDIS_OK && flush();
    }
    if (!ok) {
      fail();
      return false;
    }
    ++connects_;
    last_heard_ = clock::now();
    ping_sent_.reset();
    return true;
  }

  /// Cluster: every master the slot map names is a candidate too (the
  /// seeds may all be gone while the cluster lives on). Read from any
  /// candidate that answers; nothing changes if none does.
  void learn_masters() {
    for (std::size_t i = 0; i < nodes_.size() && !stop_; ++i) {
      connection_settings probe = s_;
      probe.where.host = nodes_[(at_ + i) % nodes_.size()].host;
      probe.where.port = nodes_[(at_ + i) % nodes_.size()].port;
      probe.connect_timeout = std::min(probe.connect_timeout, std::chrono::milliseconds{500});
      try {
        const slot_map map = read_slot_map(probe);
        for (const endpoint& m : map.masters) {
          const bool known = std::any_of(nodes_.begin(), nodes_.end(),
                                         [&](const endpoint& n) { return n.host == m.host && n.port == m.port; });
          if (known) continue;
          endpoint w = s_.where;  // credentials of the url apply to every node
          w.host = m.host;
          w.port = m.port;
          nodes_.push_back(std::move(w));
        }
        return;
      } catch (const store_error&) {
        continue;
      }
    }
  }

  bool flush() {
    for (int done = 0; done == 0;)
      if (redisBufferWrite(ctx_.get(), &done) != REDIS_OK) return false;
    return true;
  }

  void ping() {
    sigpipe_guard guard;
    const char* argv[] = {"PING"};
    const std::size_t lens[] = {4};
    if (redisAppendCommandArgv(ctx_.get(), 1, argv, lens) != REDIS_OK || !flush()) return fail();
    ping_sent_ = clock::now();
  }

  /// The connection is lost or useless: drop it; the next attempt goes to
  /// the next candidate, at once after a subscription that worked, then
  /// with backoff.
  void fail() {
    ctx_.reset();
    subscribed_ = false;
    ping_sent_.reset();
    next_try_ = clock::now() + backoff_;
    backoff_ = backoff_.count() == 0 ? s_.backoff_min : std::min(backoff_ * 2, s_.backoff_max);
    ++at_;
  }

  void poll_once(int ms) {
    pollfd p[2]{{wake_[0], POLLIN, 0}, {ctx_ ? ctx_->fd : -1, POLLIN, 0}};
    const int n = ::poll(p, ctx_ ? 2 : 1, ms);
    if (n <= 0) return;
    if (p[0].revents != 0) {
      char buf[64];
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    if (ctx_ && p[1].revents != 0) read_messages();
  }

  /// Reads what arrived: the subscription's confirmation (then f("")), a
  /// trigger (f(job)), a PING's answer.
  void read_messages() {
    if (redisBufferRead(ctx_.get()) != REDIS_OK) return fail();
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) return fail();
      if (raw == nullptr) break;
      reply_ptr r{static_cast<redisReply*>(raw)};
      last_heard_ = clock::now();
      if (r->type == REDIS_REPLY_ERROR) return fail();  // SUBSCRIBE refused (ACL): retry with backoff
      if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->element[0]->type != REDIS_REPLY_STRING) continue;
      const std::string_view kind(r->element[0]->str, r->element[0]->len);
      if (kind == "subscribe") {
        subscribed_ = true;
        backoff_ = {};
        f_("");  // anything published before now was not heard: poll once
      } else if (kind == "message" && r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING) {
        f_(std::string_view(r->element[2]->str, r->element[2]->len));
      } else if (kind == "pong") {
        ping_sent_.reset();
      }
    }
  }

  connection_settings s_;
  std::string channel_;
  trigger_listener f_;
  int wake_[2]{-1, -1};
  // The thread's only:
  std::vector<endpoint> nodes_;
  bool cluster_ = false;
  std::chrono::milliseconds ping_every_;
  std::size_t at_ = 0;
  context_ptr ctx_;
  clock::time_point last_heard_{};
  std::optional<clock::time_point> ping_sent_;
  clock::time_point next_try_{};
  std::chrono::milliseconds backoff_{};
  // Shared:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<bool> subscribed_{false};
  std::thread thread_;
};

}  // namespace lease::detail::redis
