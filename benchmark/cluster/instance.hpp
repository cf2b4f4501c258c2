// benchmark/cluster/instance.hpp — one instance process of the cluster
// benchmarks: a lease::scheduler in real mode (system_clock, thread_pool)
// over a real store, writing what it does to an audit log in the chaos
// suite's line format (test/chaos/audit.hpp), so the driver measures from
// the outside what a user's service would see. The driver runs its own
// binary again with `--instance` to get one (cluster_bench.cpp).
//
// Modes:
// * takeover: one job "t" every --every ms; its handler runs --work ms
//   (attempt 1) or 200 ms (a takeover) and logs every acknowledged heartbeat
//   as an "ack" line (the moment the lease deadline it reads moves: polled
//   every 1 ms), so the driver can time a takeover from the last ack;
// * sweep: --jobs jobs every 1 s, handlers of --work ms logging their start
//   and when the scheduler handed them to the pool (timed_pool);
// * idle: --jobs jobs every 7 days (none due while it runs).
// SIGTERM: stop(), then a "bye" line with stop()'s time, the store round
// trips (client side, read after stop()), handler starts and event counts.
//
// Lines are written with one write(2) each (takeover: a kill -9 must lose
// nothing) or buffered and flushed every 100 ms (sweep: 10,000 starts/s).
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <atomic>
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

#include "chaos/audit.hpp"

