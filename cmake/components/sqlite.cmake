# Dependencies of lease::sqlite. Included by the build and by the installed
# package config: finds quietly, and names what is missing in _lease_missing.
find_package(SQLite3 QUIET)
if(NOT TARGET SQLite::SQLite3)
  set(_lease_missing "SQLite 3 (Debian: libsqlite3-dev)")
endif()
