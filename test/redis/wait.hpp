// test/redis/wait.hpp — bounded polls against a real server, and a release
// listener that records what it heard, shared by the redis tests.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lease/error.hpp"

namespace lease::testing {

/// Polls `pred` every 5 ms for at most `limit`; its last answer.
template <class Pred>
bool wait_for(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds{10}) {
  for (auto waited = std::chrono::milliseconds{0}; waited < limit && !pred(); waited += std::chrono::milliseconds{5})
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  return pred();
}

/// Calls `op` until it stops throwing an unavailable store_error (at most `limit`); its value.
template <class Op>
auto until(Op op, std::chrono::milliseconds limit = std::chrono::seconds{10}) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    try {
      return op();
    } catch (const store_error& e) {
      INFO(e.what());
      REQUIRE(e.code() == errc::unavailable);
      REQUIRE(std::chrono::steady_clock::now() < end);
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
  }
}

/// The jobs a release listener heard, behind one lock (it runs on the store's thread).
struct heard_jobs {
  std::mutex m;
  std::vector<std::string> jobs;
  void operator()(std::string_view job) {
    std::scoped_lock lock(m);
    jobs.emplace_back(job);
  }
  std::size_t count(const std::string& job) {
    std::scoped_lock lock(m);
    return static_cast<std::size_t>(std::count(jobs.begin(), jobs.end(), job));
  }
  std::size_t size() {
    std::scoped_lock lock(m);
    return jobs.size();
  }
};

}  // namespace lease::testing
