// test/chaos/pg_server.hpp — the chaos suite's PostgreSQL: the tests'
// postgres_server (test/postgres/server.hpp) on a copy of a cluster initdb'd
// once per build tree (its settings::template_dir), since every CTest entry
// here is a process with a server of its own.
#pragma once

#include <filesystem>

#include "postgres/server.hpp"

namespace chaos {

class pg_server : public lease::testing::postgres_server {
 public:
  /// A server whose data directory is a copy of `template_dir` (initdb'd
  /// there first if it does not hold a cluster yet).
  explicit pg_server(const std::filesystem::path& template_dir) : postgres_server(settings{{}, template_dir}) {}
};

}  // namespace chaos
