// lease/store/redis/watch.hpp — how a redis_store handle notices that the
// server lost its state, and what it tells the operator about the server.
//
// Why detection, not trust: Redis restarted without persistence, keys
// evicted (maxmemory-policy allkeys-*), FLUSHALL, or a failover to a replica
// that lacked the last writes all look like an empty (or older) store that
// answers normally; believing it lets a retried claim win a run that another
// instance is still running, and fences restart. A fresh empty store looks
// the same, so emptiness alone proves nothing; the evidence is what a handle
// remembers from before:
//   1. per job, the highest fence it has seen. It travels with every claim
//      and with each refused heartbeat's check; a job's stored fence counter
//      below it can only be a loss (fences never go back; pruning keeps the
//      counter). Checked inside the job's own script: atomic, and on Redis
//      Cluster within the job's slot. Every instance claims every slot, so
//      every live instance knows the fences of its jobs. An operator's
//      purge() resets a job's counter on purpose: it leaves a tombstone in
//      the job's runs hash (field "x", the purge's clock, above every fence
//      the job had), and a counter of 0 under a tombstone at or above the
//      known fence is that purge, not a loss (scripts.hpp purge_lua).
//   2. the store's marker: an id written at first use under
//      `{<prefix>}:store`, remembered by the handle. Checked at every
//      (re)connect (a restart or failover always breaks the connection) and,
//      pipelined in the same round trip, after every batch of claims and
//      every trigger (FLUSHALL and eviction keep the connection; read after
//      them, it sees a loss that landed before any of them). Gone, or
//      replaced by another id with no recorded loss, proves a loss.
//   A fence proves a loss store-wide only if it was won after the loss
//   recorded (a fence is at least the store's clock when won): after one
//   loss, each job's first claim proves it again, and that must not move
//   every job's quarantine (marker_lua). The job's own quarantine does move.
//   3. the server's run_id (INFO server): a change says the process restarted
//      or was replaced; with the marker intact that is not a loss (persistence
//      kept it) — it only explains, in the notice, what happened.
// A handle that has seen nothing (first deploy, tests) finds no marker and
// writes one: no quarantine without evidence. Its blind spot: a handle that
// first connects after a loss nobody has detected yet cannot tell.
//
// On detection the quarantine start (store clock) is written where every
// handle reads it: the job's own 'q' field (claims of that job obey it at
// once, atomically) and the store key's "lost" (every handle reads it before
// each claim and sends it with the claim). No attempt is won before
// lost_at + lease (rules.hpp), and a notice sentence says what happened.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lease/detail/string_hash.hpp"
#include "lease/time.hpp"
#include "lease/token.hpp"
#include "lease/store/redis/connection.hpp"
#include "lease/store/redis/keys.hpp"
#include "lease/store/redis/printable.hpp"

namespace lease::detail::redis {

/// What one store handle remembers about its server (heap-allocated, so the
/// connection's on_connect hook can point at it across moves of the store).
struct watch {
  std::string marker;                    ///< the marker id last seen; "" before the first connect
  std::map<std::string, std::string, std::less<>> run_ids;  ///< per node ("host:port"): its run_id at the last connect
  std::optional<std::int64_t> lost_at;   ///< the store-wide quarantine start (ms), if any
  std::unordered_map<std::string, std::uint64_t, string_hash, std::equal_to<>> fences;  ///< highest fence seen, per job
  std::vector<std::string> notices;      ///< for take_notices()
  std::set<std::string, std::less<>> told;  ///< nodes whose settings were told
  std::mt19937_64 rng{std::random_device{}()};

  [[nodiscard]] std::uint64_t fence_of(std::string_view job) const {
    auto it = fences.find(job);
    return it == fences.end() ? 0 : it->second;
  }
  void saw_fence(std::string_view job, std::uint64_t f) {
    auto it = fences.find(job);
    if (it == fences.end()) fences.emplace(std::string(job), f);
    else if (f > it->second) it->second = f;
  }
};

/// "2026-11-30T11:50:31.123Z" (UTC) for a store time in ms.
[[nodiscard]] inline std::string iso_utc(std::int64_t ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> t{milliseconds{ms}};
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{t - day};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long long>(hms.hours().count()), static_cast<long long>(hms.minutes().count()),
                static_cast<long long>(hms.seconds().count()), static_cast<long long>(hms.subseconds().count()));
  return buf;
}

