// The reference store passes the conformance suite: this proves the suite
// and the rules agree about a store that *is* the rules, and that the
// invariants hold on random histories.
#include "laws/store_conformance.hpp"
#include "laws/two_schedulers.hpp"

#include <optional>

#include "lease/store/memory.hpp"

TEST_CASE("memory_store answers every random history exactly as the rules do") {
  lease::testing::check_store_conformance([](lease::fake_clock c) { return lease::memory_store<lease::fake_clock>{c}; },
                                          [](lease::memory_store<lease::fake_clock>& s) { s.lose_state(); });
}

TEST_CASE("two schedulers sharing one memory_store run every slot of a job exactly once") {
  std::optional<lease::memory_store<lease::fake_clock>> shared;  // copies share one table
  lease::testing::check_two_schedulers_run_each_slot_once([&](lease::fake_clock c) {
    if (!shared) shared.emplace(c);
    return *shared;
  });
}
