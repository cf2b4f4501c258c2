// lease/store/redis/subscriber.hpp — the listening side of push hand-over on
// Redis: a thread of its own, on connections of its own, subscribed to the
// release channel of every job its store has touched, calling the listener
// for each announcement.
//
// The finish and release scripts SPUBLISH to the job's channel (keys.hpp
// release_channel) when they change a run, so an announcement is sent
// exactly when the change is made. Sharded pub/sub (Redis 7) because the
// channel carries the job's hash tag: in a cluster the message stays on the
// job's shard instead of crossing every node. A store subscribes only to the
// jobs it has asked about (the scheduler asks about every job it watches
// before it could need an announcement); a job seen for the first time is
// subscribed within a poll of this thread.
//
// On one server there is one connection. On a cluster there is one per
// master serving a watched job's slot, each channel subscribed on its own
// (SSUBSCRIBE refuses channels of two slots at once), and the thread keeps a
// slot map of its own (CLUSTER SLOTS, slot_map.hpp) because the store's is
// the store thread's. The map is read again, and the channels concerned
// subscribed where it now says, whenever the cluster says it changed:
//   -MOVED to an SSUBSCRIBE   subscribed on the node named at once;
//   sunsubscribe unasked      the node gave the slot away (resharding, or
//                             it became a replica): the channel is moved;
//   a connection broken       its master may be dead and a replica promoted:
//                             its channels go where the next map says.
// A broken connection is reopened with backoff; what was announced while a
// channel was not subscribed is lost, which costs time, never safety (the
// scheduler's periodic checks stay).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "lease/detail/string_hash.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/handle.hpp"
#include "lease/store/redis/keys.hpp"
#include "lease/store/redis/sigpipe.hpp"
#include "lease/store/redis/slot.hpp"
#include "lease/store/redis/slot_map.hpp"

namespace lease::detail::redis {

/// One subscriber thread; destroying it stops the thread after the last call
/// of the listener has returned.
class release_subscriber {
 public:
  /// `seeds` empty: one server at `s.where`. Otherwise a cluster whose slot
  /// map is first read from the seeds.
  release_subscriber(connection_settings s, std::string prefix, end_listener f, std::vector<endpoint> seeds = {})
      : s_(std::move(s)), prefix_(std::move(prefix)), f_(std::move(f)), seeds_(std::move(seeds)) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      raise(redis_errc::client_oom, "starting the release subscriber", "pipe2 failed");
    if (seeds_.empty()) shards_.push_back(std::make_unique<shard>(s_.where));
    stale_ = clustered();
    thread_ = std::thread([this] { loop(); });
  }
  ~release_subscriber() {
    stop_ = true;
    wake();
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  release_subscriber(const release_subscriber&) = delete;
  release_subscriber& operator=(const release_subscriber&) = delete;

  /// From now on, announcements for `job` are heard (once the thread has
  /// subscribed: within a poll). Cheap when the job is known already.
  void watch(std::string_view job) {
    std::scoped_lock lock(m_);
    if (jobs_.count(job) != 0) return;
    auto channel = release_channel(prefix_, job);
    by_channel_.emplace(channel, job);
    jobs_.emplace(std::string(job), channel);
    fresh_.push_back(std::move(channel));
    wake();
  }

  /// Connections made so far (1 once connected to one server; more after
  /// reconnects, and one per master on a cluster).
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }
  /// Channels the servers confirmed on the current connections.
  [[nodiscard]] std::uint64_t subscribed() const noexcept { return subscribed_; }
  /// Times the thread read the cluster's slot map (0 on one server).
  [[nodiscard]] std::uint64_t map_reads() const noexcept { return map_reads_; }

 private:
  using clock = std::chrono::steady_clock;

  /// One node's subscriber connection and the channels it is to serve.
  struct shard {
    explicit shard(endpoint w) : where(std::move(w)) {}
    endpoint where;
    context_ptr ctx;
    // Assigned here (subscribed or to be). A set: an instance watches one
    // channel per job, and a search of a list for each new one made the
    // start of 100,000 jobs quadratic.
    std::unordered_set<std::string, string_hash, std::equal_to<>> channels;
    std::vector<std::string> to_send;    // assigned, SSUBSCRIBE not sent on this connection yet
    std::deque<std::string> in_flight;   // SSUBSCRIBEs sent, reply not read yet
    std::uint64_t confirmed = 0;         // the server's count on this connection
    std::chrono::milliseconds backoff{};
    clock::time_point next_try{};
  };

