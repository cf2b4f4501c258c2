// custom_executor — run lease's handlers on your own executor: here a
// Boost.Asio io_context served by two threads of the application.
//
// An Executor is any movable type with `execute(lease::task)`. The task is
// move-only and runs the handler once; it never throws (a handler's exception
// is caught and reported to the scheduler as a failure). The scheduler itself
// keeps its own loop thread: store calls never happen on the executor.
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <lease/lease.hpp>

/// Posts each task to an io_context. Holds a pointer: the io_context outlives
/// the scheduler (it is declared first in main).
struct asio_executor {
  boost::asio::io_context* io;
  void execute(lease::task t) {
    boost::asio::post(*io, [t = std::move(t)]() mutable { t(); });
  }
};
static_assert(lease::Executor<asio_executor>);

int main() {
  using namespace std::chrono_literals;

  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&io] { io.run(); });

  std::atomic<int> runs{0};
  {
    auto scheduler = lease::make_scheduler(lease::executor = asio_executor{&io},
                                           lease::settings = lease::options{.lease = 3s, .instance = "asio-demo"});
    scheduler.add("asio-job", lease::every(500ms), [&](lease::run_context& ctx) {
      ++runs;
      std::cout << "run " << ctx.job << " attempt " << ctx.attempt << " on an io_context thread\n";
    });
    scheduler.on(lease::event_kind::success, [](const lease::event& e) { std::cout << "  success: " << e.message << '\n'; });
    scheduler.start();
    std::this_thread::sleep_for(2200ms);
    scheduler.stop(2s);
  }  // the scheduler is gone before the io_context stops

  guard.reset();
  for (auto& t : threads) t.join();
  std::cout << runs << " runs\n";
  return runs >= 2 ? 0 : 1;
}