/// The value of `field` in an INFO reply ("field:value" lines), if present.
[[nodiscard]] inline std::optional<std::string> info_field(const redisReply* r, std::string_view field) {
  if (r == nullptr || r->type != REDIS_REPLY_STRING) return std::nullopt;
  const std::string_view text(r->str, r->len);
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && line.substr(0, field.size()) == field && line[field.size()] == ':')
      return std::string(line.substr(field.size() + 1));
    at = end + 1;
  }
  return std::nullopt;
}

/// The durability settings read at connect, and one sentence on what they
/// mean for exactly-once.
struct server_settings {
  std::optional<std::string> aof, appendfsync, save, policy;  ///< unknown when unreadable
  std::string config_error;                                    ///< why CONFIG GET failed, if it did

  [[nodiscard]] std::string sentence(const std::string& where) const {
    std::string s = "redis at " + where + ": ";
    const bool aof_on = aof && *aof == "1";
    if (aof_on && appendfsync && *appendfsync == "always") {
      s += "append-only file with fsync on every write: a restart keeps every run";
    } else if (aof_on) {
      s += "append-only file, appendfsync " + printable(appendfsync.value_or("?"), 20) +
           ": a crash may lose the last second of writes";
    } else if (save && !save->empty()) {
      s += "snapshots only (save '" + printable(*save, 60) + "'): a crash loses the writes since the last snapshot";
    } else if (save) {
      s += "no persistence (appendonly no, save ''): a restart forgets every run";
    } else {
      s += "persistence unknown (" + (config_error.empty() ? std::string("CONFIG GET save unanswered") : config_error) +
           "): a restart may forget every run";
    }
    s += "; maxmemory-policy " + printable(policy.value_or("unknown"), 30);
    if (policy && policy->rfind("allkeys-", 0) == 0)
      s += " may evict run state (use noeviction or volatile-*: lease keys have no TTL)";
    else if (policy)
      s += " never evicts lease keys";
    // Honest about what detection misses (a review reproduced both with a
    // restart from an older RDB and a failover to a lagging replica).
    s += ". A lost claim is detected by the instances that had seen its job (fences) or by the store's marker "
         "key, and no run starts for one lease after it. Not detected: a lost heartbeat or finish (a restart "
         "from an older snapshot or append-only file, or a failover to a replica that missed them, brings back "
         "an earlier lease end, or a finished run as running: a backup may then take over a live runner, or run "
         "a finished slot again), and a run lost before any instance saw it. Only appendfsync always, with no "
         "failover to a replica that may lag, keeps every write (with replicas = N, claims and heartbeats count "
         "only once N replicas have them, and a finish they lack is told).";
    return s;
  }
};

/// The reply of the marker script.
struct marker_answer {
  std::string id;
  std::optional<std::int64_t> lost_at;
  bool detected = false;
  std::int64_t now = 0;
};

[[nodiscard]] inline marker_answer parse_marker(const redisReply* r) {
  connection::throw_if_error(r, "checking the store's marker");
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 || r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[2]->type != REDIS_REPLY_INTEGER || r->element[3]->type != REDIS_REPLY_INTEGER)
    raise(redis_errc::bad_reply, "marker", "reply of unexpected shape");
  marker_answer a;
  a.id.assign(r->element[0]->str, r->element[0]->len);
  if (r->element[1]->type == REDIS_REPLY_INTEGER) a.lost_at = r->element[1]->integer;
  a.detected = r->element[2]->integer != 0;
  a.now = r->element[3]->integer;
  return a;
}

/// The marker script's command for this handle; `proof`: "0", or the fence
/// (decimal) of a job whose counter the caller found below it — its own
/// proof of a loss after that fence was won. The strings must outlive the command.
template <class Link>
[[nodiscard]] argv_t marker_command(const Link& c, const std::string& key, const std::string& now,
                                           const watch& w, const std::string& fresh, const std::string& proof) {
  return {"EVALSHA", c.sha(script::marker), "1", key, now, w.marker, fresh, proof};
}
/// No proof of a loss of the caller's own: the marker alone decides.
inline const std::string no_proof = "0";

