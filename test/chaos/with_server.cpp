// test/chaos/with_server.cpp — `with_server redis|redis-cluster|postgres COMMAND [ARGS...]`:
// starts a real server of that kind on a free 127.0.0.1 port in a temporary
// directory (test/redis/server.hpp; redis-cluster: three masters,
// test/redis/cluster_fixture.hpp, URL redis+cluster://node0 as leasectl
// takes it; test/postgres/server.hpp on a copy of a template cluster), runs COMMAND
// with every argument "@URL@" replaced by the server's URL, stops the server
// and exits with COMMAND's exit status (128 + N if a signal N ended it).
// So a CTest entry can run a program that takes `--store URL` (cluster_demo)
// against a server the test starts itself, and fails when the program fails.
// Exit 2 if the server could not be started (the test did not run: a failure).
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#if LEASE_WITH_SERVER_REDIS
#include "redis/cluster_fixture.hpp"
#include "redis/server.hpp"
#endif
#if LEASE_WITH_SERVER_POSTGRES
#include "postgres/server.hpp"
#endif
#include "support/child_process.hpp"

namespace {

/// Runs argv (with "@URL@" replaced by `url`) and returns its exit code.
int run(std::vector<std::string> argv, const std::string& url) {
  for (auto& a : argv)
    if (a == "@URL@") a = url;
  try {
    lease::testing::child_process child(std::move(argv));  // dies with us: a killed test leaves nothing behind
    return lease::testing::child_process::exit_code(child.wait());
  } catch (const std::exception& e) {  // fork failed
    std::fprintf(stderr, "with_server: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = "usage: with_server redis|redis-cluster|postgres COMMAND [ARGS...]  (@URL@ is replaced by the URL)\n";
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
    if (kind == "redis-cluster") {
      lease::testing::redis_cluster cluster(3);
      const std::string url = "redis+cluster://" + cluster.url().substr(std::string_view("redis://").size());
      std::printf("with_server: Redis Cluster of 3 masters, seed %s\n", url.c_str());
      return run(cmd, url);
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
