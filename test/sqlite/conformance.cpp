// sqlite_store passes the shared store conformance suite unchanged: every
// random history gets the same answers from a real SQLite file as from the
// pure rules. Each history gets a new, empty file.
#include "laws/store_conformance.hpp"

#include <string>

#include "lease/store/sqlite.hpp"
#include "sqlite/temp_dir.hpp"

TEST_CASE("sqlite_store answers every random history exactly as the rules do") {
  lease::testing::temp_dir dir;
  int n = 0;
  lease::testing::check_store_conformance([&](lease::fake_clock c) {
    return lease::sqlite_store{dir.file("history-" + std::to_string(n++) + ".db"), {.clock = [c] { return c.now(); }}};
  });
}