/// The notice of a loss this handle detected (or learnt of from another).
[[nodiscard]] inline std::string loss_notice(const std::string& where, std::string_view why, std::int64_t lost_at,
                                             std::optional<duration> lease) {
  std::string s = "redis at " + where + " lost its state (" + std::string(why) + "); no run starts until ";
  if (lease)
    s += iso_utc(lost_at + lease->count()) + " (store clock), one lease after the loss was noticed";
  else
    s += "one lease (of each claim) after " + iso_utc(lost_at) + " (store clock), when the loss was noticed";
  s += ", so any runner of a forgotten run has stopped; a job paused in the lost keys is no longer paused "
       "(pause it again)";
  return s;
}

/// Applies a marker answer to the handle: adopts the marker and quarantine,
/// and adds a notice for a loss detected here (`why`) or learnt from another handle.
inline void adopt(watch& w, const marker_answer& a, const std::string& where, std::string_view why,
                  std::optional<duration> lease = std::nullopt) {
  const bool news = a.lost_at && a.lost_at != w.lost_at;
  w.marker = a.id;
  if (a.lost_at && (!w.lost_at || *a.lost_at > *w.lost_at)) w.lost_at = a.lost_at;
  if (a.detected)
    w.notices.push_back(loss_notice(where, why, *a.lost_at, lease));
  else if (news)
    w.notices.push_back(loss_notice(where, "another instance noticed it", *a.lost_at, std::nullopt));
}

/// The on_connect check: reads the server's identity and durability settings
/// and checks the marker, in one round trip (see the banner). On a cluster
/// (`marker_elsewhere` set) the marker lives on the node owning the store
/// key's slot: it is checked through the router, in a second round trip.
inline void verify_on_connect(connection& c, watch& w, const std::string& prefix, const std::string& now,
                              const std::function<reply_ptr(const argv_t&)>& marker_elsewhere = {}) {
  const std::string key = store_key(prefix), fresh = make_token(w.rng);
  std::vector<argv_t> cmds{{"INFO", "server"},
                           {"INFO", "persistence"},
                           {"INFO", "memory"},
                           {"CONFIG", "GET", "save"},
                           {"CONFIG", "GET", "appendfsync"}};
  const argv_t marker = marker_command(c, key, now, w, fresh, no_proof);
  if (!marker_elsewhere) cmds.push_back(marker);
  auto replies = c.exchange(cmds);
  if (marker_elsewhere) replies.push_back(marker_elsewhere(marker));
  const std::string where = c.where();
  const std::string run_id = info_field(replies[0].get(), "run_id").value_or("");
  server_settings set;
  set.aof = info_field(replies[1].get(), "aof_enabled");
  set.policy = info_field(replies[2].get(), "maxmemory_policy");
  for (int i : {3, 4}) {
    const redisReply* r = replies[static_cast<std::size_t>(i)].get();
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
      (i == 3 ? set.save : set.appendfsync) = std::string(r->element[1]->str, r->element[1]->len);
    } else if (r->type == REDIS_REPLY_ERROR && set.config_error.empty()) {
      set.config_error = "CONFIG is renamed or forbidden here: " + printable({r->str, r->len}, 120);
    }
  }
  const marker_answer a = parse_marker(replies[5].get());
  const auto known = w.run_ids.find(where);
  const bool restarted = known != w.run_ids.end() && !run_id.empty() && run_id != known->second;
  if (w.told.count(where) == 0 || restarted) {
    w.notices.push_back(set.sentence(where));
    w.told.insert(where);
  }
  std::string why;
  if (a.id == fresh && restarted && !(set.aof && *set.aof == "1"))
    why = "the server restarted without persistence: run_id changed, marker key gone";
  else if (a.id == fresh && restarted)
    why = "the server restarted or was replaced (run_id changed) and the marker key is gone";
  else if (a.id == fresh)
    why = "the marker key is gone: keys flushed (FLUSHALL, FLUSHDB) or evicted, or a failover to a replica that lacked them";
  else
    why = "the marker key holds another store's id: the server was replaced";
  adopt(w, a, where, why);
  if (!run_id.empty()) w.run_ids[where] = run_id;
}

}  // namespace lease::detail::redis
