#!/usr/bin/env python3
"""Mutation check of the store rules: breaks each rule once — in the pure rules
(include/lease/rules.hpp, caught by the core and laws tests) and in the SQLite
store's statements and checks (include/lease/store/sqlite.hpp, caught by the
sqlite tests, above all the conformance suite), the Redis scripts, the
PostgreSQL function and statements, and the scheduler's branches — rebuilds,
and lists which tests catch it. A rule whose mutation no test catches is a rule
nothing proves.

  scripts/mutation-check.py [BUILD_DIR] [rules|sqlite|redis|postgres|scheduler] [MUTATION NAME ...]   (default build/dev, every group)

Each mutated file is restored afterwards. A mutant that survives must either
get a test or be listed in EQUIVALENT with the reason it cannot be observed."""
import os, subprocess, sys, re, time
root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args=sys.argv[1:]
build=args.pop(0) if args and os.path.isdir(args[0]) else os.path.join(root,'build/dev')
group_names=('rules','sqlite','redis','postgres','scheduler')
groups_wanted=[a for a in args if a in group_names]
only=[a for a in args if a not in group_names]

rules={
 'token check dropped': ('r.status == run_status::running && !r.released && r.token == token','r.status == run_status::running && !r.released && ((void)token, true)'),
 'released check dropped': ('r.status == run_status::running && !r.released && r.token == token','r.status == run_status::running && r.token == token'),
 'overlap check dropped': ('if (req.overlap == overlap_mode::skip || req.overlap == overlap_mode::buffer_one) {','if (false) {'),
 'lateness check dropped': ('if (!manual && now > req.deadline + late_tolerance) {','if (false) {'),
 'lateness boundary off by one': ('if (!manual && now > req.deadline + late_tolerance) {','if (!manual && now >= req.deadline + late_tolerance) {'),
 'early check dropped': ('if (req.run.slot > now + early_tolerance) {','if (false) {'),
 'early boundary off by one': ('if (req.run.slot > now + early_tolerance) {','if (req.run.slot >= now + early_tolerance) {'),
 'quarantine dropped': ('const bool quarantine = lost && now < *lost + req.lease;','const bool quarantine = false;'),
 'quarantine boundary off by one': ('const bool quarantine = lost && now < *lost + req.lease;','const bool quarantine = lost && now <= *lost + req.lease;'),
 "job's own horizon ignored": ('if (js == nullptr || !js->lost_at) return t.lost_at;','if (true) return t.lost_at;'),
 'proof believes the recorded loss': ('  if (!js.lost_at || *js.lost_at < now) js.lost_at = now;\n  js.fence = known;','  const time_point at = t.lost_at && known <= detail::as_fence(*t.lost_at) ? *t.lost_at : now;\n  if (!js.lost_at || *js.lost_at < at) js.lost_at = at;\n  js.fence = known;'),
 'proof does not raise the counter': ('  js.fence = known;\n  return true;','  return true;'),
 'proof ignores the purge tombstone': ('counter == 0 && p != t.purged.end() && known <= detail::as_fence(p->second)','false && p != t.purged.end()'),
 'purge leaves no tombstone': ('  t.purged.insert_or_assign(std::string(job), now);\n',''),
 'an explained proof moves every horizon': ('  if (t.lost_at && fence <= detail::as_fence(*t.lost_at)) return false;\n','  (void)fence;\n'),
 "a manual claim's paused answer held back": ('return req.reason != claim_reason::manual && res.store_now < quarantine_end ?','return res.store_now < quarantine_end ?'),
 "trigger ignores the job's horizon": ('if (!pending || (lost && *pending <= *lost + early_tolerance)) pending = trigger_slot(t, job, now);','if (!pending || ((void)lost, t.lost_at && *pending <= *t.lost_at + early_tolerance)) pending = trigger_slot(t, now);'),
 'handover count dropped': ('  ++r->handovers;\n',''),
 'handovers not subtracted': ('r.attempt - r.handovers >= req.max_attempts','r.attempt >= req.max_attempts'),
 'pruning guard dropped': ('    if (now <= r.slot + retain + late_tolerance) continue;\n','    (void)retain; (void)now;\n'),
 'pruning boundary off by one': ('    if (now <= r.slot + retain + late_tolerance) continue;\n','    if (now < r.slot + retain + late_tolerance) continue;\n'),
 'superseded check dropped': ('''    if (!manual && detail::has_newer(js, req.run.slot)) {
      res.outcome = claim_outcome::superseded;''','''    if (false) {
      res.outcome = claim_outcome::superseded;'''),
 'takeover none dropped': ('if (req.reason == claim_reason::takeover) {','if (false) {'),
 'newer run check on takeover dropped': ('} else if (detail::has_newer(js, r.slot)) {','} else if (false) {'),
 'older expired runs not interrupted': ('if (!r.live(now) || (req.overlap == overlap_mode::replace','if ((req.overlap == overlap_mode::replace'),
 'fence not incremented': ('return std::max<std::uint64_t>(last + 1,','return std::max<std::uint64_t>(last,'),
 'fence ignores the clock': ('return std::max<std::uint64_t>(last + 1, ms > 0 ? static_cast<std::uint64_t>(ms) : 0);','return last + 1 + 0 * ms;'),
 'release does not end lease': ('  r->lease_end = now;\n','  (void)now;\n'),
 'live lease answered as expired': ('} else if (r.live(now)) {','} else if (false) {'),
 'stop ends the lease at once': ('    r.released = true;\n    ++r.handovers;\n    ++stopped;','    r.released = true;\n    r.lease_end = now;\n    ++r.handovers;\n    ++stopped;'),
 'stop hands over no run': ('    r.released = true;\n    ++r.handovers;\n    ++stopped;','    ++stopped;'),
 'purge ignores registrations': ('  if (res.instance) {\n    res.outcome = purge_outcome::registered;','  if (false) {\n    res.outcome = purge_outcome::registered;'),
 'purge of a live run': ('    if (it->second.live(now)) {\n      res.outcome = purge_outcome::running;','    if (false) {\n      res.outcome = purge_outcome::running;'),
 'purge repeats a fence': ('static_cast<std::uint64_t>(ms) <= js.fence) {\n    res.outcome = purge_outcome::too_soon;','static_cast<std::uint64_t>(ms) < js.fence) {\n    res.outcome = purge_outcome::too_soon;'),
}