  void wake() noexcept {
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
  }
  void drain_wake() noexcept {
    char buf[64];
    while (::read(wake_[0], buf, sizeof buf) > 0) {
    }
  }

  [[nodiscard]] bool clustered() const noexcept { return !seeds_.empty(); }

  void loop() {
    while (!stop_) {
      take_fresh();
      if (clustered() && stale_ && clock::now() >= map_next_try_) refresh_map();
      bool waiting = stale_;  // something to retry soon
      for (auto& sh : shards_) {
        if (clustered() && sh->channels.empty()) {
          if (sh->ctx) close(*sh);  // a master that serves no watched job (any more)
          continue;
        }
        if (!sh->ctx) {
          if (clock::now() < sh->next_try) {
            waiting = true;
            continue;
          }
          if (!open(*sh)) {
            waiting = true;
            continue;
          }
        }
        if (!sh->to_send.empty()) send_pending(*sh);
      }
      poll_once(waiting ? 20 : 1000);
    }
    for (auto& sh : shards_) sh->ctx.reset();
  }

  /// Jobs watched since the last turn: their channels to where they belong.
  void take_fresh() {
    std::vector<std::string> fresh;
    {
      std::scoped_lock lock(m_);
      fresh.swap(fresh_);
    }
    for (auto& c : fresh) assign(std::move(c));
  }

  /// Puts `channel` on the shard the map says serves it (the one server; on
  /// a cluster, none yet if the map is unknown: it waits in unplaced_).
  void assign(std::string channel) {
    if (!clustered()) {
      place(*shards_.front(), std::move(channel));
      return;
    }
    const unsigned slot = key_slot(channel);
    if (stale_ || !map_ || map_->owner[slot] == slot_map::none) {
      stale_ = true;
      unplaced_.push_back(std::move(channel));
      return;
    }
    place(shard_at(map_->masters[map_->owner[slot]]), std::move(channel));
  }

  void place(shard& sh, std::string channel) {
    if (!sh.channels.insert(channel).second) return;
    if (sh.ctx) sh.to_send.push_back(std::move(channel));  // else all are sent on connect
  }

  /// Takes `channel` off whatever shard holds it, to be placed anew.
  void unplace(std::string_view channel) {
    for (auto& sh : shards_) {
      if (auto it = sh->channels.find(channel); it != sh->channels.end()) sh->channels.erase(it);
      sh->to_send.erase(std::remove(sh->to_send.begin(), sh->to_send.end(), channel), sh->to_send.end());
    }
  }

  shard& shard_at(const endpoint& e) {
    for (auto& sh : shards_)
      if (sh->where.host == e.host && sh->where.port == e.port) return *sh;
    endpoint w = s_.where;  // credentials of the url apply to every node
    w.host = e.host;
    w.port = e.port;
    return *shards_.emplace_back(std::make_unique<shard>(std::move(w)));
  }

  /// Reads the map from any node it knows or a seed; then every channel
  /// goes where the map says (moved channels are subscribed at their new
  /// node; a subscription left on the old one is dropped by that node).
  void refresh_map() {
    std::vector<endpoint> candidates;
    for (const auto& sh : shards_)
      if (sh->ctx) candidates.push_back(sh->where);
    candidates.insert(candidates.end(), seeds_.begin(), seeds_.end());
    for (const auto& sh : shards_)
      if (!sh->ctx) candidates.push_back(sh->where);
    for (const endpoint& e : candidates) {
      try {
        connection_settings probe = s_;
        probe.where.host = e.host;
        probe.where.port = e.port;
        probe.connect_timeout = std::min(probe.connect_timeout, std::chrono::milliseconds{500});
        map_ = read_slot_map(probe);
      } catch (const store_error&) {
        continue;
      }
      ++map_reads_;
      stale_ = false;
      map_backoff_ = {};
      std::vector<std::string> all = std::move(unplaced_);
      unplaced_.clear();
      for (auto& sh : shards_) {
        const bool down = !sh->ctx;
        for (auto& c : sh->channels) {
          const auto o = map_->owner[key_slot(c)];
          if (o == slot_map::none) {
            stale_ = true;  // a slot without a master: ask again soon
            all.push_back(c);
          } else if (const endpoint& m = map_->masters[o]; m.host != sh->where.host || m.port != sh->where.port || down) {
            all.push_back(c);
          }
        }
      }
      for (auto& c : all) unplace(c);
      for (auto& c : all) {
        const auto o = map_->owner[key_slot(c)];
        if (o == slot_map::none)
          unplaced_.push_back(std::move(c));
        else
          place(shard_at(map_->masters[o]), std::move(c));
      }
      return;
    }
    map_backoff_ = map_backoff_.count() == 0 ? s_.backoff_min : std::min(map_backoff_ * 2, s_.backoff_max);
    map_next_try_ = clock::now() + map_backoff_;
  }

