// lease/executor/task.hpp — lease::task, one handler invocation handed to an Executor.
#pragma once

#include <cassert>
#include <memory>
#include <type_traits>
#include <utility>

#include "lease/run_context.hpp"

namespace lease {

/// A move-only callable that runs one attempt's handler and reports its
/// completion back to the scheduler. Calling it more than once, or calling a
/// moved-from task, is a precondition violation.
///
/// `context()` lets an executor see which run it is about to start (job,
/// slot, attempt, token, fence) and watch `context().stop` — the simulation's
/// executor uses it to decide when a scripted handler ends. The task never
/// throws: the handler's exception is caught and reported as a failure.
class task {
 public:
  /// `body(ctx)` is invoked once with the task's own context.
  template <class F>
    requires std::is_invocable_v<F&, run_context&>
  task(run_context ctx, F body)
      : impl_(std::make_unique<model<F>>(std::move(ctx), std::move(body))) {}

  /// An empty task (`!t`); only assignment and destruction are valid on it.
  task() noexcept = default;
  task(task&&) noexcept = default;
  task& operator=(task&&) noexcept = default;
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() = default;

  /// Runs the handler (on the calling thread).
  void operator()() {
    assert(impl_ && "lease::task called after move");
    impl_->run();
  }
  /// The attempt this task runs.
  [[nodiscard]] const run_context& context() const { return impl_->ctx; }
  [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }

 private:
  struct base {
    explicit base(run_context c) : ctx(std::move(c)) {}
    virtual ~base() = default;
    virtual void run() = 0;
    run_context ctx;
  };
  template <class F>
  struct model final : base {
    model(run_context c, F f) : base(std::move(c)), body(std::move(f)) {}
    void run() override { body(ctx); }
    F body;
  };
  std::unique_ptr<base> impl_;
};

}  // namespace lease
