// quickstart — one job every second on an in-memory store; prints every event,
// runs for a few seconds, then stops (handing over anything still running).
#include <chrono>
#include <iostream>
#include <thread>

#include <lease/lease.hpp>

int main() {
  using namespace std::chrono_literals;

  auto scheduler = lease::make_scheduler(lease::executor = lease::thread_pool{2},
                                         lease::settings = lease::options{.lease = 3s, .instance = "demo-1"});

  int runs = 0;  // written by the handler thread, read after stop(): the join orders it
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
