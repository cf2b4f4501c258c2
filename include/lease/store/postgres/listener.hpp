// lease/store/postgres/listener.hpp — the LISTEN side of push hand-over and
// of pushed triggers: a thread of its own with a connection of its own,
// calling the end listener for every release or end of a run (an end with
// its run's slot), and the
// trigger listener for every trigger, that any store on the same schema
// announces (finish, release and trigger call pg_notify in the same
// statement, so an announcement is sent exactly when the change commits).
//
// A broken connection is reopened with backoff and LISTEN sent again; what
// was announced meanwhile is lost, which costs time, never safety (the
// scheduler's periodic checks stay; for triggers, the listener is told to
// poll once: f("")). A connection that breaks without a word (a frozen
// server, a partition that resets nothing) is found by a `SELECT 1` after
// postgres_options::listen_ping_every of silence, unanswered within
// command_timeout.
#pragma once

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "lease/store/concept.hpp"
#include "lease/store/postgres/connection.hpp"

namespace lease::detail::postgres {

/// The job name in a notification's payload (hex of its bytes; '' for a name
/// too long to announce).
[[nodiscard]] inline std::string decode_hex(std::string_view s) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  if (s.size() % 2 != 0) return out;
  out.reserve(s.size() / 2);
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

/// What a notification on the release channel says: the job, and for a
/// finish the run's slot. "<hex job>" (a release, a stop) or "<hex
/// job>:<slot ms>" (a finish); anything else (a job name too long to
/// announce: '') names no job.
struct announcement {
  std::string job;
  std::optional<time_point> finished;
};
[[nodiscard]] inline announcement parse_announcement(std::string_view payload) {
  const std::size_t colon = payload.find(':');
  announcement a{decode_hex(payload.substr(0, colon)), std::nullopt};
  if (colon == std::string_view::npos || a.job.empty()) return a;
  const std::string_view slot = payload.substr(colon + 1);
  std::int64_t ms = 0;
  const char* end = slot.data() + slot.size();
  if (slot.empty() || std::from_chars(slot.data(), end, ms).ptr != end) return {};  // not ours: ignored
  a.finished = time_point{duration{ms}};
  return a;
}

/// One LISTEN thread on one connection, for both pushes of a store: the
/// releases and ends of runs (channel `releases`, release_listener) and
/// operators' triggers (channel `triggers`, trigger_listener). Either
/// listener may be empty (its notifications are dropped); they are set and
/// called under one mutex, so setting one returns only after a call of the
/// one it replaces has returned. Destroying it stops the thread after the
/// last call.
///
/// A trigger pushed while the connection was down is lost; so whenever the
/// thread has (re)connected and sent LISTEN — the first time too: a trigger
/// committed before the LISTEN took effect was not heard — it calls the
/// trigger listener with "" ("poll once"), as it does for a trigger of a job
/// whose name is too long to announce.
class listener_thread {
 public:
  listener_thread(connection_settings s, std::string releases, std::string triggers, end_listener on_release,
                  trigger_listener on_trigger, std::chrono::milliseconds ping_every)
      : s_(std::move(s)), releases_(std::move(releases)), triggers_(std::move(triggers)),
        release_(std::move(on_release)), trigger_(std::move(on_trigger)), ping_every_(ping_every) {
    s_.application_name = "lease-listener";
    thread_ = std::thread([this] { loop(); });
  }
  ~listener_thread() {
    stop_ = true;
    thread_.join();
  }
  listener_thread(const listener_thread&) = delete;
  listener_thread& operator=(const listener_thread&) = delete;

  /// Replaces the release listener; returns after a call of the old one under way has returned.
  void on_release(end_listener f) {
    std::scoped_lock lock(m_);
    release_ = std::move(f);
  }
  /// Replaces the trigger listener; returns after a call of the old one under way has returned.
  void on_trigger(trigger_listener f) {
    std::scoped_lock lock(m_);
    trigger_ = std::move(f);
  }
  /// Neither listener is set: the thread has nothing to do.
  [[nodiscard]] bool idle() {
    std::scoped_lock lock(m_);
    return !release_ && !trigger_;
  }

  /// Connections made so far (1 once listening; more after reconnects).
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }

 private:
  void loop() {
    using steady = std::chrono::steady_clock;
    connection c(s_);
    steady::time_point heard = steady::now();  // the last sign of life of the connection
    while (!stop_) {
      if (!c.connected()) {
        try {
          c.open();
        } catch (const store_error&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // open() backs off by itself
          continue;
        }
        try {
          // One query, both channels: listening starts for both at once.
          c.exec_simple("LISTEN \"" + releases_ + "\"; LISTEN \"" + triggers_ + "\"", "LISTEN");
          c.setup_done();
          ++connects_;
        } catch (const store_error& e) {
          c.setup_failed(e.what());  // a standby refuses LISTEN: the next open() backs off
          continue;
        }
        heard = steady::now();
        std::scoped_lock lock(m_);
        if (trigger_) trigger_("");  // pushes may have been missed while not listening
      }
      if (!c.wait_input(50)) continue;
      if (steady::now() - heard >= ping_every_) {
        try {
          c.exec_simple("SELECT 1", "the LISTEN connection's liveness check");
          heard = steady::now();
        } catch (const store_error&) {
          c.drop();  // reconnected at the next turn, which polls triggers once
          continue;
        }
      }
      auto notes = c.take_notifications();
      if (!notes.empty()) heard = steady::now();
      for (const auto& [channel, payload] : notes) {
        std::scoped_lock lock(m_);
        if (channel == triggers_) {
          if (trigger_) trigger_(decode_hex(payload));  // "" (a name too long to announce): poll
        } else if (channel == releases_) {
          const announcement a = parse_announcement(payload);
          if (release_ && !a.job.empty()) release_(a.job, a.finished);
        }
      }
    }
  }

  connection_settings s_;
  std::string releases_;
  std::string triggers_;
  std::mutex m_;  ///< held while a listener is called or replaced
  end_listener release_;
  trigger_listener trigger_;
  std::atomic<bool> stop_{false};
  std::chrono::milliseconds ping_every_;
  std::atomic<std::uint64_t> connects_{0};
  std::thread thread_;
};

}  // namespace lease::detail::postgres
