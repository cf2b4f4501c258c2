// test/redis/server.hpp — a real redis-server for one test: started in the
// foreground as a child process (fork/exec; it dies with the test process) on a free 127.0.0.1 port in a temporary
// directory, without persistence unless asked, and killed and reaped when
// the fixture goes out of scope. It can be killed and restarted on the same
// port and directory (restart and LOADING tests).
#pragma once

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "lease/store/redis/handle.hpp"

namespace lease::testing {

/// A free TCP port on 127.0.0.1, from binding port 0 (the kernel picks one).
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind(127.0.0.1:0) failed");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// One redis-server child process.
class redis_server {
 public:
  struct settings {
    bool append_only = false;             ///< AOF with fsync always: state survives a kill -9
    std::vector<std::string> extra_args;  ///< more `--name value` arguments
  };

  redis_server() : redis_server(settings{}) {}
  explicit redis_server(settings s) : s_(std::move(s)) {
    char tmpl[] = "/tmp/lease-redis-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    for (int tries = 0;; ++tries) {
      port_ = free_loopback_port();
      try {
        start();
        return;
      } catch (const std::exception&) {
        if (tries == 4) throw;  // another process may have taken the port meanwhile
      }
    }
  }
  ~redis_server() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }

  /// SIGKILL and reap (no shutdown, no save): a crash.
  void kill() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  /// SIGSTOP: the process runs nothing until thaw() (SIGCONT). A replica
  /// frozen so acknowledges no write made after this returns: the signal
  /// is pending before the master can even receive such a write, and it
  /// is acted on before the replica runs again.
  void freeze() noexcept {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void thaw() noexcept {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }

  /// Starts again on the same port and directory, with `more` extra arguments.
  void restart(std::vector<std::string> more = {}, bool wait_ready = true) {
    kill();
    start(std::move(more), wait_ready);
  }

  /// Runs one command on a fresh connection of its own; returns the reply.
  lease::detail::redis::reply_ptr command(std::vector<std::string> argv) const {
    lease::detail::redis::context_ptr c{redisConnect("127.0.0.1", port_)};
    if (!c || c->err) throw std::runtime_error("cannot connect to test redis-server");
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& s : argv) {
      a.push_back(s.data());
      l.push_back(s.size());
    }
    return lease::detail::redis::reply_ptr{
        static_cast<redisReply*>(redisCommandArgv(c.get(), static_cast<int>(a.size()), a.data(), l.data()))};
  }

  /// True while the server does not answer a PING within `within`: it is
  /// busy (a DEBUG SLEEP, a long script) or frozen. A fresh connection each
  /// time: one whose reply timed out cannot be used again.
  [[nodiscard]] bool busy(std::chrono::milliseconds within = std::chrono::milliseconds{20}) const {
    const auto tv = [](std::chrono::milliseconds d) {
      return timeval{static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>(d.count() % 1000 * 1000)};
    };
    // The kernel completes the connect even while the server is busy: only the reply waits.
    lease::detail::redis::context_ptr c{redisConnectWithTimeout("127.0.0.1", port_, tv(std::chrono::seconds{2}))};
    if (!c || c->err) throw std::runtime_error("cannot connect to test redis-server");
    if (redisSetTimeout(c.get(), tv(within)) != REDIS_OK) throw std::runtime_error("cannot set a reply timeout");
    const lease::detail::redis::reply_ptr r{static_cast<redisReply*>(redisCommand(c.get(), "PING"))};
    return !r;
  }

  /// True once the server answers PING with PONG (not LOADING).
  [[nodiscard]] bool ready() const {
    try {
      auto r = command({"PING"});
      return r && r->type == REDIS_REPLY_STATUS && std::string(r->str, r->len) == "PONG";
    } catch (const std::exception&) {
      return false;
    }
  }

 private:
  void start(std::vector<std::string> more = {}, bool wait_ready = true) {
    std::vector<std::string> args{"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", s_.append_only ? "yes" : "no",
                                  "--appendfsync", "always", "--dir", dir_.string(), "--daemonize", "no",
                                  "--logfile", (dir_ / "redis.log").string(), "--enable-debug-command", "yes",
                                  "--protected-mode", "no"};
    args.insert(args.end(), s_.extra_args.begin(), s_.extra_args.end());
    args.insert(args.end(), more.begin(), more.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("cannot fork for redis-server");
    if (pid == 0) {
      // Only async-signal-safe calls until exec. Die with the test process,
      // even if it is killed (no orphaned servers), and keep the test's
      // stdout and stderr (maybe a pipe someone waits on) out of the server.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    pid_ = pid;
    if (!wait_ready) return;
    for (int i = 0; i < 500; ++i) {  // ~0.1 s usually; allow 5 s on a busy machine
      if (ready()) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("redis-server exited at start (port taken?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill();
    throw std::runtime_error("redis-server did not answer PING within 5 s");
  }

  settings s_;
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

/// A fresh key prefix per store in one process (and per process: the pid).
inline std::string fresh_prefix(std::string_view what = "t") {
  static int n = 0;
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

/// A server frozen (SIGSTOP) for the scope: a replica so acknowledges no write made meanwhile.
class frozen {
 public:
  explicit frozen(redis_server& s) : server_(s) { server_.freeze(); }
  ~frozen() { server_.thaw(); }
  frozen(const frozen&) = delete;
  frozen& operator=(const frozen&) = delete;

 private:
  redis_server& server_;
};

}  // namespace lease::testing
