// readme — the code shown in README.md's "Using it", compiled and run as a
// test so the README cannot drift from the library.
#include <cassert>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <vector>

#include <lease/lease.hpp>
#include <lease/store/sqlite.hpp>

using namespace std::chrono_literals;

namespace {
struct stopped {};
std::vector<int> work() { return {1, 2, 3}; }
void write(int, std::uint64_t) {}
void log(std::string_view kind, const std::string& job, const std::string& message) {
  std::cout << kind << ' ' << job << ": " << message << '\n';
}
}  // namespace

int main() {
  const auto db = std::filesystem::temp_directory_path() / ("lease-readme-" + std::to_string(::getpid()) + ".db");
  {
    // --- README: Using it ---
    auto s = lease::make_scheduler(lease::store = lease::sqlite_store{db.string()},
                                   lease::executor = lease::thread_pool{4},
                                   lease::settings = lease::options{.lease = 30s});  // any order
    s.add("nightly-report", lease::cron("0 3 * * mon-fri", "Europe/Berlin"), [](lease::run_context& ctx) {
      for (auto& chunk : work()) {
        if (ctx.stop.stop_requested()) throw stopped{};  // fenced, or stop(): hand it over
        write(chunk, /*fence=*/ctx.fence);                // pass the fence to your own writes
      }
    });
    s.on_event([](const lease::event& e) { log(lease::to_string(e.kind), e.run.job, e.message); });
    s.start();
    s.stop();
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + suffix);

  // --- README: Testing your own jobs on simulated time ---
  lease::sim::cluster<> sim(/*seed=*/42, lease::options{.lease = 3s});
  sim.add_job("report", lease::every(10s), [](const lease::run_context&) {
    return lease::sim::script{.runs_for = 5s};
  });
  for (int i = 0; i < 3; ++i) sim.add_instance("n" + std::to_string(i), /*skew=*/150ms * i);
  sim.start_all();
  sim.run_for(10s + 500ms);
  sim.crash(0);
  sim.run_for(5s);
  if (!sim.violations().empty()) {
    std::cerr << sim.describe();
    return 1;
  }
  std::cout << "simulated history: no invariant violated\n";
  return 0;
}
