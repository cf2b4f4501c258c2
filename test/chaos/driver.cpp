// test/chaos/driver.cpp — the chaos suite: each test case starts three
// chaos_instance processes on a real store, does one kind of fault to them
// (a round or two; LEASE_CHAOS_SOAK=N times as many: scripts/chaos --soak), lets the
// cluster settle, stops it and runs the checker (check.hpp) over the audit
// logs. Each test case takes 10-40 s. Zero violations is the bar; each violation is printed with its
// times, and the merged audit log of every test is saved in the build dir.
//
// Stores: Redis (a redis-server with AOF, test/redis/server.hpp), SQLite (a
// file in the test's directory) and, when lease::postgres is built,
// PostgreSQL (one server per run of this binary, test/postgres/server.hpp;
// a schema per test case). A store's test cases are the faults that make
// sense for it: the proxy's network faults and the server faults need a
// server, the SQLite write lock needs SQLite.
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "chaos/cluster.hpp"
#include "redis/server.hpp"
#include "sqlite/temp_dir.hpp"
#include "support/loopback_proxy.hpp"
#if LEASE_CHAOS_WITH_POSTGRES
#include "chaos/pg_server.hpp"
#endif

namespace chaos {
namespace {

const char* const names[] = {"i1", "i2", "i3"};
constexpr auto lease_time = std::chrono::milliseconds(lease_ms);

std::string what(const line& s) { return cluster::describe_run(s); }

/// Per-instance proxies to one server port (when a test wants network faults).
struct proxies {
  bool on = false;
  std::map<std::string, std::unique_ptr<lease::testing::loopback_proxy>> of;  ///< by instance name

  /// The port instance `name` should connect to: its proxy's, or the server's.
  int port_for(const std::string& name, int server_port) {
    if (!on) return server_port;
    auto& p = of[name];
    if (!p) p = std::make_unique<lease::testing::loopback_proxy>(server_port);
    return p->port();
  }
};

struct redis_backend : backend {
  lease::testing::redis_server server{{.append_only = true, .extra_args = {}}};
  proxies net;

