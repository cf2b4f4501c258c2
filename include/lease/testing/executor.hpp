// lease/testing/executor.hpp — the Executor laws (lease/executor/concept.hpp),
// checked on an executor of yours.
//
//   TEST_CASE("my_executor keeps the Executor laws") {
//     lease::testing::check_executor([] { return my_executor{4}; },
//                                    [](my_executor& e) { e.wait_idle(); },
//                                    lease::testing::executor_kind::concurrent);
//   }
//
// `make()` returns a new executor; `drain(e)` runs or waits for what was
// given to it (a manual executor runs its queue; a thread pool may do
// nothing: its destructor drains). `kind` says whether execute() may return
// before the task ran (concurrent: a pool; L2 is then checked) or runs it on
// the spot or later on the caller's thread (inline or deferred).
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lease/executor/concept.hpp"
#include "lease/testing/detail.hpp"

namespace lease::testing {

enum class executor_kind {
  concurrent,  ///< execute() hands the task to other threads and returns
  on_caller,   ///< the task runs inside execute() or later on the caller's thread (inline, manual)
};

/// The Executor laws with `tasks` tasks. Returns what is broken, as sentences.
template <class MakeExecutor, class Drain>
[[nodiscard]] std::vector<std::string> executor_violations(MakeExecutor make, Drain drain, executor_kind kind,
                                                           int tasks = 200) {
  using E = decltype(make());
  static_assert(Executor<E>, "lease::testing::check_executor: make() must return a lease::Executor");
  std::vector<std::string> broken;
  const auto n = static_cast<std::size_t>(tasks);
  auto calls = std::make_shared<std::vector<std::atomic<int>>>(n);
  auto wrong_context = std::make_shared<std::atomic<int>>(0);
  std::vector<std::weak_ptr<int>> alive;  // expires when the task (its body) is destroyed
  {
    E e = make();
    for (std::size_t i = 0; i < n; ++i) {
      run_context ctx;
      ctx.job = "task-" + std::to_string(i);
      ctx.attempt = static_cast<std::uint32_t>(i);
      auto marker = std::make_shared<int>(0);
      alive.push_back(marker);
      e.execute(task(std::move(ctx), [calls, wrong_context, i, marker](run_context& c) {
        if (c.job != "task-" + std::to_string(i) || c.attempt != i) ++*wrong_context;
        ++(*calls)[i];
      }));
    }
    if (kind == executor_kind::concurrent) {
      // L2: execute() returns while its task still runs (the task waits for
      // this thread to open a gate, so an execute() that waited for it would
      // hold it 10 s). L3: execute() is called again meanwhile.
      struct gate {
        std::mutex m;
        std::condition_variable cv;
        bool open = false;
      };
      auto g = std::make_shared<gate>();
      auto waited_out = std::make_shared<std::atomic<bool>>(false);
      e.execute(task(run_context{}, [g, waited_out](run_context&) {
        std::unique_lock l(g->m);
        if (!g->cv.wait_for(l, std::chrono::seconds(10), [&] { return g->open; })) *waited_out = true;
      }));
      e.execute(task(run_context{}, [](run_context&) {}));
      {
        std::scoped_lock l(g->m);
        g->open = true;
      }
      g->cv.notify_all();
      drain(e);
      if (*waited_out)
        broken.emplace_back("L2: execute() did not return until its task had waited 10 s for it: it waits for "
                            "the task, so a handler would block the scheduler's loop");
    } else {
      drain(e);
    }
  }  // the executor is destroyed here
  for (std::size_t i = 0; i < n; ++i) {
    const int c = (*calls)[i].load();
    if (c > 1) broken.push_back("L1: task " + std::to_string(i) + " was called " + std::to_string(c) + " times");
    if (c == 0 && !alive[i].expired())
      broken.push_back("L1: task " + std::to_string(i) + " was neither called nor destroyed with the executor");
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!alive[i].expired()) {
      broken.emplace_back("L1: the executor, once destroyed, still holds a task");
      break;
    }
  int called = 0;
  for (std::size_t i = 0; i < n; ++i) called += (*calls)[i].load() > 0 ? 1 : 0;
  if (called == 0 && n > 0)
    broken.emplace_back("L1: no task was called after drain(): drain must run or wait for what was given");
  if (*wrong_context > 0)
    broken.push_back("a task saw a context other than the one it was given (" + std::to_string(wrong_context->load()) +
                     " times)");
  return broken;
}

/// Catch2: the Executor laws hold (call inside a TEST_CASE).
template <class MakeExecutor, class Drain>
void check_executor(MakeExecutor make, Drain drain, executor_kind kind) {
  const std::vector<std::string> broken = executor_violations(std::move(make), std::move(drain), kind);
  INFO(detail::lines(broken));
  CHECK(broken.empty());
}

}  // namespace lease::testing
