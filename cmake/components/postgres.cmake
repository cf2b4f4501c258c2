# Dependencies of lease::postgres: libpq, found with CMake's FindPostgreSQL.
find_package(PostgreSQL QUIET)
if(NOT TARGET PostgreSQL::PostgreSQL)
  set(_lease_missing "libpq (Debian: libpq-dev)")
endif()