sqlite={
 'lateness boundary off by one': ('} else if (!manual && at > req.deadline + late_tolerance) {','} else if (!manual && at >= req.deadline + late_tolerance) {'),
 'early check dropped': ('} else if (req.run.slot > at + early_tolerance) {','} else if (false) {'),
 'early boundary off by one': ('} else if (req.run.slot > at + early_tolerance) {','} else if (req.run.slot >= at + early_tolerance) {'),
 'quarantine boundary off by one': ('if (lost && at < *lost + lease) return *lost + lease;','if (lost && at <= *lost + lease) return *lost + lease;'),
 'quarantine dropped on takeover': ('} else if (const auto until = quarantine_end(at, req.lease)) {\n        res.outcome','} else if (const auto until = std::optional<time_point>{}) {\n        res.outcome'),
 'prune boundary off by one': ('status <> 0 AND slot < ?2 AND slot NOT IN','status <> 0 AND slot <= ?2 AND slot NOT IN'),
 'prune keeps one ended run fewer': ('ORDER BY slot DESC LIMIT ?3)','ORDER BY slot DESC LIMIT ?3 - 1)'),
 'expired runs interrupted one ms late': ('AND (lease_end <= ?2 OR (?3 AND slot < ?4))','AND (lease_end < ?2 OR (?3 AND slot < ?4))'),
 'live check off by one in the overlap scan': ('const bool live = at < time_point{duration{detail::column_int(s, 7)}};','const bool live = at <= time_point{duration{detail::column_int(s, 7)}};'),
 'overlap check dropped': ('if (live && blocks) {','if (live && blocks && false) {'),
 'heartbeat ignores released': ('" + ?4 "\n      "WHERE job = ?1 AND slot = ?2 AND token = ?5 AND status = 0 AND released = 0"','" + ?4 "\n      "WHERE job = ?1 AND slot = ?2 AND token = ?5 AND status = 0"'),
 'finish ignores the token': ('"UPDATE lease_runs SET status = ?3 "\n      "WHERE job = ?1 AND slot = ?2 AND token = ?4','"UPDATE lease_runs SET status = ?3 "\n      "WHERE job = ?1 AND slot = ?2 AND ?4 = ?4'),
 'release does not end lease': ('"UPDATE lease_runs SET lease_end = " LEASE_SQLITE_NOW ", released = 1,','"UPDATE lease_runs SET released = 1 + 0 * ?3,'),
 'handovers not subtracted': ('newer || r.attempt - r.handovers >= req.max_attempts','newer || r.attempt >= req.max_attempts'),
 'fence ignores the clock': ('fence = std::max(fence + 1, ms(at));','fence = fence + 1 + 0 * ms(at);'),
 'lost_at moved earlier': ('if (!lost || *lost <= at) {','if (true) {'),
 'replacement not detected': ('      if (static_cast<std::uint64_t>(st.st_ino) == ino_ && static_cast<std::uint64_t>(st.st_dev) == dev_) return;','      return;'),
 'deletion not detected': ('    } else if (errno == ENOENT) {\n      loss_ = loss{ino_, "was deleted"};\n      file_replaced();','    } else if (errno == ENOENT) {\n      return;'),
 'a failed recovery is not resumed': ('    if (loss_) return file_replaced();','    if ((false)) return file_replaced();'),
 'new file not quarantined': ('options_.quarantine_new_file ? std::optional<std::int64_t>(t) : std::nullopt','std::optional<std::int64_t>{}'),
}

