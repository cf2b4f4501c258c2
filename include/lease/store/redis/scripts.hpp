// lease/store/redis/scripts.hpp — the store rules of doc/store-rules.md in Lua, one
// script per operation, each run atomically by EVALSHA in one round trip.
//
// A faithful port of lease/rules.hpp (the conformance suite compares them
// answer by answer). Three keys per job, under one hash tag so every script
// touches a single cluster slot (see keys.hpp):
//   KEYS[1] runs   hash  "<slot>" (decimal ms) -> cmsgpack {attempt, token,
//                        fence, runner, status, lease_end, released, handovers,
//                        manual (0/1; absent in records written before it)}
//                        "i" -> cmsgpack {fence, newest slot or false,
//                        running slots oldest first, number of ended runs}
//                        "q" -> the job's quarantine start (ms), set when a
//                        loss of its state was detected (see redis.hpp)
//                        "p" -> "1" while an operator paused the job
//                        (rules::pause): in the runs hash, so the claim
//                        script reads it in the same HMGET, on the same slot
//                        "t" -> the slot (decimal ms) of the job's pending
//                        trigger (rules::trigger), likewise: a manual claim
//                        answers it atomically, on the job's slot
//                        "e" -> "1": the job has state of the rules' (a
//                        resume() left nothing else: purge finds the job)
//                        "x" -> the store clock (ms) of the job's last
//                        purge: the purge's tombstone, see purge_lua
//   ended      zset  the ended runs' slots (score = slot), for pruning
//   instances  hash  instance id -> cmsgpack {schedule, zone, last_seen}:
//                    the job's registrations (register_jobs)
// and the job's release channel "<tag>:released" (finish and release
// SPUBLISH to it: push hand-over, subscriber.hpp), the store's trigger
// channel (keys.hpp trigger_channel: trigger PUBLISHes the job's name to it,
// trigger_subscriber.hpp),
// and one key of the store's own, `{<prefix>}:store` (marker script only):
//   hash  "id" -> the marker written at first use, "lost" -> quarantine start
// The job index "i" answers "is there a newer run?", "which runs are
// running?" and the fence counter (never pruned) in the same HMGET that
// reads the run, so a claim costs a few commands whatever the job's history
// (retention can keep hundreds of ended runs). The newest slot only grows: a
// new run starts only when no newer one has state — except a manual run,
// which leaves the newest slot as it is — and if pruning removes the newest
// run (history_size 0, an ended run newer than a manual one), the claim
// that pruned it sets the newest slot left.
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
enum class script : unsigned { claim, heartbeat, finish, release, get, unfinished, marker, pause, resume, paused,
                               job_summary, list_runs, trigger, stop, register_jobs, purge };
inline constexpr std::size_t script_count = 16;

// Helpers shared by the scripts. Each script pastes only the ones it uses:
// a script's whole text runs on every call, and on the heartbeat path (a
// thousand per batch) every defined closure and redundant check costs.
#define LEASE_REDIS_LUA_NOW                                                                        \
  "local function store_now()\n"                                                                   \
  "  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end\n"                                         \
  "  local t = redis.call('TIME')\n"                                                               \
  "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                           \
  "end\n"
// rec(v, slot): a stored run record, or nil; index(v): the job index.
#define LEASE_REDIS_LUA_DECODE                                                                     \
  "local function corrupt(what) error({err = 'LEASECORRUPT ' .. what .. ' in ' .. KEYS[1] .. ' is not lease data'}) end\n" \
  "local function rec(v, slot)\n"                                                                  \
  "  if not v then return nil end\n"                                                               \
  "  local ok, r = pcall(cmsgpack.unpack, v)\n"                                                    \
  "  if not ok or type(r) ~= 'table' or (#r ~= 8 and #r ~= 9) then corrupt('run ' .. slot) end\n" \
  "  return r\n"                                                                                   \
  "end\n"                                                                                          \
  "local function index(v)\n"                                                                      \
  "  if not v then return {0, false, {}, 0} end\n"                                                 \
  "  local ok, x = pcall(cmsgpack.unpack, v)\n"                                                    \
  "  if not ok or type(x) ~= 'table' or #x ~= 4 or type(x[3]) ~= 'table' then corrupt('the job index') end\n" \
  "  return x\n"                                                                                   \
  "end\n"
#define LEASE_REDIS_LUA_CURRENT                                                                    \
  "local function current(r, token) return r[5] == 0 and r[7] == 0 and r[2] == token end\n"
#define LEASE_REDIS_LUA_RECORD                                                                     \
  "local function record(out, slot, r)\n"                                                          \
  "  out[#out + 1] = slot\n"                                                                       \
  "  for i = 1, 8 do out[#out + 1] = r[i] end\n"                                                   \
  "  out[#out + 1] = r[9] or 0\n"                                                                  \
  "  return out\n"                                                                                 \
  "end\n"

// Push hand-over: the job's release channel (keys.hpp release_channel) is
// its first key with "runs" replaced by "released". pcall: a server that
// refuses it (an ACL without the channel) still finishes or releases; the
// listeners then hear nothing, which costs them time, never safety.
#define LEASE_REDIS_LUA_ANNOUNCE                                                                   \
  "redis.pcall('SPUBLISH', string.sub(KEYS[1], 1, -5) .. 'released', '')\n"
