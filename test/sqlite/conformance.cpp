// sqlite_store passes the shared store conformance suite unchanged: every
// random history gets the same answers from a real SQLite file as from the
// pure rules. Each history gets a new, empty file. Its losses of state are
// real: the file is deleted (with its -wal and -shm) or an empty file is
// renamed over it while the store has it open; the store notices at its
// next operation, which the hook makes at once, so that it records the loss
// at the same store time as rules::lose_state.
#include "laws/store_conformance.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "lease/store/sqlite.hpp"
#include "sqlite/temp_dir.hpp"

// The suite generates stop, register_jobs and purge steps only for a store
// that models these: it must not skip them silently.
static_assert(lease::StopStore<lease::sqlite_store> && lease::RegistryStore<lease::sqlite_store>);

TEST_CASE("sqlite_store answers every random history exactly as the rules do") {
  lease::testing::temp_dir dir;
  int n = 0;
  int losses = 0;
  lease::testing::check_store_conformance(
      [&](lease::fake_clock c) {
        // A fresh file is not a loss in the rules' model: no creation quarantine.
        return lease::sqlite_store{dir.file("history-" + std::to_string(n++) + ".db"),
                                   {.clock = [c] { return c.now(); }, .quarantine_new_file = false}};
      },
      [&](lease::sqlite_store& s) {
        const std::string path = s.path();
        if (losses++ % 2 == 0) {
          for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
        } else {
          const std::string empty = path + ".empty";
          std::ofstream{empty}.close();
          std::filesystem::rename(empty, path);  // atomic replace, as `mv` does
          for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(path + suffix);
        }
        (void)s.lost_at();  // the store notices now, at the clock's current time
        CHECK(s.take_notices().size() == 1);
      });
}
