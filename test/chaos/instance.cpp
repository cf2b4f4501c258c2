// test/chaos/instance.cpp — `chaos_instance`: one instance process of the
// chaos suite. A lease::scheduler in real mode (system_clock, thread_pool)
// over a real store runs the jobs of audit.hpp and writes everything to its
// audit log: each handler's start, every step of "work" (an unfenced side
// effect, so two runners at once show up as interleaved steps), its end, and
// every lease event. SIGTERM stops it (stop(): running handlers are asked to
// stop, throw, and their runs are handed over); it exits 0.
//
//   chaos_instance --name N --log FILE --store redis  --url redis://127.0.0.1:P --prefix K
//   chaos_instance --name N --log FILE --store sqlite --db FILE
//   chaos_instance --name N --log FILE --store postgres --url postgresql://… --schema S
//
// To add a store: one more branch in main() that builds the store and calls
// run(), and a backend in driver.cpp that starts the server.
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <lease/lease.hpp>
#include <lease/store/redis.hpp>
#include <lease/store/sqlite.hpp>
#if LEASE_CHAOS_WITH_POSTGRES
#include <lease/store/postgres.hpp>
#endif

#include "chaos/audit.hpp"

namespace {

/// The audit log: one write(2) per line on an O_APPEND file, so lines from
/// the loop thread, the handler threads (and a SIGKILL at any moment) never
/// tear or mix, and nothing waits in a user-space buffer.
class audit_log {
 public:
  explicit audit_log(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error("cannot open audit log " + path + ": " + std::strerror(errno));
  }
  ~audit_log() { ::close(fd_); }
  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

  void write(chaos::line l) const {
    l.mono = chaos::mono_us();
    l.wall = lease::system_clock{}.now().time_since_epoch().count();
    const std::string text = chaos::format(l);
    (void)!::write(fd_, text.data(), text.size());
  }

 private:
  int fd_;
};

std::int64_t ms(lease::time_point t) { return t.time_since_epoch().count(); }

template <class Store>
int run(Store store, const std::string& name, const audit_log& log, sigset_t& stop_signals) {
  auto s = lease::make_scheduler(
      lease::store = std::move(store), lease::clock = lease::system_clock{}, lease::executor = lease::thread_pool{4},
      lease::overlap = lease::skip,
      lease::settings = lease::options{.lease = lease::duration{chaos::lease_ms},
                                       .heartbeat = lease::duration{chaos::heartbeat_ms},
                                       .max_attempts = 5,
                                       .claim_jitter = lease::duration{100},
                                       .catch_up_jitter = lease::duration{200},
                                       .stop_timeout = lease::duration{1500},
                                       .instance = name});
  for (const chaos::job_spec& j : chaos::jobs) {
    const int steps = j.steps;
    s.add(j.name, lease::every(lease::duration{j.every_ms}), [&log, &name, steps](lease::run_context& ctx) {
      chaos::line l{0, 0, name, "start", std::string(ctx.reason == lease::claim_reason::scheduled  ? "scheduled"
                                                     : ctx.reason == lease::claim_reason::catch_up ? "catch_up"
                                                                                                   : "takeover"),
                    ctx.job, ms(ctx.slot), ctx.attempt, ctx.fence, ctx.token, {}};
      log.write(l);
      for (int i = 0; i < steps; ++i) {
        // Before each side effect, what the library asks of a handler: its
        // stop token, and whether its lease is certainly still held (read
        // from the clock now: a thread resumed from SIGSTOP sees it at once).
        const bool held = ctx.lease_held();
        if (ctx.stop.stop_requested() || !held) {
          l.type = "end";
          l.kind = "stopped";
          l.message = std::string(held ? "stop token requested" : "lease no longer certainly held") + " after " +
                      std::to_string(i) + " of " + std::to_string(steps) + " steps";
          log.write(l);
          throw std::runtime_error(l.message);
        }
        l.type = "step";  // the side effect: not fenced, so a second runner at once is visible
        l.kind = std::to_string(i);
        log.write(l);
        std::this_thread::sleep_for(std::chrono::milliseconds(chaos::step_ms));
      }
      l.type = "end";
      l.kind = "returned";
      l.message = "all " + std::to_string(steps) + " steps done";
      log.write(l);
    });
  }
  s.on_event([&log](const lease::event& e) {
    log.write({0, 0, e.instance, "event", std::string(lease::to_string(e.kind)), e.run.job, ms(e.run.slot), e.attempt,
               e.fence, {}, e.message});
  });
  s.start();
  log.write({0, 0, name, "ready", {}, {}, 0, 0, 0, {}, "pid " + std::to_string(::getpid())});
  int sig = 0;
  sigwait(&stop_signals, &sig);
  s.stop();
  log.write({0, 0, name, "bye", {}, {}, 0, 0, 0, {}, "stopped by signal " + std::to_string(sig)});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists (threads inherit the mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the driver

  std::map<std::string, std::string> arg;
  for (int i = 1; i + 1 < argc; i += 2) arg[argv[i]] = argv[i + 1];
  const std::string name = arg["--name"], kind = arg["--store"];
  try {
    const audit_log log(arg["--log"]);
    if (kind == "redis") {
      // Default timeouts (2 s, close to the 2.5 s lease) and Redis TIME as
      // the store's clock: what a user gets, and a store call that hangs
      // nearly a lease is what the watchdog must cope with.
      lease::redis_options o;
      o.url = arg["--url"];
      o.prefix = arg["--prefix"];
      return run(lease::redis_store{o}, name, log, stop_signals);
    }
    if (kind == "sqlite") return run(lease::sqlite_store{arg["--db"]}, name, log, stop_signals);
#if LEASE_CHAOS_WITH_POSTGRES
    if (kind == "postgres") {
      // Default timeouts (connect 2 s, an answer 5 s: longer than the 2.5 s
      // lease) and the server's clock_timestamp() as the store's clock: what
      // a user gets. NOTIFY hand-overs on, as by default.
      lease::postgres_options o;
      o.conninfo = arg["--url"];
      o.schema = arg["--schema"];
      return run(lease::postgres_store{std::move(o)}, name, log, stop_signals);
    }
#endif
    std::fprintf(stderr, "chaos_instance: unknown --store '%s' (redis, sqlite, postgres)\n", kind.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chaos_instance %s: %s\n", name.c_str(), e.what());
    return 2;
  }
}
