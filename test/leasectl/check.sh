#!/bin/bash
# test/leasectl/check.sh LEASECTL SEED URL — the real leasectl against a real
# store (a SQLite file, or a Redis / PostgreSQL that with_server started):
# seeds known runs (seed.cpp), then checks every command's output, with
# times and ms-since-epoch numbers normalised, and its exit code; plus a bad
# URL, a missing job, usage errors, and URLs holding a password that must
# never be printed. (A store without a capability, exit code 3, is
# output.cpp's.) Exit 0 when all pass; each failure is printed.
set -u
L=$1 SEED=$2 URL=$3
secret=Tr0ub4dor
failures=0
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

norm() {
  sed -E -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z/<time>/g' -e 's/[0-9]{13}/<ms>/g'
}
# lc ARGS...: runs leasectl; $rc, $out (stdout, normalised), $err (stderr).
lc() {
  "$L" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(norm <"$tmp/out")
  err=$(cat "$tmp/err")
}
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# expect NAME RC EXPECTED_STDOUT: checks the last lc.
expect() {
  [[ $rc == "$2" ]] || fail "$1: exit code $rc, expected $2 (stderr: $err)"
  if [[ $out != "$3" ]]; then
    fail "$1: stdout differs (normalised):"
    diff <(echo "$3") <(echo "$out")
  fi
}
# expect_err NAME RC REGEX: exit code, nothing on stdout, stderr matching REGEX, never the secret.
expect_err() {
  [[ $rc == "$2" ]] || fail "$1: exit code $rc, expected $2 (stderr: $err)"
  [[ -z $out ]] || fail "$1: printed on stdout: $out"
  [[ $err =~ $3 ]] || fail "$1: stderr does not match /$3/: $err"
  [[ $err != *"$secret"* ]] || fail "$1: the password is in the message: $err"
}

"$SEED" "$URL" || { echo "FAIL: seeding $URL"; exit 1; }
# What this store can do beyond pause and listings (leasectl_seed URL caps):
# "trigger", "stop", "registry". A capability it lacks is exit code 3.
caps=" $("$SEED" "$URL" caps) "
has() { [[ $caps == *" $1 "* ]]; }

lc --store "$URL" pause report
expect "pause" 0 'job report paused: no claim of it wins on any instance until `leasectl resume report`'
[[ $("$SEED" "$URL" claim report) == paused ]] || fail "an instance's claim of report was not refused as paused"
lc --store "$URL" pause report
expect "pause again" 0 'job report was already paused: no claim of it wins on any instance until `leasectl resume report`'

lc --store "$URL" jobs
# (Registered in one call: which of api-1 and api-2 was seen last may differ
# by a millisecond; and a slow machine may take a second or more to get here.)
out=$(sed -E -e 's/api-[12] [0-9]+ s ago/<seen>/' -e 's/api-3 [0-9]+ s ago/api-3 <n> s ago/' <<<"$out")
if has registry; then
  # NEXT SLOT: cleanup's from its registered "every 1m"; report is paused.
  expect "jobs" 0 "NAME     SCHEDULE                NEXT SLOT                 PAUSED  TRIGGERED  LAST SLOT                 LAST STATUS  RUNNER  ATTEMPT  INSTANCES
cleanup  every 1m                <time>  no      -          <time>  failed       api-3   1        1, api-3 <n> s ago
report   0 6 * * * Europe/Paris  paused                    yes     -          <time>  running      api-2   2        2, <seen>"
  cleanup_regs='[{"instance":"api-3","schedule":"every 1m","zone":"","last_seen":"<time>","last_seen_ms":<ms>}]'
  report_regs='[{"instance":"api-1","schedule":"0 6 * * *","zone":"Europe/Paris","last_seen":"<time>","last_seen_ms":<ms>},{"instance":"api-2","schedule":"0 6 * * *","zone":"Europe/Paris","last_seen":"<time>","last_seen_ms":<ms>}]'
else
  # No registration: no schedule to tell a next slot from.
  expect "jobs" 0 "NAME     SCHEDULE  NEXT SLOT  PAUSED  TRIGGERED  LAST SLOT                 LAST STATUS  RUNNER  ATTEMPT  INSTANCES
cleanup  -         -          no      -          <time>  failed       api-3   1        -
report   -         paused     yes     -          <time>  running      api-2   2        -"
  cleanup_regs='[]' report_regs='[]'
fi
# --json: the schedule's next slot, paused or not; null without a registration.
if has registry; then
  cleanup_next='"next_slot":"<time>","next_slot_ms":<ms>' report_next=$cleanup_next
