// test/chaos/pg_server.hpp — a real PostgreSQL for the chaos suite and for
// with_server, started the way test/postgres/server.hpp starts one (whose
// helpers it reuses: the server runs as the `postgres` user, in the
// foreground, a child of the test, on a free 127.0.0.1 port), with one
// difference, which is why this class is a copy of postgres_server and not
// that class: its data directory is a copy of a cluster initdb'd once per
// build tree. Every CTest entry here is a process with a server of its own,
// and initdb takes 2-6 s on a loaded machine (two cores, a busy disk), paid
// by six chaos tests and the demo's test on every run; the copy takes ~0.2 s
// in /dev/shm (tmpfs), where the data directory goes when there is one.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "postgres/server.hpp"

namespace chaos {

class pg_server {
 public:
  /// A server whose data directory is a copy of `template_dir` (initdb'd
  /// there first if it does not hold a cluster yet).
  explicit pg_server(const std::filesystem::path& template_dir) {
    namespace fs = std::filesystem;
    ensure_template(template_dir);
    dir_ = make_dir();
    fs::copy(template_dir, data(), fs::copy_options::recursive);
    give_to_postgres(dir_);
    fs::permissions(data(), fs::perms::owner_all);  // the server refuses a data directory others can read
    for (int tries = 0;; ++tries) {
      port_ = lease::testing::free_port();
      try {
        start();
        return;
      } catch (const std::exception&) {
        if (tries == 4) throw;  // another process may have taken the port meanwhile
      }
    }
  }
  ~pg_server() {
    stop(SIGINT);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  pg_server(const pg_server&) = delete;
  pg_server& operator=(const pg_server&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string data() const { return (dir_ / "data").string(); }
  [[nodiscard]] std::string conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " user=postgres dbname=postgres";
  }
  [[nodiscard]] std::string url() const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }
  /// The postmaster's pid, -1 when stopped.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  /// SIGINT is `pg_ctl -m fast` (sessions ended, a checkpoint), SIGQUIT
  /// `-m immediate` (no checkpoint: WAL is replayed at the next start).
  void stop(int sig = SIGINT) noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  /// Starts (again) on the same port and data directory; returns once it
  /// accepts connections.
  void start() {
    pid_ = lease::testing::spawn_as_postgres(
        {std::string(lease::testing::pg_bin) + "postgres", "-D", data(), "-p", std::to_string(port_), "-k",
         dir_.string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"},
        (dir_ / "server.log").string());
    const std::string ci = conninfo() + " connect_timeout=2";
    for (int i = 0; i < 3000; ++i) {  // ~0.3 s usually; 30 s on a loaded machine
      if (PQping(ci.c_str()) == PQPING_OK) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("postgres exited at start (port taken?); see " + (dir_ / "server.log").string());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop(SIGQUIT);
    throw std::runtime_error("postgres did not accept connections within 30 s");
  }

  /// Runs SQL on a connection of its own; the first value of the first row
  /// ("" if none). Throws on error.
  std::string sql(const std::string& q) const {
    PGconn* c = PQconnectdb(conninfo().c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      const std::string m = PQerrorMessage(c);
      PQfinish(c);
      throw std::runtime_error("test connection failed: " + m);
    }
    PGresult* r = PQexec(c, q.c_str());
    const ExecStatusType st = PQresultStatus(r);
    std::string out;
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) out = PQgetvalue(r, 0, 0);
    const std::string err = PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) throw std::runtime_error("test SQL failed: " + err);
    return out;
  }

 private:
  /// A new directory for the postgres user: in /dev/shm if it is there.
  static std::filesystem::path make_dir() {
    const bool shm = ::access("/dev/shm", W_OK | X_OK) == 0;
    std::string tmpl = std::string(shm ? "/dev/shm" : "/tmp") + "/lease-chaos-pg-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    give_to_postgres(tmpl);
    ::chmod(tmpl.c_str(), 0700);
    return tmpl;
  }

  /// Everything under `p` owned by the postgres user (when we are root:
  /// otherwise the server runs as us and owns it already).
  static void give_to_postgres(const std::filesystem::path& p) {
    if (::geteuid() != 0) return;
    const lease::testing::pg_user u = lease::testing::pg_user::get();
    if (::lchown(p.c_str(), u.uid, u.gid) != 0) throw std::runtime_error("chown " + p.string() + " failed");
    if (!std::filesystem::is_directory(p)) return;
    for (const auto& e : std::filesystem::recursive_directory_iterator(p))
      if (::lchown(e.path().c_str(), u.uid, u.gid) != 0)
        throw std::runtime_error("chown " + e.path().string() + " failed");
  }

  /// initdb into a temporary directory, then the result renamed into place
  /// (so concurrent tests see either no template or a whole one).
  static void ensure_template(const std::filesystem::path& tpl) {
    namespace fs = std::filesystem;
    if (fs::exists(tpl / "PG_VERSION")) return;
    const fs::path work = make_dir();
    // If initdb fails, `work` stays: the message names the log in it.
    lease::testing::run_as_postgres({std::string(lease::testing::pg_bin) + "initdb", "-D", (work / "data").string(),
                                     "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"},
                                    (work / "initdb.log").string());
    fs::create_directories(tpl.parent_path());
    const fs::path tmp = tpl.string() + ".tmp-" + std::to_string(::getpid());
    fs::remove_all(tmp);
    fs::copy(work / "data", tmp, fs::copy_options::recursive);
    if (std::rename(tmp.c_str(), tpl.c_str()) != 0) fs::remove_all(tmp);  // another test made it first
    fs::remove_all(work);
    if (!fs::exists(tpl / "PG_VERSION")) throw std::runtime_error("no PostgreSQL template in " + tpl.string());
  }

  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace chaos
