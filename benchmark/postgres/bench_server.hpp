// benchmark/postgres/bench_server.hpp — what the PostgreSQL benchmarks
// share: the server (their own, started on a free 127.0.0.1 port, unless
// LEASE_BENCH_POSTGRES names one) and the floor they are compared with.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "lease/store/postgres/connection.hpp"
#include "postgres/server.hpp"

namespace lease::bench {

using namespace std::chrono_literals;

/// The benchmark's server: LEASE_BENCH_POSTGRES if set, else one started on
/// first use (stopped at exit).
inline const std::string& conninfo() {
  static std::unique_ptr<lease::testing::postgres_server> own;  // null with LEASE_BENCH_POSTGRES
  static const std::string ci = [] {
    if (const char* c = std::getenv("LEASE_BENCH_POSTGRES"); c != nullptr && *c != '\0') return std::string(c);
    own = std::make_unique<lease::testing::postgres_server>();
    return own->conninfo();
  }();
  return ci;
}

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
