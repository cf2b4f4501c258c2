// scale.cpp — scale on paper (issue #13, item 5): store operations per second
// by kind, per instance and in total, for J jobs over N instances, from
// lease::sim on the fake clock (every store call is recorded in its
// history), next to the formula they follow; memory per job per instance,
// from a scheduler over a store that keeps nothing (heap bytes counted by a
// global operator new); an SVG plot. Its output is doc/scale.md.
//
// The jobs: every 60 s, anchors spread evenly over the minute, each run 22.5 s
// (a handler that returns), lease 30 s (heartbeat 5 s), claim jitter 250 ms,
// a store that announces ends (PushStore: Redis, PostgreSQL). Rates are
// counted from the second slot on (the first minute has the start-up reads).
//
// The formula, per second, with R = J / interval runs per second, D the run
// time, hb the heartbeat, m(t) the expected number of periodic backup checks
// in t (checks are U[hb, 2 hb] apart, the first U[hb, 2 hb] after the watch
// starts; computed below):
//   claims         N × R                 every instance claims every slot
//   backup checks  (N − 1) × R × (m(D) + 1)   each loser watches the run, and
//                                        re-checks once more when its end is announced
//   heartbeats     R × D / hb            renewals of running attempts (items;
//                                        one batched call per instance per tick)
//   finishes       R
// Per instance: each of these / N (winners are spread evenly).
//
// The simulation checks every store call against the whole table, so its time
// grows with jobs × calls: the largest sizes are simulated for less than an
// hour (the output says for how long), and the formula, linear in J (jobs do
// not interact), carries the figures to 100,000 jobs.
//
//   scale_on_paper [--svg PATH]   (prints Markdown; default SVG path doc/scale.svg)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "lease/clock/fake.hpp"
#include "lease/executor/manual.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/schedule/every.hpp"
#include "lease/scheduler.hpp"
#include "lease/sim.hpp"

// ---- heap bytes in use, for memory per job ---------------------------------

namespace {
std::atomic<long long> live_bytes{0};  // what malloc gave out for operator new, in use now
}  // namespace

// Not inlined: the compiler would otherwise pair a free() with a new-expression.
[[gnu::noinline]] void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc{};
  live_bytes += static_cast<long long>(malloc_usable_size(p));
  return p;
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  live_bytes -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

using namespace std::chrono_literals;
using lease::duration;
using lease::time_point;

namespace {

constexpr duration interval = 60s;
constexpr duration run_time = 22'500ms;
constexpr duration lease_len = 30s;
constexpr duration hb = 5s;  // lease / 6

lease::options job_options() {
  lease::options o;
  o.lease = lease_len;
  o.catch_up = 0ms;  // start with nothing missed
  o.history_size = 1;
  return o;
}

/// m(t): expected periodic backup checks within t of the watch's start.
double checks_within(duration t) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> gap(1.0, 2.0);
  const double limit = std::chrono::duration<double>(t).count() / std::chrono::duration<double>(hb).count();
  long long n = 0;
  constexpr int trials = 200'000;
  for (int i = 0; i < trials; ++i)
    for (double at = gap(rng); at < limit; at += gap(rng)) ++n;
  return static_cast<double>(n) / trials;
}

struct rates {  // per second, whole cluster
  double claims = 0, backups = 0, heartbeats = 0, finishes = 0, other = 0;
  double claim_calls = 0, heartbeat_calls = 0;  // round trips (batches)
  [[nodiscard]] double total() const { return claims + backups + heartbeats + finishes + other; }
};

rates predict(double jobs, double n, double m) {
  const double r = jobs / std::chrono::duration<double>(interval).count();
  rates p;
  p.claims = n * r;
  p.backups = (n - 1) * r * (m + 1);
  p.heartbeats = r * std::chrono::duration<double>(run_time).count() / std::chrono::duration<double>(hb).count();
  p.finishes = r;
  return p;
}

struct measured {
  rates r;
  duration simulated{};
  double seconds = 0;
  std::size_t violations = 0;
  bool checked = false;
};

