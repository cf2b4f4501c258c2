// test/support/loopback_proxy.hpp — a TCP proxy on 127.0.0.1 between a
// client and its Redis or PostgreSQL server, for network faults without
// netem. Every connection to port() is forwarded to the server's port; what
// the proxy does to the bytes is the fault:
//
//   lose_next_reply()      the next request reaches the server, which runs
//                          it; its reply is dropped and the connection closed
//                          ("claim sent, reply lost": the store must resolve
//                          it by reading back)
//   delay_next_request(d)  the client's connection is closed at once, and its
//                          request reaches the server d later (a copy still
//                          in flight after the client gave up on it)
//   cut_all()              every connection open now is reset (RST) on both
//                          sides, as a broken path or a restarted middlebox
//                          does; new ones pass
//   black_hole(true)       nothing is forwarded either way; the bytes wait in
//                          the kernel's buffers and arrive, late, once healed
//   delay(d)               every chunk is forwarded d after it arrived, both
//                          ways
//   retarget(port)         new connections go to another server from now
//                          on (an address moved to a new primary, as a
//                          managed endpoint's DNS name is after a failover)
//   hold_close(true)       a connection the server ends is passed on up to
//                          the end: its last bytes reach the client, the
//                          close does not until hold_close(false) (a server
//                          that said goodbye, a FIN still on its way)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/loopback_listener.hpp"

namespace lease::testing {

class loopback_proxy {
 public:
  explicit loopback_proxy(int upstream_port) : upstream_(upstream_port) {
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~loopback_proxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pumps_) t.join();
  }
  loopback_proxy(const loopback_proxy&) = delete;
  loopback_proxy& operator=(const loopback_proxy&) = delete;

  [[nodiscard]] int port() const noexcept { return listen_.port(); }
  /// The proxy as a Redis URL.
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port()); }

  void lose_next_reply() { lose_next_ = true; }
  void delay_next_request(std::chrono::milliseconds by) {
    hold_ms_ = static_cast<int>(by.count());
    hold_next_ = true;
  }
  void cut_all() { ++generation_; }
  void black_hole(bool on) { hole_ = on; }
  void delay(std::chrono::milliseconds by) { delay_ms_ = static_cast<int>(by.count()); }
  void hold_close(bool on) { hold_close_ = on; }
  void retarget(int upstream_port) { upstream_ = upstream_port; }

  /// Connections accepted from clients so far.
  [[nodiscard]] int accepted() const noexcept { return accepted_; }

  /// Connections the server ended, counted once their last bytes were
  /// passed on to the client.
  [[nodiscard]] int server_ends() const noexcept { return server_ends_; }

  /// Connections the proxy ended on purpose (a lost reply, a held request,
  /// each connection cut_all() reset).
  [[nodiscard]] int cuts() const noexcept { return cuts_; }

 private:
  using clock = std::chrono::steady_clock;
  struct chunk {
    clock::time_point due;
    std::string bytes;
  };
  /// How long the server is given to run a request whose reply is dropped.
  static constexpr std::chrono::milliseconds server_runs_it{100};

  static bool send_all(int to, std::string_view b) {
    return ::send(to, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size());
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(listen_.fd(), nullptr, nullptr);
      if (client < 0) continue;
      ++accepted_;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = loopback_address(upstream_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      // Each chunk goes on at once: with Nagle's algorithm a small chunk
      // after another waits for the client's delayed ACK (40 ms), and a
      // server's last message would arrive after its close was counted.
      const int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      pumps_.emplace_back([this, client, server, born = generation_.load()] { pump(client, server, born); });
    }
  }

  /// Moves bytes both ways until either side closes, a fault ends the
  /// connection, or the proxy stops.
  void pump(int client, int server, unsigned born) {
    std::deque<chunk> up, down;  // client -> server, server -> client
    char buf[65536];
    auto flush = [](std::deque<chunk>& q, int to, bool all) {
      const auto now = clock::now();
      while (!q.empty() && (all || q.front().due <= now)) {
        if (!send_all(to, q.front().bytes)) return false;
        q.pop_front();
      }
      return true;
    };
    bool open = true;
    while (!stop_ && open) {
      if (generation_ != born) {  // cut: close with RST (linger 0), no FIN handshake
        const linger reset{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ::setsockopt(server, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ++cuts_;
        break;
      }
      if (hole_) {  // read nothing, send nothing: the peer's bytes wait in the kernel
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      pollfd p[2]{{client, POLLIN, 0}, {server, POLLIN, 0}};
      ::poll(p, 2, 5);
      const auto due = clock::now() + std::chrono::milliseconds(delay_ms_.load());
      for (int side = 0; side < 2 && open; ++side) {
        if (p[side].revents == 0) continue;
        const ssize_t n = ::read(p[side].fd, buf, sizeof buf);
        if (n <= 0) {
          if (side == 1) {  // the server ended it: its last bytes still reach the client
            (void)flush(down, client, true);
            ++server_ends_;
            while (hold_close_ && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          open = false;
          break;
        }
        const std::string_view bytes(buf, static_cast<std::size_t>(n));
        if (side == 0 && hold_next_.exchange(false)) {
          ::close(client);
          client = -1;
          std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms_.load()));
          (void)flush(up, server, true);
          (void)send_all(server, bytes);
          std::this_thread::sleep_for(server_runs_it);
          ++cuts_;
          open = false;
        } else if (side == 0 && lose_next_.exchange(false)) {
          (void)flush(up, server, true);
          (void)send_all(server, bytes);
          std::this_thread::sleep_for(server_runs_it);
          ++cuts_;
          open = false;  // ...and its reply is never passed on
        } else {
          (side == 0 ? up : down).push_back({due, std::string(bytes)});
        }
      }
      if (open && (!flush(up, server, false) || !flush(down, client, false))) open = false;
    }
    if (client >= 0) ::close(client);
    ::close(server);
  }

  std::atomic<int> upstream_;
  loopback_listener listen_{16, "loopback_proxy"};
  std::atomic<bool> stop_{false};
  std::atomic<bool> lose_next_{false};
  std::atomic<bool> hold_next_{false};
  std::atomic<int> hold_ms_{0};
  std::atomic<bool> hole_{false};
  std::atomic<int> delay_ms_{0};
  std::atomic<int> cuts_{0};
  std::atomic<bool> hold_close_{false};
  std::atomic<int> server_ends_{0};
  std::atomic<int> accepted_{0};
  std::atomic<unsigned> generation_{0};  ///< cut_all() bumps it; a pump of an older one resets its connection
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // touched by the acceptor only until stop_
};

}  // namespace lease::testing