  /// Connects (and AUTHs); every channel of the shard is to be subscribed again.
  bool open(shard& sh) {
    sigpipe_guard guard;
    const timeval t{static_cast<time_t>(s_.connect_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.connect_timeout.count() % 1000) * 1000)};
    sh.ctx.reset(redisConnectWithTimeout(sh.where.host.c_str(), sh.where.port, t));
    bool ok = sh.ctx && sh.ctx->err == 0;
    const timeval c{static_cast<time_t>(s_.command_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.command_timeout.count() % 1000) * 1000)};
    ok = ok && redisSetTimeout(sh.ctx.get(), c) == REDIS_OK;
    if (ok) redisEnableKeepAlive(sh.ctx.get());
    if (ok && sh.where.password) {
      void* raw = sh.where.user ? redisCommand(sh.ctx.get(), "AUTH %b %b", sh.where.user->data(), sh.where.user->size(),
                                               sh.where.password->data(), sh.where.password->size())
                                : redisCommand(sh.ctx.get(), "AUTH %b", sh.where.password->data(),
                                               sh.where.password->size());
      reply_ptr r{static_cast<redisReply*>(raw)};
      ok = r && r->type != REDIS_REPLY_ERROR;
    }
    if (!ok) {
      sh.ctx.reset();
      sh.backoff = sh.backoff.count() == 0 ? s_.backoff_min : std::min(sh.backoff * 2, s_.backoff_max);
      sh.next_try = clock::now() + sh.backoff;
      if (clustered()) stale_ = true;  // a master down: its replica may be promoted
      return false;
    }
    sh.backoff = {};
    ++connects_;
    sh.confirmed = 0;
    sh.in_flight.clear();
    sh.to_send.assign(sh.channels.begin(), sh.channels.end());
    return true;
  }

  void close(shard& sh) {
    sh.ctx.reset();
    sh.to_send.clear();
    sh.in_flight.clear();
    sh.confirmed = 0;
    count();
  }

  /// The connection broke: reopen it (with backoff); on a cluster, the map may have changed.
  void broken(shard& sh) {
    close(sh);
    sh.backoff = sh.backoff.count() == 0 ? s_.backoff_min : std::min(sh.backoff * 2, s_.backoff_max);
    sh.next_try = clock::now() + (clustered() ? sh.backoff : std::chrono::milliseconds{0});
    if (clustered()) stale_ = true;
  }

  /// One SSUBSCRIBE per channel (one slot each), pipelined.
  void send_pending(shard& sh) {
    sigpipe_guard guard;
    // One server has no slots: one SSUBSCRIBE for all is fine there.
    const std::size_t per = clustered() ? 1 : sh.to_send.size();
    for (std::size_t i = 0; i < sh.to_send.size(); i += per) {
      std::vector<const char*> argv{"SSUBSCRIBE"};
      std::vector<std::size_t> lens{10};
      for (std::size_t k = i; k < i + per && k < sh.to_send.size(); ++k) {
        argv.push_back(sh.to_send[k].data());
        lens.push_back(sh.to_send[k].size());
        sh.in_flight.push_back(sh.to_send[k]);
      }
      if (redisAppendCommandArgv(sh.ctx.get(), static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK)
        return broken(sh);
    }
    sh.to_send.clear();
    for (int done = 0; done == 0;)
      if (redisBufferWrite(sh.ctx.get(), &done) != REDIS_OK) return broken(sh);
  }

  /// Waits up to `ms` for any connection or a wake-up, and reads what arrived.
  void poll_once(int ms) {
    std::vector<pollfd> p{{wake_[0], POLLIN, 0}};
    std::vector<shard*> of;
    for (auto& sh : shards_)
      if (sh->ctx) {
        p.push_back({sh->ctx->fd, POLLIN, 0});
        of.push_back(sh.get());
      }
    const int n = ::poll(p.data(), p.size(), ms);
    if (n <= 0) return;
    if (p[0].revents != 0) drain_wake();
    for (std::size_t i = 1; i < p.size(); ++i)
      if (p[i].revents != 0) read_messages(*of[i - 1]);
  }

  /// Reads what arrived on `sh` and calls the listener for each announcement.
  void read_messages(shard& sh) {
    if (redisBufferRead(sh.ctx.get()) != REDIS_OK) return broken(sh);
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(sh.ctx.get(), &raw) != REDIS_OK) return broken(sh);
      if (raw == nullptr) break;
      reply_ptr r{static_cast<redisReply*>(raw)};
      if (r->type == REDIS_REPLY_ERROR) {
        refused(sh, std::string_view(r->str, r->len));
        continue;
      }
      if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING) continue;
      const std::string_view kind(r->element[0]->str, r->element[0]->len);
      const std::string_view channel = r->element[1]->type == REDIS_REPLY_STRING
                                           ? std::string_view(r->element[1]->str, r->element[1]->len)
                                           : std::string_view();
      if (kind == "ssubscribe") {
        if (!sh.in_flight.empty()) sh.in_flight.pop_front();
        if (r->element[2]->type == REDIS_REPLY_INTEGER) sh.confirmed = static_cast<std::uint64_t>(r->element[2]->integer);
      } else if (kind == "smessage") {
        if (auto job = job_of(channel))
          f_(*job, r->element[2]->type == REDIS_REPLY_STRING
                       ? finished_slot(std::string_view(r->element[2]->str, r->element[2]->len))
                       : std::nullopt);
      } else if (kind == "sunsubscribe") {
        // Unasked: the node gave the channel's slot away (resharding, or it
        // is a replica now). Subscribe where the map will say.
        if (r->element[2]->type == REDIS_REPLY_INTEGER) sh.confirmed = static_cast<std::uint64_t>(r->element[2]->integer);
        if (!clustered()) {
          broken(sh);  // one server does not do this; start over
          break;
        }
        const std::string c(channel);
        unplace(c);
        unplaced_.push_back(c);
        stale_ = true;
      }
    }
    count();
  }

  /// An SSUBSCRIBE answered with an error (the oldest in flight): MOVED goes
  /// where it says; anything else (CLUSTERDOWN, TRYAGAIN, ...) waits for a new map.
  void refused(shard& sh, std::string_view text) {
    if (sh.in_flight.empty()) return;
    std::string channel = std::move(sh.in_flight.front());
    sh.in_flight.pop_front();
    unplace(channel);
    stale_ = true;
    if (text.rfind("MOVED ", 0) == 0) {
      if (auto to = parse_redirection(text, s_.where.host)) {
        place(shard_at(to->second), std::move(channel));
        return;
      }
    }
    unplaced_.push_back(std::move(channel));
  }

  void count() {
    std::uint64_t n = 0;
    for (const auto& sh : shards_)
      if (sh->ctx) n += sh->confirmed;
    subscribed_ = n;
  }

  /// The finish script's message is its run's slot (ms since the epoch);
  /// anything else (a release's '', a message of an older version) names
  /// no run.
  static std::optional<time_point> finished_slot(std::string_view payload) {
    std::int64_t ms = 0;
    const char* end = payload.data() + payload.size();
    if (payload.empty() || std::from_chars(payload.data(), end, ms).ptr != end) return std::nullopt;
    return time_point{duration{ms}};
  }

  std::optional<std::string> job_of(std::string_view channel) {
    std::scoped_lock lock(m_);
    auto it = by_channel_.find(channel);
    if (it == by_channel_.end()) return std::nullopt;
    return it->second;
  }

  connection_settings s_;
  std::string prefix_;
  end_listener f_;
  std::vector<endpoint> seeds_;
  int wake_[2]{-1, -1};
  // The thread's only:
  std::vector<std::unique_ptr<shard>> shards_;
  std::optional<slot_map> map_;
  std::vector<std::string> unplaced_;  // channels waiting for a map that places them
  bool stale_ = true;
  std::chrono::milliseconds map_backoff_{};
  clock::time_point map_next_try_{};
  // Shared with the store's thread, under m_:
  std::mutex m_;
  std::unordered_map<std::string, std::string, string_hash, std::equal_to<>> jobs_;        // job -> channel
  std::unordered_map<std::string, std::string, string_hash, std::equal_to<>> by_channel_;  // channel -> job
  std::vector<std::string> fresh_;                              // channels of jobs watched since the last turn
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> subscribed_{0};
  std::atomic<std::uint64_t> map_reads_{0};
  std::thread thread_;
};

}  // namespace lease::detail::redis