namespace cluster_bench {

/// The audit log of one instance (see the file comment for buffering).
class audit_log {
 public:
  audit_log(const std::string& path, bool buffered)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)), buffered_(buffered) {
    if (fd_ < 0) throw std::runtime_error("cannot open audit log " + path + ": " + std::strerror(errno));
    if (buffered_)
      flusher_ = std::jthread([this](std::stop_token st) {
        while (!st.stop_requested()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          flush();
        }
      });
  }
  ~audit_log() {
    flusher_ = {};
    flush();
    ::close(fd_);
  }
  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

  void write(chaos::line l) {
    l.mono = chaos::mono_us();
    l.wall = lease::system_clock{}.now().time_since_epoch().count();
    const std::string text = chaos::format(l);
    if (!buffered_) {
      (void)!::write(fd_, text.data(), text.size());
      return;
    }
    std::scoped_lock lock(m_);
    buf_ += text;
  }
  void flush() {
    std::string out;
    {
      std::scoped_lock lock(m_);
      out.swap(buf_);
    }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = ::write(fd_, out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  bool buffered_;
  std::mutex m_;
  std::string buf_;
  std::jthread flusher_;
};

/// The wall time (ms) at which the task now running on this thread was
/// handed to the pool: set by timed_pool just before the handler runs.
inline thread_local std::int64_t handed_at_ms = 0;

/// A lease::thread_pool that notes when each task was handed to it, so a
/// sweep can tell the scheduler's lag (slot → handed to the executor) from
/// the time a task then waits in the pool's queue for a free thread. With
/// every job on one anchor, each second brings a burst of S slots at once:
/// that queue is the user's executor, not the scheduler or the store.
class timed_pool {
 public:
  explicit timed_pool(std::size_t threads) : pool_(threads) {}
  void execute(lease::task t) {
    const std::int64_t at = lease::system_clock{}.now().time_since_epoch().count();
    lease::run_context ctx = t.context();
    pool_.execute(lease::task(std::move(ctx), [at, inner = std::move(t)](lease::run_context&) mutable {
      handed_at_ms = at;
      inner();
    }));
  }

 private:
  lease::thread_pool pool_;
};

/// An instance's command line: `--name value` pairs.
using args = std::map<std::string, std::string>;

inline std::int64_t num(const args& a, const std::string& k, std::int64_t dflt) {
  auto it = a.find(k);
  return it == a.end() ? dflt : std::stoll(it->second);
}

inline std::string job_name(int j) {
  char b[16];
  std::snprintf(b, sizeof b, "j%05d", j);
  return b;
}

inline const char* reason_name(lease::claim_reason r) {
  return r == lease::claim_reason::scheduled ? "scheduled" : r == lease::claim_reason::catch_up ? "catch_up" : "takeover";
}

/// Runs one instance until SIGTERM/SIGINT (in `stop_signals`); returns the exit status.
template <class Store>
int run_instance(Store store, const args& a, sigset_t& stop_signals) {
  const std::string name = a.at("--name"), mode = a.at("--mode");
  const bool takeover = mode == "takeover";
  audit_log log(a.at("--log"), !takeover);
  lease::options o;
  o.instance = name;
  o.max_attempts = static_cast<std::uint32_t>(num(a, "--max-attempts", 2));
  o.stop_timeout = lease::duration{5000};
  o.catch_up = lease::duration{0};  // a restarted instance does not claim the slot it missed
  if (takeover) {
    o.lease = lease::duration{num(a, "--lease", 2000)};
    o.heartbeat = lease::duration{num(a, "--heartbeat", 500)};
    o.claim_jitter = lease::duration{20};
  } else {
    // Short, so the wait a fresh store imposes (no run starts until one
    // lease after it was created: runners of a replaced store may live)
    // does not eat the measurement window.
    o.lease = lease::duration{3000};
    o.heartbeat = lease::duration{500};
  }
  auto s = lease::make_scheduler(lease::store = std::move(store), lease::clock = lease::system_clock{},
                                 lease::executor = timed_pool{static_cast<std::size_t>(
                                     num(a, "--threads", takeover ? 2 : 32))},
                                 lease::overlap = lease::skip, lease::settings = o);
  const int jobs = static_cast<int>(num(a, "--jobs", 1));
  const std::int64_t work_ms = num(a, "--work", 10);
  std::atomic<std::uint64_t> fires{0};
  if (takeover) {
    s.add("t", lease::every(lease::duration{num(a, "--every", 4000)}), [&](lease::run_context& ctx) {
      fires.fetch_add(1);
      chaos::line l{0, 0, name, "start", reason_name(ctx.reason), ctx.job, ctx.slot.time_since_epoch().count(),
                    ctx.attempt, ctx.fence, ctx.token, {}};
      log.write(l);
      // The deadline moves on each acknowledged renewal (attempt_lease, a
      // detail type: read here only to time acks from outside the loop).
      auto last = ctx.lease_state ? ctx.lease_state->deadline() : lease::steady_point{};
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ctx.attempt == 1 ? work_ms : 200);
      while (std::chrono::steady_clock::now() < end) {
        if (ctx.stop.stop_requested()) {
          l.type = "end";
          l.kind = "stopped";
          log.write(l);
          throw std::runtime_error("stop requested");
        }
        if (ctx.lease_state && ctx.lease_state->deadline() != last) {
          last = ctx.lease_state->deadline();
          l.type = "ack";
          l.kind = {};
          log.write(l);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      l.type = "end";
      l.kind = "returned";
      log.write(l);
    });
  } else {
    const lease::every every(mode == "idle" ? lease::duration{7LL * 86'400'000} : lease::duration{1000});
    for (int j = 0; j < jobs; ++j)
      s.add(job_name(j), every, [&](lease::run_context& ctx) {
        fires.fetch_add(1);
        log.write({0, 0, name, "start", reason_name(ctx.reason), ctx.job, ctx.slot.time_since_epoch().count(),
                   ctx.attempt, ctx.fence, {}, "handed=" + std::to_string(handed_at_ms)});
        std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
      });
  }
  // Every event is counted; the ones that can explain a slot not run are
  // also logged: all but the per-slot routine won / backup / success, and a
  // skip of a slot whose run already ended elsewhere (attempt > 0: it ran;
  // or a claim not sent because that end was announced: it ran too; the
  // losers of every slot say so: two lines per fire, formatted on the loop
  // thread, were an eighth of its time at 6,000 fires/s under perf).
  std::array<std::uint64_t, 32> counts{};
  s.on_event([&](const lease::event& e) {
    ++counts[static_cast<std::size_t>(e.kind) % counts.size()];
    if (!takeover && (e.kind == lease::event_kind::won || e.kind == lease::event_kind::backup ||
                      e.kind == lease::event_kind::success ||
                      (e.kind == lease::event_kind::skip &&
                       (e.attempt > 0 || e.message.starts_with("scheduled claim not sent: the store announced")))))
      return;
    log.write({0, 0, name, "event", std::string(lease::to_string(e.kind)), e.run.job,
               e.run.slot.time_since_epoch().count(), e.attempt, e.fence, {}, e.message.substr(0, 300)});
  });
  s.start();
  log.write({0, 0, name, "ready", {}, {}, 0, 0, 0, {}, "pid " + std::to_string(::getpid())});
  log.flush();
  int sig = 0;
  sigwait(&stop_signals, &sig);
  const auto t0 = std::chrono::steady_clock::now();
  s.stop();
  const double stop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = "stop_ms=" + std::to_string(stop_ms) + " fires=" + std::to_string(fires.load());
  if constexpr (requires { s.store().round_trips(); }) msg += " round_trips=" + std::to_string(s.store().round_trips());
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (counts[k] > 0)
      msg += " " + std::string(lease::to_string(static_cast<lease::event_kind>(k))) + "=" + std::to_string(counts[k]);
  log.write({0, 0, name, "bye", {}, {}, 0, 0, 0, {}, msg});
  return 0;
}

/// Blocks the stop signals (before any thread exists: threads inherit the
/// mask), ignores SIGPIPE, and dies with the driver.
inline sigset_t instance_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return stop_signals;
}

}  // namespace cluster_bench
