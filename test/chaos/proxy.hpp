// test/chaos/proxy.hpp — a TCP proxy on 127.0.0.1 between one instance and
// its Redis or PostgreSQL server, for network faults without netem: pass
// (forward at once), black hole (forward nothing either way; the bytes wait
// in the kernel's buffers and are delivered, late, when it heals), delay
// (every chunk is forwarded `ms` after it arrived, both ways), and cut (every
// connection open now is reset on both sides; new ones pass).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace chaos {

class fault_proxy {
 public:
  explicit fault_proxy(int upstream_port) : upstream_(upstream_port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 16) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("fault_proxy: cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~fault_proxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : pumps_) t.join();
    ::close(listen_);
  }
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  void black_hole(bool on) { hole_ = on; }
  void delay(std::chrono::milliseconds by) { delay_ms_ = static_cast<int>(by.count()); }
  /// Resets (RST) both sides of every connection open now, as a broken
  /// network path or a restarted middlebox does; later connections pass.
  void cut() { ++generation_; }

 private:
  using clock = std::chrono::steady_clock;
  struct chunk {
    clock::time_point due;
    std::string bytes;
  };

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
      pumps_.emplace_back([this, client, server, g = generation_.load()] { pump(client, server, g); });
    }
  }

  /// Moves bytes both ways until either side closes (or the proxy stops).
  void pump(int client, int server, unsigned generation) {
    std::deque<chunk> up, down;  // client->server, server->client
    char buf[65536];
    auto flush = [](std::deque<chunk>& q, int to) {
      const auto now = clock::now();
      while (!q.empty() && q.front().due <= now) {
        const std::string& b = q.front().bytes;
        if (::send(to, b.data(), b.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(b.size())) return false;
        q.pop_front();
      }
      return true;
    };
    bool open = true;
    while (!stop_ && open) {
      if (generation_ != generation) {  // cut: close with RST (linger 0), no FIN handshake
        const linger reset{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ::setsockopt(server, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
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
          open = false;
          break;
        }
        (side == 0 ? up : down).push_back({due, std::string(buf, static_cast<std::size_t>(n))});
      }
      if (!flush(up, server) || !flush(down, client)) open = false;
    }
    ::close(client);
    ::close(server);
  }

  int upstream_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> hole_{false};
  std::atomic<int> delay_ms_{0};
  std::atomic<unsigned> generation_{0};  ///< cut() bumps it; a pump of an older one resets its connection
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // touched by the acceptor only until stop_
};

}  // namespace chaos
