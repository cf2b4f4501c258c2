// benchmark/cluster/backend.hpp — the store a cluster benchmark runs on,
// chosen when the program is compiled (one program per store): how the
// driver starts its server (on a free 127.0.0.1 port, in a temporary
// directory, as the tests do), what an instance is told, how the instance
// builds its store, and what the driver reads from the server (CPU, one
// round trip, Redis INFO commandstats).
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cluster/fleet.hpp"
#include "cluster/instance.hpp"

#if defined(LEASE_CLUSTER_REDIS)
#include <lease/store/redis.hpp>

#include "redis/server.hpp"
#elif defined(LEASE_CLUSTER_POSTGRES)
#include <libpq-fe.h>

#include <lease/store/postgres.hpp>

#include "postgres/server.hpp"
#else
#include <lease/store/sqlite.hpp>
#endif

namespace cluster_bench {

#if defined(LEASE_CLUSTER_REDIS)
inline constexpr const char* store_name = "redis";

/// Builds the instance's store from its arguments and runs it.
inline int instance_main(const args& a, sigset_t& sigs) {
  lease::redis_options o;  // default timeouts; Redis TIME as the store's clock
  o.url = a.at("--url");
  o.prefix = a.at("--ns");
  return run_instance(lease::redis_store{std::move(o)}, a, sigs);
}

class backend {
 public:
  backend() : server_(std::make_unique<lease::testing::redis_server>()) {}
  [[nodiscard]] std::string describe() const {
    return "redis-server on " + server_->url() + " (started by this program, no persistence)";
  }
  /// Store arguments for a fresh namespace (a key prefix).
  std::vector<std::string> store_args(const std::string& ns) const { return {"--url", server_->url(), "--ns", ns}; }
  /// Server CPU seconds so far (INFO cpu), < 0 when there is no server.
  [[nodiscard]] double server_cpu() const {
    const auto i = info("cpu");
    return field(i, "used_cpu_user") + field(i, "used_cpu_sys");
  }
  /// Calls per command so far (INFO commandstats): empty when not Redis.
  [[nodiscard]] std::map<std::string, double> commands() const {
    std::map<std::string, double> m;
    std::istringstream in(info("commandstats"));
    for (std::string l; std::getline(in, l);) {
      // cmdstat_evalsha:calls=12,usec=...
      const auto c = l.find(':');
      if (l.rfind("cmdstat_", 0) != 0 || c == std::string::npos) continue;
      m[l.substr(8, c - 8)] = std::stod(l.substr(c + 7, l.find(',', c) - c - 7));
    }
    return m;
  }
  /// One round trip to the server (PING), in ms.
  [[nodiscard]] double round_trip_ms() const {
    const auto a = std::chrono::steady_clock::now();
    (void)server_->command({"PING"});
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
  }

 private:
  [[nodiscard]] std::string info(const char* section) const {
    auto r = server_->command({"INFO", section});
    return r && r->str != nullptr ? std::string(r->str, r->len) : std::string{};
  }
  static double field(const std::string& text, const std::string& key) {
    const auto at = text.find(key + ":");
    return at == std::string::npos ? 0 : std::stod(text.substr(at + key.size() + 1));
  }
  std::unique_ptr<lease::testing::redis_server> server_;
};

#elif defined(LEASE_CLUSTER_POSTGRES)
inline constexpr const char* store_name = "postgres";

inline int instance_main(const args& a, sigset_t& sigs) {
  lease::postgres_options o;  // default timeouts, NOTIFY hand-overs on, the server's clock
  o.conninfo = a.at("--url");
  o.schema = a.at("--ns");
  return run_instance(lease::postgres_store{std::move(o)}, a, sigs);
}

class backend {
 public:
  backend() : server_(std::make_unique<lease::testing::postgres_server>()) {
    conn_ = PQconnectdb(server_->conninfo().c_str());
    if (PQstatus(conn_) != CONNECTION_OK) throw harness_error("cannot connect to the PostgreSQL it started");
  }
  ~backend() { PQfinish(conn_); }
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  [[nodiscard]] std::string describe() const {
    return "PostgreSQL on 127.0.0.1:" + std::to_string(server_->port()) +
           " (started by this program, fsync=off as postgres_bench)";
  }
  std::vector<std::string> store_args(const std::string& ns) const {
    std::string schema = ns;
    for (char& c : schema)
      if (c == '-') c = '_';
    return {"--url", server_->conninfo(), "--ns", schema};
  }
  /// The postmaster and its backends (each instance's connections).
  [[nodiscard]] double server_cpu() const {
    std::ifstream f(server_->data() + "/postmaster.pid");
    pid_t pm = -1;
    f >> pm;
    return pm > 0 ? tree_cpu_seconds(pm) : -1;
  }
  [[nodiscard]] std::map<std::string, double> commands() const { return {}; }
  [[nodiscard]] double round_trip_ms() const {
    const auto a = std::chrono::steady_clock::now();
    PQclear(PQexec(conn_, "SELECT 1"));
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
  }

 private:
  std::unique_ptr<lease::testing::postgres_server> server_;
  PGconn* conn_ = nullptr;
};

#else
inline constexpr const char* store_name = "sqlite";

inline int instance_main(const args& a, sigset_t& sigs) {
  return run_instance(lease::sqlite_store{a.at("--url")}, a, sigs);
}

/// One SQLite file (WAL) per namespace in a temporary directory; no server.
class backend {
 public:
  backend() {
    char tmpl[] = "/tmp/lease-cluster-sqlite-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw harness_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~backend() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  [[nodiscard]] std::string describe() const { return "one SQLite file (WAL) in " + dir_.string() + ", no server"; }
  std::vector<std::string> store_args(const std::string& ns) const {
    return {"--url", (dir_ / (ns + ".db")).string(), "--ns", ns};
  }
  [[nodiscard]] double server_cpu() const { return -1; }
  [[nodiscard]] std::map<std::string, double> commands() const { return {}; }
  [[nodiscard]] double round_trip_ms() const { return 0; }

 private:
  std::filesystem::path dir_;
};
#endif

}  // namespace cluster_bench
