// cluster_demo/orchestrator.cpp — the scripted cluster: starts three instance
// processes on one store (a SQLite file in a temporary directory unless
// --store names another), reads their event
// lines, and injects faults when the events say the moment has come (never
// after a blind sleep where an event can be awaited). Every wait has a
// timeout that ends the demo with a message saying what did not happen.
//
// While it runs, its own connection samples the store every ~100 ms (for the
// "no two live leases" check and the lease ends of the attempts it kills).
// Children are started in their own process group (Ctrl-C reaches only the
// orchestrator) with PR_SET_PDEATHSIG (they die with it), and every one is
// killed and reaped on every way out: normal end, failure, SIGINT/SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <lease/clock/system.hpp>
#include <lease/schedule/every.hpp>
#include <lease/store/sqlite.hpp>
#include <sqlite3.h>

#include "stores.hpp"

#include "demo.hpp"
#include "protocol.hpp"

namespace demo {
namespace {

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }

/// The demo cannot go on: something it waited for did not happen in time.
struct demo_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// SIGINT or SIGTERM reached the orchestrator.
struct interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

lease::time_point now() { return lease::system_clock{}.now(); }

/// "3.412 s"
std::string secs(lease::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

// How much later than the protocol's bound (doc/protocol.md §16) a takeover
// may be seen: the bound is on the store's clock, the events are stamped
// after the store answered, and
// a loaded machine (CI, sanitizer builds) delays timers a little.
constexpr lease::duration latency_allowance = 500ms;

const char* const names[] = {"api-1", "api-2", "api-3"};

/// One instance process (a restarted instance is a new child with the same name).
struct child {
  std::string name;
  pid_t pid = -1;  ///< -1 once reaped
  int fd = -1;     ///< read end of its stdout; -1 after EOF
  std::string buffer;
  bool frozen = false;
  std::size_t life = 0;        ///< index in history::lives
  std::size_t first_line = 0;  ///< history::lines.size() when it was started
};

class orchestrator {
 public:
  orchestrator(std::string self, std::string dir, history& h, const std::string& store)
      : self_(std::move(self)),
        dir_(std::move(dir)),
        db_(store.empty() ? dir_ + "/lease.db" : store),
        ns_("lease_demo_" + std::to_string(::getpid())),
        h_(h),
        store_(open_any(db_, ns_)) {}
  orchestrator(const orchestrator&) = delete;
  orchestrator& operator=(const orchestrator&) = delete;
  /// Whatever happened: no child survives the orchestrator.
  ~orchestrator() { kill_all(); }

  void run() {
    std::cout << "lease cluster demo: 3 instances share " << describe_store(db_, ns_) << "\n"
              << "job \"" << job_name << "\" every " << secs(interval) << ", lease " << secs(lease_time)
              << ", heartbeat " << secs(heartbeat) << ", max_attempts " << max_attempts << "; the handler does "
              << handler_steps << " steps of " << secs(step_time) << " and checks its stop token between steps\n";
    header();
    section("0. three instances start on an empty file; one of them catches up the latest slot");
    for (const char* n : names) start(n);
    for (const char* n : names) wait_ready(n);
    // Let that first run end, so that each act below starts from a quiet cluster.
    need(wait_for([](const line& l) { return l.kind == 'E' && (l.what == "success" || l.what == "failed"); },
                  interval * 3, 0),
         "the first run to end");
    act_kill();
    act_freeze();
    act_term();
    act_catch_up();
    section("the end: SIGTERM everyone");
    for (const char* n : names) term(n, std::string("SIGTERM ") + n);
    for (const char* n : names) wait_exit(n, stop_timeout + 3s);
    pump_for(100ms);  // the last lines
    h_.t_end = now();
    read_back_records();
  }

  /// Kills (SIGKILL, after SIGCONT for a frozen one) and reaps every child still running.
  void kill_all() {
    for (child& c : kids_) {
      if (c.pid > 0) {
        ::kill(c.pid, SIGKILL);
        int st = 0;
        while (::waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
        }
        end_life(c, st, true);
      }
      if (c.fd >= 0) {
        ::close(c.fd);
        c.fd = -1;
      }
    }
  }

  /// Children not reaped (must be none at the end).
  [[nodiscard]] std::size_t unreaped() const {
    return static_cast<std::size_t>(std::count_if(kids_.begin(), kids_.end(), [](const child& c) { return c.pid > 0; }));
  }

 private:
  // ---- the four acts -------------------------------------------------------

  void act_kill() {
    section("1. kill -9 the runner mid-run: a backup takes the run over as attempt 2");
    const line w = need(wait_for(is_scheduled_win, interval * 3), "a scheduled run to be won");
    const std::size_t from = h_.lines.size();
    kill9(w.instance, "kill -9 " + w.instance + " (runner of " + hms(w.slot) + " attempt " + std::to_string(w.attempt) +
                          "): no hand-over, no more heartbeats");
    sample();  // its lease end is final now
    const line r = need(wait_for(ends_or_moves_on(w), lease_time + 2 * heartbeat + 4s, from),
                        "a backup to take over " + hms(w.slot) + " (or the next slot to replace it)");
    takeover_check("kill -9", w, r, last_lease_end(w));
    start(w.instance);
    wait_ready(w.instance);
    if (r.what == "takeover") wait_end_of(r, interval * 3);
  }

  void act_freeze() {
    section("2. SIGSTOP the runner (a long GC pause), SIGCONT it once a backup took over: it is fenced");
    const line w = need(wait_for(is_scheduled_win, interval * 3), "a scheduled run to be won");
    pump_for(300ms);  // the handler is a few steps in
    const std::size_t from = h_.lines.size();
    signal_child(w.instance, SIGSTOP, "stop",
                 "SIGSTOP " + w.instance + " (runner of " + hms(w.slot) + " attempt " + std::to_string(w.attempt) +
                     "): frozen mid-run, it cannot renew its lease");
    // A process frozen inside a write transaction would hold the file's
    // write lock and stall everyone (a different demo). The odds are tiny
    // (the runner is idle between its claim and its first heartbeat), but
    // check, and if so let it finish the transaction and freeze it again.
    for (int i = 0; i < 5 && !write_lock_free(); ++i) {
      ::kill(current(w.instance)->pid, SIGCONT);
      pump_for(20ms);
      ::kill(current(w.instance)->pid, SIGSTOP);
    }
    sample();
    const line r = need(wait_for(ends_or_moves_on(w), lease_time + 2 * heartbeat + 4s, from),
                        "a backup to take over " + hms(w.slot) + " from the frozen runner");
    takeover_check("SIGSTOP", w, r, last_lease_end(w));
    pump_for(400ms);  // the new attempt is under way when the old runner wakes
    signal_child(w.instance, SIGCONT, "cont",
                 "SIGCONT " + w.instance + ": it wakes up still believing it runs attempt " + std::to_string(w.attempt));
    auto mine = [&](const char kind, const char* what) {
      return [=](const line& l) {
        return l.kind == kind && (what == nullptr || l.what == what) && l.instance == w.instance && l.slot == w.slot &&
               l.attempt == w.attempt;
      };
    };
    const line lost = need(wait_for(mine('E', "lost"), 3s, from), w.instance + " to report `lost` for " + hms(w.slot));
    const line probe = need(wait_for(mine('F', nullptr), 3s, from), w.instance + "'s finish with its old token");
    const line end = need(wait_for(mine('H', "end"), 3s, from), w.instance + "'s handler to end");
    const bool stopped = end.message.rfind("stopped", 0) == 0;
    const bool refused = probe.what == "refused";
    h_.checks.push_back({stopped && refused ? check::verdict::pass : check::verdict::fail,
                         "SIGSTOP: the frozen runner is fenced",
                         w.instance + " woke up and reported lost (" + first_words(lost.message, 6) +
                             "...); its handler " + end.message + "; " + probe.message +
                             (r.what == "takeover" ? "; attempt " + std::to_string(r.attempt) + " on " + r.instance +
                                                         " was not disturbed"
                                                   : "")});
    if (r.what == "takeover") wait_end_of(r, interval * 3);
  }

  void act_term() {
    section("3. SIGTERM the runner (a deploy): stop() hands the run over; not counted as an attempt");
    const line w = need(wait_for(is_scheduled_win, interval * 3), "a scheduled run to be won");
    pump_for(300ms);
    const std::size_t from = h_.lines.size();
    term(w.instance, "SIGTERM " + w.instance + " (runner of " + hms(w.slot) + " attempt " +
                         std::to_string(w.attempt) + "): stop() asks the handler to stop");
    const line ho = need(wait_for(
                             [&](const line& l) {
                               return l.kind == 'E' && l.instance == w.instance && l.slot == w.slot &&
                                      (l.what == "handed_over" || l.what == "success" || l.what == "lost");
                             },
                             stop_timeout + 2s, from),
                         w.instance + " to hand " + hms(w.slot) + " over");
    sample();
    const line r = need(wait_for(ends_or_moves_on(w), 2 * heartbeat + 3s, from),
                        "a backup to take " + hms(w.slot) + " over after the hand-over");
    wait_exit(w.instance, stop_timeout + 3s);
    start(w.instance);
    wait_ready(w.instance);
    if (r.what == "takeover") wait_end_of(r, interval * 3);

    std::string name = "SIGTERM: hand-over, taken over within 2 x heartbeat, not counted";
    if (ho.what != "handed_over") {
      h_.checks.push_back({check::verdict::fail, name, w.instance + " did not hand the run over: " + ho.message});
      return;
    }
    if (r.what != "takeover") {
      h_.checks.push_back({check::verdict::note, name, moved_on_note(w, r)});
      return;
    }
    const auto s = h_.sampled.find({w.slot, w.attempt});
    const lease::time_point released =
        s != h_.sampled.end() && s->second.released ? s->second.lease_end : ho.at;
    const lease::duration gap = r.at - released;
    const lease::duration bound = 2 * heartbeat;
    const std::optional<lease::run_record> rec = store_.get({job_name, w.slot});
    const std::uint32_t counted = rec ? rec->attempt - rec->handovers : 0;
    const bool ok = r.instance != w.instance && gap <= bound + latency_allowance && rec && counted == 1;
    h_.checks.push_back(
        {ok ? check::verdict::pass : check::verdict::fail, name,
         w.instance + " released " + hms(w.slot) + "; " + r.instance + " took it over as attempt " +
             std::to_string(r.attempt) + " " + secs(gap) + " after the release (bound: 2 x heartbeat = " + secs(bound) +
             ", + " + secs(latency_allowance) + " allowance); the record says attempt " +
             (rec ? std::to_string(rec->attempt) + " - " + std::to_string(rec->handovers) + " hand-over(s) = " +
                        std::to_string(counted) + " counted attempt (of max " + std::to_string(max_attempts) + ")"
                  : std::string("? (not found)"))});
  }

  void act_catch_up() {
    section("4. everyone down while a slot passes; on restart, one instance catches the missed slot up");
    // Stop right after a run ended, so that no run is live while all are down.
    need(wait_for([](const line& l) { return l.kind == 'E' && (l.what == "success" || l.what == "failed"); },
                  interval * 3),
         "a run to end");
    for (const char* n : names) term(n, std::string("SIGTERM ") + n + (n == names[0] ? ": the whole service goes down" : ""));
    for (const char* n : names) wait_exit(n, stop_timeout + 3s);
    const lease::every schedule(interval);
    const lease::time_point missed = schedule.next(now());
    note("nobody is up at " + hms(missed) + ": that slot passes unclaimed");
    pump_until(missed + 300ms);
    const std::size_t from = h_.lines.size();
    for (const char* n : names) start(n);
    const line c = need(wait_for([&](const line& l) { return l.kind == 'E' && l.what == "catch_up"; },
                                 catch_up_jitter + interval + 3s, from),
                        "a catch-up claim of " + hms(missed));
    const bool ok = c.slot == missed;
    h_.checks.push_back({ok ? check::verdict::pass : check::verdict::fail, "catch-up of the missed slot",
                         "all instances were down over " + hms(missed) + "; on restart " + c.instance + " won " +
                             hms(c.slot) + " with reason catch-up, " + secs(c.at - missed) + " after the slot"});
    wait_end_of(c, interval * 3);
  }

  // ---- checks made during the acts ---------------------------------------

  /// A takeover after a runner stopped renewing: by another instance, as the
  /// next attempt, not before the lease ran out, within 2 x heartbeat after.
  void takeover_check(const std::string& act, const line& w, const line& r, std::optional<lease::time_point> lease_end) {
    const std::string name = act + ": a backup takes over within lease + 2 x heartbeat";
    if (r.what != "takeover") {
      h_.checks.push_back({check::verdict::note, name, moved_on_note(w, r)});
      return;
    }
    const lease::time_point end = lease_end.value_or(w.at + lease_time);
    const lease::duration after_end = r.at - end;
    const lease::duration bound = 2 * heartbeat;
    const bool ok = r.instance != w.instance && r.attempt == w.attempt + 1 && after_end >= lease::duration::zero() &&
                    after_end <= bound + latency_allowance;
    h_.checks.push_back(
        {ok ? check::verdict::pass : check::verdict::fail, name,
         r.instance + " took " + hms(w.slot) + " over as attempt " + std::to_string(r.attempt) + ", " +
             secs(r.at - w.at) + " after " + w.instance + " won it: " + secs(after_end) +
             " after its lease ran out (bound: 2 x heartbeat = " + secs(bound) + ", + " + secs(latency_allowance) +
             " allowance; lease + 2 x heartbeat = " + secs(lease_time + bound) + " after the last heartbeat)" +
             (lease_end ? "" : " [lease end not sampled: assumed won + lease]")});
  }

  /// The third ordering of doc/protocol.md §10: the next slot's claim reached the store first.
  static std::string moved_on_note(const line& w, const line& r) {
    return "the next slot's claim reached the store before any backup's check, so " + hms(w.slot) +
           " was not taken over: it is marked interrupted and " + hms(r.slot) +
           " runs instead (allowed by the protocol: doc/protocol.md §10, 'A dead run and the next slot', third order). Seen: " + r.instance +
           " " + r.what + " " + hms(r.slot);
  }

  // ---- predicates ----------------------------------------------------------

  static bool is_scheduled_win(const line& l) { return l.kind == 'E' && l.what == "won"; }

  /// What ends the wait after runner `w` stopped renewing: a takeover of its
  /// run, the run marked interrupted, or a newer run won first.
  static std::function<bool(const line&)> ends_or_moves_on(const line& w) {
    return [w](const line& l) {
      if (l.kind != 'E') return false;
      if (l.slot == w.slot) return l.what == "takeover" || l.what == "interrupted";
      return l.slot > w.slot && (l.what == "won" || l.what == "catch_up");
    };
  }

  /// Waits for the end (success, failed, lost, handed over) of the attempt `w` started.
  void wait_end_of(const line& w, lease::duration timeout) {
    need(wait_for(
             [&](const line& l) {
               return l.kind == 'E' && l.instance == w.instance && l.slot == w.slot && l.attempt == w.attempt &&
                      (l.what == "success" || l.what == "failed" || l.what == "lost" || l.what == "handed_over");
             },
             timeout, first_line_after(w)),
         "attempt " + std::to_string(w.attempt) + " of " + hms(w.slot) + " on " + w.instance + " to end");
  }

  std::size_t first_line_after(const line& w) const {
    for (std::size_t i = h_.lines.size(); i-- > 0;)
      if (h_.lines[i].at == w.at && h_.lines[i].instance == w.instance && h_.lines[i].what == w.what) return i + 1;
    return 0;
  }

  std::optional<lease::time_point> last_lease_end(const line& w) const {
    const auto it = h_.sampled.find({w.slot, w.attempt});
    if (it == h_.sampled.end()) return std::nullopt;
    return it->second.lease_end;
  }

  // ---- processes -----------------------------------------------------------

  child* current(const std::string& name) {
    for (auto it = kids_.rbegin(); it != kids_.rend(); ++it)
      if (it->name == name && it->pid > 0) return &*it;
    return nullptr;
  }

  void start(const std::string& name) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    // Everything the child needs is built before fork: after it, only
    // async-signal-safe calls.
    std::vector<std::string> args{self_, "instance", name, db_, ns_};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // die with the orchestrator, whatever kills it
      if (::getppid() != parent) ::_exit(1);
      ::setpgid(0, 0);  // Ctrl-C in the terminal reaches the orchestrator only
      ::dup2(fds[1], STDOUT_FILENO);
      // This very executable, even if the file was rebuilt meanwhile.
      ::execv("/proc/self/exe", argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    h_.lives.push_back({name, now(), {}, false, false, 0});
    kids_.push_back({name, pid, fds[0], {}, false, h_.lives.size() - 1, h_.lines.size()});
    fault_line(name, "start", "start " + name + " (pid " + std::to_string(pid) + ")");
  }

  void kill9(const std::string& name, const std::string& text) {
    child* c = current(name);
    if (c == nullptr) throw demo_failure(name + " is not running; cannot kill it");
    ::kill(c->pid, SIGKILL);
    fault_line(name, "kill", text);
    int st = 0;
    while (::waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
    }
    end_life(*c, st, true);
  }

  void signal_child(const std::string& name, int sig, const char* kind, const std::string& text) {
    child* c = current(name);
    if (c == nullptr) throw demo_failure(name + " is not running; cannot signal it");
    ::kill(c->pid, sig);
    fault_line(name, kind, text);
    if (sig == SIGSTOP) {
      c->frozen = true;
      h_.freezes.push_back({name, now(), {}});
    } else if (sig == SIGCONT && c->frozen) {
      c->frozen = false;
      for (freeze& f : h_.freezes)
        if (f.instance == name && f.to == lease::time_point{}) f.to = now();
    }
  }

  void term(const std::string& name, const std::string& text) { signal_child(name, SIGTERM, "term", text); }

  void end_life(child& c, int status, bool killed) {
    life& l = h_.lives[c.life];
    l.to = now();
    l.ended = true;
    l.killed = killed;
    l.status = status;
    c.pid = -1;
    if (c.frozen)
      for (freeze& f : h_.freezes)
        if (f.instance == c.name && f.to == lease::time_point{}) f.to = l.to;
    c.frozen = false;
  }

  void reap() {
    for (child& c : kids_) {
      if (c.pid <= 0) continue;
      int st = 0;
      if (::waitpid(c.pid, &st, WNOHANG) == c.pid) {
        end_life(c, st, false);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
          fault_line(c.name, "exit", c.name + " exited abnormally (" + describe(st) + ")");
      }
    }
  }

  static std::string describe(int st) {
    if (WIFEXITED(st)) return "exit code " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) return std::string("killed by ") + ::strsignal(WTERMSIG(st));
    return "status " + std::to_string(st);
  }

  void wait_ready(const std::string& name) {
    const child* c = current(name);
    if (c == nullptr) throw demo_failure(name + " exited before it was ready");
    need(wait_for([&](const line& l) { return l.kind == 'R' && l.instance == name && l.what == "ready"; }, 10s,
                  c->first_line),
         name + " to start");
  }

  void wait_exit(const std::string& name, lease::duration timeout) {
    const lease::time_point deadline = now() + timeout;
    for (;;) {
      bool running = false;
      for (const child& c : kids_)
        if (c.name == name && (c.pid > 0 || c.fd >= 0)) running = true;
      if (!running) return;
      if (now() >= deadline) throw demo_failure("timed out after " + secs(timeout) + " waiting for " + name + " to exit");
      pump_once(deadline);
    }
  }

  // ---- reading lines, sampling the store --------------------------------------

  void pump_for(lease::duration d) { pump_until(now() + d); }
  void pump_until(lease::time_point deadline) {
    while (now() < deadline) pump_once(deadline);
  }

  /// One round: sample if due, poll the pipes until `deadline` or the next
  /// sample, read, print and record what came.
  void pump_once(lease::time_point deadline) {
    if (g_signal != 0) throw interrupted(g_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)");
    if (now() >= next_sample_) sample();
    std::vector<pollfd> fds;
    std::vector<child*> who;
    for (child& c : kids_)
      if (c.fd >= 0) {
        fds.push_back({c.fd, POLLIN, 0});
        who.push_back(&c);
      }
    const lease::time_point until = std::min(deadline, next_sample_);
    const int timeout = static_cast<int>(std::max<lease::duration::rep>(0, (until - now()).count()));
    const int n = ::poll(fds.data(), fds.size(), timeout);
    std::vector<line> fresh;
    if (n > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents != 0) read_child(*who[i], fresh);
    }
    reap();
    std::stable_sort(fresh.begin(), fresh.end(), [](const line& a, const line& b) { return a.at < b.at; });
    for (line& l : fresh) {
      print(l);
      h_.lines.push_back(std::move(l));
    }
  }

