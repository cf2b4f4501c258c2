/* model/lease.pml — the lease protocol as a Promela model, checked by spin.
 *
 * One job (overlap skip), NS slots, 3 instances, one store. The store's
 * operations are the rules of include/lease/rules.hpp, each one atomic step
 * (store_claim, store_hb, store_finish, store_release below). Each instance
 * follows the scheduler (include/lease/scheduler.hpp and scheduler/*.hpp);
 * every step names the function it mirrors.
 *
 * Time is discrete: one global tick `now` is the store's clock. Per tick the
 * environment may inject faults, then each instance takes one turn (in every
 * order: spin explores them all), doing what is due on its own clocks, as one
 * poll() (scheduler/loop.hpp, poll_once) does. Instance clocks:
 *   wall  = now + skew    (skew in [-1, +1], stepped by the checker);
 *   mono  = now - lag     (a clock that runs slow: lag grows by at most DRIFT).
 * Times are bytes; 255 (NONE) is "not set".
 *
 * Ticks: LEASE 4, HB 1 (heartbeat < lease / 2), MARGIN 1 (the safety margin
 * min(lease / 10, 5 s) as a tick: it must cover the rate drift of a runner's
 * monotonic clock over one lease, here 1 tick), backup checks every 1 or 2
 * ticks ([1, 2] x heartbeat), slots every PERIOD ticks.
 *
 * Faults, chosen by the checker, at most NFAULTS in a history (each one can be
 * switched off with -DNO_<KIND>): crash (optionally followed by a restart,
 * which runs catch-up), freeze for FREEZE1 or FREEZE2 ticks (loop, handler and
 * watchdog stop; the monotonic clock goes on), stop() (hand-over), a claim
 * whose reply is lost after the store applied it (outcome unknown: resent
 * with the same token), a claim or heartbeat that blocks the instance's loop
 * for DELAY1 or DELAY2 ticks — either the request arrives late, or it is
 * applied at once and its reply is late. Clock faults (at most NCLOCK): a wall
 * step of +-1, a monotonic clock that loses a tick.
 *
 * Not modelled: the store losing its state (quarantine), `early` answers
 * (a skew of 1 tick is within early_tolerance), overlap modes other than
 * skip, store errors on finish/release and on the catch-up read, the stop
 * timeout (handlers honour their stop token at once), pruning.
 *
 * Properties (assertions; the bounded liveness one is checked at every tick):
 *   P1 one winner per attempt: a (run, attempt) is begun by one instance, the
 *      one holding the store's current token; and every won attempt is begun
 *      by its winner unless a fault of the winner excuses it (no phantom
 *      attempt left by a lost reply);
 *   P2 no two runners of one run execute at once: a runner executes from its
 *      begin until it observes its stop (lost, stop()) or its monotonic clock
 *      reaches its self-abort deadline; a frozen runner counts as executing;
 *   P3 fences strictly increase;
 *   P4 attempts - hand-overs <= max_attempts;
 *   P5 a released run is never renewed;
 *   P6 a run whose lease ended is taken over (won again) or ended within
 *      2 x heartbeat (+ DRIFT) after its lease end — i.e. lease + 2 x
 *      heartbeat after its last renewal — when an instance without faults
 *      watched it as a backup; an end by `interrupted` counts only when a
 *      newer slot superseded it or max_attempts was used up;
 *   P7 a slot runs at most once: an attempt 1 is won once per slot, and no
 *      attempt is won after the run ended;
 *   P8 no run starts past its deadline: a slot's attempt 1 is won no later
 *      than slot + max_late (+ tolerance), or slot + catch_up for a catch-up.
 *
 * Mutants (each a plausible bug; scripts/model-check --mutant NAME):
 *   NO_MARGIN          the self-abort deadline without the safety margin
 *   HB_NO_TOKEN        heartbeat/finish/release do not check the token
 *   LIVE_EARLY         the store takes a run over one tick before its lease end
 *   REPLY_DEADLINE     the self-abort deadline counted from a renewal's reply,
 *                      not from its send
 *   HANDOVER_COUNTED   a hand-over counted as an attempt (rules: attempt >=
 *                      max_attempts, not attempt - handovers)
 *   RESEND_NEW_TOKEN   an in-doubt claim (lost reply) resent with a new token
 *   TAKEOVER_NO_REREAD a takeover wins without the store re-reading the
 *                      lease (a live lease treated as expired)
 *   FENCE_NOT_INCREMENTED  a won attempt reuses the last fence
 *   LATE_BOUNDARY      the late rule off by one: a claim that reaches the
 *                      store one tick past its deadline still wins
 */

#ifndef NS
#define NS 2
#endif
#define NI 3
#define LEASE 4
#define HB 1
#ifdef NO_MARGIN
#define MARGIN 0
#else
#define MARGIN 1
#endif
#define PERIOD 5
#define MAXATT 2
#define MAXLATE 2   /* max_late + late_tolerance, ticks after the slot */
#define CATCHUP 4   /* catch_up (+ tolerance) */
#ifndef NFAULTS
#define NFAULTS 1
#endif
#ifndef NCLOCK
#define NCLOCK 0
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#define FREEZE1 2
#define FREEZE2 5
#define DELAY1 2
#define DELAY2 4

