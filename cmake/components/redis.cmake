# Dependencies of lease::redis. hiredis 0.14 (Debian 12) ships no CMake
# package: it is found with pkg-config.
if(NOT TARGET PkgConfig::HIREDIS)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET GLOBAL hiredis)
  endif()
endif()
if(NOT TARGET PkgConfig::HIREDIS)
  set(_lease_missing "hiredis, found with pkg-config (Debian: libhiredis-dev and pkg-config)")
endif()