else
  cleanup_next='"next_slot":null' report_next=$cleanup_next
fi

lc --store "$URL" jobs --json
expect "jobs --json" 0 '[
 {"name":"cleanup","paused":false,"trigger":null,'"$cleanup_next"',"fence":<ms>,"last_run":{"job":"cleanup","slot":"<time>","slot_ms":<ms>,"manual":false,"status":"failed","attempt":1,"handovers":0,"runner":"api-3","fence":<ms>,"lease_end":"<time>","lease_end_ms":<ms>,"released":false},"instances":'"$cleanup_regs"'},
 {"name":"report","paused":true,"trigger":null,'"$report_next"',"fence":<ms>,"last_run":{"job":"report","slot":"<time>","slot_ms":<ms>,"manual":false,"status":"running","attempt":2,"handovers":1,"runner":"api-2","fence":<ms>,"lease_end":"<time>","lease_end_ms":<ms>,"released":false},"instances":'"$report_regs"'}
]'

if has registry; then
  # The slots themselves: cleanup's on a whole minute within a minute of
  # now, report's ("0 6 * * *" in Paris) on a whole hour within a day.
  json=$("$L" --store "$URL" jobs --json)
  now_ms=$(($(date +%s) * 1000))
  read -r c_ms r_ms < <(grep -oE '"next_slot_ms":[0-9]+' <<<"$json" | cut -d: -f2 | tr '\n' ' ')
  [[ -n ${r_ms:-} && $((c_ms % 60000)) == 0 && $((c_ms - now_ms)) -gt -5000 && $((c_ms - now_ms)) -le 65000 ]] ||
    fail "jobs --json: cleanup's next_slot_ms $c_ms is not the next whole minute after $now_ms"
  [[ -n ${r_ms:-} && $((r_ms % 3600000)) == 0 && $((r_ms - now_ms)) -gt -5000 && $((r_ms - now_ms)) -le 86405000 ]] ||
    fail "jobs --json: report's next_slot_ms $r_ms is not a whole hour within a day of $now_ms"
fi

lc --store "$URL" runs report
expect "runs report" 0 "SLOT                      BY        STATUS   ATTEMPT  HANDOVERS  RUNNER  FENCE          LEASE END                 RELEASED
<time>  schedule  running  2        1          api-2   <ms>  <time>  no
<time>  schedule  success  1        0          api-1   <ms>  <time>  no"
# Newest first: the running run's slot is the later one.
slots=$("$L" --store "$URL" runs report --json | grep -oE '"slot_ms":[0-9]+' | cut -d: -f2 | tr '\n' ' ')
read -r s1 s2 <<<"$slots"
[[ -n ${s2:-} && $((s1 - s2)) == 60000 ]] || fail "runs report --json: slots $slots are not newest first, 60 s apart"

lc --store "$URL" runs report --limit 1 --json
expect "runs report --limit 1 --json" 0 '[
 {"job":"report","slot":"<time>","slot_ms":<ms>,"manual":false,"status":"running","attempt":2,"handovers":1,"runner":"api-2","fence":<ms>,"lease_end":"<time>","lease_end_ms":<ms>,"released":false}
]'

lc --store "$URL" watch --count 2 --interval 50
expect "watch" 0 "<time>  job report is paused: no claim of it wins
<time>  job cleanup slot <time>: failed (attempt 1 by api-3, fence <ms>)
<time>  job report slot <time>: running (attempt 2 by api-2, fence <ms>)"
lc --store "$URL" watch report --count 1
expect "watch report" 0 "<time>  job report slot <time>: success (attempt 1 by api-1, fence <ms>)
<time>  job report slot <time>: running (attempt 2 by api-2, fence <ms>)"

lc --store "$URL" resume report
expect "resume" 0 "job report resumed: its next slot is claimed as usual; slots due while it was paused do not run (\`leasectl trigger report\` runs it once now)"
[[ $("$SEED" "$URL" claim report) == won ]] || fail "an instance's claim of report did not win after resume"
lc --store "$URL" resume report --json
expect "resume again --json" 0 '{"job":"report","paused":false,"changed":false}'
lc --store "$URL" jobs
[[ $rc == 0 && $out == *$'\n'"report "*" no "* ]] || fail "jobs after resume: report not shown as resumed: $out"