#define NONE 255
#define T0 2
#define SLOT(s) (T0 + 1 + (s) * PERIOD)
#define TMAX (SLOT(NS - 1) + LEASE + 2 * HB + 3)
#define MONO(i) (now - lag[i])
#define WALL(i) (now + skew[i] - 1)
#define W(i, s) ((i) * NS + (s))
#define DL(sent) ((sent) + LEASE - MARGIN)
#define LIVE(s) (st[s] == S_RUN && now < le[s] - LIVE_SHIFT)
#ifdef LIVE_EARLY
#define LIVE_SHIFT 1
#else
#define LIVE_SHIFT 0
#endif
#ifdef TAKEOVER_NO_REREAD
#define NO_REREAD(r) ((r) == R_TAKE)   /* the backup's belief wins, the lease is not read again */
#else
#define NO_REREAD(r) 0
#endif
#define DEADLINE(s, r) (SLOT(s) + ((r) == R_CATCH -> CATCHUP : MAXLATE))
#ifdef LATE_BOUNDARY
#define LATE_LIMIT(s, r) (DEADLINE(s, r) + 1)   /* off by one: a claim one tick past its deadline still wins */
#else
#define LATE_LIMIT(s, r) DEADLINE(s, r)
#endif

/* run status (run.hpp run_status; S_NONE: no state) */
#define S_NONE 0
#define S_RUN 1
#define S_SUCCESS 2
#define S_FAILED 3
#define S_INTR 4
/* claim reasons */
#define R_SCHED 0
#define R_CATCH 1
#define R_TAKE 2
/* claim outcomes (run.hpp claim_outcome), and what a faulty call gave */
#define O_WON 0
#define O_RUNNING 1
#define O_OVERLAP 2
#define O_LATE 3
#define O_SUPERSEDED 4
#define O_FINISHED 5
#define O_NONE 6
#define O_UNKNOWN 7   /* store_error outcome_unknown, read-back failed too */
#define O_BLOCKED 8   /* the loop waits in the call */
/* instance phases (scheduler.hpp phase, + crashed) */
#define P_RUN 1
#define P_STOPPING 2
#define P_STOPPED 3
#define P_CRASHED 4
/* what a blocked loop waits for */
#define B_PCLAIM 1
#define B_BCLAIM 2
#define B_HB 3
/* handler */
#define H_RUNNING 1
#define H_RETURNED 2
#define H_FAILED 3
#define H_STOPPED 4   /* threw after its stop token was requested */

/* ---- the store: rules::run_table for one job ---------------------------- */
byte st[NS], att[NS], ho[NS], tok[NS], runner[NS], le[NS];
bool rel[NS];
byte lastfence;

/* ---- time and fault budgets --------------------------------------------- */
byte now = T0 - 1;   /* the world's first move makes it T0 */
byte stepped = 7;    /* bit x: instance x took its turn this tick */
byte nfaults = NFAULTS;
byte nclock = NCLOCK;

/* ---- instances ----------------------------------------------------------- */
byte phase[NI];
byte lag[NI];
byte skew[NI];          /* wall offset + 1 */
byte frz[NI];           /* frozen until (store tick) */
bool stopreq[NI];       /* stop() called: the loop takes it from its inbox */
/* a store call the loop waits in: arrival (or reply) tick, and the call */
byte blk[NI], bop[NI], bslot[NI], btok[NI], bsent[NI], breason[NI];
bool bapplied[NI];
byte boc[NI], bob[NI];  /* the answer of a request applied at once, given late */
bool bours[NI], bres[NI];
byte nslot[NI];         /* job::next_slot, as a slot index (NS: beyond the horizon) */
byte rec_at[NI];        /* the recover timer (catch-up), mono */
/* pending_claim (one per instance: drop_older_claims keeps only the latest) */
byte pc_s[NI], pc_tok[NI], pc_r[NI], pc_first[NI], pc_at[NI];
/* watches_: next backup check (mono), in-doubt takeover token and its send */
byte w_at[NI * NS], w_dtok[NI * NS], w_dsent[NI * NS];
/* attempts_ (at most one per instance here; asserted) */
byte a_s[NI], a_tok[NI], a_att[NI], a_dl[NI], a_hb[NI], a_h[NI];
bool a_stop[NI], a_chk[NI], a_long[NI];

/* ---- ghosts for the properties ------------------------------------------ */
byte began[NS];          /* bit a: attempt a of the slot was begun */
bool excused[NI];        /* a fault hit the instance: its won attempts may stay unbegun */
byte won1[NS];
bool ended[NS];
byte exp_t[NS], exp_att[NS], clean[NS];

/* temporaries (one process: plain globals) */
byte i, s2, s3, slt, tk, oc, ob, k, t, dly, sent, latest;
bool oours, hasnew, inuse, ok;