// A finish names its run (the slot, `slot` in the script): a backup watching
// only that run ends its watch without asking (EndPushStore). A release or a
// stop says nothing more ('': check every watched run of the job).
#define LEASE_REDIS_LUA_ANNOUNCE_FINISH                                                            \
  "redis.pcall('SPUBLISH', string.sub(KEYS[1], 1, -5) .. 'released', slot)\n"

// The claim and heartbeat scripts inline what the helpers do (the claim
// keeps one closure, end_run, on the paths that may end a run): Lua creates a
// closure each time a `local function` statement runs, and on these hot
// paths that was a measurable share of the server's time per call.
// (Arithmetic converts TIME's strings: tonumber() would parse each twice.)
#define LEASE_REDIS_LUA_INLINE_NOW                                                                 \
  "local now\n"                                                                                    \
  "if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else\n"                                           \
  "  local t = redis.call('TIME'); now = t[1] * 1000 + math.floor(t[2] / 1000)\n"                 \
  "end\n"
// idx: the job index's stored value, or nil; decoded in place.
#define LEASE_REDIS_LUA_INLINE_INDEX                                                               \
  "if idx then\n"                                                                                  \
  "  local ok\n"                                                                                   \
  "  ok, idx = pcall(cmsgpack.unpack, idx)\n"                                                      \
  "  if not ok or type(idx) ~= 'table' or #idx ~= 4 or type(idx[3]) ~= 'table' then\n"             \
  "    error({err = 'LEASECORRUPT the job index in ' .. KEYS[1] .. ' is not lease data'})\n"      \
  "  end\n"                                                                                        \
  "else\n"                                                                                         \
  "  idx = {0, false, {}, 0}\n"                                                                    \
  "end\n"
#define LEASE_REDIS_LUA_INLINE_REC                                                                 \
  "if r then\n"                                                                                    \
  "  local ok\n"                                                                                   \
  "  ok, r = pcall(cmsgpack.unpack, r)\n"                                                          \
  "  if not ok or type(r) ~= 'table' or (#r ~= 8 and #r ~= 9) then\n"                             \
  "    error({err = 'LEASECORRUPT run ' .. slot .. ' in ' .. KEYS[1] .. ' is not lease data'})\n"  \
  "  end\n"                                                                                        \
  "end\n"

