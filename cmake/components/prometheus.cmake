# Dependencies of lease::prometheus: prometheus-cpp 1.0.1 (Debian 12) ships a
# CMake package: core (the metrics) and pull (the HTTP Exposer).
find_package(prometheus-cpp CONFIG QUIET)
if(NOT TARGET prometheus-cpp::core OR NOT TARGET prometheus-cpp::pull)
  set(_lease_missing "prometheus-cpp (Debian: prometheus-cpp-dev)")
endif()