# The scheduler's branches (each its own file under include/lease/scheduler/):
# caught by test/scheduler/faults.cpp, scenarios.cpp and the properties.
scheduler={
 'a resume with catch-up claims nothing': ('include/lease/scheduler/pausing.hpp',
   '  new_claim(j, latest, claim_reason::catch_up);\n',
   '  (void)latest;\n'),
 'a resume with catch-up ignores catch_up': ('include/lease/scheduler/pausing.hpp',
   '  if (!(now - latest < jb.cfg.catch_up)) {',
   '  if (false) {'),
 'backup does not yield to a due newer slot': ('include/lease/scheduler/backups.hpp',
   "  if (jb.next_slot > slot && jb.next_slot <= wall()) return;  // the newer slot's claim goes first\n",
   '  (void)jb;\n'),
 'self-abort counted from the reply, not the send': ('include/lease/scheduler/attempts.hpp',
   'it->second.lease->extend(sent + it->second.lease_len - it->second.margin);',
   'it->second.lease->extend(steady() + it->second.lease_len - it->second.margin);'),
 'a failed claim resent with a new token': ('include/lease/scheduler/claims.hpp',
   '    push_after(wait, {{}, 0, detail::timer_kind::claim, pc.job, pc.req.run.slot, id});\n    return;',
   '    pc.req.token = make_token(rng_);\n    push_after(wait, {{}, 0, detail::timer_kind::claim, pc.job, pc.req.run.slot, id});\n    return;'),
 'a late loop claims its oldest missed slot': ('include/lease/scheduler/claims.hpp',
   '    slot = latest;\n',
   ''),
 'a takeover in doubt resent with a new token': ('include/lease/scheduler/backups.hpp',
   'const bool resend = w.in_doubt.has_value();',
   'const bool resend = false;'),
 'older pending claims kept': ('include/lease/scheduler/claims.hpp',
   'if (it->second.job == j && it->second.req.run.slot < slot && it->second.req.reason != claim_reason::manual) {',
   'if (it->second.job == j && it->second.req.run.slot < slot && false) {'),
 'a throw after stop decided by the phase': ('include/lease/scheduler/attempts.hpp',
   'if (c.threw && c.stop_requested) {',
   'if (c.threw && phase_ == phase::stopping) {'),
 'an answer past lease - margin starts the handler': ('include/lease/scheduler/attempts.hpp',
   'if (steady() >= sent + lease_len - margin) {',
   'if (false) {'),
 'the watchdog never fires': ('include/lease/scheduler/detail/attempt_lease.hpp',
   '    if (now < deadline()) return false;\n    expire();\n    return true;',
   '    (void)now;\n    return false;'),
 'lease_held ignores the clock': ('include/lease/scheduler/detail/attempt_lease.hpp',
   '    if ((*now_)() < deadline()) return true;',
   '    if (deadline_.load() != std::numeric_limits<duration::rep>::min()) return true;'),
 'an event per failed store call': ('include/lease/scheduler/store_faults.hpp',
   '    if (now - summarised_ < summary_every) return std::nullopt;',
   '    (void)summary_every;'),
 'intervals timed on the wall clock': ('include/lease/scheduler.hpp',
   '[[nodiscard]] steady_point steady() const { return steady_now(clock_); }',
   '[[nodiscard]] steady_point steady() const { return steady_point{clock_.now().time_since_epoch()}; }'),
 'early answer not re-armed': ('include/lease/scheduler/claims.hpp',
   '  // Nothing was created: the lease of this token starts at a later send.\n',
   '  return;\n'),
 'the first send time not kept for the lease': ('include/lease/scheduler/claims.hpp',
   '  if (!pc.first_sent) pc.first_sent = steady();',
   '  pc.first_sent = steady();'),
}

