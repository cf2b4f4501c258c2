// lease/store/redis/subscriber.hpp — the listening side of push hand-over on
// Redis: a thread of its own, on a connection of its own, subscribed to the
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
// A broken connection is reopened with backoff and every channel subscribed
// again; what was announced meanwhile is lost, which costs time, never
// safety (the scheduler's periodic checks stay).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <mutex>
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
#include "lease/store/redis/keys.hpp"
#include "lease/store/redis/sigpipe.hpp"

namespace lease::detail::redis {

/// One subscriber thread; destroying it stops the thread after the last call
/// of the listener has returned.
class release_subscriber {
 public:
  release_subscriber(connection_settings s, std::string prefix, release_listener f)
      : s_(std::move(s)), prefix_(std::move(prefix)), f_(std::move(f)) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      raise(redis_errc::client_oom, "starting the release subscriber", "pipe2 failed");
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
    jobs_.emplace(std::string(job), std::move(channel));
    pending_.emplace_back(job);
    wake();
  }

  /// Connections made so far (1 once connected; more after reconnects).
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }
  /// Channels the server confirmed on the current connection.
  [[nodiscard]] std::uint64_t subscribed() const noexcept { return subscribed_; }

 private:
  void wake() noexcept {
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
  }
  void drain_wake() noexcept {
    char buf[64];
    while (::read(wake_[0], buf, sizeof buf) > 0) {
    }
  }

  /// Waits up to `ms` for the socket (if any) or a wake-up; true if the socket is readable.
  bool wait(int fd, int ms) {
    pollfd p[2]{{wake_[0], POLLIN, 0}, {fd, POLLIN, 0}};
    const int n = ::poll(p, fd >= 0 ? 2 : 1, ms);
    if (n > 0 && p[0].revents != 0) drain_wake();
    return n > 0 && fd >= 0 && p[1].revents != 0;
  }

  void loop() {
    std::chrono::milliseconds backoff{};
    while (!stop_) {
      if (!ctx_) {
        if (backoff.count() > 0) {
          const auto until = std::chrono::steady_clock::now() + backoff;
          while (!stop_ && std::chrono::steady_clock::now() < until) wait(-1, 20);
          if (stop_) break;
        }
        if (!open()) {
          backoff = backoff.count() == 0 ? s_.backoff_min : std::min(backoff * 2, s_.backoff_max);
          continue;
        }
        backoff = {};
      }
      if (!subscribe_pending()) continue;
      if (!wait(ctx_->fd, 1000)) continue;
      read_messages();
    }
    ctx_.reset();
  }

  /// Connects (and AUTHs); every known channel is to be subscribed again.
  bool open() {
    sigpipe_guard guard;
    const timeval t{static_cast<time_t>(s_.connect_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.connect_timeout.count() % 1000) * 1000)};
    ctx_.reset(redisConnectWithTimeout(s_.where.host.c_str(), s_.where.port, t));
    if (!ctx_ || ctx_->err != 0) return drop();
    const timeval c{static_cast<time_t>(s_.command_timeout.count() / 1000),
                    static_cast<suseconds_t>((s_.command_timeout.count() % 1000) * 1000)};
    if (redisSetTimeout(ctx_.get(), c) != REDIS_OK) return drop();
    redisEnableKeepAlive(ctx_.get());
    if (s_.where.password) {
      void* raw = s_.where.user ? redisCommand(ctx_.get(), "AUTH %b %b", s_.where.user->data(), s_.where.user->size(),
                                               s_.where.password->data(), s_.where.password->size())
                                : redisCommand(ctx_.get(), "AUTH %b", s_.where.password->data(), s_.where.password->size());
      reply_ptr r{static_cast<redisReply*>(raw)};
      if (!r || r->type == REDIS_REPLY_ERROR) return drop();
    }
    ++connects_;
    subscribed_ = 0;
    std::scoped_lock lock(m_);
    pending_.clear();
    for (const auto& [job, channel] : jobs_) pending_.push_back(job);
    return true;
  }

  bool drop() {
    ctx_.reset();
    subscribed_ = 0;
    return false;
  }

  /// Sends one SSUBSCRIBE for the jobs seen since the last one.
  bool subscribe_pending() {
    std::vector<std::string> channels;
    {
      std::scoped_lock lock(m_);
      for (const std::string& job : pending_) channels.push_back(jobs_.find(job)->second);
      pending_.clear();
    }
    if (channels.empty()) return true;
    sigpipe_guard guard;
    std::vector<const char*> argv{"SSUBSCRIBE"};
    std::vector<std::size_t> lens{10};
    for (const auto& c : channels) {
      argv.push_back(c.data());
      lens.push_back(c.size());
    }
    if (redisAppendCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK)
      return drop();
    for (int done = 0; done == 0;)
      if (redisBufferWrite(ctx_.get(), &done) != REDIS_OK) return drop();
    return true;
  }

  /// Reads what arrived and calls the listener for each announcement.
  void read_messages() {
    if (redisBufferRead(ctx_.get()) != REDIS_OK) {
      drop();
      return;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) {
        drop();
        return;
      }
      if (raw == nullptr) return;
      reply_ptr r{static_cast<redisReply*>(raw)};
      if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING) continue;
      const std::string_view kind(r->element[0]->str, r->element[0]->len);
      if (kind == "ssubscribe") {
        ++subscribed_;
      } else if (kind == "smessage" && r->element[1]->type == REDIS_REPLY_STRING) {
        const std::string_view channel(r->element[1]->str, r->element[1]->len);
        if (auto job = job_of(channel)) f_(*job);
      } else if (kind == "sunsubscribe") {
        // A cluster moved the channel's slot away (the node unsubscribes its
        // clients): subscribe again after a reconnect.
        drop();
        return;
      }
    }
  }

  std::optional<std::string> job_of(std::string_view channel) {
    std::scoped_lock lock(m_);
    auto it = by_channel_.find(channel);
    if (it == by_channel_.end()) return std::nullopt;
    return it->second;
  }

  connection_settings s_;
  std::string prefix_;
  release_listener f_;
  context_ptr ctx_;  // the thread's only
  int wake_[2]{-1, -1};
  std::mutex m_;
  std::map<std::string, std::string, std::less<>> jobs_;  // job -> channel, under m_
  std::map<std::string, std::string, std::less<>> by_channel_;  // channel -> job, under m_
  std::vector<std::string> pending_;                            // jobs to subscribe, under m_
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> subscribed_{0};
  std::thread thread_;
};

}  // namespace lease::detail::redis