measured simulate(int jobs, int n, duration length) {
  lease::sim::cluster<> sim(42, job_options());
  const time_point t0 = sim.now();
  for (int j = 0; j < jobs; ++j)
    sim.add_job("job" + std::to_string(j), lease::every(interval, time_point{} + interval * j / jobs),
                [](const lease::run_context&) { return lease::sim::script{.runs_for = run_time}; });
  for (int i = 0; i < n; ++i) sim.add_instance("n" + std::to_string(i));
  sim.start_all();
  const time_point from = t0 + interval;  // after the start-up reads
  sim.run_until(from + length);
  measured out;
  out.simulated = length;
  const auto& h = sim.recorded();
  std::map<std::pair<std::string, std::uint64_t>, bool> batches;
  for (const auto& op : h.ops) {
    if (op.at < from) continue;
    using k = lease::sim::store_op::kind;
    switch (op.op) {
      case k::claim:
        (op.reason == lease::claim_reason::takeover ? out.r.backups : out.r.claims) += 1;
        if (op.batch != 0)
          batches[{op.instance, op.batch}] = true;
        else
          out.r.claim_calls += 1;  // a claim alone: its own round trip
        break;
      case k::heartbeat: out.r.heartbeats += 1; break;
      case k::finish: out.r.finishes += 1; break;
      default: out.r.other += 1; break;
    }
  }
  const double secs = std::chrono::duration<double>(length).count();
  out.r.claims /= secs;
  out.r.backups /= secs;
  out.r.heartbeats /= secs;
  out.r.finishes /= secs;
  out.r.other /= secs;
  out.r.claim_calls = (out.r.claim_calls + static_cast<double>(batches.size())) / secs;
  // The history checks compare events pairwise: only on the smaller histories.
  out.checked = h.ops.size() <= 60'000;
  if (out.checked) out.violations = sim.violations().size();
  return out;
}

// ---- memory: a scheduler over a store that keeps nothing ---------------------

/// Answers every claim `won` (or `running` on another instance) and keeps no
/// state, so the heap the scheduler holds is all that is counted.
struct null_store {
  lease::fake_clock clock;
  bool others_run = false;
  lease::claim_result claim(const lease::claim_request& req) {
    lease::claim_result r;
    r.outcome = others_run ? lease::claim_outcome::running : lease::claim_outcome::won;
    r.record = {req.run.job, req.run.slot, 1, others_run ? std::string("someone-else") : req.token, 1,
                others_run ? std::string("elsewhere") : req.runner, lease::run_status::running,
                clock.now() + req.lease, false, 0};
    r.store_now = clock.now();
    return r;
  }
  bool heartbeat(const lease::run_key&, std::string_view, duration) { return true; }
  bool finish(const lease::run_key&, std::string_view, lease::run_status) { return true; }
  bool release(const lease::run_key&, std::string_view) { return true; }
  std::vector<lease::run_record> unfinished(std::string_view) { return {}; }
  std::optional<lease::run_record> get(const lease::run_key&) { return std::nullopt; }
  time_point now() const { return clock.now(); }
};
static_assert(lease::Store<null_store>);

struct memory_figures {
  double idle = 0, running = 0, watched = 0;  // bytes per job
};

/// Bytes per job of one scheduler: idle (its job and its slot timer), and
/// the extra while a run is its own (an attempt) or another's (a watch).
memory_figures memory_per_job(int jobs) {
  auto bytes_with = [&](bool slot_due, bool others_run) {
    lease::fake_clock clock{time_point{} + 1h + 30s};
    const long long before = live_bytes.load();
    long long held = 0;
    {
      using sched = lease::scheduler<null_store, lease::fake_clock, lease::manual_executor, lease::skip_t>;
      lease::options o = job_options();
      o.instance = "a";
      o.seed = 1;
      o.claim_jitter = 0ms;
      sched s(null_store{clock, others_run}, clock, lease::manual_executor{}, lease::skip, o);
      for (int j = 0; j < jobs; ++j)
        s.add("job" + std::to_string(j), lease::every(interval), [](lease::run_context&) {});
      s.start();
      s.poll();  // start-up reads
      if (slot_due) {
        clock.set(time_point{} + 1h + interval);  // every job's slot: claimed, won or watched
        s.poll();
      }
      held = live_bytes.load() - before;
    }
    return static_cast<double>(held) / jobs;
  };
  memory_figures m;
  m.idle = bytes_with(false, false);
  m.running = bytes_with(true, false) - m.idle;
  m.watched = bytes_with(true, true) - m.idle;
  return m;
}