/// claim: KEYS runs, ended; ARGV now, slot, runner, token, reason, lease,
/// max_attempts, deadline, overlap, history_size, retain, known fence (the
/// highest fence of the job this handle has seen, "0" if none), lost_at (the
/// store-wide quarantine start this handle knows, "" if none).
/// Reply {outcome, now, detected[, record | quarantine end | fence]}: the
/// fence alone for a won new run (outcome 0, four elements), the quarantine's
/// end for quarantined (8, four elements), the record otherwise. detected is
/// 1 when the known fence proves that the job's state was lost (it is then
/// recorded in the job's 'q' field, and the fence counter raised back).
inline constexpr std::string_view claim_lua =
    "#!lua\n"
    "local slot = ARGV[2]\n"
    "local got = redis.call('HMGET', KEYS[1], slot, 'i', 'q', 'p', 't')\n"
    "local r = got[1]\n" LEASE_REDIS_LUA_INLINE_REC LEASE_REDIS_LUA_INLINE_NOW
    "local known = ARGV[12] + 0\n"
    // The claims that lose to a run with state (finished, or running and
    // live: two of every three instances' claims of a slot, and the backups'
    // re-checks) answer here, before the job index is decoded: a run's fence
    // is at most the job's fence counter (both live in this hash, and the
    // counter never goes back but by a purge, which deletes the runs too),
    // so a known fence at most the run's cannot show a loss, and these
    // answers need nothing else of the index.
    "if r and known <= r[3] and (r[5] ~= 0 or now < r[6]) then\n"
    "  if ARGV[5] == '3' and got[5] and tonumber(got[5]) == tonumber(slot) then redis.call('HDEL', KEYS[1], 't') end\n"
    "  return {r[5] ~= 0 and 5 or 1, now, 0, slot, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or 0}\n"
    "end\n"
    // The job index: fence counter, newest slot, running slots, ended count.
    "local idx = got[2]\n" LEASE_REDIS_LUA_INLINE_INDEX
    // Loss of state: a fence counter below one this handle saw can only mean
    // the job's keys were lost (fences never go back) — unless the job was
    // purged since ('x', purge_lua): its fence went with it, and every fence
    // of it is at most the purge's clock. The quarantine start
    // is the latest of the job's own ('q'), the store's (ARGV) and now if
    // the loss is detected by this very claim. For this job, now, always:
    // even a fence won before a recorded loss may stand for runs won after
    // it and lost since (a second, partial loss; a claim that missed them),
    // and this job's horizon must cover them. Whether it is news for every
    // job is the marker script's to judge (record_loss, marker_lua).
    "local lost = tonumber(got[3])\n"
    "local g = tonumber(ARGV[13])\n"
    "if g and (not lost or g > lost) then lost = g end\n"
    "local detected = 0\n"
    "if known > idx[1] and not (idx[1] == 0 and known <= (tonumber(redis.call('HGET', KEYS[1], 'x')) or -1)) then\n"
    "  detected = 1\n"
    "  if not lost or now > lost then lost = now end\n"
    "  idx[1] = known\n"
    "  redis.call('HSET', KEYS[1], 'q', lost, 'i', cmsgpack.pack(idx))\n"
    "end\n"
    "local lease = ARGV[6] + 0\n"
    "local quarantine = lost and now < lost + lease\n"
    // A manual claim (reason 3) answers the job's pending trigger ('t') for
    // this very slot wherever rules::claim calls answer_trigger: a run that
    // has state, overlap in skip mode, paused, won. It stays pending after
    // early, quarantined, and overlap in buffer_one mode.
    "local nslot = slot + 0\n"
    "local manual = ARGV[5] == '3'\n"
    "local pending = manual and got[5] and tonumber(got[5]) == nslot\n"
    // Answers that change nothing (but a trigger): finished, running (live),
    // none, late, early.
    "if r then\n"
    "  if pending then redis.call('HDEL', KEYS[1], 't') end\n"
    "  if r[5] ~= 0 then return {5, now, detected, slot, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or 0} end\n"
    "  if now < r[6] then return {1, now, detected, slot, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or 0} end\n"
    "else\n"
    "  if ARGV[5] == '2' then return {6, now, detected} end\n"
    // A manual run exists only as the answer to a pending trigger, and an
    // operator's request waits however long it takes: never late.
    "  if manual then\n"
    "    if not pending then return {6, now, detected} end\n"
    "  elseif now > ARGV[8] + 10000 then return {3, now, detected} end\n"
    "  if nslot > now + 1000 then return {7, now, detected} end\n"
    "end\n"
    "local newest = idx[2] and tonumber(idx[2])\n"
    "local newer = newest and newest > nslot\n"
    // A manual run may be older than runs of the schedule: never superseded.
    "if not r and newer and not manual then return {4, now, detected} end\n"
    // From here the claim writes. Changes are collected in `writes` (one
    // HSET at the end) and `ended` (one ZADD).
    "local runner, token = ARGV[3], ARGV[4]\n"
    "local writes, ended = {}, {}\n"
    // end_run is made only where it can be called (the expired run `r`, or
    // running runs in the index, which nothing changes before the loop over
    // them): a new run of a job with none running, the claim at every slot,
    // made the closure for nothing (1.9k of its 104k instructions).
    "local end_run\n"
    "if r or #idx[3] > 0 then end_run = function(s, x, status)\n"
    "  x[5] = status\n"
    "  writes[#writes + 1] = s; writes[#writes + 1] = cmsgpack.pack(x)\n"
    "  local list = idx[3]\n"
    "  for i = #list, 1, -1 do if list[i] == s then table.remove(list, i) end end\n"
    "  idx[4] = idx[4] + 1\n"
    "  ended[#ended + 1] = s; ended[#ended + 1] = s\n"
    "end end\n"
    // A won attempt's fence (idx[1], set where a claim wins, inline: a
    // closure for it cost every writing claim its creation): above the
    // last, and at least the store's clock in ms, so fences keep growing
    // even across a loss nobody detected.
    // A running run whose lease ran out: the next attempt, or interrupted,
    // or (after a loss) not yet.
    "if r then\n"
    "  local outcome = 5\n"
    "  if newer or r[1] - r[8] >= tonumber(ARGV[7]) then\n"
    "    end_run(slot, r, 3)\n"
    // Inside a loss's horizon: won on the forgotten state before the loss
    // was noticed (its slot may have run before the loss): never taken over.
    "  elseif lost and nslot <= lost + 1000 then\n"
    "    end_run(slot, r, 3)\n"
    "  elseif quarantine then\n"
    "    return {8, now, detected, lost + lease}\n"
    // Paused (rules::pause): the expired run stays as it is.
    "  elseif got[4] then\n"
    "    return {9, now, detected}\n"
    "  else\n"
    "    outcome = 0\n"
    "    r[1] = r[1] + 1; r[2] = token; idx[1] = math.max(idx[1] + 1, now); r[3] = idx[1]; r[4] = runner; r[5] = 0; r[6] = now + lease; r[7] = 0\n"
    "    writes[#writes + 1] = slot; writes[#writes + 1] = cmsgpack.pack(r)\n"
    "  end\n"
    "  if #ended > 0 then redis.call('ZADD', KEYS[2], unpack(ended)) end\n"
    "  redis.call('HSET', KEYS[1], 'i', cmsgpack.pack(idx), unpack(writes))\n"
    "  return {outcome, now, detected, slot, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or 0}\n"
    "end\n"
    // No state: overlap, quarantine, or a new run.
    // (overlap is compared as the client's digit: each tonumber() of a string
    // costs the server two strtod calls.)
    "local overlap, history = ARGV[9], ARGV[10] + 0\n"
    // The running slots are copied (end_run removes from idx[3] while the
    // loop below reads them) only when there are any: an empty list is
    // read as it is, and nothing is added to it before that loop.
    "local others, recs = idx[3], nil\n"
    "if #others > 0 then\n"
    "  others, recs = {unpack(others)}, {}\n"
    "  local vals = redis.call('HMGET', KEYS[1], unpack(others))\n"
    "  for i, s in ipairs(others) do\n"
    "    local v = vals[i]\n"
    "    if v then\n"
    "      local ok, o = pcall(cmsgpack.unpack, v)\n"
    "      if not ok or type(o) ~= 'table' or (#o ~= 8 and #o ~= 9) then\n"
    "        error({err = 'LEASECORRUPT run ' .. s .. ' in ' .. KEYS[1] .. ' is not lease data'})\n"
    "      end\n"
    "      recs[i] = o\n"
    "    end\n"
    "  end\n"
    "  if overlap == '0' or overlap == '2' then\n"
    "    for i = #others, 1, -1 do\n"
    "      local o = recs[i]\n"
    "      if o and o[5] == 0 and now < o[6] then\n"
    "        if pending and overlap == '0' then redis.call('HDEL', KEYS[1], 't') end\n"
    "        return {2, now, detected, others[i], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9] or 0}\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if quarantine then return {8, now, detected, lost + lease} end\n"
    // A slot that could have had state before the loss may have run: never
    // started as a new run (rules::claim; -1 stands for time_point::max()).
    // A trigger's slot is inside only if it was asked before the loss was
    // noticed, when it may share a forgotten run's key: answered, not run.
    "if lost and nslot <= lost + 1000 then\n"
    "  if pending then redis.call('HDEL', KEYS[1], 't') end\n"
    "  return {8, now, detected, -1}\n"
    "end\n"
    "if pending then redis.call('HDEL', KEYS[1], 't') end\n"
    // Paused: only a claim that would win gets here; nothing else is written
    // (a paused job's trigger does not wait for the resume).
    "if got[4] then return {9, now, detected} end\n"
    // Expired running runs are interrupted, newer ones too (a manual run may
    // be older than runs of the schedule; a takeover of one could win beside
    // it); in replace mode also the OLDER live ones.
    "for i, s in ipairs(others) do\n"
    "  local o = recs[i]\n"
    "  if o and o[5] == 0 and (not (now < o[6]) or (overlap == '3' and tonumber(s) < nslot)) then end_run(s, o, 3) end\n"
    "end\n"
    // The newest slot only grows; the running slots stay oldest first.
    "if not newest or newest < nslot then idx[2] = slot end\n"
    "local running = idx[3]\n"
    "local at = #running + 1\n"
    "while at > 1 and tonumber(running[at - 1]) > nslot do at = at - 1 end\n"
    "table.insert(running, at, slot)\n"
    "idx[1] = math.max(idx[1] + 1, now)\n"
    "local n = {1, token, idx[1], runner, 0, now + lease, 0, 0, manual and 1 or 0}\n"
    "writes[#writes + 1] = slot; writes[#writes + 1] = cmsgpack.pack(n)\n"
    "if #ended > 0 then redis.call('ZADD', KEYS[2], unpack(ended)) end\n"
    // Prune: the oldest ended runs beyond the newest `history`, but only those
    // no new claim can still ask for (now > slot + retain + 10 s).
    "if idx[4] > history then\n"
    "  local cutoff = string.format('%.0f', now - tonumber(ARGV[11]) - 10000)\n"
    "  local victims = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. cutoff, 'LIMIT', 0, idx[4] - history)\n"
    // Never the run at a still pending trigger's slot: it answers that
    // trigger (rules::prune); deleting it would let the trigger start a
    // second run of that slot. (A trigger this claim answered is gone.)
    "  local keep = not pending and tonumber(got[5])\n"
    "  if keep then\n"
    "    for i = #victims, 1, -1 do if tonumber(victims[i]) == keep then table.remove(victims, i) end end\n"
    "  end\n"
    "  if #victims > 0 then\n"
    "    for i = 1, #victims, 1000 do\n"
    "      local chunk = {unpack(victims, i, math.min(i + 999, #victims))}\n"
    "      redis.call('HDEL', KEYS[1], unpack(chunk))\n"
    "      redis.call('ZREM', KEYS[2], unpack(chunk))\n"
    "    end\n"
    "    idx[4] = idx[4] - #victims\n"
    // A run interrupted by this claim may be pruned by it too: don't write it back.
    "    local gone, kept = {}, {}\n"
    "    for _, s in ipairs(victims) do gone[s] = true end\n"
    "    for i = 1, #writes, 2 do\n"
    "      if not gone[writes[i]] then kept[#kept + 1] = writes[i]; kept[#kept + 1] = writes[i + 1] end\n"
    "    end\n"
    "    writes = kept\n"
    // The newest run pruned (an ended run newer than a manual one): the
    // newest slot is the newest left, ended or running.
    "    if gone[idx[2]] then\n"
    "      local top = redis.call('ZREVRANGE', KEYS[2], 0, 0)[1]\n"
    "      for _, s in ipairs(idx[3]) do if not top or tonumber(s) > tonumber(top) then top = s end end\n"
    "      idx[2] = top\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'i', cmsgpack.pack(idx), unpack(writes))\n"
    // A new run: the client knows every field of it but the fence (attempt 1,
    // its token and runner, running, lease end = now + lease, not released,
    // no hand-overs, manual as it asked): only the fence comes back. Turning
    // the whole record into a reply cost the server 5,000 of the claim's
    // 114,000 instructions (scripts/lua-cost), and the client 9 reply objects.
    "return {0, now, detected, n[3]}\n";