# The Redis scripts' boundaries (include/lease/store/redis/scripts.hpp): caught
# by the conformance suite's exact-ms steps and the loss tests (a redis-server
# is started by the tests themselves).
redis_scripts={
 'late boundary off by one': ('include/lease/store/redis/scripts.hpp',
   'if now > ARGV[8] + 10000 then return {3,',
   'if now >= ARGV[8] + 10000 then return {3,'),
 'early boundary off by one': ('include/lease/store/redis/scripts.hpp',
   '  if nslot > now + 1000 then return {7,',
   '  if nslot >= now + 1000 then return {7,'),
 'live lease boundary off by one': ('include/lease/store/redis/scripts.hpp',
   '  if now < r[6] then return {1,',
   '  if now <= r[6] then return {1,'),
 'overlap live boundary off by one': ('include/lease/store/redis/scripts.hpp',
   'if o and o[5] == 0 and now < o[6] then\\n',
   'if o and o[5] == 0 and now <= o[6] then\\n'),
 'quarantine boundary off by one': ('include/lease/store/redis/scripts.hpp',
   'local quarantine = lost and now < lost + lease',
   'local quarantine = lost and now <= lost + lease'),
 'forgotten slot rule dropped': ('include/lease/store/redis/scripts.hpp',
   '"if lost and nslot <= lost + 1000 then',
   '"if false and nslot <= lost + 1000 then'),
 'prune boundary off by one': ('include/lease/store/redis/scripts.hpp',
   "'(' .. cutoff",
   'cutoff'),
}

