// example/custom_store/prove.cpp — file_store proven with lease::testing, as
// a user proves a store of their own: the conformance suite (every answer as
// the rules give it, over random histories with losses of state), two
// schedulers sharing one file, and processes racing for the same runs.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <lease/clock/fake.hpp>
#include <lease/testing/scheduler.hpp>
#include <lease/testing/store.hpp>

#include "file_store.hpp"

namespace {

/// A fresh directory for the store files, removed at the end.
struct scratch {
  std::filesystem::path dir;
  scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "custom-store-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
  }
  ~scratch() { std::filesystem::remove_all(dir); }
  [[nodiscard]] std::string file(const std::string& name) const { return (dir / name).string(); }
};

}  // namespace

TEST_CASE("file_store answers every random history as the store rules do, losses of state included") {
  scratch s;
  int n = 0;
  lease::testing::check_store(
      [&](lease::fake_clock c) {
        return example::file_store{s.file("history-" + std::to_string(n++)), [c] { return c.now(); }};
      },
      [](example::file_store& store) {
        std::filesystem::remove(store.path());  // someone deletes the file…
        (void)store.get({"any", {}});           // …and the store notices at its next operation
      });
}

TEST_CASE("two schedulers, each with its own file_store on one file, run every slot once") {
  scratch s;
  lease::testing::check_two_schedulers(
      [&](lease::fake_clock c) { return example::file_store{s.file("shared"), [c] { return c.now(); }}; });
}

TEST_CASE("four processes claiming the same runs on one file get exactly one winner per run") {
  scratch s;
  const std::string path = s.file("race");
  const lease::time_point t0{std::chrono::sys_days{std::chrono::year{2026} / 1 / 1}};
  constexpr int runs = 40;
  int total_wins = 0;
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      example::file_store store{path, [t0] { return t0 + std::chrono::minutes{1}; }};
      int wins = 0;
      for (int i = 0; i < runs; ++i) {
        lease::claim_request req;
        req.run = {"report", t0 + std::chrono::seconds{i}};
        req.runner = "process-" + std::to_string(p);
        req.token = req.runner + "-" + std::to_string(i);
        req.deadline = req.run.slot + std::chrono::hours{1};
        req.overlap = lease::overlap_mode::allow;
        if (store.claim(req).outcome == lease::claim_outcome::won) ++wins;
      }
      std::_Exit(wins);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    total_wins += WEXITSTATUS(status);
  }
  CHECK(total_wins == runs);
  example::file_store store{path, [t0] { return t0 + std::chrono::minutes{1}; }};
  for (int i = 0; i < runs; ++i) {
    const auto rec = store.get({"report", t0 + std::chrono::seconds{i}});
    REQUIRE(rec.has_value());
    CHECK(rec->attempt == 1);
    CHECK(rec->token == rec->runner + "-" + std::to_string(i));
  }
}
