# Dependencies of lease::testing, the kit that proves a Store, Clock,
# Executor or Schedule against the laws: Catch2 v2 and RapidCheck.
find_package(Catch2 2 QUIET)
find_package(rapidcheck CONFIG QUIET)
if(NOT TARGET Catch2::Catch2 OR NOT TARGET rapidcheck OR NOT TARGET rapidcheck_catch)
  set(_lease_missing "Catch2 2 and RapidCheck (Debian: catch2 and librapidcheck-dev)")
endif()
