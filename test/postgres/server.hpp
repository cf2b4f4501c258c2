// test/postgres/server.hpp — a real PostgreSQL 15 for the tests: initdb into
// a temporary directory (owned by the unprivileged `postgres` user, since the
// server refuses to run as root), then `postgres` started in the foreground
// as a child process of the test (it dies with the test process) on a free
// 127.0.0.1 port, stopped fast and reaped when the fixture goes out of scope.
// It can be stopped (fast or immediate) and started again on the same port
// and data directory, and it can make a streaming standby of itself.
//
// One server per test binary (shared_server()), one schema per test case
// (fresh_schema()): initdb costs ~1 s, a schema milliseconds. Suites that
// need a server per process (test/chaos: every CTest entry is a process)
// start it on a copy of a template cluster instead (settings::template_dir):
// initdb takes 2-6 s on a loaded machine, paid once per build tree; the
// copy ~0.2 s in /dev/shm (tmpfs), where the data directory then goes.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>


namespace lease::testing {

inline constexpr const char* pg_bin = "/usr/lib/postgresql/15/bin/";

/// A free TCP port on 127.0.0.1, from binding port 0 (the kernel picks one).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind(127.0.0.1:0) failed");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// The uid and gid of the `postgres` user (the server must not run as root).
struct pg_user {
  uid_t uid;
  gid_t gid;
  static pg_user get() {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) throw std::runtime_error("no 'postgres' user: apt-get install postgresql");
    return {pw->pw_uid, pw->pw_gid};
  }
};

/// fork + (as postgres when root) exec; returns the child's pid. The child
/// dies with the test process.
inline pid_t spawn_as_postgres(std::vector<std::string> args, const std::string& log) {
  const pg_user u = pg_user::get();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (::geteuid() == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(u.gid) != 0 || ::setuid(u.uid) != 0) ::_exit(126);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // after setuid, which clears it
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

/// Runs a program as postgres and waits; throws if it fails.
inline void run_as_postgres(std::vector<std::string> args, const std::string& log) {
  const std::string what = args.front();
  const pid_t pid = spawn_as_postgres(std::move(args), log);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(what + " failed; see " + log);
}

/// One PostgreSQL server process.
class postgres_server {
 public:
  struct settings {
    std::vector<std::string> extra;  ///< more `-c name=value` settings
    /// Non-empty: the data directory is a copy of the cluster there
    /// (initdb'd there first if it holds none yet), not a new initdb.
    std::filesystem::path template_dir;
  };

  postgres_server() : postgres_server(settings{}) {}
  explicit postgres_server(settings s, const std::filesystem::path* base_backup_of = nullptr, int primary_port = 0)
      : s_(std::move(s)) {
    const bool copy = base_backup_of == nullptr && !s_.template_dir.empty();
    if (copy) ensure_template(s_.template_dir);
    dir_ = make_dir(copy);
    const std::string log = (dir_ / "setup.log").string();
    if (copy) {
      std::filesystem::copy(s_.template_dir, data(), std::filesystem::copy_options::recursive);
      give_to_postgres(dir_);
      std::filesystem::permissions(data(), std::filesystem::perms::owner_all);  // refused if others can read it
    } else if (base_backup_of == nullptr) {
      run_as_postgres({std::string(pg_bin) + "initdb", "-D", data(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                       "--locale=C.UTF-8", "--no-sync"},
                      log);
    } else {
      run_as_postgres({std::string(pg_bin) + "pg_basebackup", "-h", "127.0.0.1", "-p", std::to_string(primary_port),
                       "-U", "postgres", "-D", data(), "-R", "-X", "stream", "--no-sync"},
                      log);
    }
    for (int tries = 0;; ++tries) {
      port_ = free_port();
      try {
        start();
        return;
      } catch (const std::exception&) {
        if (tries == 4) throw;
      }
    }
  }
  ~postgres_server() {
    stop(SIGINT);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string data() const { return (dir_ / "data").string(); }
  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  /// The postmaster's pid, -1 when stopped.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] std::string conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " user=postgres dbname=postgres";
  }
  [[nodiscard]] std::string url() const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }

  /// Stops the server: SIGINT is `pg_ctl -m fast`, SIGQUIT `-m immediate`
  /// (no checkpoint: a crash as far as the data directory is concerned).
  void stop(int sig = SIGINT) noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  /// Starts again on the same port and data directory.
  void start() {
    std::vector<std::string> args{std::string(pg_bin) + "postgres", "-D", data(), "-p", std::to_string(port_), "-k",
                                  dir_.string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                                  "max_connections=200"};
    for (const auto& e : s_.extra) args.insert(args.end(), {"-c", e});
    pid_ = spawn_as_postgres(std::move(args), (dir_ / "server.log").string());
    wait_ready();
  }
  void restart() {
    stop(SIGINT);
    start();
  }

  /// Runs SQL on a fresh connection of its own; returns the first value of the
  /// first row ("" if none). Throws on error.
  std::string sql(const std::string& q) const {
    PGconn* c = PQconnectdb(conninfo().c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      const std::string m = PQerrorMessage(c);
      PQfinish(c);
      throw std::runtime_error("test connection failed: " + m);
    }
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
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
  /// A new directory for the postgres user: in /dev/shm if `shm` and it is there.
  static std::filesystem::path make_dir(bool shm) {
    shm = shm && ::access("/dev/shm", W_OK | X_OK) == 0;
    std::string tmpl = std::string(shm ? "/dev/shm" : "/tmp") + "/lease-pg-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    give_to_postgres(tmpl);
    ::chmod(tmpl.c_str(), 0700);
    return tmpl;
  }

  /// Everything under `p` owned by the postgres user (when we are root:
  /// otherwise the server runs as us and owns it already).
  static void give_to_postgres(const std::filesystem::path& p) {
    if (::geteuid() != 0) return;
    const pg_user u = pg_user::get();
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
    const fs::path work = make_dir(true);
    // If initdb fails, `work` stays: the message names the log in it.
    run_as_postgres({std::string(pg_bin) + "initdb", "-D", (work / "data").string(), "-U", "postgres", "-A", "trust",
                     "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"},
                    (work / "initdb.log").string());
    fs::create_directories(tpl.parent_path());
    const fs::path tmp = tpl.string() + ".tmp-" + std::to_string(::getpid());
    fs::remove_all(tmp);
    fs::copy(work / "data", tmp, fs::copy_options::recursive);
    if (std::rename(tmp.c_str(), tpl.c_str()) != 0) fs::remove_all(tmp);  // another process made it first
    fs::remove_all(work);
    if (!fs::exists(tpl / "PG_VERSION")) throw std::runtime_error("no PostgreSQL template in " + tpl.string());
  }

  void wait_ready() {
    const std::string ci = conninfo() + " connect_timeout=2";
    for (int i = 0; i < 3000; ++i) {  // ~0.5 s usually; 30 s on a loaded machine
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

  settings s_;
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

/// The one server of this test binary, started on first use. Call it first
/// from a thread that lives as long as the server should (the main thread):
/// PR_SET_PDEATHSIG fires when the thread that forked the server exits.
inline postgres_server& shared_server() {
  static postgres_server srv;
  return srv;
}

/// A fresh schema name per store in one process (and per process: the pid).
inline std::string fresh_schema(std::string_view what = "t") {
  static int n = 0;
  return std::string(what) + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

}  // namespace lease::testing