  std::vector<std::string> store_args(const std::string& name) override {
    const int port = net.port_for(name, server.port());
    return {"--store", "redis", "--url", "redis://127.0.0.1:" + std::to_string(port), "--prefix", "chaos"};
  }
  [[nodiscard]] std::string kind() const override { return "redis"; }
};

struct sqlite_backend : backend {
  std::string db;
  explicit sqlite_backend(std::string path) : db(std::move(path)) {}
  std::vector<std::string> store_args(const std::string&) override { return {"--store", "sqlite", "--db", db}; }
  [[nodiscard]] std::string kind() const override { return "sqlite"; }
};

/// Starts i1..i3 (`env` per instance), opens the window, does `fault`
/// rounds(ctest_rounds) times, lets the cluster settle, stops it and checks. Fails with every violation.
void scenario(const std::string& test, backend& b, const lease::testing::temp_dir& dir, int ctest_rounds,
              const std::function<void(cluster&)>& fault,
              const std::function<std::vector<std::string>(const std::string&)>& env = {}) {
  cluster c(test, b, dir.path());
  std::string harness;
  try {
    for (const char* n : names) c.start(n, env ? env(n) : std::vector<std::string>{});
    c.open_window();
    for (int r = 0; r < rounds(ctest_rounds); ++r) fault(c);
    c.run_for(3s);  // the cluster recovers; slots after the faults run normally
  } catch (const harness_error& e) {
    harness = e.what();
    c.fault("HARNESS: " + harness);
  }
  c.stop_all();
  const report r = c.verdict();
  INFO("the audit lines, the faults and every violation are printed above");
  if (!harness.empty()) FAIL("the test could not do what it meant to: " + harness);
  if (r.runs == 0) FAIL("no handler ran at all: the test did nothing");
  if (!r.violations.empty())
    FAIL(std::to_string(r.violations.size()) + " violations; the first: " + r.violations.front());
}

// ---- the faults ------------------------------------------------------------

void kill9(cluster& c) {
  const line s = c.wait_running(10s);
  const std::size_t from = c.mark();
  c.signal(s.instance, SIGKILL, "kill -9 " + what(s) + " mid-run");
  if (!c.wait_taken_over(s, lease_time + 6s, from)) c.fault("note: no takeover of that run within lease + 6 s");
  c.fault("restart " + s.instance);
  c.start(s.instance);
}

void sigstop(cluster& c) {
  const line s = c.wait_running(10s);
  const std::size_t from = c.mark();
  c.signal(s.instance, SIGSTOP, "SIGSTOP " + what(s) + " mid-run");
  if (auto t = c.wait_taken_over(s, lease_time + 6s, from)) {
    // Let the new attempt get going before the old runner wakes up.
    (void)c.wait_for([&](const line& l) { return l.token == t->token && l.type != "start"; }, 2s, from);
    c.run_for(200ms);
  } else {
    c.fault("note: no takeover of that run within lease + 6 s");
  }
  c.signal(s.instance, SIGCONT, "SIGCONT " + s.instance);
  (void)c.wait_for([&](const line& l) { return l.token == s.token && l.type == "end"; }, 5s, from);
}

void black_hole(cluster& c, proxies& net) {
  const line s = c.wait_running(10s);
  const std::size_t from = c.mark();
  c.fault("black-hole the connections of " + what(s) + " (proxy forwards nothing either way)");
  net.of.at(s.instance)->black_hole(true);
  (void)c.wait_taken_over(s, lease_time + 4s, from);
  c.run_for(1s);
  c.fault("heal " + s.instance + "'s connections (held bytes delivered late)");
  net.of.at(s.instance)->black_hole(false);
  (void)c.wait_for([&](const line& l) { return l.token == s.token && l.type == "end"; }, 5s, from);
}

void delay(cluster& c, proxies& net) {
  const line s = c.wait_running(10s);
  c.fault("delay the connections of " + what(s) + " by 1200 ms each way for 6 s");
  net.of.at(s.instance)->delay(1200ms);
  c.run_for(6s);
  net.of.at(s.instance)->delay(0ms);
  c.fault("end of delay for " + s.instance);
}

/// Resets every connection of the runner (its store's and, on PostgreSQL,
/// its LISTEN connection) mid-run; it may reconnect at once.
void cut(cluster& c, proxies& net) {
  const line s = c.wait_running(10s);
  c.fault("cut (RST) every connection of " + what(s) + "; reconnecting is allowed");
  net.of.at(s.instance)->cut_all();
  c.run_for(1500ms);
  c.fault("cut every connection of every instance at once");
  for (auto& [_, p] : net.of) p->cut_all();
  c.run_for(1500ms);
}

void redis_stall(cluster& c, redis_backend& b) {
  line s = c.wait_running(10s);
  c.fault("DEBUG SLEEP 4 on the server while " + what(s) + " runs");
  std::thread sleeper([&] { (void)b.server.command({"DEBUG", "SLEEP", "4"}); });
  c.run_for(4500ms);
  sleeper.join();
  c.fault("the server answers again");

  s = c.wait_running(10s);
  c.fault("CLIENT PAUSE 4000 ALL while " + what(s) + " runs");
  (void)b.server.command({"CLIENT", "PAUSE", "4000", "ALL"});
  c.run_for(4500ms);

  s = c.wait_running(10s);
  c.fault("kill -9 redis-server (AOF, appendfsync always) while " + what(s) + " runs; restart it on the same port");
  b.server.restart({}, false);
  for (int i = 0; i < 500 && !b.server.ready(); ++i) std::this_thread::sleep_for(10ms);
  c.fault(b.server.ready() ? "redis-server is back" : "HARNESS: redis-server did not come back in 5 s");
  c.run_for(3s);
}

/// libfaketime with a control file: the offset of a running process changes
/// when the file is rewritten (read again at most 1 s later: with
/// FAKETIME_NO_CACHE it is read on every clock call, which made the faked
/// instance so slow that it never won a claim). Monotonic clocks are not
/// faked, so the audit log's times stay true.
struct fake_time {
  std::string file;
  explicit fake_time(const lease::testing::temp_dir& d) : file(d.file("faketime")) { set("+0s"); }
  void set(const std::string& offset) const { std::ofstream(file) << offset << "\n"; }
  [[nodiscard]] std::vector<std::string> env() const {
    return {"LD_PRELOAD=" LEASE_LIBFAKETIME, "FAKETIME_TIMESTAMP_FILE=" + file, "FAKETIME_CACHE_DURATION=1",
            "FAKETIME_DONT_FAKE_MONOTONIC=1"};
  }
};

// Ahead first: a clock that is ahead claims slots in the store's future
// (early) and, on SQLite, moves the store's clock too. Then back: a wall-clock
// timer armed before a step back sleeps through the slots that follow.
void step_clock(cluster& c, const fake_time& ft, const std::string& who, const std::string& only) {
  auto step = [&](const std::string& offset, const std::string& why) {
    ft.set(offset);
    c.fault("wall clock of " + who + " set to real " + offset + why + " (in effect within 1 s)");
  };
  auto while_running = [&](const std::string& what) {
    try {
      return what + " while " + cluster::describe_run(c.wait_running(8s, only));
    } catch (const harness_error&) {
      return what + "; it had run nothing in 8 s";
    }
  };
  step("+17s", while_running(" (a step ahead of 17 s)"));
  c.run_for(3s);
  step("+0s", " (a step back of 17 s)");
  step("-60s", while_running(" (a step back of 60 s)"));
  c.run_for(3s);
  step("+0s", " (a step ahead of 60 s)");
  c.run_for(2s);
}

/// The clock-step test of a networked store (Redis, PostgreSQL): the store's
/// clock is the server's, so only instance i3's wall clock steps.
void step_one_instance_clock(backend& b, const lease::testing::temp_dir& d) {
  const fake_time ft(d);
  scenario(
      "clock-step", b, d, 1, [&](cluster& c) { step_clock(c, ft, "i3", "i3"); },
      [&](const std::string& n) { return n == "i3" ? ft.env() : std::vector<std::string>{}; });
}

/// Pins every thread of `pid` to `cpu` (or all CPUs if -1) at nice `nice`.
void pin(pid_t pid, int cpu, int nice) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) {
    CPU_SET(cpu, &set);
  } else {
    (void)::sched_getaffinity(0, sizeof set, &set);
  }
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    const pid_t tid = std::stoi(t.path().filename().string());
    (void)::sched_setaffinity(tid, sizeof set, &set);
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
  }
}

