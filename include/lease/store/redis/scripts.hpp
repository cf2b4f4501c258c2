// lease/store/redis/scripts.hpp — the store rules of DESIGN.md §3 in Lua, one
// script per operation, each run atomically by EVALSHA in one round trip.
//
// A faithful port of lease/rules.hpp (the conformance suite compares them
// answer by answer). Keys, all under one hash tag so every script touches a
// single cluster slot (see keys.hpp):
//   KEYS[1] runs     hash   slot (decimal ms) -> cmsgpack {attempt, token, fence,
//                           runner, status, lease_end, released, handovers}
//   KEYS[2] running  zset   slots whose status is running (score = slot)
//   KEYS[3] ended    zset   slots whose status is success/failed/interrupted
//   KEYS[4] fence    string the job's fence counter; never pruned
// The two indexes keep each claim's work proportional to the runs that
// matter (running ones, a prune candidate or two), not to the job's history,
// which retention can make long (a 1 s job keeps ~5 min of runs).
//
// ARGV[1] is the caller's clock in ms, or "" to read Redis TIME inside the
// script (the default: the store's clock decides). Slots travel as the
// client's decimal strings and are used as they are, so Lua never formats a
// slot. Enums are the C++ enumerators' values (run.hpp). Tokens are made by
// the client: Redis seeds math.random identically for every script.
//
// `#!lua` makes Redis check a script's flags before running it: a write
// script is refused whole (OOM, READONLY) instead of failing half-way, and
// the read-only ones (`no-writes`) still answer on a replica or at maxmemory.
// Every script reads before it writes, so a corrupt record (LEASECORRUPT)
// is found before anything changes.
#pragma once

#include <array>
#include <string_view>

