// quickstart — one job every second on an in-memory store; prints every event,
// runs for a few seconds, then stops (handing over anything still running).
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include <lease/lease.hpp>

int main() {
  using namespace std::chrono_literals;

  // One instance over an in-memory store (one process only; use the SQLite
  // or Redis store to share runs between processes). Leases of 3 s renew
  // every 500 ms; a missed slot is caught up within 200 ms of start.
  auto scheduler = lease::make_scheduler(
      lease::executor = lease::thread_pool{2},
      lease::settings = lease::options{.lease = 3s, .catch_up_jitter = 200ms, .instance = "demo-1"});

  std::atomic<int> runs{0};  // handlers run on the pool's threads
  scheduler.add("heartbeat-report", lease::every(1s), [&](lease::run_context& ctx) {
    ++runs;
    std::cout << "  handler: job " << ctx.job << ", attempt " << ctx.attempt << ", fence " << ctx.fence << '\n';
  });
  scheduler.on_event([](const lease::event& e) {
    const auto second = std::chrono::floor<std::chrono::seconds>(e.run.slot).time_since_epoch().count() % 60;
    std::cout << lease::to_string(e.kind) << "  " << e.run.job << " slot :" << second << "  " << e.message << '\n';
  });

  scheduler.start();
  std::this_thread::sleep_for(3500ms);
  scheduler.stop(2s);

  std::cout << runs << " runs\n";
  return runs >= 2 ? 0 : 1;  // it is also a test: a few slots must have run
}