  void read_child(child& c, std::vector<line>& out) {
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.buffer.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      ::close(c.fd);  // EOF (or an error): the process is gone or going
      c.fd = -1;
      break;
    }
    std::size_t nl;
    while ((nl = c.buffer.find('\n')) != std::string::npos) {
      if (std::optional<line> l = parse(std::string_view(c.buffer).substr(0, nl))) out.push_back(std::move(*l));
      c.buffer.erase(0, nl + 1);
    }
  }

  /// The lines from index `from` on (or arriving before the timeout) that match.
  std::optional<line> wait_for(const std::function<bool(const line&)>& pred, lease::duration timeout,
                               std::optional<std::size_t> from = std::nullopt) {
    std::size_t i = from.value_or(h_.lines.size());
    const lease::time_point deadline = now() + timeout;
    for (;;) {
      for (; i < h_.lines.size(); ++i)
        if (pred(h_.lines[i])) return h_.lines[i];
      if (now() >= deadline) return std::nullopt;
      pump_once(deadline);
    }
  }

  line need(std::optional<line> l, const std::string& what) {
    if (!l) throw demo_failure("gave up waiting for " + what + " (timeout); see the timeline above");
    return *l;
  }

  /// One look at the store through the orchestrator's own connection.
  void sample() {
    next_sample_ = now() + 100ms;
    try {
      const std::vector<lease::run_record> open = store_.unfinished(job_name);
      const lease::time_point at = store_.now();  // after the read: see history::max_live
      std::size_t live = 0;
      std::string which;
      for (const lease::run_record& r : open) {
        sampled_attempt& s = h_.sampled[{r.slot, r.attempt}];
        s.lease_end = r.lease_end;
        s.released = r.released;
        if (r.live(at)) {
          ++live;
          which += " " + hms(r.slot) + " attempt " + std::to_string(r.attempt) + " on " + r.runner + ";";
        }
      }
      ++h_.samples;
      h_.max_live = std::max(h_.max_live, live);
      if (live > 1) h_.overlaps.push_back("at " + secs(at - h_.t0) + ":" + which);
    } catch (const lease::store_error&) {
      ++h_.sample_errors;  // a busy file: the next sample looks again
    }
  }

  /// True if a write transaction can start on the file within 200 ms.
  bool write_lock_free() const {
    if (kind_of(db_) != store_kind::sqlite) return true;  // a server's row locks: same odds, no file lock to probe
    sqlite3* raw = nullptr;
    const bool opened = sqlite3_open_v2(db_.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK;
    bool free = false;
    if (opened) {
      sqlite3_busy_timeout(raw, 200);
      free = sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
      if (free) sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    sqlite3_close(raw);
    return free || !opened;  // a file we cannot open is not a lock problem
  }

  /// Every run the events mention, read back at the end.
  void read_back_records() {
    std::set<lease::time_point> slots;
    for (const line& l : h_.lines)
      if (l.kind == 'E' && l.slot != lease::time_point{}) slots.insert(l.slot);
    for (lease::time_point s : slots)
      if (std::optional<lease::run_record> r = store_.get({job_name, s}))
        h_.final_records[s] = {r->attempt, r->handovers};
  }

  // ---- printing --------------------------------------------------------------

  void header() {
    std::printf("\n%8s  %-6s %-7s %-9s %-4s %-12s %s\n", "time", "inst.", "job", "slot", "try", "event", "why");
    std::fflush(stdout);
  }

  void section(const std::string& title) {
    std::printf("\n---- %s\n", title.c_str());
    std::fflush(stdout);
  }

  void print(const line& l) {
    const double t = static_cast<double>((l.at - h_.t0).count()) / 1000.0;
    std::string what = l.what, why = l.message;
    if (l.kind == 'H') {
      if (l.what == "start") return;  // the event line says it already
      if (l.message.rfind("done", 0) == 0) return;
      what = "handler";
    } else if (l.kind == 'F') {
      what = "fence probe";
    } else if (l.kind == 'R') {
      std::printf("%8.3f  %-6s %s\n", t, l.instance.c_str(), (l.what + ": " + l.message).c_str());
      std::fflush(stdout);
      return;
    }
    const std::string attempt = l.attempt == 0 ? "-" : "#" + std::to_string(l.attempt);
    std::printf("%8.3f  %-6s %-7s %-9s %-4s %-12s %s\n", t, l.instance.c_str(), l.job.c_str(), hms(l.slot).c_str(),
                attempt.c_str(), what.c_str(), why.c_str());
    std::fflush(stdout);
  }

  void fault_line(const std::string& name, const std::string& kind, const std::string& text) {
    const lease::time_point at = now();
    h_.faults.push_back({at, name, kind, text});
    std::printf("%8.3f  >>> %s\n", static_cast<double>((at - h_.t0).count()) / 1000.0, text.c_str());
    std::fflush(stdout);
  }

  void note(const std::string& text) {
    std::printf("%8.3f  ... %s\n", static_cast<double>((now() - h_.t0).count()) / 1000.0, text.c_str());
    std::fflush(stdout);
  }

  static std::string first_words(const std::string& s, int n) {
    std::size_t i = 0;
    for (int w = 0; w < n && i != std::string::npos; ++w) i = s.find(' ', i + 1);
    return i == std::string::npos ? s : s.substr(0, i);
  }

  std::string self_, dir_, db_, ns_;  ///< db_: the store spec; ns_: this run's prefix or schema
  history& h_;
  any_store store_;
  std::vector<child> kids_;
  lease::time_point next_sample_{};
};

void print_summary(const history& h, const std::string& svg) {
  std::printf("\n==== summary: the invariants, checked on what happened\n");
  int fails = 0, notes = 0;
  for (const check& c : h.checks) {
    const char* tag = c.v == check::verdict::pass ? "PASS" : c.v == check::verdict::fail ? "FAIL" : "NOTE";
    fails += c.v == check::verdict::fail;
    notes += c.v == check::verdict::note;
    std::printf("  %s  %s\n        %s\n", tag, c.name.c_str(), c.detail.c_str());
  }
  std::printf("\n%s: %zu checks, %d failed%s. Timeline: %s\n", fails == 0 ? "PASS" : "FAIL", h.checks.size(), fails,
              notes ? ", some with a NOTE (an ordering the protocol allows)" : "", svg.c_str());
  std::fflush(stdout);
}

}  // namespace