/// heartbeat: KEYS runs; ARGV now, slot, token, lease, known fence. Reply 1
/// (renewed), 0 (refused) or 2 (refused, and the job's fence counter is
/// below the known fence: its state was lost; recorded as for a claim). The
/// hot path (every attempt, every few seconds): no closures, TIME only once
/// renewing, the index read only when refusing.
inline constexpr std::string_view heartbeat_lua =
    "#!lua\n"
    "local slot = ARGV[2]\n"
    "local r = redis.call('HGET', KEYS[1], slot)\n" LEASE_REDIS_LUA_INLINE_REC
    "if not r or r[5] ~= 0 or r[7] ~= 0 or r[2] ~= ARGV[3] then\n"
    "  local known = tonumber(ARGV[5])\n"
    "  if known == 0 then return 0 end\n"
    "  local got = redis.call('HMGET', KEYS[1], 'i', 'q', 'x')\n"
    "  local idx = {0, false, {}, 0}\n"
    "  if got[1] then\n"
    "    local ok\n"
    "    ok, idx = pcall(cmsgpack.unpack, got[1])\n"
    "    if not ok or type(idx) ~= 'table' or #idx ~= 4 or type(idx[3]) ~= 'table' then\n"
    "      error({err = 'LEASECORRUPT the job index in ' .. KEYS[1] .. ' is not lease data'})\n"
    "    end\n"
    "  end\n"
    "  if known <= idx[1] then return 0 end\n"
    "  if idx[1] == 0 and got[3] and known <= tonumber(got[3]) then return 0 end\n"  // purged, not lost
    LEASE_REDIS_LUA_INLINE_NOW
    "  local lost = tonumber(got[2])\n"
    "  if not lost or now > lost then lost = now end\n"
    "  idx[1] = known\n"
    "  redis.call('HSET', KEYS[1], 'q', lost, 'i', cmsgpack.pack(idx))\n"
    "  return 2\n"
    "end\n" LEASE_REDIS_LUA_INLINE_NOW
    "r[6] = now + ARGV[4]\n"
    "redis.call('HSET', KEYS[1], slot, cmsgpack.pack(r))\n"
    "return 1\n";