/* temporaries are cleared after each step, so they never tell two states apart */
#define CLEAR_TMP i = 0; ob = 0; oc = 0; oours = 0; hasnew = 0; inuse = 0; ok = 0; tk = 0; k = 0; s3 = 0; slt = 0; \
  t = 0; dly = 0; sent = 0; latest = 0; s2 = 0

/* ---- helpers -------------------------------------------------------------- */

inline unclean(x) {
  /* a fault hit instance x: it is no clean backup (P6) of any run now */
  for (s3 : 0 .. NS - 1) { clean[s3] = clean[s3] & ~(1 << x) }
}

inline any_faults_on(x) {
  /* ... and its won attempts may stay unbegun (P1) */
  excused[x] = 1;
  unclean(x)
}

inline newer(cs) {
  /* rules::detail::has_newer */
  hasnew = 0;
  for (s3 : 0 .. NS - 1) { if :: s3 > cs && st[s3] != S_NONE -> hasnew = 1 :: else fi }
}

/* The current attempt of run cs ends (taken over, interrupted or finished):
 * P1, no phantom: it was begun by its winner, or a fault of the winner excuses it. */
inline attempt_over(cs) {
  assert(((began[cs] >> att[cs]) & 1) || excused[runner[cs]])
}

inline end_run(cs, status) {
  attempt_over(cs);
  st[cs] = status;
  ended[cs] = 1
}

inline win(cs, ctk, ci) {
  /* rules::claim, won(): a new token, a new fence, a fresh lease */
  tok[cs] = ctk;
  runner[cs] = ci;
#ifdef FENCE_NOT_INCREMENTED
  t = lastfence;
#else
  t = lastfence + 1;
#endif
  assert(t > lastfence);                    /* P3 fences strictly increase */
  lastfence = t;
  st[cs] = S_RUN;
  le[cs] = now + LEASE;
  rel[cs] = 0;
  oc = O_WON;
  assert(att[cs] - ho[cs] <= MAXATT);       /* P4 */
  assert(!ended[cs]);                       /* P7 no attempt after the run ended */
  if :: att[cs] == 1 -> won1[cs]++; assert(won1[cs] == 1) :: else fi   /* P7 */
}

#define PR_OC(x, cs, ctk, cr) printf("@%d i%d claim slot %d tok %d reason %d -> %d (att %d fence %d le %d)\n", now, x, cs, ctk, cr, oc, att[cs], lastfence, le[cs])

/* rules::claim — the whole rule, atomic. Out: oc, ob (the blocking run of an
 * overlap), oours (a `running` answer carries the request's token). */
inline store_claim(cs, ctk, cr, ci) {
  ob = cs;
  oours = 0;
  if
  :: st[cs] != S_NONE ->
     if
     :: st[cs] != S_RUN -> oc = O_FINISHED
     :: st[cs] == S_RUN && LIVE(cs) && !NO_REREAD(cr) -> oc = O_RUNNING; oours = (tok[cs] == ctk)
     :: st[cs] == S_RUN && (!LIVE(cs) || NO_REREAD(cr)) ->
        newer(cs);
        if
        :: hasnew -> end_run(cs, S_INTR); oc = O_FINISHED          /* a newer run started first */
#ifdef HANDOVER_COUNTED
        :: !hasnew && att[cs] >= MAXATT -> end_run(cs, S_INTR); oc = O_FINISHED
        :: !hasnew && att[cs] < MAXATT ->
#else
        :: !hasnew && att[cs] - ho[cs] >= MAXATT -> end_run(cs, S_INTR); oc = O_FINISHED
        :: !hasnew && att[cs] - ho[cs] < MAXATT ->
#endif
           attempt_over(cs);
           att[cs]++;
           win(cs, ctk, ci)
        fi
     fi
  :: else ->
     if
     :: cr == R_TAKE -> oc = O_NONE                               /* nothing is created */
     :: cr != R_TAKE && now > LATE_LIMIT(cs, cr) -> oc = O_LATE
     :: cr != R_TAKE && now <= LATE_LIMIT(cs, cr) ->
        newer(cs);
        if
        :: hasnew -> oc = O_SUPERSEDED
        :: else ->
           ob = NONE;                                              /* skip mode: the newest live run blocks */
           for (s2 : 0 .. NS - 1) { if :: LIVE(s2) -> ob = s2 :: else fi }
           if
           :: ob != NONE -> oc = O_OVERLAP
           :: else ->
              for (s2 : 0 .. NS - 1) {                             /* older expired runs -> interrupted */
                if :: st[s2] == S_RUN -> end_run(s2, S_INTR) :: else fi
              }
              assert(now <= DEADLINE(cs, cr));                      /* P8 no run starts past its deadline */
              att[cs] = 1;
              ho[cs] = 0;
              win(cs, ctk, ci)
           fi
        fi
     fi
  fi
}

#ifdef HB_NO_TOKEN
#define CURRENT(s, x) (st[s] == S_RUN && !rel[s])
#else
#define CURRENT(s, x) (st[s] == S_RUN && !rel[s] && tok[s] == (x))  /* rules::detail::is_current */
#endif

