// test/sqlite/helpers.hpp — what the SQLite store's tests share: a store on a
// fake clock, a claim request, the error a call throws, a file's inode.
#pragma once

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "lease/clock/fake.hpp"
#include "lease/error.hpp"
#include "lease/store/sqlite.hpp"

namespace lease::testing::sqlite {

/// A store on `path` whose clock is the test's. A fresh test file is not a
/// lost one unless the test says so (`quarantine_new_file`).
inline sqlite_store store_on(const std::string& path, const fake_clock& c, bool quarantine_new_file = false) {
  return sqlite_store{path, {.clock = [c] { return c.now(); }, .quarantine_new_file = quarantine_new_file}};
}

/// A claim of (job, slot) with a 30 s lease by runner "runner-<token>",
/// claimable until `deadline_after` past the slot.
inline claim_request claim_of(std::string job, time_point slot, std::string token,
                              claim_reason reason = claim_reason::scheduled,
                              duration deadline_after = std::chrono::seconds{30}) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.reason = reason;
  r.lease = std::chrono::seconds{30};
  r.deadline = slot + deadline_after;
  return r;
}

/// The store_error that `f` throws (fails the test if it throws nothing).
template <class F>
store_error error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const store_error& e) {
    return e;
  }
  FAIL("expected a lease::store_error");
  throw std::logic_error("unreachable");
}

inline std::uint64_t inode(const std::string& path) {
  struct ::stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<std::uint64_t>(st.st_ino);
}

}  // namespace lease::testing::sqlite