/// finish: KEYS runs, ended; ARGV now, slot, token, status (success or
/// failed). Reply 1 or 0; on 1 the job's release channel is told the slot.
inline constexpr std::string_view finish_lua =
    "#!lua\n"
    "local slot = ARGV[2]\n"
    "local got = redis.call('HMGET', KEYS[1], slot, 'i')\n"
    "local r = got[1]\n" LEASE_REDIS_LUA_INLINE_REC
    "if not r or r[5] ~= 0 or r[7] ~= 0 or r[2] ~= ARGV[3] then return 0 end\n"
    "local idx = got[2]\n" LEASE_REDIS_LUA_INLINE_INDEX
    "r[5] = ARGV[4] + 0\n"
    "local list = idx[3]\n"
    "for i = #list, 1, -1 do if list[i] == slot then table.remove(list, i) end end\n"
    "idx[4] = idx[4] + 1\n"
    "redis.call('HSET', KEYS[1], slot, cmsgpack.pack(r), 'i', cmsgpack.pack(idx))\n"
    "redis.call('ZADD', KEYS[2], slot, slot)\n" LEASE_REDIS_LUA_ANNOUNCE_FINISH
    "return 1\n";

/// release: KEYS runs; ARGV now, slot, token. Reply 1 or 0; on 1 the job's
/// release channel is told.
inline constexpr std::string_view release_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_CURRENT
    "local r = rec(redis.call('HGET', KEYS[1], ARGV[2]), ARGV[2])\n"
    "if not r or not current(r, ARGV[3]) then return 0 end\n"
    "r[6] = store_now(); r[7] = 1; r[8] = r[8] + 1\n"
    "redis.call('HSET', KEYS[1], ARGV[2], cmsgpack.pack(r))\n" LEASE_REDIS_LUA_ANNOUNCE
    "return 1\n";

/// get: KEYS runs; ARGV now (unused), slot. Reply a record, or nil.
inline constexpr std::string_view get_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_RECORD
    "local r = rec(redis.call('HGET', KEYS[1], ARGV[2]), ARGV[2])\n"
    "if not r then return false end\n"
    "return record({}, ARGV[2], r)\n";

/// unfinished: KEYS runs; ARGV now (unused). Reply the running records,
/// oldest first, flat.
inline constexpr std::string_view unfinished_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_RECORD
    "local slots = index(redis.call('HGET', KEYS[1], 'i'))[3]\n"
    "local out = {}\n"
    "if #slots == 0 then return out end\n"
    "table.sort(slots, function(a, b) return tonumber(a) < tonumber(b) end)\n"
    "local vals = redis.call('HMGET', KEYS[1], unpack(slots))\n"
    "for i, s in ipairs(slots) do\n"
    "  local r = rec(vals[i], s)\n"
    "  if r and r[5] == 0 then record(out, s, r) end\n"
    "end\n"
    "return out\n";

