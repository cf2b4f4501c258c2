// lease/scheduler/detail/instance_id.hpp — the default instance id, hostname:pid.
#pragma once

#include <string>

#include <unistd.h>

namespace lease::detail {

/// "hostname:pid": unique per live process on a host, readable in a store.
inline std::string default_instance_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string h = host[0] != '\0' ? std::string(host) : std::string("localhost");
  return h + ":" + std::to_string(::getpid());
}

}  // namespace lease::detail
