// test/chaos/with_server.cpp — `with_server redis|postgres COMMAND [ARGS...]`:
// starts a real server of that kind on a free 127.0.0.1 port in a temporary
// directory (test/redis/server.hpp; test/postgres/server.hpp on a copy of a
// template cluster), runs COMMAND
// with every argument "@URL@" replaced by the server's URL, stops the server
// and exits with COMMAND's exit status (128 + N if a signal N ended it).
// So a CTest entry can run a program that takes `--store URL` (cluster_demo)
// against a server the test starts itself, and fails when the program fails.
// Exit 2 if the server could not be started (the test did not run: a failure).
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#if LEASE_WITH_SERVER_REDIS
#include "redis/server.hpp"
#endif
#if LEASE_WITH_SERVER_POSTGRES
#include "postgres/server.hpp"
#endif

namespace {

/// Runs argv (with "@URL@" replaced by `url`) and returns its exit code.
int run(std::vector<std::string> argv, const std::string& url) {
  for (auto& a : argv)
    if (a == "@URL@") a = url;
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("with_server: fork");
    return 2;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed test leaves nothing behind
    if (::getppid() != parent) ::_exit(2);
    ::execv(a[0], a.data());
    std::perror("with_server: exec");
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: with_server redis|postgres COMMAND [ARGS...]  (@URL@ is replaced by the URL)\n";
  if (argc < 3) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::string kind = argv[1];
  const std::vector<std::string> cmd(argv + 2, argv + argc);
  std::signal(SIGPIPE, SIG_IGN);
  try {
#if LEASE_WITH_SERVER_REDIS
    if (kind == "redis") {
      const lease::testing::redis_server server;
      std::printf("with_server: redis-server on %s\n", server.url().c_str());
      return run(cmd, server.url());
    }
#endif
#if LEASE_WITH_SERVER_POSTGRES
    if (kind == "postgres") {
      const lease::testing::postgres_server server(lease::testing::postgres_server::settings{{}, LEASE_PG_TEMPLATE});
      std::printf("with_server: PostgreSQL on %s\n", server.url().c_str());
      return run(cmd, server.url());
    }
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "with_server: cannot start the %s server: %s\n", kind.c_str(), e.what());
    return 2;
  }
  std::fprintf(stderr, "with_server: '%s' is not a server this build can start\n%s", kind.c_str(), usage.c_str());
  return 2;
}