# The PostgreSQL store (include/lease/store/postgres/schema.hpp): caught by the
# postgres tests against a real server they start themselves, above all the
# conformance suite. lease_claim's text is version 2's, edited by each later
# version; a mutant of it is one more edit of the final text (in the step
# that makes version 5), so it cannot break an earlier edit: each FROM below
# must occur exactly once in that text (checked before the group runs).
postgres_schema='include/lease/store/postgres/schema.hpp'
postgres_anchor='  return "ALTER TABLE @.lease_jobs ADD COLUMN trigger int8;\\n"\n'
postgres_claim={
 'a run live one ms past its lease end': ('    ELSIF o_now < v_run.lease_end THEN\n', '    ELSIF o_now <= v_run.lease_end THEN\n'),
 'overlap live boundary': ('AND o_now < r.lease_end ORDER BY r.slot DESC LIMIT 1;', 'AND o_now <= r.lease_end ORDER BY r.slot DESC LIMIT 1;'),
 'expired runs interrupted one ms late': ('(r.lease_end <= o_now OR (p_overlap = 3 AND r.slot < p_slot))', '(r.lease_end < o_now OR (p_overlap = 3 AND r.slot < p_slot))'),
 'prune boundary off by one': ('AND r.slot < o_now - p_retain - 10000\n', 'AND r.slot <= o_now - p_retain - 10000\n'),
 'prune keeps one ended run fewer': ('ORDER BY k2.slot DESC LIMIT p_history)', 'ORDER BY k2.slot DESC LIMIT p_history - 1)'),
 'lateness boundary off by one': ('    IF NOT v_manual AND o_now > p_deadline + 10000 THEN o_outcome := 3;', '    IF NOT v_manual AND o_now >= p_deadline + 10000 THEN o_outcome := 3;'),
 "lateness boundary off by one on a job's first claim": ('      IF o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;\n      IF p_slot', '      IF o_now >= p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;\n      IF p_slot'),
 'early boundary off by one': ('    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;\n    IF v_newer AND NOT v_manual', '    IF p_slot >= o_now + 1000 THEN o_outcome := 7; RETURN; END IF;\n    IF v_newer AND NOT v_manual'),
 'a slot of the loss second started after a loss': ('ELSIF NOT v_manual AND o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN', 'ELSIF NOT v_manual AND o_lost_at IS NOT NULL AND p_slot < o_lost_at + 1000 THEN'),
 'quarantine boundary off by one on a takeover': ('    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN\n      o_outcome := 8;\n      o_lease_end := o_lost_at + p_lease;\n      RETURN;\n    ELSIF v_paused', '    ELSIF o_lost_at IS NOT NULL AND o_now <= o_lost_at + p_lease THEN\n      o_outcome := 8;\n      o_lease_end := o_lost_at + p_lease;\n      RETURN;\n    ELSIF v_paused'),
 'max attempts off by one': ('v_run.attempt - v_run.handovers >= p_max_attempts', 'v_run.attempt - v_run.handovers > p_max_attempts'),
 'handovers not subtracted': ('v_run.attempt - v_run.handovers >= p_max_attempts', 'v_run.attempt >= p_max_attempts'),
}
postgres={name: (postgres_schema, postgres_anchor, f'  replace(R"M({a})M", R"M({b})M");\n' + postgres_anchor)
          for name, (a, b) in postgres_claim.items()}
postgres.update({
 'heartbeat renews another attempt': (postgres_schema,
   '"WHERE job = $2::bytea AND slot = $3::int8 AND token = $4::bytea AND status = 0 AND NOT released",',
   '"WHERE job = $2::bytea AND slot = $3::int8 AND (token = $4::bytea OR true) AND status = 0 AND NOT released",'),
 'batched heartbeat renews a released run': (postgres_schema,
   'r.token = l.token AND r.status = 0 AND NOT r.released "', 'r.token = l.token AND r.status = 0 "'),
 'release does not end the lease': (postgres_schema,
   'SET lease_end = @.lease_now($1::int8), released = true', 'SET lease_end = lease_end + 0 * @.lease_now($1::int8), released = true'),
 'finish of a released run accepted': (postgres_schema,
   '"WHERE job = $1::bytea AND slot = $2::int8 AND token = $3::bytea AND status = 0 AND NOT released "\n    "RETURNING pg_notify($5::text, " LEASE_PG_FINISH_PAYLOAD',
   '"WHERE job = $1::bytea AND slot = $2::int8 AND token = $3::bytea AND status = 0 "\n    "RETURNING pg_notify($5::text, " LEASE_PG_FINISH_PAYLOAD'),
})

