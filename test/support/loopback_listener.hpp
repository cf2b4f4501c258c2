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

struct loopback_listener {
  int fd = -1;
  int port = 0;
};

/// A socket listening on 127.0.0.1 at a free port; `who` names the caller
/// in the exception thrown when there is none.
[[nodiscard]] inline loopback_listener listen_on_loopback(int backlog, const std::string& who) {
  loopback_listener l{::socket(AF_INET, SOCK_STREAM, 0), 0};
  sockaddr_in a = loopback_address(0);
  socklen_t len = sizeof a;
  if (l.fd < 0 || ::bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l.fd, backlog) != 0 ||
      ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (l.fd >= 0) ::close(l.fd);
    throw std::runtime_error(who + ": cannot listen on 127.0.0.1");
  }
  l.port = ntohs(a.sin_port);
  return l;
}

}  // namespace lease::testing