/// marker: KEYS the store key (keys.hpp store_key); ARGV now, the marker id
/// this handle remembers ("" if none yet), a fresh id, evidence (a fence of
/// a job whose counter was found below it, "0" for none: the caller's own
/// proof of a loss after that fence was won).
/// Reply {id, lost_at or false, detected, now}.
///   marker there, remembered (or none remembered)  -> adopt it (no loss)
///   marker gone, one remembered                    -> loss: new marker, lost_at = now
///   marker gone, none remembered                   -> a fresh store: write it
///   another marker, with a lost_at                 -> another handle recorded a loss: adopt
///   another marker, no lost_at                     -> the store was replaced: loss
///   evidence F, no lost_at or F > lost_at          -> loss: lost_at = max(lost_at, now)
///   evidence F <= lost_at                          -> no news for the other jobs: adopt
/// A fence is at least the store's clock when it was won, so F <= lost_at
/// was won before the recorded loss was noticed, which explains it: after
/// one FLUSHALL, each job's first claim proves the loss again (its counter
/// is behind every fence instances remember), and moving lost_at at each
/// of them restarted every job's quarantine and horizon, for hours. (The
/// job's own script still moved that job's 'q': see claim_lua.) The stored
/// lost_at is the store's own: a failover that rolls the job's keys back
/// rolls this key back too, on one server; not across a cluster's masters.
/// A marker is rewritten only when it is gone, so handles adopting each
/// other's markers never ping-pong.
inline constexpr std::string_view marker_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW
    "local now = store_now()\n"
    "local cur = redis.call('HMGET', KEYS[1], 'id', 'lost')\n"
    "local id, lost = cur[1], tonumber(cur[2])\n"
    "local mine, fresh, proof = ARGV[2], ARGV[3], tonumber(ARGV[4]) or 0\n"
    "local detected = proof > 0 and not (lost and proof <= lost)\n"
    "if not id then\n"
    "  detected = detected or mine ~= ''\n"
    "  id = fresh\n"
    "  redis.call('HSET', KEYS[1], 'id', id)\n"
    "elseif id ~= mine and mine ~= '' and not lost then\n"
    "  detected = true\n"
    "end\n"
    "if detected then\n"
    "  if not lost or now > lost then lost = now end\n"
    "  redis.call('HSET', KEYS[1], 'lost', lost)\n"
    "end\n"
    "return {id, lost or false, detected and 1 or 0, now}\n";

/// pause, resume, paused: KEYS runs; ARGV now (unused). The job's "p" field
/// (rules::pause, resume, paused). Reply 1 if it changed (pause, resume) or
/// is set (paused), else 0.
inline constexpr std::string_view pause_lua = "#!lua\nreturn redis.call('HSETNX', KEYS[1], 'p', '1')\n";
/// A resume keeps the job's state, as rules::resume does: if the pause was
/// all it had (but a purge's tombstone), "e" stays in its place, so that a
/// purge finds the job (purged, not not_found) as the rules do.
inline constexpr std::string_view resume_lua =
    "#!lua\n"
    "local n = redis.call('HDEL', KEYS[1], 'p')\n"
    "if n == 1 then\n"
    "  local left = redis.call('HLEN', KEYS[1])\n"
    "  if left == 0 or (left == 1 and redis.call('HEXISTS', KEYS[1], 'x') == 1) then\n"
    "    redis.call('HSET', KEYS[1], 'e', '1')\n"
    "  end\n"
    "end\n"
    "return n\n";
inline constexpr std::string_view paused_lua = "#!lua flags=no-writes\nreturn redis.call('HEXISTS', KEYS[1], 'p')\n";

/// trigger (TriggerStore, rules::trigger): KEYS runs; ARGV now, the store's
/// trigger channel, the job's name, the store-wide quarantine start this
/// handle knows ("" if none). Makes the job's pending trigger at slot = now
/// unless one is pending (the same clock as the claims: ARGV now, or Redis
/// TIME) — or, within a loss's horizon (the job's own 'q' or the store's,
/// + 1000 ms), just past it (rules::trigger_slot: a scheduled run of that
/// millisecond may have been won before the loss) — and returns the pending
/// one's slot (decimal ms). Every call
/// PUBLISHes the job's name on the store's trigger channel (a repeat
/// announces a pending trigger again: harmless, and it helps an instance
/// that missed the first). pcall: a refused PUBLISH (an ACL without the
/// channel) still triggers; instances then learn of it by polling.
inline constexpr std::string_view trigger_lua =
    "#!lua\n"
    "local got = redis.call('HMGET', KEYS[1], 't', 'q')\n"
    "local t = got[1]\n"
    "local lost, g = tonumber(got[2]), tonumber(ARGV[4])\n"
    "if g and (not lost or g > lost) then lost = g end\n"
    // A pending trigger inside the loss's horizon was asked before the loss
    // was noticed (its key may be a forgotten run's): it moves past it.
    "if not t or (lost and tonumber(t) <= lost + 1000) then\n"
    "  local now\n"
    "  if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else\n"
    "    local x = redis.call('TIME')\n"
    "    now = tonumber(x[1]) * 1000 + math.floor(tonumber(x[2]) / 1000)\n"
    "  end\n"
    "  if lost and now <= lost + 1000 then now = lost + 1001 end\n"
    "  t = string.format('%.0f', now)\n"
    "  redis.call('HSET', KEYS[1], 't', t)\n"
    "end\n"
    "redis.pcall('PUBLISH', ARGV[2], ARGV[3])\n"
    "return t\n";

