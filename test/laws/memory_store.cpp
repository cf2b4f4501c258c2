// The reference store passes the conformance suite: this proves the suite
// and the rules agree about a store that *is* the rules, and that the
// invariants hold on random histories.
#include "laws/store_conformance.hpp"

#include "lease/store/memory.hpp"

TEST_CASE("memory_store answers every random history exactly as the rules do") {
  lease::testing::check_store_conformance([](lease::fake_clock c) { return lease::memory_store<lease::fake_clock>{c}; });
}
