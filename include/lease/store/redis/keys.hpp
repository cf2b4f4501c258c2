// lease/store/redis/keys.hpp — the Redis keys of one job, all in one cluster slot.
//
// Every key of a job starts with the hash tag `{<prefix>:<length>:<job>}`, so
// every script touches one slot and works on Redis Cluster / Valkey cluster
// unchanged. The job is length-prefixed, never escaped: whatever bytes it
// holds ('{', '}', NUL, newlines), all of its keys share the same leading
// bytes, so Redis finds the same tag in each (a '}' inside the job only ends
// the tag early, for all of them alike), and two jobs never share a key
// because the length says where the job ends. The prefix may not hold braces:
// one at its start could make the tag empty, and Redis would then hash whole
// keys, splitting a job across slots. The prefix is not length-prefixed, so
// two prefixes of one server can meet: prefix "p" with job "3:abc" and
// prefix "p:5" with job "abc" both give "{p:5:3:abc}". Refusing every prefix
// with a numeric ':' part would break deployments that work; redis_options
// and the README say to keep prefixes apart instead, and changing the key
// layout would lose every stored run at an upgrade.
#pragma once

#include <string>
#include <string_view>

#include "lease/error.hpp"
#include "lease/store/redis/printable.hpp"

namespace lease::detail::redis {

/// The keys of one job (see scripts.hpp for what each holds): its runs hash,
/// its ended runs' zset, its registrations' hash. list_jobs finds a job by
/// its runs or instances key.
struct job_keys {
  std::string runs, ended, instances;
};

/// Throws store_error(errc::invalid_argument) for a prefix holding a brace.
inline void check_prefix(std::string_view prefix) {
  if (prefix.find_first_of("{}") != std::string_view::npos)
    throw store_error(make_error_code(errc::invalid_argument),
                      "lease::redis_store: the key prefix must not contain '{' or '}' (it is inside the "
                      "cluster hash tag): '" + printable(prefix, 100) + "'");
}

[[nodiscard]] inline job_keys keys_for(std::string_view prefix, std::string_view job) {
  std::string tag;
  tag.reserve(prefix.size() + job.size() + 24);
  tag.append("{").append(prefix).append(":").append(std::to_string(job.size())).append(":").append(job).append("}:");
  return {tag + "runs", tag + "ended", tag + "instances"};
}

/// The job's release channel (sharded pub/sub, store/redis/subscriber.hpp):
/// the job's hash tag, so it lives on the job's shard. The finish and release
/// scripts derive it from their first key ("...}:runs" -> "...}:released").
[[nodiscard]] inline std::string release_channel(std::string_view prefix, std::string_view job) {
  std::string c;
  c.reserve(prefix.size() + job.size() + 32);
  c.append("{").append(prefix).append(":").append(std::to_string(job.size())).append(":").append(job).append("}:released");
  return c;
}

/// The store's trigger channel (classic pub/sub, trigger_subscriber.hpp):
/// the trigger script PUBLISHes the job's name to it. One channel for the
/// whole prefix, not one per job: an instance hears every trigger without
/// subscribing job by job, and on a cluster a PUBLISH reaches every node, so
/// one connection to any node hears them all (triggers are an operator's
/// rare requests: the broadcast costs nothing that matters). Apart from the
/// release channels ("...}:released") by its name, so the two never mix.
[[nodiscard]] inline std::string trigger_channel(std::string_view prefix) {
  return "{" + std::string(prefix) + "}:triggered";
}

/// The store's own key: its marker (an id written at first use) and the
/// quarantine after a detected loss (scripts.hpp, marker script). Its own
/// hash tag, apart from every job's: only the marker script and a plain
/// HMGET touch it, never a job's script.
[[nodiscard]] inline std::string store_key(std::string_view prefix) {
  return "{" + std::string(prefix) + "}:store";
}

}  // namespace lease::detail::redis