def check_postgres_targets():
    """Each FROM of postgres_claim occurs exactly once in lease_claim's final text."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src=os.path.join(d,'v5.cpp'); exe=os.path.join(d,'v5')
        open(src,'w').write('#include "lease/store/postgres/schema.hpp"\n#include <iostream>\n'
                            'int main() { std::cout << lease::detail::postgres::upgrade_to_v5(); }\n')
        subprocess.run(['g++','-std=c++20','-I',os.path.join(root,'include'),src,'-o',exe],check=True)
        text=subprocess.run([exe],check=True,capture_output=True,text=True).stdout
    for name,(a,_) in postgres_claim.items():
        assert text.count(a)==1, f'postgres: {name}: its FROM occurs {text.count(a)} times in lease_claim, not once'

# First postgres run (2026-12-03, `scripts/mutation-check.py build/dev postgres`):
# 12 of the 16 caught at once, by the conformance suite or the fault tests.
# Four survived 100 random histories: 'expired runs interrupted one ms
# late', 'prune boundary off by one', 'a slot of the loss second started
# after a loss', 'quarantine boundary off by one on a takeover'. The suite
# now replays written-out histories at those boundaries
# (lease::testing::conformance::written_histories), and all four are caught
# by them, on every run; so are the matching SQLite mutants.
# Mutants no test can tell from the original, and why: none at present.
# Last redis run (2026-11-30, `scripts/mutation-check.py build/dev redis`):
# every mutant caught, all by the conformance suite's exact-ms steps or the
# loss tests; 'overlap live boundary' and 'prune boundary' by one of the two
# suite runs (plain server, cluster node) each — 100 random histories apiece.
# Scheduler run (same day): every one of the 14 mutants caught. Four survived
# at first and got a test in test/scheduler/faults.cpp: 'a takeover in doubt
# resent with a new token', 'the watchdog never fires', 'lease_held ignores
# the clock', 'the first send time not kept for the lease'.
# Last full sqlite run (2026-11-30): every sqlite mutant caught. Notes:
#  * 'prune boundary off by one' and 'expired runs interrupted one ms late' are
#    caught only by the conformance suite's exact-ms boundary steps (the suite
#    before them passed both mutants in 8 of 8 runs of 100 histories).
#  * 'quarantine dropped on takeover' is caught by the unit test in
#    test/sqlite/replaced.cpp; the random suite meets it in about 1 run in 6
#    (a loss, a win, its expiry, then a takeover with a longer lease).
# Rules run of the loss and proof mutants (2026-12-05, `scripts/mutation-check.py
# build/dev rules NAME ...` for the two quarantine ones and the nine of the job's
# horizon, the proof, the tombstone and the paused answer): every one caught by
# the core tests, the quarantine ones by five cases each.
EQUIVALENT={
}

groups=[
 ('rules','include/lease/rules.hpp',rules,['core','laws'],'^(core|laws):'),
 ('sqlite','include/lease/store/sqlite.hpp',sqlite,['sqlite'],'^sqlite:'),
 ('redis',None,redis_scripts,['redis'],'^redis:'),
 ('postgres',None,postgres,['postgres'],'^postgres:'),
 ('scheduler',None,scheduler,['scheduler_scenarios','scheduler_properties'],'^scheduler_(scenarios|properties):'),
]
uncaught=[]
for gname,rel,muts,targets,regex in groups:
    if groups_wanted and gname not in groups_wanted: continue
    if gname=='postgres': check_postgres_targets()
    for name,m in muts.items():
        if only and name not in only: continue
        f,a,b = m if len(m)==3 else (rel,)+m
        p=os.path.join(root,f)
        orig=open(p).read()
        try:
            assert a in orig, (gname,name)
            open(p,'w').write(orig.replace(a,b,1))
            time.sleep(1.1)  # a new mtime for ninja
            b_=subprocess.run(['cmake','--build',build,'--target',*targets],capture_output=True,text=True)
            if b_.returncode!=0: print(f'## {gname}: {name}: does not compile'); print(b_.stdout[-2000:]); continue
            r=subprocess.run(f'ctest --test-dir {build} -R "{regex}" 2>&1 | grep -E "Failed|\\*\\*\\*"',shell=True,capture_output=True,text=True)
            fails=sorted({re.sub(r'^.*Test +#\d+: ','',l).split(' ....')[0].split(' (Failed)')[0].strip() for l in r.stdout.splitlines() if 'Test' in l and ('Failed' in l or '***' in l)})
            if not fails and (gname,name) not in EQUIVALENT: uncaught.append(f'{gname}: {name}')
            print(f'## {gname}: {name}: {len(fails)} failing' + (f' (equivalent: {EQUIVALENT[(gname,name)]})' if not fails and (gname,name) in EQUIVALENT else ''))
            [print('   -',x) for x in fails]
            sys.stdout.flush()
        finally:
            open(p,'w').write(orig)
print('every mutation was caught' if not uncaught else 'NOT CAUGHT: '+', '.join(uncaught))
sys.exit(1 if uncaught else 0)
