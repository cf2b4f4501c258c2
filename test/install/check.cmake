# cmake -P script: install lease into a prefix, then check what a user gets:
# the layout (CMake package under share/, pkg-config files, LICENSE and
# README), consumers built with find_package and with pkg-config, optional
# components reported rather than fatal, and a sentence for a component
# target used without asking for it.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
file(MAKE_DIRECTORY ${WORK_DIR}/empty)  # an empty pkg-config search path

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY ${WORK_DIR})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

# Configures the consumer in build-<name> with extra -D arguments; EXPECT
# FAIL: the configuration must fail. Then the output must match every MATCH.
function(consumer name)
  cmake_parse_arguments(arg "FAIL" "" "ARGS;MATCH;ENV" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${arg_ENV}
      ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build-${name} -G ${GENERATOR}
      -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} ${arg_ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(text "${out}${err}")
  if(arg_FAIL AND rc EQUAL 0)
    message(FATAL_ERROR "consumer ${name}: configuring should have failed:\n${text}")
  elseif(NOT arg_FAIL AND NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer ${name}: configuring failed (${rc}):\n${text}")
  endif()
  foreach(m IN LISTS arg_MATCH)
    string(REGEX REPLACE "[ \n]+" " " flat "${text}")
    if(NOT flat MATCHES "${m}")
      message(FATAL_ERROR "consumer ${name}: the output does not say \"${m}\":\n${text}")
    endif()
  endforeach()
  message(STATUS "consumer ${name}: ok")
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The layout: an arch-independent package under share/, nothing in lib/.
foreach(f share/cmake/lease/lease-config.cmake share/cmake/lease/lease-config-version.cmake
          share/cmake/lease/lease-targets.cmake share/cmake/lease/lease-sqlite-targets.cmake
          share/cmake/lease/lease-redis-targets.cmake share/cmake/lease/lease-testing-targets.cmake
          share/cmake/lease/components/redis.cmake
          share/pkgconfig/lease.pc share/pkgconfig/lease-sqlite.pc share/pkgconfig/lease-redis.pc
          share/pkgconfig/lease-testing.pc share/pkgconfig/lease-prometheus.pc
          share/cmake/lease/lease-prometheus-targets.cmake share/cmake/lease/lease-postgres-targets.cmake
          share/pkgconfig/lease-postgres.pc
          share/doc/lease/LICENSE share/doc/lease/README.md share/doc/lease/doc/protocol.md
          include/lease/lease.hpp include/lease/testing/store.hpp include/lease/store/redis.hpp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# leasectl (tools/leasectl), when this build made it: in bin/, and it runs.
if(LEASECTL)
  run(${prefix}/bin/leasectl --help)
  if(NOT last_output MATCHES "Exit codes:")
    message(FATAL_ERROR "bin/leasectl --help does not list its exit codes:\n${last_output}")
  endif()
endif()
file(GLOB_RECURSE in_lib LIST_DIRECTORIES false ${prefix}/lib/*)
if(in_lib)
  message(FATAL_ERROR "a header-only library installed arch-dependent files: ${in_lib}")
endif()

# find_package with every component, then build and run.
consumer(all MATCH "lease_sqlite_FOUND=TRUE" "lease_redis_FOUND=TRUE" "lease_testing_FOUND=TRUE")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build-all)
run(${WORK_DIR}/build-all/consumer)

# The core alone; an unknown optional component is reported, not fatal.
consumer(core ARGS "-DREQUIRED_COMPONENTS=" "-DOPTIONAL_COMPONENTS=nosuch" "-DLINK=lease::lease"
         MATCH "lease_nosuch_FOUND=FALSE" "optional component nosuch not found: lease has no component \"nosuch\"")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build-core)
run(${WORK_DIR}/build-core/consumer)

# An unknown REQUIRED component fails find_package, saying which.
consumer(unknown FAIL ARGS "-DREQUIRED_COMPONENTS=nosuch" "-DLINK=lease::lease"
         MATCH "required components of lease are missing: lease has no component \"nosuch\" \\(it has: sqlite, redis, testing, postgres, prometheus")

# lease::redis linked without asking for it: a sentence, not "target not found".
consumer(unasked FAIL ARGS "-DREQUIRED_COMPONENTS=sqlite" "-DLINK=lease::lease,lease::sqlite,lease::redis"
         MATCH "target \"consumer\" links lease::redis, but find_package\\(lease\\) did not ask for the redis component: add it")

# A component whose dependency is missing (no hiredis for pkg-config to find):
# optional → reported, and its target says why when used; required → fails.
consumer(nohiredis ENV PKG_CONFIG_LIBDIR=${WORK_DIR}/empty PKG_CONFIG_PATH=
         ARGS "-DREQUIRED_COMPONENTS=sqlite" "-DOPTIONAL_COMPONENTS=redis" "-DLINK=lease::lease,lease::sqlite"
         MATCH "lease_redis_FOUND=FALSE" "needs hiredis, found with pkg-config \\(Debian: libhiredis-dev and pkg-config\\)")
consumer(nohiredis-used FAIL ENV PKG_CONFIG_LIBDIR=${WORK_DIR}/empty PKG_CONFIG_PATH=
         ARGS "-DREQUIRED_COMPONENTS=sqlite" "-DOPTIONAL_COMPONENTS=redis" "-DLINK=lease::lease,lease::redis"
         MATCH "target \"consumer\" links lease::redis, but lease's redis component is not available")
consumer(nohiredis-required FAIL ENV PKG_CONFIG_LIBDIR=${WORK_DIR}/empty PKG_CONFIG_PATH=
         ARGS "-DREQUIRED_COMPONENTS=redis" "-DLINK=lease::lease"
         MATCH "required components of lease are missing: lease's redis component needs hiredis")

# pkg-config: the same program, compiled by hand with the flags of
# lease-sqlite and lease-testing (which bring lease's and their dependencies').
find_program(PKG_CONFIG pkg-config REQUIRED)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/share/pkgconfig
    ${PKG_CONFIG} --cflags --libs lease-sqlite lease-testing
  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config lease-sqlite lease-testing failed: ${err}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} -std=c++20 -DCONSUMER_SQLITE=1 -DCONSUMER_TESTING=1 ${CONSUMER_DIR}/main.cpp -o ${WORK_DIR}/pc-consumer ${flags})
run(${WORK_DIR}/pc-consumer)
message(STATUS "pkg-config consumer: ok (${flags})")
