// test/redis/proxy.hpp — a TCP proxy on 127.0.0.1 that can lose one reply:
// armed, it forwards the next request to the server, waits for the server to
// run it, then closes the connection without passing the reply back. That is
// the "claim sent, reply lost" case the store must resolve by reading back.
// It can also hold a request back and deliver it late, after the client
// gave up on it (a copy still in flight). And it can cut every connection
// through it at once (a network blip), whatever they are doing.
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lease::testing {

class cut_proxy {
 public:
  explicit cut_proxy(int upstream_port) : upstream_(upstream_port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 16) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cut_proxy: cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~cut_proxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pumps_) t.join();
    ::close(listen_);
  }
  cut_proxy(const cut_proxy&) = delete;
  cut_proxy& operator=(const cut_proxy&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  /// The next request is delivered, its reply dropped and the connection closed.
  void lose_next_reply() { cut_next_ = true; }
  /// The next request is held back: the client's connection is closed at
  /// once, and the request reaches the server `by` later (a stalled network).
  void delay_next_request(std::chrono::milliseconds by) {
    hold_ms_ = static_cast<int>(by.count());
    hold_next_ = true;
  }
  /// Closes every connection through the proxy now (within a poll of its
  /// pumps); new connections are served as before.
  void cut_all() { ++generation_; }
  [[nodiscard]] int cuts() const noexcept { return cuts_; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    return a;
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = loopback(upstream_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      pumps_.emplace_back([this, client, server, born = generation_.load()] { pump(client, server, born); });
    }
  }

  void pump(int client, int server, int born) {
    char buf[65536];
    while (!stop_) {
      if (generation_ != born) {
        ++cuts_;
        break;
      }
      pollfd p[2]{{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      if (p[0].revents != 0) {
        const ssize_t n = ::read(client, buf, sizeof buf);
        if (n <= 0) break;
        if (hold_next_.exchange(false)) {
          ::close(client);
          client = -1;
          std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms_.load()));
          (void)!::write(server, buf, static_cast<size_t>(n));
          std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server runs it
          ++cuts_;
          break;
        }
        if (::write(server, buf, static_cast<size_t>(n)) != n) break;
        if (cut_next_.exchange(false)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server runs it
          ++cuts_;
          break;  // ...and its reply is never passed on
        }
      }
      if (p[1].revents != 0) {
        const ssize_t n = ::read(server, buf, sizeof buf);
        if (n <= 0 || ::write(client, buf, static_cast<size_t>(n)) != n) break;
      }
    }
    if (client >= 0) ::close(client);
    ::close(server);
  }

  int upstream_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_next_{false};
  std::atomic<bool> hold_next_{false};
  std::atomic<int> hold_ms_{0};
  std::atomic<int> cuts_{0};
  std::atomic<int> generation_{0};  // cut_all() ends the pumps of earlier generations
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // touched by the acceptor only until stop_
};

}  // namespace lease::testing