namespace lease::detail::redis {

/// The scripts, by index into `scripts`.
enum class script : unsigned { claim, heartbeat, finish, release, get, unfinished };
inline constexpr std::size_t script_count = 6;

// Helpers shared by the scripts. Each script pastes only the ones it uses:
// a script's whole text runs on every call, and on the heartbeat path (a
// thousand per batch) every defined closure and redundant check costs.
#define LEASE_REDIS_LUA_NOW                                                                        \
  "local function store_now()\n"                                                                   \
  "  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end\n"                                         \
  "  local t = redis.call('TIME')\n"                                                               \
  "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                           \
  "end\n"
#define LEASE_REDIS_LUA_LOAD                                                                       \
  "local function load(slot)\n"                                                                    \
  "  local v = redis.call('HGET', KEYS[1], slot)\n"                                                \
  "  if not v then return nil end\n"                                                               \
  "  local ok, r = pcall(cmsgpack.unpack, v)\n"                                                    \
  "  if not ok or type(r) ~= 'table' or #r ~= 8 then\n"                                            \
  "    error({err = 'LEASECORRUPT run record ' .. slot .. ' of ' .. KEYS[1] .. ' is not a lease record'})\n" \
  "  end\n"                                                                                        \
  "  return r\n"                                                                                   \
  "end\n"
#define LEASE_REDIS_LUA_SAVE "local function save(slot, r) redis.call('HSET', KEYS[1], slot, cmsgpack.pack(r)) end\n"
#define LEASE_REDIS_LUA_END_RUN                                                                    \
  "local function end_run(slot, r, status)\n"                                                      \
  "  r[5] = status\n"                                                                              \
  "  save(slot, r)\n"                                                                              \
  "  redis.call('ZREM', KEYS[2], slot)\n"                                                          \
  "  redis.call('ZADD', KEYS[3], slot, slot)\n"                                                    \
  "end\n"
#define LEASE_REDIS_LUA_CURRENT                                                                    \
  "local function current(r, token) return r[5] == 0 and r[7] == 0 and r[2] == token end\n"
#define LEASE_REDIS_LUA_RECORD                                                                     \
  "local function record(out, slot, r)\n"                                                          \
  "  out[#out + 1] = slot\n"                                                                       \
  "  for i = 1, 8 do out[#out + 1] = r[i] end\n"                                                   \
  "  return out\n"                                                                                 \
  "end\n"

/// claim: KEYS runs, running, ended, fence; ARGV now, slot, runner, token,
/// reason, lease, max_attempts, deadline, overlap, history_size, retain.
/// Reply {outcome, now[, record]}.
inline constexpr std::string_view claim_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW LEASE_REDIS_LUA_LOAD LEASE_REDIS_LUA_SAVE LEASE_REDIS_LUA_END_RUN
    LEASE_REDIS_LUA_RECORD
    "local running_key, ended_key, fence_key = KEYS[2], KEYS[3], KEYS[4]\n"
    "local RUNNING, INTERRUPTED = 0, 3\n"
    "local WON, LIVE, OVERLAP, LATE, SUPERSEDED, FINISHED, NONE = 0, 1, 2, 3, 4, 5, 6\n"
    "local now = store_now()\n"
    "local slot, runner, token = ARGV[2], ARGV[3], ARGV[4]\n"
    "local reason, lease, max_attempts = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])\n"
    "local deadline, overlap = tonumber(ARGV[8]), tonumber(ARGV[9])\n"
    "local history, retain = tonumber(ARGV[10]), tonumber(ARGV[11])\n"
    "local function has_newer()\n"
    "  return #redis.call('ZRANGEBYSCORE', running_key, '(' .. slot, '+inf', 'LIMIT', 0, 1) > 0\n"
    "      or #redis.call('ZRANGEBYSCORE', ended_key, '(' .. slot, '+inf', 'LIMIT', 0, 1) > 0\n"
    "end\n"
    "local function win(r)\n"
    "  r[2] = token; r[3] = redis.call('INCR', fence_key); r[4] = runner\n"
    "  r[5] = RUNNING; r[6] = now + lease; r[7] = 0\n"
    "  save(slot, r)\n"
    "  return record({WON, now}, slot, r)\n"
    "end\n"
    // A run with state: finished, running (live), or an expired attempt.
    "local r = load(slot)\n"
    "if r then\n"
    "  if r[5] ~= RUNNING then return record({FINISHED, now}, slot, r) end\n"
    "  if now < r[6] then return record({LIVE, now}, slot, r) end\n"
    "  if has_newer() or r[1] - r[8] >= max_attempts then\n"
    "    end_run(slot, r, INTERRUPTED)\n"
    "    return record({FINISHED, now}, slot, r)\n"
    "  end\n"
    "  r[1] = r[1] + 1\n"
    "  return win(r)\n"
    "end\n"
    // No state: none, late, superseded, overlap, or a new run.
    "if reason == 2 then return {NONE, now} end\n"
    "if now > deadline + 10000 then return {LATE, now} end\n"
    "if has_newer() then return {SUPERSEDED, now} end\n"
    "local others = redis.call('ZRANGE', running_key, 0, -1)\n"
    "local recs = {}\n"
    "for i, s in ipairs(others) do recs[i] = load(s) end\n"
    "if overlap == 0 or overlap == 2 then\n"
    "  for i = #others, 1, -1 do\n"
    "    local o = recs[i]\n"
    "    if o and o[5] == RUNNING and now < o[6] then return record({OVERLAP, now}, others[i], o) end\n"
    "  end\n"
    "end\n"
    "for i, s in ipairs(others) do\n"
    "  local o = recs[i]\n"
    "  if o and o[5] == RUNNING and (not (now < o[6]) or overlap == 3) then end_run(s, o, INTERRUPTED) end\n"
    "end\n"
    "redis.call('ZADD', running_key, slot, slot)\n"
    "local res = win({1, '', 0, '', RUNNING, 0, 0, 0})\n"
    // Prune: the oldest ended runs beyond the newest `history`, but only those
    // no new claim can still ask for (now > slot + retain + 10 s).
    "local n = redis.call('ZCARD', ended_key)\n"
    "if n > history then\n"
    "  local cutoff = string.format('%.0f', now - retain - 10000)\n"
    "  local victims = redis.call('ZRANGEBYSCORE', ended_key, '-inf', '(' .. cutoff, 'LIMIT', 0, n - history)\n"
    "  for i = 1, #victims, 1000 do\n"
    "    local chunk = {unpack(victims, i, math.min(i + 999, #victims))}\n"
    "    redis.call('HDEL', KEYS[1], unpack(chunk))\n"
    "    redis.call('ZREM', ended_key, unpack(chunk))\n"
    "  end\n"
    "end\n"
    "return res\n";

/// heartbeat: KEYS runs; ARGV now, slot, token, lease. Reply 1 or 0. The hot
/// path (every attempt, every few seconds): TIME only once renewing.
inline constexpr std::string_view heartbeat_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW LEASE_REDIS_LUA_LOAD
    "local r = load(ARGV[2])\n"
    "if not r or r[5] ~= 0 or r[7] ~= 0 or r[2] ~= ARGV[3] then return 0 end\n"
    "r[6] = store_now() + tonumber(ARGV[4])\n"
    "redis.call('HSET', KEYS[1], ARGV[2], cmsgpack.pack(r))\n"
    "return 1\n";

/// finish: KEYS runs, running, ended; ARGV now, slot, token, status
/// (success or failed). Reply 1 or 0.
inline constexpr std::string_view finish_lua =
    "#!lua\n" LEASE_REDIS_LUA_LOAD LEASE_REDIS_LUA_SAVE LEASE_REDIS_LUA_END_RUN LEASE_REDIS_LUA_CURRENT
    "local r = load(ARGV[2])\n"
    "if not r or not current(r, ARGV[3]) then return 0 end\n"
    "end_run(ARGV[2], r, tonumber(ARGV[4]))\n"
    "return 1\n";

/// release: KEYS runs; ARGV now, slot, token. Reply 1 or 0.
inline constexpr std::string_view release_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW LEASE_REDIS_LUA_LOAD LEASE_REDIS_LUA_SAVE LEASE_REDIS_LUA_CURRENT
    "local r = load(ARGV[2])\n"
    "if not r or not current(r, ARGV[3]) then return 0 end\n"
    "r[6] = store_now(); r[7] = 1; r[8] = r[8] + 1\n"
    "save(ARGV[2], r)\n"
    "return 1\n";

/// get: KEYS runs; ARGV now (unused), slot. Reply a record, or nil.
inline constexpr std::string_view get_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_LOAD LEASE_REDIS_LUA_RECORD
    "local r = load(ARGV[2])\n"
    "if not r then return false end\n"
    "return record({}, ARGV[2], r)\n";

/// unfinished: KEYS runs, running; ARGV now (unused). Reply the running
/// records, oldest first, flat.
inline constexpr std::string_view unfinished_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_LOAD LEASE_REDIS_LUA_RECORD
    "local out = {}\n"
    "for _, s in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do\n"
    "  local r = load(s)\n"
    "  if r and r[5] == 0 then record(out, s, r) end\n"
    "end\n"
    "return out\n";

#undef LEASE_REDIS_LUA_NOW
#undef LEASE_REDIS_LUA_LOAD
#undef LEASE_REDIS_LUA_SAVE
#undef LEASE_REDIS_LUA_END_RUN
#undef LEASE_REDIS_LUA_CURRENT
#undef LEASE_REDIS_LUA_RECORD

/// Every script, indexed by `script`.
inline constexpr std::array<std::string_view, script_count> scripts{
    claim_lua, heartbeat_lua, finish_lua, release_lua, get_lua, unfinished_lua};

/// How many of the job's keys (runs, running, ended, fence — in that order)
/// each script declares: only those it touches, as Redis Cluster requires,
/// and no more bytes per call than it needs.
inline constexpr std::array<unsigned, script_count> key_counts{4, 1, 3, 1, 1, 2};

/// Fields of a record in a reply: slot, then the 8 stored fields.
inline constexpr std::size_t record_width = 9;

}  // namespace lease::detail::redis
