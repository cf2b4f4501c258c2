// benchmark/postgres/bench_server.hpp — what the PostgreSQL benchmarks
// share: the server (their own, started on a free 127.0.0.1 port, unless
// LEASE_BENCH_POSTGRES names one) and the floor they are compared with.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>
#include <sched.h>
#include <unistd.h>

#include "lease/store/postgres/connection.hpp"
#include "postgres/server.hpp"

namespace lease::bench {

using namespace std::chrono_literals;

inline std::unique_ptr<lease::testing::postgres_server>& own_server() {
  static std::unique_ptr<lease::testing::postgres_server> own;  // null with LEASE_BENCH_POSTGRES
  return own;
}

/// The benchmark's server: LEASE_BENCH_POSTGRES if set, else one started on
/// first use (stopped at exit).
inline const std::string& conninfo() {
  static const std::string ci = [] {
    if (const char* c = std::getenv("LEASE_BENCH_POSTGRES"); c != nullptr && *c != '\0') return std::string(c);
    own_server() = std::make_unique<lease::testing::postgres_server>();
    return own_server()->conninfo();
  }();
  return ci;
}

/// Keeps the client and the server processes on cores of their own while a
/// figure and its floor are timed, and puts the thread back where it was
/// (the backends stay where they are put: each benchmark's connections, so
/// its backends, end with it).
///
/// Why: a round trip to a PostgreSQL backend costs ~25 µs on this 2-core VM
/// when the client and the backend share a core and ~65 µs when they do
/// not (waking a process on the other core goes through the hypervisor).
/// A figure and its floor run on two connections, so two backends, and the
/// scheduler places each as it likes, differently in each run: measured
/// unpinned, the very same upsert on two connections read 0.59-1.05 of
/// itself, and the store's heartbeat 0.43-0.89 of the floor from run to run.
/// Pinned (this thread on the first core it may use, the backends together
/// on the next), the same upsert reads 1.00 of itself run after run
/// (BM_upsert_on_another_connection checks it) and a figure's ratio holds
/// within a few hundredths. Other server processes (WAL writer, checkpointer)
/// stay where the scheduler puts them.
///
/// Only on the benchmark's own server (a backend pid of another machine's
/// server means nothing here) and unless LEASE_BENCH_PIN=0; `pinned()` says
/// whether it did.
class pinned_apart {
 public:
  explicit pinned_apart(std::initializer_list<int> backends) {
    const char* env = std::getenv("LEASE_BENCH_PIN");
    if (!own_server() || (env != nullptr && std::string_view(env) == "0")) return;
    if (::sched_getaffinity(0, sizeof before_, &before_) != 0 || CPU_COUNT(&before_) < 2) return;
    int client = -1, server = -1;
    for (int c = 0; c < CPU_SETSIZE && server < 0; ++c)
      if (CPU_ISSET(c, &before_)) (client < 0 ? client : server) = c;
    for (int pid : backends)
      if (pid <= 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(server, &one);
    for (auto b = backends.begin(); b != backends.end(); ++b)
      if (::sched_setaffinity(*b, sizeof one, &one) != 0) {
        for (auto p = backends.begin(); p != b; ++p) (void)::sched_setaffinity(*p, sizeof before_, &before_);
        return;  // all or none
      }
    CPU_ZERO(&one);
    CPU_SET(client, &one);
    pinned_ = ::sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~pinned_apart() {
    if (pinned_) (void)::sched_setaffinity(0, sizeof before_, &before_);
  }
  pinned_apart(const pinned_apart&) = delete;
  pinned_apart& operator=(const pinned_apart&) = delete;
  [[nodiscard]] bool pinned() const noexcept { return pinned_; }

 private:
  cpu_set_t before_{};
  bool pinned_ = false;
};

using clock_type = std::chrono::steady_clock;

/// CPU time the server process `pid` has run so far (ns), from
/// /proc/<pid>/schedstat; -1 when it cannot be read (a server elsewhere).
/// CPU time, unlike wall time, hardly moves with the machine's load.
inline double backend_cpu_ns(int pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/schedstat");
  double ns = -1;
  if (!(f >> ns)) return -1;
  return ns;
}
inline double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// The floor, on a connection of its own: one prepared one-row upsert.
class floor_probe {
 public:
  floor_probe() : conn_({conninfo(), 2000ms, 5000ms, 25ms, 1000ms, "lease-bench"}) {
    conn_.open();
    conn_.exec_simple("CREATE TABLE IF NOT EXISTS lease_bench_floor (k int8 PRIMARY KEY, v int8 NOT NULL)", "floor");
    conn_.prepare("floor", "INSERT INTO lease_bench_floor VALUES ($1::int8, $2::int8) "
                           "ON CONFLICT (k) DO UPDATE SET v = excluded.v");
  }
  [[nodiscard]] int pid() const noexcept { return conn_.backend_pid(); }
  /// Bytes of WAL the whole server has written so far (its insert position):
  /// the difference over a loop is what that loop wrote, on a server with no
  /// other traffic (the bench server; not LEASE_BENCH_POSTGRES if it is busy).
  std::int64_t wal_position() {
    auto r = conn_.exec_simple("SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", "wal");
    return std::stoll(PQgetvalue(r.get(), 0, 0));
  }
  /// WAL bytes one floor upsert writes, over `n` of them.
  double wal_per_upsert(int n = 200) {
    const auto w = wal_position();
    for (int i = 0; i < n; ++i) (void)once();
    return static_cast<double>(wal_position() - w) / n;
  }
  double once() {
    lease::detail::postgres::params p;
    p.i64(static_cast<std::int64_t>(::getpid())).i64(++n_);
    const auto t = clock_type::now();
    benchmark::DoNotOptimize(conn_.exec_prepared("floor", p, "floor"));
    return seconds_since(t);
  }

 private:
  lease::detail::postgres::connection conn_;
  std::int64_t n_ = 0;
};

}  // namespace lease::bench