void reap(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

void starve(cluster& c) {
  const line s = c.wait_running(10s);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  (void)::sched_getaffinity(0, sizeof mine, &mine);
  int cpu = 0;
  for (int k = 0; k < CPU_SETSIZE; ++k)
    if (CPU_ISSET(k, &mine)) cpu = k;
  pin(c.pid(s.instance), cpu, 19);
  std::vector<pid_t> hogs;
  for (int k = 0; k < 3; ++k) {
    const pid_t p = ::fork();
    if (p == 0) {  // a busy loop pinned to the same core (async-signal-safe until it dies)
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      ::sched_setaffinity(0, sizeof one, &one);
      volatile unsigned long spins = 0;
      for (;;) spins = spins + 1;  // a volatile store: a side effect, so the loop is not UB
    }
    if (p > 0) hogs.push_back(p);
  }
  c.fault("starve " + what(s) + ": niced to 19 and pinned with 3 busy loops to CPU " + std::to_string(cpu) +
          " for 6 s");
  c.run_for(6s);
  for (pid_t p : hogs) {
    ::kill(p, SIGKILL);
    reap(p);
  }
  if (c.pid(s.instance) > 0) pin(c.pid(s.instance), -1, 0);
  c.fault("starvation of " + s.instance + " ends");
}

void sqlite_lock(cluster& c, const std::string& db) {
  const line s = c.wait_running(10s);
  sqlite3* h = nullptr;
  if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) {
    sqlite3_close(h);
    throw harness_error("cannot open " + db);
  }
  sqlite3_busy_timeout(h, 5000);
  if (sqlite3_exec(h, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    throw harness_error("BEGIN EXCLUSIVE failed");
  }
  c.fault("hold the SQLite write lock (BEGIN EXCLUSIVE from another process's connection) 4 s while " + what(s) +
          " runs");
  c.run_for(4s);
  sqlite3_exec(h, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  c.fault("write lock released");
}

#if LEASE_CHAOS_WITH_POSTGRES
/// The run's one PostgreSQL (pg_server.hpp: a copy of a cluster initdb'd
/// once per build tree), started on first use from the main thread (which
/// outlives it: the server dies with the thread that forked it); a schema of
/// this test case's own.
pg_server& the_postgres() {
  static pg_server s(LEASE_CHAOS_PG_TEMPLATE);
  return s;
}

struct postgres_backend : backend {
  pg_server& server = the_postgres();
  std::string schema = lease::testing::fresh_schema("chaos");
  proxies net;

  std::vector<std::string> store_args(const std::string& name) override {
    const int port = net.port_for(name, server.port());
    return {"--store", "postgres", "--url", "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres",
            "--schema", schema};
  }
  [[nodiscard]] std::string kind() const override { return "postgres"; }
};

/// The processes `parent` has forked (for the postmaster: backends,
/// checkpointer, WAL writer, ...), from /proc/N/stat.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string n = e.path().filename().string();
    if (n.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto paren = stat.rfind(')');  // "pid (comm) state ppid ...": comm may hold spaces
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == parent) kids.push_back(std::stoi(n));
  }
  return kids;
}

