// test/support/loopback_listener.hpp — a listening TCP socket on 127.0.0.1
// at a port the kernel picks, for the small servers and proxies a test runs
// in front of (or instead of) a real one.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lease::testing {

/// 127.0.0.1:port as a socket address.
[[nodiscard]] inline sockaddr_in loopback_address(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return a;
}

/// A socket listening on 127.0.0.1 at a port the kernel picked; closed with
/// this object. `who` names the caller in the exception thrown when there
/// is no such socket.
class loopback_listener {
 public:
  loopback_listener(int backlog, const std::string& who) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a = loopback_address(0);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, backlog) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      if (fd_ >= 0) ::close(fd_);
      throw std::runtime_error(who + ": cannot listen on 127.0.0.1");
    }
    port_ = ntohs(a.sin_port);
  }
  ~loopback_listener() { ::close(fd_); }
  loopback_listener(const loopback_listener&) = delete;
  loopback_listener& operator=(const loopback_listener&) = delete;

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace lease::testing
