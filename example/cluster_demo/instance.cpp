// cluster_demo/instance.cpp — `cluster_demo instance <name> <store> <ns>`: one
// instance of the cluster. A lease::scheduler over the shared store runs
// the job "report" every 2 s and writes every event to stdout (protocol.hpp).
// SIGTERM or SIGINT stops it gracefully: a running handler is asked to stop,
// throws, and its run is handed over to a backup; then the process exits 0.
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <lease/lease.hpp>
#include <type_traits>

#include "demo.hpp"
#include "protocol.hpp"
#include "stores.hpp"

namespace demo {
namespace {

/// One line, one write(2): lines from the loop thread and the handler threads never mix.
void emit(const line& l) {
  static std::mutex m;
  const std::string text = format(l);
  std::scoped_lock lock(m);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // the orchestrator is gone; nothing to tell anyone
    done += static_cast<std::size_t>(n);
  }
}

/// Tokens of the attempts this instance started, for the fence probe after `lost`.
class token_book {
 public:
  void put(lease::time_point slot, std::uint32_t attempt, std::string token) {
    std::scoped_lock lock(m_);
    tokens_[{slot, attempt}] = std::move(token);
  }
  std::string get(lease::time_point slot, std::uint32_t attempt) {
    std::scoped_lock lock(m_);
    auto it = tokens_.find({slot, attempt});
    return it == tokens_.end() ? std::string{} : it->second;
  }

 private:
  std::mutex m_;
  std::map<std::pair<lease::time_point, std::uint32_t>, std::string> tokens_;
};

/// A second store of the same type as the scheduler's (the fence probe's).
template <class S>
S open_as(const std::string& spec, const std::string& ns) {
  return with_store(spec, ns, [](auto s) -> S {
    if constexpr (std::is_same_v<decltype(s), S>) return s;
    else throw std::logic_error("cluster_demo: a store of another kind");
  });
}

}  // namespace

int run_instance(const std::string& name, const std::string& spec, const std::string& ns) {
  // Block the stop signals before any thread exists (threads inherit the
  // mask), then wait for them with sigwait on this thread: no async handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_NAME, "cluster_demo");  // exec'd as /proc/self/exe, ps would show "exe"

  const lease::system_clock clock;
  auto say = [&](char kind, std::string what, std::string message = {}) {
    line l;
    l.kind = kind;
    l.at = clock.now();
    l.instance = name;
    l.what = std::move(what);
    l.job = job_name;
    l.message = std::move(message);
    emit(l);
  };

  try {
    return with_store(spec, ns, [&](auto store) -> int {
      using S = decltype(store);
      auto scheduler = lease::make_scheduler(
          lease::store = std::move(store), lease::executor = lease::thread_pool{2},
          lease::overlap = lease::skip,
          lease::settings = lease::options{.lease = lease_time,
                                           .heartbeat = heartbeat,
                                           .max_attempts = max_attempts,
                                           .claim_jitter = claim_jitter,
                                           .catch_up_jitter = catch_up_jitter,
                                           .stop_timeout = stop_timeout,
                                           .instance = name});
      // A second connection, used only after `lost`: it plays a runner that
      // ignores the event and records its result anyway. The store must refuse.
      S probe = open_as<S>(spec, ns);
      token_book tokens;

      scheduler.add(job_name, lease::every(interval), [&](lease::run_context& ctx) {
        tokens.put(ctx.slot, ctx.attempt, ctx.token);
        line l{'H', clock.now(), name, "start", ctx.job, ctx.slot, ctx.attempt, ctx.fence, ctx.token, {}};
        emit(l);
        for (int step = 0; step < handler_steps; ++step) {
          if (ctx.stop.stop_requested()) {
            l.at = clock.now();
            l.what = "end";
            l.message = "stopped after " + std::to_string(step) + " of " + std::to_string(handler_steps) +
                        " steps: its stop token was requested";
            emit(l);
            throw std::runtime_error("stopped after " + std::to_string(step) + " of " +
                                     std::to_string(handler_steps) + " steps");
          }
          std::this_thread::sleep_for(step_time);  // one step of "work"
        }
        l.at = clock.now();
        l.what = "end";
        l.message = "done: " + std::to_string(handler_steps) + " of " + std::to_string(handler_steps) + " steps";
        emit(l);
      });

      scheduler.on_event([&](const lease::event& e) {
        emit({'E', e.at, e.instance, std::string(lease::to_string(e.kind)), e.run.job, e.run.slot, e.attempt, e.fence,
              {}, e.message});
        if (e.kind != lease::event_kind::lost) return;
        const std::string token = tokens.get(e.run.slot, e.attempt);
        line probe_line{'F', clock.now(), name, "refused", e.run.job, e.run.slot, e.attempt, e.fence, token, {}};
        if (token.empty()) {
          probe_line.what = "skipped";
          probe_line.message = "the handler had not started, so there is no token to try";
        } else {
          try {
            const bool accepted = probe.finish(e.run, token, lease::run_status::success);
            probe_line.what = accepted ? "accepted" : "refused";
            probe_line.message = accepted ? "finish(old token, success) was ACCEPTED by the store"
                                          : "finish(old token, success) refused by the store: the token is not current";
          } catch (const std::exception& ex) {
            probe_line.what = "error";
            probe_line.message = ex.what();
          }
        }
        probe_line.at = clock.now();
        emit(probe_line);
      });

      scheduler.start();
      say('R', "ready", "instance up: pid " + std::to_string(::getpid()));
      int sig = 0;
      sigwait(&stop_signals, &sig);
      say('R', "stopping", std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + ": stop() hands running runs over");
      scheduler.stop();
      return 0;
    });
  } catch (const std::exception& e) {
    say('R', "error", e.what());
    std::fprintf(stderr, "cluster_demo instance %s: %s\n", name.c_str(), e.what());
    return 2;
  }
}

}  // namespace demo
