// test/sqlite/raw_sql.hpp — SQL run on a store file without the store: an
// older release's file, a foreign application's, a damaged one, by hand.
#pragma once

#include <string>

#include <catch2/catch.hpp>
#include <sqlite3.h>

namespace lease::testing {

/// Runs `sql` on the file at `path` with a plain connection of the test's own.
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace lease::testing