/// job_summary (InspectStore list_jobs, one call per job found by SCAN):
/// KEYS runs, instances; ARGV now (unused). Reply {fence, paused (0/1),
/// pending trigger's slot or nil, registrations {instance, schedule, zone,
/// last_seen}... flat, in the hash's order} followed by the job's newest run
/// (the index's newest slot), flat, if it has one.
inline constexpr std::string_view job_summary_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_RECORD
    "local got = redis.call('HMGET', KEYS[1], 'i', 'p', 't')\n"
    "local x = index(got[1])\n"
    "local regs = {}\n"
    "local all = redis.call('HGETALL', KEYS[2])\n"
    "for i = 1, #all, 2 do\n"
    "  local ok, g = pcall(cmsgpack.unpack, all[i + 1])\n"
    "  if not ok or type(g) ~= 'table' or #g ~= 3 then\n"
    "    error({err = 'LEASECORRUPT a registration in ' .. KEYS[2] .. ' is not lease data'})\n"
    "  end\n"
    "  regs[#regs + 1] = all[i]; regs[#regs + 1] = g[1]; regs[#regs + 1] = g[2]; regs[#regs + 1] = g[3]\n"
    "end\n"
    "local out = {x[1], got[2] and 1 or 0, got[3] or false, regs}\n"
    "if x[2] then\n"
    "  local r = rec(redis.call('HGET', KEYS[1], x[2]), x[2])\n"
    "  if r then record(out, x[2], r) end\n"
    "end\n"
    "return out\n";

/// list_runs (InspectStore): KEYS runs; ARGV now (unused), limit. Reply the
/// job's runs with state, newest slot first, at most `limit`, flat. Every
/// numeric field of the runs hash is a run's slot (i, q, p and t are not); a
/// job keeps a bounded history (pruning), so reading its field names is cheap.
inline constexpr std::string_view list_runs_lua =
    "#!lua flags=no-writes\n" LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_RECORD
    "local limit = tonumber(ARGV[2])\n"
    "local out = {}\n"
    "if limit < 1 then return out end\n"
    "local slots = {}\n"
    "for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do\n"
    "  if tonumber(f) then slots[#slots + 1] = f end\n"
    "end\n"
    "if #slots == 0 then return out end\n"
    "table.sort(slots, function(a, b) return tonumber(a) > tonumber(b) end)\n"
    "while #slots > limit do table.remove(slots) end\n"
    "for i = 1, #slots, 500 do\n"  // unpack() is bounded by Lua's C stack: read in chunks
    "  local chunk = {}\n"
    "  for j = i, math.min(i + 499, #slots) do chunk[#chunk + 1] = slots[j] end\n"
    "  local vals = redis.call('HMGET', KEYS[1], unpack(chunk))\n"
    "  for k, s in ipairs(chunk) do\n"
    "    local r = rec(vals[k], s)\n"
    "    if r then record(out, s, r) end\n"
    "  end\n"
    "end\n"
    "return out\n";

/// stop (StopStore, rules::stop): KEYS runs; ARGV now (unused). Pauses the
/// job (its "p" field, as pause_lua) and hands over each running,
/// unreleased run as release_lua does but keeping its lease end: released,
/// handovers + 1. The run stays live until its lease ends, so no attempt
/// starts while its handler may still run (its next heartbeat is refused).
/// Reply the number handed over; when it is above 0, the job's release
/// channel is told (as release_lua does: backups re-check the job).
inline constexpr std::string_view stop_lua =
    "#!lua\n" LEASE_REDIS_LUA_DECODE
    "local slots = index(redis.call('HGET', KEYS[1], 'i'))[3]\n"
    "local writes, n = {}, 0\n"
    "for i = 1, #slots, 500 do\n"
    "  local chunk = {unpack(slots, i, math.min(i + 499, #slots))}\n"
    "  local vals = redis.call('HMGET', KEYS[1], unpack(chunk))\n"
    "  for k, s in ipairs(chunk) do\n"
    "    local r = rec(vals[k], s)\n"
    "    if r and r[5] == 0 and r[7] == 0 then\n"
    "      r[7] = 1; r[8] = r[8] + 1; n = n + 1\n"
    "      writes[#writes + 1] = s; writes[#writes + 1] = cmsgpack.pack(r)\n"
    "    end\n"
    "  end\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'p', '1')\n"
    "for i = 1, #writes, 1000 do redis.call('HSET', KEYS[1], unpack(writes, i, math.min(i + 999, #writes))) end\n"
    "if n > 0 then\n" LEASE_REDIS_LUA_ANNOUNCE "end\n"
    "return n\n";

/// register_jobs (RegistryStore, rules::register_jobs), one call per job:
/// KEYS instances; ARGV now, then (instance, schedule, zone) per
/// registration. Upserts each, last_seen = the store clock (ARGV now, or
/// Redis TIME); a later one of the same instance wins, as in the rules.
/// Reply the number written.
inline constexpr std::string_view register_jobs_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW
    "local now = store_now()\n"
    "local n = 0\n"
    "for i = 2, #ARGV - 2, 3 do\n"
    "  redis.call('HSET', KEYS[1], ARGV[i], cmsgpack.pack({ARGV[i + 1], ARGV[i + 2], now}))\n"
    "  n = n + 1\n"
    "end\n"
    "return n\n";