// ---- output -------------------------------------------------------------------

std::string num(double v) {
  char b[64];
  if (v >= 100 || v == std::floor(v))
    std::snprintf(b, sizeof b, "%.0f", v);
  else if (v >= 10)
    std::snprintf(b, sizeof b, "%.1f", v);
  else
    std::snprintf(b, sizeof b, "%.2f", v);
  // Thousands separators in the integer part.
  const std::string s = b;
  const std::size_t digits = std::min(s.find('.'), s.size());
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && i < digits && (digits - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return out;
}

struct capacity {
  const char* name;
  double ops_per_s;
  const char* colour;
};

void write_svg(const std::string& path, double m, const std::vector<std::pair<std::pair<int, int>, measured>>& sims,
               const std::vector<capacity>& caps) {
  const double w = 760, h = 460, left = 80, right = 200, top = 30, bottom = 60;
  const double x0 = 1, x1 = 5;  // log10 jobs: 10 .. 100,000
  const double y0 = -1, y1 = 7;  // log10 ops/s
  auto X = [&](double jobs) { return left + (std::log10(jobs) - x0) / (x1 - x0) * (w - left - right); };
  auto Y = [&](double ops) { return top + (y1 - std::log10(ops)) / (y1 - y0) * (h - top - bottom); };
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                  "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h);
  std::fprintf(f, "<text x=\"%.0f\" y=\"18\" font-size=\"14\">Store operations per second, whole cluster "
                  "(jobs every 60 s, runs 22.5 s, heartbeat 5 s)</text>\n", left);
  for (int e = 1; e <= 5; ++e) {
    const double x = X(std::pow(10, e));
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, top, x, h - bottom);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, h - bottom + 16,
                 num(std::pow(10, e)).c_str());
  }
  for (int e = -1; e <= 7; ++e) {
    const double y = Y(std::pow(10, e));
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, w - right, y);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, y + 4,
                 e < 0 ? "0.1" : num(std::pow(10, e)).c_str());
  }
  std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">jobs</text>\n", (left + w - right) / 2, h - 20);
  std::fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">operations / s</text>\n",
               (top + h - bottom) / 2);
  for (const auto& c : caps) {
    const double y = Y(c.ops_per_s);
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>\n",
                 left, y, w - right, y, c.colour);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", left + 6, y - 4, c.colour, c.name);
  }
  const struct {
    int n;
    const char* colour;
  } lines[] = {{3, "#1f77b4"}, {10, "#2ca02c"}, {100, "#d62728"}};
  for (const auto& l : lines) {
    std::fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", l.colour);
    for (double e = 1; e <= 5.001; e += 0.25) {
      const double jobs = std::pow(10, e);
      std::fprintf(f, "%.1f,%.1f ", X(jobs), Y(predict(jobs, l.n, m).total()));
    }
    std::fprintf(f, "\"/>\n");
    const double yl = Y(predict(1e5, l.n, m).total());
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%d instances</text>\n", X(1e5) + 6, yl + 4, l.colour, l.n);
    for (const auto& [key, r] : sims)
      if (key.second == l.n)
        std::fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" stroke=\"black\"/>\n", X(key.first),
                     Y(r.r.total()));
  }
  std::fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">lines: the formula; circles: lease::sim measured; dashed: "
                  "one store's ops/s at the benchmarks' per-op cost</text>\n</svg>\n", left, h - 4);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::string svg = "doc/scale.svg";
  for (int a = 1; a + 1 < argc; ++a)
    if (std::string(argv[a]) == "--svg") svg = argv[a + 1];
  const double m = checks_within(run_time);

  // (jobs, instances) simulated, and for how long: jobs × calls bounds the time.
  const struct {
    int jobs, n;
    duration length;
  } grid[] = {{10, 3, 1h},       {10, 10, 1h},     {10, 100, 10min}, {100, 3, 1h},
              {100, 10, 20min},   {100, 100, 2min}, {1000, 3, 3min},  {1000, 10, 1min}};
  std::vector<std::pair<std::pair<int, int>, measured>> sims;
  std::printf("## Measured on lease::sim, next to the formula\n\n");
  std::printf("m(D) = %.3f periodic backup checks per watched run (D = 22.5 s, checks U[5 s, 10 s] apart).\n\n", m);
  std::printf("| jobs | instances | simulated | claims/s | backup checks/s | heartbeats/s | finishes/s | other/s | "
              "total/s | per instance/s | claim round trips/s (claims and backup checks) | invariants |\n");
  std::printf("| ---: | ---: | --- | --- | --- | --- | --- | ---: | --- | --- | ---: | --- |\n");
  for (const auto& g : grid) {
    const auto t = std::chrono::steady_clock::now();
    measured r = simulate(g.jobs, g.n, g.length);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const rates p = predict(g.jobs, g.n, m);
    auto cell = [](double got, double want) { return num(got) + " (" + num(want) + ")"; };
    std::printf("| %s | %d | %lld min | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", num(g.jobs).c_str(), g.n,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::minutes>(g.length).count()),
                cell(r.r.claims, p.claims).c_str(), cell(r.r.backups, p.backups).c_str(),
                cell(r.r.heartbeats, p.heartbeats).c_str(), cell(r.r.finishes, p.finishes).c_str(),
                num(r.r.other).c_str(), cell(r.r.total(), p.total()).c_str(),
                cell(r.r.total() / g.n, p.total() / g.n).c_str(), num(r.r.claim_calls).c_str(),
                !r.checked ? "not checked" : r.violations == 0 ? "hold" : (std::to_string(r.violations) + " violations").c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "simulated %d jobs on %d instances for %lld s in %.1f s\n", g.jobs, g.n,
                 static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(g.length).count()), r.seconds);
    sims.push_back({{g.jobs, g.n}, r});
  }
  std::printf("\nEach cell: measured (predicted). `other`: reads (`get`, `unfinished`) after the first minute.\n\n");

  std::printf("## The formula, 10 to 100,000 jobs\n\n");
  std::printf("| jobs | instances | claims/s | backup checks/s | heartbeats/s | finishes/s | total/s | per instance/s |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (int n : {3, 10, 100})
    for (double jobs : {10.0, 100.0, 1e3, 1e4, 1e5}) {
      const rates p = predict(jobs, n, m);
      std::printf("| %s | %d | %s | %s | %s | %s | %s | %s |\n", num(jobs).c_str(), n, num(p.claims).c_str(),
                  num(p.backups).c_str(), num(p.heartbeats).c_str(), num(p.finishes).c_str(), num(p.total()).c_str(),
                  num(p.total() / n).c_str());
    }

  // One store's operations per second, an order of magnitude from the
  // per-operation costs in benchmark/RESULTS.md (doc/scale.md says how).
  std::printf("\n## Memory per job per instance\n\n");
  const memory_figures mem = memory_per_job(10'000);
  std::printf("Heap bytes one scheduler holds per job (10,000 jobs, counted by a global operator new over a "
              "store that keeps nothing): idle %.0f B (the job, its name, its slot timer); while the run is its "
              "own, %.0f B more (the attempt, its lease, the heartbeat entry); while it watches another "
              "instance's run, %.0f B more (the watch and its backup timer). With runs of 22.5 s every 60 s on N "
              "instances, a job costs each instance on average idle + 0.375 × (own/N + watched × (N−1)/N): "
              "%.0f B at N = 3, %.0f B at N = 100. The 100,000-job instance holds about %.0f MB.\n",
              mem.idle, mem.running, mem.watched,
              mem.idle + 0.375 * (mem.running / 3 + mem.watched * 2 / 3),
              mem.idle + 0.375 * (mem.running / 100 + mem.watched * 99 / 100),
              1e5 * (mem.idle + 0.375 * (mem.running / 100 + mem.watched * 99 / 100)) / 1e6);

  const std::vector<capacity> caps = {{"one Redis core (~30k ops/s)", 30'000, "#ff7f0e"},
                                      {"one SQLite file (~15k ops/s)", 15'000, "#9467bd"},
                                      {"one PostgreSQL (~3k ops/s)", 3'000, "#8c564b"}};
  write_svg(svg, m, sims, caps);
  std::printf("\n(SVG written to %s)\n", svg.c_str());
  return 0;
}