# Every job at once: each known job paused (one call each), then each resumed.
lc --store "$URL" pause --all
expect "pause --all" 0 'job cleanup paused
job report paused
2 jobs paused (2 just now): no claim of any wins on any instance until `leasectl resume --all`. A job the store first hears of after this is not paused'
[[ $("$SEED" "$URL" claim cleanup) == paused ]] || fail "an instance's claim of cleanup was not refused after pause --all"
lc --store "$URL" resume --all --json
expect "resume --all --json" 0 '[
 {"job":"cleanup","paused":false,"changed":true},
 {"job":"report","paused":false,"changed":true}
]'
lc --store "$URL" resume --all
expect "resume --all again" 0 'no job in the store is paused: nothing changed'
lc --store "$URL" pause report --all
expect_err "pause JOB --all" 2 "give JOB or --all, not both"

# Trigger: one request (a second one is the same), claimed by exactly one
# instance as a manual run, which its history shows.
if has trigger; then
lc --store "$URL" trigger cleanup
expect "trigger" 0 'job cleanup triggered: one instance that has it runs it once, as a manual run of slot <time> (`leasectl runs cleanup` shows it)'
lc --store "$URL" trigger cleanup --json
expect "trigger again --json" 0 '{"job":"cleanup","trigger":"<time>","trigger_ms":<ms>,"changed":false,"paused":false,"ever_ran":true}'
lc --store "$URL" jobs
[[ $rc == 0 && $out == *" no      <time>  "* ]] || fail "jobs after trigger: cleanup's pending trigger not shown: $out"
[[ $("$SEED" "$URL" claim-trigger cleanup) == won ]] || fail "an instance's claim of cleanup's trigger did not win"
[[ $("$SEED" "$URL" claim-trigger cleanup) == none ]] || fail "a second instance found cleanup's trigger still pending"
lc --store "$URL" runs cleanup --limit 1
expect "runs of a manual run" 0 "SLOT                      BY      STATUS   ATTEMPT  HANDOVERS  RUNNER  FENCE          LEASE END                 RELEASED
<time>  manual  running  1        0          api-9   <ms>  <time>  no"
else
  lc --store "$URL" trigger cleanup
  expect_err "trigger on a store without TriggerStore" 3 "cannot trigger a job"
fi

# Stop: report paused and its two live runs (the seeded takeover, and the
# slot api-9 won after the resume) handed over, each keeping its lease (its
# handler may run until its runner hears of it), so report cannot be purged
# yet; cleanup's registration is too recent; a job only paused is purged.
if has stop && has registry; then
lc --store "$URL" stop report
expect "stop" 0 'job report stopped: paused, and 2 runs in progress handed over (each runner stops its handler at its next heartbeat); no instance takes them over or starts a slot until `leasectl resume report`'
# (A claim of a stopped run finds it live until its lease ends: running.)
[[ $("$SEED" "$URL" claim report) =~ ^(paused|running)$ ]] || fail "an instance's claim of report won after stop"
lc --store "$URL" purge cleanup --unseen-for 1h
expect_err "purge of a job registered recently" 5 "not purged: instance api-3 registered job cleanup [0-9]+ s ago \(schedule every 1m\), within --unseen-for 3600 s"
lc --store "$URL" purge report --unseen-for 0
expect_err "purge of a stopped job" 5 "report's run of slot [0-9T:.Z-]+ on api-[29] was stopped, but its handler may run until its lease ends at"
lc --store "$URL" pause old-job
lc --store "$URL" purge old-job --unseen-for 0
expect "purge" 0 "job old-job purged: its runs, fence, pause, trigger and registrations are gone"
lc --store "$URL" runs old-job
expect_err "runs of a purged job" 4 "has no state for job 'old-job'"
lc --store "$URL" purge old-job --unseen-for 0
expect_err "purge of a purged job" 4 "nothing to purge"
else
  lc --store "$URL" stop report
  expect_err "stop on a store without StopStore" 3 "cannot stop a job's runs"
  lc --store "$URL" purge report
  expect_err "purge on a store without RegistryStore" 3 "cannot purge a job"
fi