/// The whole server frozen (SIGSTOP to the postmaster first, so it forks
/// nothing more, then to every process it forked) for `d`, then thawed: the
/// kernel still accepts TCP connections into its backlog, nothing answers.
void freeze_server(cluster& c, const pg_server& s, std::chrono::milliseconds d, const std::string& why) {
  std::vector<pid_t> all{s.pid()};
  ::kill(all.front(), SIGSTOP);
  for (pid_t p : children_of(all.front())) {
    ::kill(p, SIGSTOP);
    all.push_back(p);
  }
  auto thaw = [&] {
    for (pid_t p : all) ::kill(p, SIGCONT);
  };
  c.fault("SIGSTOP the postmaster and its " + std::to_string(all.size() - 1) + " processes for " +
          std::to_string(d.count()) + " ms" + why);
  try {
    c.run_for(d);
  } catch (...) {
    thaw();
    throw;
  }
  thaw();
  c.fault("SIGCONT the server");
}

/// The server stalled, its sessions terminated, stopped for longer than a
/// lease and started again, and crashed and started again, each while a
/// handler runs.
void postgres_server_faults(cluster& c, pg_server& s) try {
  line r = c.wait_running(10s);
  freeze_server(c, s, 4s, " while " + what(r) + " runs");
  c.run_for(1s);

  r = c.wait_running(10s);
  const std::string n = s.sql(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
  c.fault("pg_terminate_backend every session (" + n + "; they get 57P01 admin_shutdown) while " + what(r) + " runs");
  c.run_for(1500ms);

  r = c.wait_running(10s);
  c.fault("stop the server (-m fast: sessions ended, checkpoint) for 3 s, longer than a lease, while " + what(r) +
          " runs");
  s.stop(SIGINT);
  c.run_for(3s);
  s.start();
  c.fault("the server is back (same port and data directory)");
  c.run_for(1500ms);

  r = c.wait_running(10s);
  c.fault("crash the server (-m immediate: no checkpoint, WAL replayed at start) while " + what(r) +
          " runs; start it again at once");
  s.stop(SIGQUIT);
  s.start();
  c.fault("the server is back");
  c.run_for(1500ms);
} catch (const harness_error&) {
  throw;
} catch (const std::exception& e) {  // the server did not come back, or the test's SQL failed
  throw harness_error(std::string("the PostgreSQL server: ") + e.what());
}
#endif

}  // namespace

// ---- Redis -------------------------------------------------------------------

TEST_CASE("redis: kill -9 of the runner mid-run", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  scenario("kill9", b, d, 2, kill9);
}

