# lease-pkgconfig.cmake — lease.pc and lease-<component>.pc, for builds that
# use pkg-config instead of CMake:
#
#   c++ -std=c++20 app.cpp $(pkg-config --cflags --libs lease-sqlite)
#
# The files are relocatable (prefix = the .pc file's directory/../..) and go
# to share/pkgconfig: the library is header-only. What the core needs from
# its dependencies is read from their CMake targets here, so that the flags
# match what lease::lease gives a CMake user (date/tz's compile definitions
# in particular: they select its ABI).

# The core's own flags: date/tz, Boost's include directory when it is not a
# system one, threads.
function(_lease_core_pc_flags cflags_out libs_out)
  set(cflags "")
  set(libs "")
  foreach(t date::date date::date-tz)
    get_target_property(defs ${t} INTERFACE_COMPILE_DEFINITIONS)
    foreach(d IN LISTS defs)
      if(d)
        list(APPEND cflags "-D${d}")
      endif()
    endforeach()
  endforeach()
  foreach(dir IN LISTS Boost_INCLUDE_DIRS)
    if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND NOT dir STREQUAL "/usr/include")
      list(APPEND cflags "-I${dir}")
    endif()
  endforeach()
  get_target_property(configs date::date-tz IMPORTED_CONFIGURATIONS)
  set(location "")
  foreach(cfg IN LISTS configs)
    get_target_property(location date::date-tz IMPORTED_LOCATION_${cfg})
    if(location)
      break()
    endif()
  endforeach()
  if(location)
    get_filename_component(dir "${location}" DIRECTORY)
    if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND libs "-L${dir}")
    endif()
  endif()
  list(APPEND libs -ldate-tz -pthread)
  list(JOIN cflags " " cflags)
  list(JOIN libs " " libs)
  set(${cflags_out} "${cflags}" PARENT_SCOPE)
  set(${libs_out} "${libs}" PARENT_SCOPE)
endfunction()

# lease_write_pc(<file name> <Requires> <extra Libs>): writes and installs
# <file name>.pc. The core (lease) carries the core's own flags.
function(lease_write_pc name requires extra_libs)
  set(cflags "-I\${includedir}")
  set(libs "${extra_libs}")
  if(name STREQUAL "lease")
    _lease_core_pc_flags(core_cflags core_libs)
    string(APPEND cflags " ${core_cflags}")
    set(libs "${core_libs}")
    set(description "${PROJECT_DESCRIPTION} (header-only core; compile with -std=c++20 or later)")
  else()
    string(REPLACE "lease-" "" component "${name}")
    set(description "lease::${component}: ${PROJECT_DESCRIPTION}")
    set(cflags "")
  endif()
  set(content "prefix=\${pcfiledir}/../..
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: ${name}
Description: ${description}
Version: ${PROJECT_VERSION}
Requires: ${requires}
Cflags: ${cflags}
Libs: ${libs}
")
  file(WRITE ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc "${content}")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig)
endfunction()