lc --store "$URL" runs nosuch
expect_err "runs of a missing job" 4 "has no state for job 'nosuch'"
case $URL in
  redis://* | redis+cluster://*)  # another key prefix: other instances' jobs, none here
    lc --store "$URL" --namespace other jobs
    expect "jobs in another namespace" 0 "NAME  SCHEDULE  NEXT SLOT  PAUSED  TRIGGERED  LAST SLOT  LAST STATUS  RUNNER  ATTEMPT  INSTANCES" ;;
  postgresql://* | postgres://*)
    # Another schema: one no instance made is refused (exit 1, as a missing
    # SQLite file), by reads and writes alike, and never created.
    for cmd in jobs "pause report" "trigger report" "stop report" "purge report"; do
      # shellcheck disable=SC2086  # cmd is words
      lc --store "$URL" --namespace typo $cmd
      expect_err "$cmd in a schema no instance made" 1 "PostgreSQL schema 'typo' has no lease tables .*: check the schema name \\(leasectl: --namespace, the instances' schema\\), or start an instance first"
    done
    n=$(psql -X -At -d "$URL" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'typo'" 2>&1)
    [[ $n == 0 ]] || fail "leasectl --namespace typo: schema typo exists afterwards (count: $n)" ;;
esac

# Errors: a bad URL, usage errors, a missing file.
lc --store "mysql://app:$secret@db1/jobs" jobs
expect_err "unknown scheme" 2 "unknown scheme 'mysql:'; accepted forms: PATH \| sqlite:PATH \| redis://"
lc --store "$URL" runs
expect_err "runs without JOB" 2 "JOB is required"
lc --store "$URL" frobnicate
expect_err "unknown command" 2 "subcommand is required"
lc jobs
expect_err "no --store" 2 "--store is required"
lc --store "$URL" runs report --limit 0
expect_err "--limit 0" 2 "limit"
lc --store "$tmp/no-such.db" jobs
expect_err "a missing SQLite file" 1 "no SQLite file at"
[[ ! -e $tmp/no-such.db ]] || fail "leasectl created $tmp/no-such.db"
: >"$tmp/empty.db"
lc --store "$tmp/empty.db" jobs
expect_err "an empty SQLite file" 1 "is empty: no instance has used it as a store"
[[ ! -s $tmp/empty.db ]] || fail "leasectl wrote into the empty file $tmp/empty.db"
# A file of an older schema version (5: the claim counter in lease_meta) is
# refused, not upgraded: the instances of the older release that use it
# would claim no more.
"$SEED" "$tmp/old.db" >/dev/null || fail "seeding $tmp/old.db"
schema() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2] if len(sys.argv) > 2 else ""); print(c.execute("SELECT version FROM lease_schema").fetchone()[0]); c.commit()' "$@"; }
schema "$tmp/old.db" "BEGIN; INSERT INTO lease_meta (name, value) SELECT 'claims', fence FROM lease_jobs WHERE job = 'claims';
  DELETE FROM lease_jobs WHERE job = 'claims'; UPDATE lease_schema SET version = 5; COMMIT;" >/dev/null ||
  fail "python3 could not make $tmp/old.db a version 5 file"
lc --store "$tmp/old.db" jobs
expect_err "a SQLite file of an older schema version" 1 "version 5, older than this release's 6.*upgrade the instances first"
[[ $(schema "$tmp/old.db") == 5 ]] || fail "leasectl upgraded the version 5 file $tmp/old.db"

# A password in the URL is never printed: an unreachable server (exit 1),
# and this store's own URL with a password added (Redis: AUTH fails on a
# server with none; PostgreSQL: trust authentication lets it in).
lc --store "redis://lease:$secret@127.0.0.1:1/0" pause report
expect_err "unreachable Redis with a password" 1 "Redis store \(redis://\*\*\*@127.0.0.1:1/0\)"
lc --store "postgresql://lease:$secret@127.0.0.1:1/jobs" pause report
expect_err "unreachable PostgreSQL with a password" 1 "PostgreSQL store \(postgresql://\*\*\*@127.0.0.1:1/jobs\)"
lc --store "postgres:host=127.0.0.1 port=1 password='$secret'" pause report
expect_err "unreachable PostgreSQL conninfo with a password" 1 "password='\*\*\*'"
case $URL in
  redis://*)
    lc --store "redis://lease:$secret@${URL#redis://}" pause report
    expect_err "Redis refusing AUTH" 2 "Redis store \(redis://\*\*\*@" ;;
  postgresql://*@*)
    lc --store "postgresql://postgres:$secret@${URL#postgresql://*@}" pause report
    [[ $rc == 0 && $(cat "$tmp/out" "$tmp/err") != *"$secret"* && $out == "job report "*"paused"* ]] ||
      fail "PostgreSQL URL with a password: exit $rc, $out $err" ;;
esac

if ((failures)); then
  echo "$failures check(s) failed on $URL"
  exit 1
fi
echo "all leasectl checks passed on $URL"

