// lease/store/postgres/listener.hpp — the LISTEN side of push hand-over: a
// thread of its own with a connection of its own, calling the listener for
// every release or end of a run that any store on the same schema announces
// (finish and release call pg_notify in the same statement, so an announcement
// is sent exactly when the change commits).
//
// A broken connection is reopened with backoff and LISTEN sent again; what
// was announced meanwhile is lost, which costs time, never safety (the
// scheduler's periodic checks stay).
#pragma once

#include <atomic>
#include <chrono>
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

/// One LISTEN thread; destroying it stops the thread after the last call of
/// the listener has returned.
class listener_thread {
 public:
  listener_thread(connection_settings s, std::string channel, release_listener f)
      : s_(std::move(s)), channel_(std::move(channel)), f_(std::move(f)) {
    s_.application_name = "lease-listener";
    thread_ = std::thread([this] { loop(); });
  }
  ~listener_thread() {
    stop_ = true;
    thread_.join();
  }
  listener_thread(const listener_thread&) = delete;
  listener_thread& operator=(const listener_thread&) = delete;

  /// Connections made so far (1 once listening; more after reconnects).
  [[nodiscard]] std::uint64_t connects() const noexcept { return connects_; }

 private:
  void loop() {
    connection c(s_);
    while (!stop_) {
      if (!c.connected()) {
        try {
          c.open();
          c.exec_simple("LISTEN \"" + channel_ + "\"", "LISTEN");
          ++connects_;
        } catch (const store_error&) {
          c.drop();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // open() backs off by itself
          continue;
        }
      }
      if (!c.wait_input(50)) continue;
      for (const std::string& payload : c.take_notifications()) {
        const std::string job = decode_hex(payload);
        if (!job.empty()) f_(job);
      }
    }
  }

  connection_settings s_;
  std::string channel_;
  release_listener f_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::thread thread_;
};

}  // namespace lease::detail::postgres