int run_orchestrator(const std::string& self, const std::string& svg_path, bool keep_dir, const std::string& store) {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR and the loop sees the flag
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::string tmpl = (std::filesystem::temp_directory_path() / "lease-demo-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("cluster_demo: mkdtemp");
    return 2;
  }
  const std::string dir = tmpl;
  history h;
  h.t0 = now();
  int code = 0;
  {
    std::optional<orchestrator> o;
    try {
      o.emplace(self, dir, h, store);
      o->run();
    } catch (const interrupted& e) {
      std::printf("\ncluster_demo: %s; stopping every instance\n", e.what());
      code = 130;
    } catch (const std::exception& e) {
      h.checks.push_back({check::verdict::fail, "the scripted faults ran to the end", e.what()});
      std::printf("\ncluster_demo: FAILED: %s\n", e.what());
    }
    if (o) {
      o->kill_all();
      if (o->unreaped() != 0) h.checks.push_back({check::verdict::fail, "no process left behind", "some child was not reaped"});
    }
    if (h.t_end == lease::time_point{}) h.t_end = now();
  }
  if (code == 130) {
    if (!keep_dir) std::filesystem::remove_all(dir);
    return code;
  }
  check_invariants(h);
  std::string svg_note = svg_path;
  try {
    write_svg(h, svg_path);
    svg_note = std::filesystem::absolute(svg_path).string();
  } catch (const std::exception& e) {
    svg_note = std::string("(not written: ") + e.what() + ")";
  }
  print_summary(h, svg_note);
  if (keep_dir) std::printf("the database is kept in %s\n", dir.c_str());
  else std::filesystem::remove_all(dir);
  const bool failed = std::any_of(h.checks.begin(), h.checks.end(), [](const check& c) { return c.v == check::verdict::fail; });
  return failed ? 1 : 0;
}

}  // namespace demo