/// purge (RegistryStore, rules::purge): KEYS runs, ended, instances; ARGV
/// now, unseen_for (ms). Answers in the rules' order, as purge_outcome's
/// values: {1} not_found (no key of the job holds state: a runs hash that
/// holds only a tombstone is none), {2, instance, schedule, zone,
/// last_seen} registered (the newest registration with now - last_seen <
/// unseen_for; ties: the first instance id, bytewise), {3, record} running
/// (the newest live run), {4} too_soon (now in ms not past the job's
/// fence), else {0} purged: every key of the job deleted, and the runs hash
/// written anew holding only the tombstone "x" = the purge's clock (the
/// latest of two purges).
///
/// Why a tombstone: a handle detects a loss of state by a job's fence
/// counter below a fence it saw (watch.hpp); a purge resets the counter to
/// 0 on purpose, and every handle that ran the job still remembers its
/// fence. Every fence of the job is at most the purge's clock (purged only
/// once now > fence), and every fence won after it is above it (a won
/// fence is at least store-now in ms), so the claim and heartbeat scripts
/// take a known fence at most "x" against a counter of 0 for the purge, not
/// a loss. It lives in the job's runs hash, which those scripts read anyway
/// (in the job's slot on a cluster too; they read the field only when the
/// counter is below the known fence, so it costs the others nothing); a
/// loss of that hash takes the tombstone with it, and is then detected as
/// before. It costs one small hash per purged job, kept for good (a handle
/// may remember a fence as long as it lives).
inline constexpr std::string_view purge_lua =
    "#!lua\n" LEASE_REDIS_LUA_NOW LEASE_REDIS_LUA_DECODE LEASE_REDIS_LUA_RECORD
    "local now = store_now()\n"
    "local got = redis.call('HMGET', KEYS[1], 'i', 'x')\n"
    "local fields = redis.call('HLEN', KEYS[1])\n"
    "if got[2] then fields = fields - 1 end\n"
    "local all = redis.call('HGETALL', KEYS[3])\n"
    "if fields == 0 and #all == 0 then return {1} end\n"
    // Bytewise, not Lua's '<' (strcoll: the server's locale).
    "local function less(a, b)\n"
    "  for i = 1, math.min(#a, #b) do\n"
    "    local x, y = string.byte(a, i), string.byte(b, i)\n"
    "    if x ~= y then return x < y end\n"
    "  end\n"
    "  return #a < #b\n"
    "end\n"
    "local unseen = tonumber(ARGV[2])\n"
    "local best\n"
    "for i = 1, #all, 2 do\n"
    "  local ok, g = pcall(cmsgpack.unpack, all[i + 1])\n"
    "  if not ok or type(g) ~= 'table' or #g ~= 3 then\n"
    "    error({err = 'LEASECORRUPT a registration in ' .. KEYS[3] .. ' is not lease data'})\n"
    "  end\n"
    "  if now - g[3] < unseen and (not best or g[3] > best[4] or (g[3] == best[4] and less(all[i], best[1]))) then\n"
    "    best = {all[i], g[1], g[2], g[3]}\n"
    "  end\n"
    "end\n"
    "if best then return {2, best[1], best[2], best[3], best[4]} end\n"
    "local idx = index(got[1])\n"
    "local slots = idx[3]\n"
    "table.sort(slots, function(a, b) return tonumber(a) > tonumber(b) end)\n"
    "for _, s in ipairs(slots) do\n"
    "  local r = rec(redis.call('HGET', KEYS[1], s), s)\n"
    "  if r and r[5] == 0 and now < r[6] then return record({3}, s, r) end\n"
    "end\n"
    "if now <= 0 or now <= idx[1] then return {4} end\n"
    "local mark = now\n"
    "if got[2] and tonumber(got[2]) > mark then mark = tonumber(got[2]) end\n"
    "redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])\n"
    "redis.call('HSET', KEYS[1], 'x', string.format('%.0f', mark))\n"
    "return {0}\n";

#undef LEASE_REDIS_LUA_NOW
#undef LEASE_REDIS_LUA_INLINE_NOW
#undef LEASE_REDIS_LUA_INLINE_REC
#undef LEASE_REDIS_LUA_INLINE_INDEX
#undef LEASE_REDIS_LUA_DECODE
#undef LEASE_REDIS_LUA_CURRENT
#undef LEASE_REDIS_LUA_RECORD
#undef LEASE_REDIS_LUA_ANNOUNCE
#undef LEASE_REDIS_LUA_ANNOUNCE_FINISH

/// Every script, indexed by `script`.
inline constexpr std::array<std::string_view, script_count> scripts{
    claim_lua, heartbeat_lua, finish_lua, release_lua, get_lua, unfinished_lua, marker_lua,
    pause_lua, resume_lua, paused_lua, job_summary_lua, list_runs_lua, trigger_lua, stop_lua, register_jobs_lua,
    purge_lua};

/// Which of the job's keys each script declares, as bits: runs 1, ended 2,
/// instances 4 (declared in that order): only those it touches, as Redis
/// Cluster requires, and no more bytes per call than it needs. The marker
/// script takes the store key instead (one key).
inline constexpr unsigned key_runs = 1, key_ended = 2, key_instances = 4;
inline constexpr std::array<unsigned, script_count> key_sets{
    key_runs | key_ended, key_runs, key_runs | key_ended, key_runs, key_runs, key_runs, key_runs, key_runs,
    key_runs, key_runs, key_runs | key_instances, key_runs, key_runs, key_runs, key_instances,
    key_runs | key_ended | key_instances};

/// Fields of a record in a reply: slot, then the 8 stored fields and manual (0/1).
inline constexpr std::size_t record_width = 10;

}  // namespace lease::detail::redis