TEST_CASE("redis: SIGSTOP of the runner past its lease, then SIGCONT", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  scenario("sigstop", b, d, 2, sigstop);
}

TEST_CASE("redis: the runner's connection black-holed, then delayed", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  b.net.on = true;
  scenario("network", b, d, 1, [&](cluster& c) {
    black_hole(c, b.net);
    delay(c, b.net);
  });
}

TEST_CASE("redis: the server stalled by DEBUG SLEEP and CLIENT PAUSE, then killed and restarted", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  scenario("server-stall", b, d, 1, [&](cluster& c) { redis_stall(c, b); });
}

TEST_CASE("redis: one instance's wall clock stepped ahead 17 s and back 60 s while it runs", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  step_one_instance_clock(b, d);
}

TEST_CASE("redis: the runner starved of CPU", "[chaos][redis]") {
  lease::testing::temp_dir d;
  redis_backend b;
  scenario("starve", b, d, 2, starve);
}

// ---- SQLite ------------------------------------------------------------------

TEST_CASE("sqlite: kill -9 of the runner mid-run", "[chaos][sqlite]") {
  lease::testing::temp_dir d;
  sqlite_backend b(d.file("lease.db"));
  scenario("kill9", b, d, 2, kill9);
}

TEST_CASE("sqlite: SIGSTOP of the runner past its lease, then SIGCONT", "[chaos][sqlite]") {
  lease::testing::temp_dir d;
  sqlite_backend b(d.file("lease.db"));
  scenario("sigstop", b, d, 2, sigstop);
}

TEST_CASE("sqlite: the write lock held 4 s by another process", "[chaos][sqlite]") {
  lease::testing::temp_dir d;
  sqlite_backend b(d.file("lease.db"));
  scenario("write-lock", b, d, 2, [&](cluster& c) { sqlite_lock(c, b.db); });
}

// One host: a wall clock step reaches every process on it, so all three
// instances (and so the store's clock, the host's) step together.
TEST_CASE("sqlite: the host's wall clock stepped ahead 17 s and back 60 s", "[chaos][sqlite]") {
  lease::testing::temp_dir d;
  sqlite_backend b(d.file("lease.db"));
  const fake_time ft(d);
  scenario(
      "clock-step", b, d, 1, [&](cluster& c) { step_clock(c, ft, "every instance (the host)", ""); },
      [&](const std::string&) { return ft.env(); });
}

TEST_CASE("sqlite: the runner starved of CPU", "[chaos][sqlite]") {
  lease::testing::temp_dir d;
  sqlite_backend b(d.file("lease.db"));
  scenario("starve", b, d, 2, starve);
}

// ---- PostgreSQL --------------------------------------------------------------
#if LEASE_CHAOS_WITH_POSTGRES

TEST_CASE("postgres: kill -9 of the runner mid-run", "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  scenario("kill9", b, d, 2, kill9);
}

TEST_CASE("postgres: SIGSTOP of the runner past its lease, then SIGCONT", "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  scenario("sigstop", b, d, 2, sigstop);
}

TEST_CASE("postgres: the runner's connections black-holed, cut, then delayed", "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  b.net.on = true;
  scenario("network", b, d, 1, [&](cluster& c) {
    black_hole(c, b.net);
    cut(c, b.net);
    delay(c, b.net);
  });
}

TEST_CASE("postgres: the server frozen, its sessions terminated, stopped, crashed and restarted",
          "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  scenario("server", b, d, 1, [&](cluster& c) { postgres_server_faults(c, b.server); });
}

// The store's clock is the server's (clock_timestamp()), as on Redis: one
// instance's wall clock steps, the server's does not.
TEST_CASE("postgres: one instance's wall clock stepped ahead 17 s and back 60 s while it runs", "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  step_one_instance_clock(b, d);
}

// One round (two on the other stores): starvation hits the instance, not the
// store, and the suite's time is counted.
TEST_CASE("postgres: the runner starved of CPU", "[chaos][postgres]") {
  lease::testing::temp_dir d;
  postgres_backend b;
  scenario("starve", b, d, 1, starve);
}

#endif

}  // namespace chaos