inline store_hb(cs, ctk) {
  /* rules::heartbeat */
  if
  :: CURRENT(cs, ctk) -> assert(!rel[cs]); le[cs] = now + LEASE; ok = 1   /* P5 a released run is never renewed */
  :: else -> ok = 0
  fi;
  printf("@%d store heartbeat slot %d tok %d -> %d (le %d)\n", now, cs, ctk, ok, le[cs])
}

inline store_finish(cs, ctk, status) {
  /* rules::finish */
  if
  :: CURRENT(cs, ctk) -> attempt_over(cs); st[cs] = status; ended[cs] = 1; ok = 1
  :: else -> ok = 0
  fi;
  printf("@%d store finish slot %d tok %d status %d -> %d\n", now, cs, ctk, status, ok)
}

inline store_release(cs, ctk) {
  /* rules::release: the lease ends now; a hand-over, not an attempt */
  if
  :: CURRENT(cs, ctk) -> le[cs] = now; rel[cs] = 1; ho[cs]++; ok = 1
  :: else -> ok = 0
  fi;
  printf("@%d store release slot %d tok %d -> %d\n", now, cs, ctk, ok)
}

/* make_token: fresh, and here the smallest not in use (tokens are compared
 * only with tokens in use, so reusing a retired one changes nothing). */
inline fresh_token(x) {
  k = 1;
  do
  :: k > 8 -> assert(false)   /* model limit */
  :: k <= 8 ->
     t = x * 8 + k;
     inuse = (pc_tok[x] == t || a_tok[x] == t || btok[x] == t);
     for (s2 : 0 .. NS - 1) { inuse = inuse || tok[s2] == t || w_dtok[W(x, s2)] == t }
     if :: !inuse -> break :: else -> k++ fi
  od;
  tk = t
}

/* The latest slot due by x's wall clock (schedule.latest), or NONE. */
inline latest_slot(x) {
  latest = NONE;
  for (s2 : 0 .. NS - 1) { if :: SLOT(s2) <= WALL(x) -> latest = s2 :: else fi }
}

/* backup_delay(): uniform in [1, 2] x heartbeat */
inline backup_delay() {
#ifdef JITTER
  if :: dly = HB :: dly = 2 * HB fi
#else
  dly = 2 * HB    /* the longest: the worst case for P6 (-DJITTER: either) */
#endif
}

/* One claim call, with the faults a call can meet. Out: oc (O_UNKNOWN or
 * O_BLOCKED for a faulty call). The request's fields go to b* when blocked. */
inline claim_call(x, cs, ctk, cr, csent, kind) {
  if
#ifndef NO_LOSTREPLY
  :: nfaults > 0 ->                              /* applied, reply lost: outcome_unknown */
     nfaults--; unclean(x);                      /* no excuse: the scheduler must resolve it */
     store_claim(cs, ctk, cr, x);
     PR_OC(x, cs, ctk, cr);
     printf("@%d FAULT i%d: the reply is lost\n", now, x);
     oc = O_UNKNOWN
#endif
#ifndef NO_DELAY
  :: nfaults > 0 ->                              /* the loop waits in the call */
     nfaults--; any_faults_on(x);
     if :: dly = DELAY1 :: dly = DELAY2 fi;
     blk[x] = now + dly; bop[x] = kind; bslot[x] = cs; btok[x] = ctk; bsent[x] = csent; breason[x] = cr;
     if
     :: bapplied[x] = 0;                         /* the request arrives late */
        printf("@%d FAULT i%d: claim slot %d tok %d arrives at %d\n", now, x, cs, ctk, blk[x])
     :: bapplied[x] = 1; store_claim(cs, ctk, cr, x);  /* applied now, the reply is late */
        PR_OC(x, cs, ctk, cr);
        printf("@%d FAULT i%d: its reply comes at %d\n", now, x, blk[x]);
        boc[x] = oc; bob[x] = ob; bours[x] = oours
     fi;
     oc = O_BLOCKED
#endif
  :: true -> store_claim(cs, ctk, cr, x); PR_OC(x, cs, ctk, cr)
  fi
}

/* ---- attempts.hpp -------------------------------------------------------- */

/* begin_attempt */
inline begin_attempt(x, cs, ctk, csent) {
  unwatch(x, cs);
  if
  :: MONO(x) >= DL(csent) -> excused[x] = 1;    /* answer past lease - margin: no handler (`lost`) */
     printf("@%d i%d won slot %d attempt %d too late: no handler\n", now, x, cs, att[cs])
  :: else ->
     assert(a_s[x] == NONE);                     /* model limit: one attempt per instance */
     assert(st[cs] == S_RUN && tok[cs] == ctk);  /* P1 only the current winner runs */
     assert(((began[cs] >> att[cs]) & 1) == 0);  /* P1 one winner per attempt */
     began[cs] = began[cs] | (1 << att[cs]);
     a_s[x] = cs; a_tok[x] = ctk; a_att[x] = att[cs];
     a_dl[x] = DL(csent);                        /* attempt_lease(sent + lease - margin) */
     a_hb[x] = MONO(x) + HB;                     /* heartbeat timer */
     a_h[x] = H_RUNNING; a_stop[x] = 0; a_chk[x] = 0;
     if :: a_long[x] = 0 :: a_long[x] = 1 fi;    /* returns at its next turn, or runs past the horizon */
     printf("@%d i%d BEGIN slot %d attempt %d tok %d deadline(mono) %d\n", now, x, cs, att[cs], ctk, a_dl[x])
  fi
}

inline clear_attempt(x) {
  a_s[x] = NONE; a_tok[x] = 0; a_att[x] = 0; a_dl[x] = 0; a_hb[x] = 0; a_h[x] = 0; a_stop[x] = 0; a_chk[x] = 0; a_long[x] = 0
}

/* lose(): revoke (the handler sees its stop token at once), nothing more is sent */
inline lose(x) {
  printf("@%d i%d attempt of slot %d over\n", now, x, a_s[x]);
  clear_attempt(x);
  if :: phase[x] == P_STOPPING -> phase[x] = P_STOPPED :: else fi   /* after_attempt */
}

/* the reply to a heartbeat sent at csent (on_heartbeat, after the call) */
inline hb_reply(x, csent) {
  if
  :: ok ->
#ifdef REPLY_DEADLINE
     t = DL(MONO(x));
#else
     t = DL(csent);                              /* extend(sent + lease - margin) */
#endif
     if :: t > a_dl[x] -> a_dl[x] = t :: else fi
  :: else -> lose(x)                             /* heartbeat refused: fenced */
  fi
}

/* on_heartbeat */
inline heartbeat(x) {
  a_chk[x] = 1;                                  /* its lease_check timer is set at the first tick */
  sent = MONO(x);
  a_hb[x] = sent + HB;
  if
#ifndef NO_DELAY
  :: nfaults > 0 ->
     nfaults--; any_faults_on(x);
     if :: dly = DELAY1 :: dly = DELAY2 fi;
     blk[x] = now + dly; bop[x] = B_HB; bslot[x] = a_s[x]; btok[x] = a_tok[x]; bsent[x] = sent;
     if
     :: bapplied[x] = 0; printf("@%d FAULT i%d: heartbeat arrives at %d\n", now, x, blk[x])
     :: bapplied[x] = 1; store_hb(a_s[x], a_tok[x]); bres[x] = ok;
        printf("@%d FAULT i%d: heartbeat reply comes at %d\n", now, x, blk[x])
     fi
#endif
  :: true -> store_hb(a_s[x], a_tok[x]); hb_reply(x, sent)
  fi
}

/* on_completion + on_finish_retry (finish and release are not faulted here) */
inline completion(x) {
  if
  :: a_h[x] == H_STOPPED || (a_h[x] == H_FAILED && a_stop[x]) ->
     store_release(a_s[x], a_tok[x])           /* threw after its stop: hand it over */
  :: a_h[x] == H_RETURNED -> store_finish(a_s[x], a_tok[x], S_SUCCESS)
  :: a_h[x] == H_FAILED && !a_stop[x] -> store_finish(a_s[x], a_tok[x], S_FAILED)
  fi;
  /* ok: handed_over / success / failed; refused: lost. Either way it is over. */
  lose(x)
}

/* ---- backups.hpp --------------------------------------------------------- */

inline unwatch(x, cs) {
  w_at[W(x, cs)] = NONE; w_dtok[W(x, cs)] = 0; w_dsent[W(x, cs)] = 0
}

/* watch_run */
inline watch_run(x, cs, check_now) {
  if
  :: a_s[x] == cs -> skip                        /* own_attempt */
  :: a_s[x] != cs && (w_at[W(x, cs)] == NONE || check_now) ->
     if
     :: check_now -> w_at[W(x, cs)] = MONO(x)
     :: else -> backup_delay(); w_at[W(x, cs)] = MONO(x) + dly
     fi
  :: else -> skip
  fi
}

/* on_claim: every claim answer */
inline on_claim(x, cs, ctk, cr, csent) {
  if
  :: oc == O_WON || (oours && oc == O_RUNNING) -> begin_attempt(x, cs, ctk, csent)
  :: oc == O_RUNNING && !oours -> watch_run(x, cs, 0)          /* backup */
  :: oc == O_OVERLAP -> watch_run(x, ob, 0); watch_run(x, cs, 0)   /* skip */
  :: oc == O_FINISHED || oc == O_NONE -> unwatch(x, cs)
  :: oc == O_LATE || oc == O_SUPERSEDED -> skip
  fi
}

/* on_backup: one check of a watched run */
inline on_backup(x, cs) {
  backup_delay();
  w_at[W(x, cs)] = MONO(x) + dly;                /* the next check is set first */
  printf("@%d i%d backup check of slot %d (next at mono %d)\n", now, x, cs, w_at[W(x, cs)]);
  if
  :: nslot[x] > cs && nslot[x] < NS && SLOT(nslot[x]) <= WALL(x) ->   /* the newer slot's claim goes first */
     printf("@%d i%d yields: slot %d is due\n", now, x, nslot[x])
  :: else ->
     if
#ifndef RESEND_NEW_TOKEN
     :: w_dtok[W(x, cs)] != 0 -> tk = w_dtok[W(x, cs)]; sent = w_dsent[W(x, cs)]   /* resend in doubt */
#endif
     :: else -> fresh_token(x); sent = MONO(x)
     fi;
     claim_call(x, cs, tk, R_TAKE, sent, B_BCLAIM);
     if
     :: oc == O_UNKNOWN -> w_dtok[W(x, cs)] = tk; w_dsent[W(x, cs)] = sent
     :: oc == O_BLOCKED -> skip
     :: else -> w_dtok[W(x, cs)] = 0; w_dsent[W(x, cs)] = 0; on_claim(x, cs, tk, R_TAKE, sent)
     fi
  fi
}

/* ---- claims.hpp ----------------------------------------------------------- */

inline drop_pending(x) {
  pc_s[x] = NONE; pc_tok[x] = 0; pc_r[x] = 0; pc_first[x] = NONE; pc_at[x] = NONE
}

/* send_pending */
inline send_pending(x) {
  if
  :: nslot[x] > pc_s[x] && nslot[x] < NS && SLOT(nslot[x]) <= WALL(x) -> drop_pending(x)   /* a newer slot is due: it goes first */
  :: else ->
     sent = MONO(x);
     if :: pc_first[x] == NONE -> pc_first[x] = sent :: else fi;
     claim_call(x, pc_s[x], pc_tok[x], pc_r[x], pc_first[x], B_PCLAIM);
     if
     :: oc == O_UNKNOWN ->
        /* backoff(0): 100 ms doubling, capped at one heartbeat: the next tick */
        if
        :: WALL(x) + 1 > DEADLINE(pc_s[x], pc_r[x]) -> drop_pending(x)   /* `late`: dropped */
        :: else ->
#ifdef RESEND_NEW_TOKEN
           fresh_token(x); pc_tok[x] = tk;
#endif
           pc_at[x] = MONO(x) + 1
        fi
     :: oc == O_BLOCKED -> skip
     :: else ->
        tk = pc_tok[x]; sent = pc_first[x]; t = pc_s[x]; k = pc_r[x];
        drop_pending(x);
        on_claim(x, t, tk, k, sent)
     fi
  fi
}

/* new_claim (drop_older_claims first) */
inline new_claim(x, cs, cr, delay) {
  drop_pending(x);
  pc_s[x] = cs; pc_r[x] = cr;
  fresh_token(x); pc_tok[x] = tk;
  pc_at[x] = MONO(x) + delay;
  if :: delay == 0 -> send_pending(x) :: else fi
}

/* on_slot: claims only the latest due slot */
inline on_slot(x) {
  latest_slot(x);
  slt = nslot[x];
  if :: latest != NONE && latest > slt -> slt = latest :: else fi   /* `late` for the skipped ones */
  nslot[x] = slt + 1;                            /* arm_slot(next) */
  new_claim(x, slt, R_SCHED, 0)
}

/* ---- catch_up.hpp: on_recover -------------------------------------------- */
inline on_recover(x) {
  rec_at[x] = NONE;
  latest_slot(x);
  for (s2 : 0 .. NS - 1) {
    if
    :: st[s2] == S_RUN && now < le[s2] -> watch_run(x, s2, 0)                 /* live: a backup */
    :: st[s2] == S_RUN && now >= le[s2] && latest != NONE && s2 >= latest -> watch_run(x, s2, 1)  /* dead, latest: now */
    :: else -> skip                                                           /* dead, newer due: left */
    fi
  }
  if
  :: latest != NONE && WALL(x) - SLOT(latest) < CATCHUP && st[latest] == S_NONE ->
     new_claim(x, latest, R_CATCH, 1)            /* after max(catch_up_jitter, 1) */
  :: else -> skip
  fi
}

/* ---- a blocked loop gets its answer (the rest of slow_store) ------------- */
inline deliver(x) {
  blk[x] = NONE;
  if
  :: bop[x] == B_HB ->
     if :: !bapplied[x] -> store_hb(bslot[x], btok[x]) :: else -> ok = bres[x] fi;
     hb_reply(x, bsent[x])
  :: bop[x] == B_PCLAIM || bop[x] == B_BCLAIM ->
     if
     :: !bapplied[x] -> store_claim(bslot[x], btok[x], breason[x], x)
     :: else -> oc = boc[x]; ob = bob[x]; oours = bours[x]   /* the answer given when it was applied */
     fi;
     if
     :: bop[x] == B_PCLAIM -> drop_pending(x)
     :: else -> w_dtok[W(x, bslot[x])] = 0; w_dsent[W(x, bslot[x])] = 0
     fi;
     on_claim(x, bslot[x], btok[x], breason[x], bsent[x])
  fi;
  bop[x] = 0; bslot[x] = 0; btok[x] = 0; bsent[x] = 0; breason[x] = 0; bapplied[x] = 0; boc[x] = 0; bob[x] = 0;
  bours[x] = 0; bres[x] = 0
}

/* ---- one turn of instance x (poll_once) ---------------------------------- */
inline handler(x) {
  /* the handler thread: honours its stop token at once (throws: hand-over),
   * or returns at any tick. A frozen instance does nothing. */
  if
  :: a_s[x] != NONE && a_h[x] == H_RUNNING && a_stop[x] -> a_h[x] = H_STOPPED;
     printf("@%d i%d handler of slot %d sees its stop, throws\n", now, x, a_s[x])
  :: a_s[x] != NONE && a_h[x] == H_RUNNING && !a_stop[x] && a_long[x] -> skip
  :: a_s[x] != NONE && a_h[x] == H_RUNNING && !a_stop[x] && !a_long[x] ->
     if
     :: a_h[x] = H_RETURNED; printf("@%d i%d handler of slot %d returns\n", now, x, a_s[x])
#ifdef FAILS
     :: a_h[x] = H_FAILED; printf("@%d i%d handler of slot %d throws\n", now, x, a_s[x])
#endif
     fi
  :: else -> skip
  fi
}

inline step(x) {
  if
  :: (phase[x] == P_RUN || phase[x] == P_STOPPING) && !(frz[x] != NONE && now < frz[x]) ->
     frz[x] = NONE;
     /* the watchdog (lease_guard::check), or lease_held() on waking */
     if
     :: a_s[x] != NONE && MONO(x) >= a_dl[x] && !a_stop[x] -> a_stop[x] = 1;
        printf("@%d i%d self-abort (mono %d >= deadline %d)\n", now, x, MONO(x), a_dl[x])
     :: else
     fi;
     handler(x);
     if
     :: blk[x] != NONE && now < blk[x] -> skip   /* the loop waits in a store call */
     :: else ->
        if :: blk[x] != NONE -> deliver(x) :: else fi;
        /* take_inbox: a stop request, then completions */
        if
        :: stopreq[x] && phase[x] == P_RUN ->    /* begin_stop */
           stopreq[x] = 0; phase[x] = P_STOPPING; drop_pending(x);
           for (s2 : 0 .. NS - 1) { unwatch(x, s2) }
           if :: a_s[x] != NONE -> a_stop[x] = 1 :: else -> phase[x] = P_STOPPED fi
        :: else -> skip
        fi;
        if :: a_s[x] != NONE && a_h[x] >= H_RETURNED -> completion(x) :: else fi;
        /* due timers: intervals first (recover, heartbeat, lease_check, backups, claims), then the slot */
        if
        :: phase[x] == P_RUN && rec_at[x] != NONE && MONO(x) >= rec_at[x] -> on_recover(x)
        :: else -> skip
        fi;
        if
        :: blk[x] == NONE && a_s[x] != NONE && MONO(x) >= a_hb[x] -> heartbeat(x)
        :: else -> skip
        fi;
        if
        :: blk[x] == NONE && a_s[x] != NONE && a_chk[x] && MONO(x) >= a_dl[x] -> lose(x)   /* on_lease_check */
        :: else -> skip
        fi;
        for (i : 0 .. NS - 1) {
          if
          :: blk[x] == NONE && phase[x] == P_RUN && w_at[W(x, i)] != NONE && MONO(x) >= w_at[W(x, i)] ->
             on_backup(x, i)
          :: else -> skip
          fi
        }
        if
        :: blk[x] == NONE && phase[x] == P_RUN && pc_s[x] != NONE && MONO(x) >= pc_at[x] -> send_pending(x)
        :: else -> skip
        fi;
        if
        :: blk[x] == NONE && phase[x] == P_RUN && nslot[x] < NS && WALL(x) >= SLOT(nslot[x]) -> on_slot(x)
        :: else -> skip
        fi
     fi
  :: else -> skip
  fi
}

/* ---- P2: no two runners of one run execute at once ---------------------- */
#define EXEC(x, cs) (a_s[x] == cs && a_h[x] == H_RUNNING && !a_stop[x] && MONO(x) < a_dl[x])
inline safety() {
  for (s2 : 0 .. NS - 1) {
    assert(!(EXEC(0, s2) && EXEC(1, s2)) && !(EXEC(0, s2) && EXEC(2, s2)) && !(EXEC(1, s2) && EXEC(2, s2)))
  }
}

/* ---- P6: a dead run is taken over in time -------------------------------- */
inline liveness() {
  for (s2 : 0 .. NS - 1) {
    if
    :: exp_t[s2] != NONE ->
       newer(s2);
       if
       :: st[s2] == S_RUN && att[s2] == exp_att[s2] && now < le[s2] -> exp_t[s2] = NONE   /* renewed by a late heartbeat */
       :: st[s2] == S_RUN && att[s2] != exp_att[s2] -> exp_t[s2] = NONE                  /* taken over */
       :: st[s2] == S_SUCCESS || st[s2] == S_FAILED -> exp_t[s2] = NONE                  /* a late finish */
       :: st[s2] == S_INTR ->
          assert(hasnew || att[s2] - ho[s2] >= MAXATT);   /* interrupted only for a newer run or used-up attempts */
          exp_t[s2] = NONE
       :: st[s2] == S_RUN && att[s2] == exp_att[s2] && now >= le[s2] ->
          assert(clean[s2] == 0 || now <= exp_t[s2] + 2 * HB + DRIFT)
       fi
    :: else -> skip
    fi;
    if
    :: exp_t[s2] == NONE && st[s2] == S_RUN && now >= le[s2] ->
       /* the lease ended: who watches it without a fault? */
       exp_t[s2] = le[s2]; exp_att[s2] = att[s2]; clean[s2] = 0;
       for (i : 0 .. NI - 1) {
         if
         :: i != runner[s2] && phase[i] == P_RUN && w_at[W(i, s2)] != NONE && (frz[i] == NONE || frz[i] <= now) && blk[i] == NONE &&
            !stopreq[i] -> clean[s2] = clean[s2] | (1 << i)
         :: else -> skip
         fi
       }
    :: else -> skip
    fi
  }
}

/* ---- the environment: faults at a tick boundary -------------------------- */
inline crash(x) {
  phase[x] = P_CRASHED; any_faults_on(x);
  clear_attempt(x); drop_pending(x);
  for (s2 : 0 .. NS - 1) { unwatch(x, s2) }
  blk[x] = NONE; bop[x] = 0; bslot[x] = 0; btok[x] = 0; bsent[x] = 0; breason[x] = 0; bapplied[x] = 0;
  boc[x] = 0; bob[x] = 0; bours[x] = 0; bres[x] = 0;
  frz[x] = NONE; stopreq[x] = 0; rec_at[x] = NONE; nslot[x] = NS
}

inline restart(x) {
  /* a new process: start() — the recover timer now, the next slot armed */
  phase[x] = P_RUN; any_faults_on(x);
  rec_at[x] = MONO(x);
  nslot[x] = NS;
  for (s2 : 0 .. NS - 1) { if :: nslot[x] == NS && SLOT(s2) > WALL(x) -> nslot[x] = s2 :: else fi }
}

inline env_on(x) {
  if
  :: skip
#ifndef NO_CRASH
  :: nfaults > 0 && (phase[x] == P_RUN || phase[x] == P_STOPPING) -> nfaults--; crash(x);
     printf("@%d FAULT crash i%d\n", now, x)
#endif
#ifdef RESTART
  :: phase[x] == P_CRASHED -> restart(x); printf("@%d FAULT restart i%d\n", now, x)
#endif
#ifndef NO_FREEZE
  :: nfaults > 0 && phase[x] == P_RUN && frz[x] == NONE -> nfaults--; any_faults_on(x);
     if :: frz[x] = now + FREEZE1 :: frz[x] = now + FREEZE2 fi;
     printf("@%d FAULT freeze i%d until %d\n", now, x, frz[x])
#endif
#ifndef NO_STOP
  :: nfaults > 0 && phase[x] == P_RUN && !stopreq[x] && (frz[x] == NONE) -> nfaults--; any_faults_on(x); stopreq[x] = 1;
     printf("@%d FAULT stop i%d\n", now, x)
#endif
#ifndef NO_STEP
  :: nclock > 0 && skew[x] < 2 -> nclock--; any_faults_on(x); skew[x]++;
     printf("@%d FAULT wall clock of i%d stepped +1\n", now, x)
  :: nclock > 0 && skew[x] > 0 -> nclock--; any_faults_on(x); skew[x]--;
     printf("@%d FAULT wall clock of i%d stepped -1\n", now, x)
#endif
#ifndef NO_DRIFT
  :: nclock > 0 && lag[x] < DRIFT -> nclock--; lag[x]++;  /* counted in P6's bound, no excuse */
     printf("@%d FAULT monotonic clock of i%d loses a tick\n", now, x)
#endif
  fi
}

/* One instance: one turn per tick (its poll), in any order with the others.
 * One proctype for the three, so the verifier holds its code once. */
active [NI] proctype inst() {
end:
  do
  :: atomic { !(stepped & (1 << _pid)) -> step(_pid); safety(); CLEAR_TMP; stepped = stepped | (1 << _pid) }
  od
}

/* The world: once every instance took its turn, time moves on a tick, P6 is
 * checked, and the checker may inject faults before the instances' turns. */
active proctype world() {
  atomic {
    for (i : 0 .. NS - 1) { exp_t[i] = NONE; le[i] = 0 }
    for (i : 0 .. NI - 1) {
      phase[i] = P_RUN; skew[i] = 1; frz[i] = NONE; blk[i] = NONE; nslot[i] = 0; rec_at[i] = NONE;
      pc_s[i] = NONE; pc_first[i] = NONE; pc_at[i] = NONE; a_s[i] = NONE
    }
    for (i : 0 .. NI * NS - 1) { w_at[i] = NONE }
    CLEAR_TMP
  }
  do
  :: atomic {
       stepped == 7 && now < TMAX ->
       now++;
       liveness();
       if
       :: skip
       :: select (k : 0 .. NI - 1); env_on(k)
       fi;
       stepped = 0;
       CLEAR_TMP
     }
  :: atomic { stepped == 7 && now >= TMAX -> break }
  od
}
