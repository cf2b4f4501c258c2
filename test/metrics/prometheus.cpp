// lease::prometheus: two schedulers (memory store, fake clock) go through
// won, success, failed, takeover and lost; the endpoint is scraped over HTTP
// on 127.0.0.1 (a free port), its values are checked against the scenario and
// the events, and promtool validates the exposition. Last, real schedulers
// (system clock, thread pools) whose gauges the HTTP threads read while the
// loop threads change them.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "lease/clock/system.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/prometheus.hpp"
#include "scheduler/harness.hpp"

using namespace test;
using lease::event;
using lease::event_kind;

namespace {

/// GET http://127.0.0.1:<port><path>; returns the body, REQUIREs status 200.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) resp.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const std::size_t body = resp.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  INFO(resp.substr(0, body));
  REQUIRE(resp.rfind("HTTP/1.1 200", 0) == 0);
  return resp.substr(body + 4);
}

/// The exposition's samples: "name{labels}" → value.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t sp = line.rfind(' ');
    REQUIRE(sp != std::string::npos);
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

double value(const std::map<std::string, double>& m, const std::string& series) {
  INFO(series);
  const auto it = m.find(series);
  REQUIRE(it != m.end());
  return it->second;
}

/// `promtool check metrics` on the text: its exit status and what it said.
std::pair<int, std::string> promtool(const std::string& text) {
  const std::string prom = LEASE_PROMTOOL;
  if (prom.empty()) FAIL("promtool not found at configure time: apt-get install prometheus");
  char dir[] = "/tmp/lease-metrics-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string in = std::string(dir) + "/scrape.txt", out = std::string(dir) + "/promtool.txt";
  std::ofstream(in) << text;
  const int status = std::system((prom + " check metrics < " + in + " > " + out + " 2>&1").c_str());
  std::stringstream said;
  said << std::ifstream(out).rdbuf();
  std::remove(in.c_str());
  std::remove(out.c_str());
  ::rmdir(dir);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, said.str()};
}

std::string series(const std::string& name, const std::string& labels) { return name + "{" + labels + "}"; }

}  // namespace

TEST_CASE("the metrics endpoint counts won, success, failed, takeover and lost, and promtool accepts it") {
  cluster c{at(1s)};
  auto& a = c.add(spec_options("api-1", 1));
  auto& b = c.add(spec_options("api-2", 2));
  lease::prometheus_metrics metrics;
  metrics.attach(*a.s);
  metrics.attach(*b.s);
  lease::prometheus_endpoint http(metrics, "127.0.0.1:0");
  const int port = http.port();
  REQUIRE(port > 0);
  a.s->start();
  b.s->start();

  // 60 s: api-1 wins, api-2 backs it up. Scraped while it runs: the gauges.
  c.run_until(at(61s));
  {
    const auto m = samples(http_get(port, "/metrics"));
    CHECK(value(m, "lease_running_attempts") == 1);
    CHECK(value(m, "lease_watched_runs") == 1);
  }
  c.run_until(at(64s));
  c.finish_handlers(a);  // success after 4 s
  // 120 s: api-1 wins again; its handler throws after 1.5 s.
  c.run_until(at(121s) + 500ms);
  a.behaviour = ends::throws;
  c.finish_handlers(a);
  // 180 s: api-1 wins, dies after its 195 s heartbeat; api-2 takes over, succeeds.
  a.behaviour = ends::returns;
  c.run_until(at(195s));
  a.down = true;
  c.run_until(at(239s));  // before the next slot
  REQUIRE(b.count(event_kind::takeover) == 1);
  c.finish_handlers(b);
  a.down = false;  // api-1 wakes up: its attempt is lost
  c.poll_all();

  const std::string text = http_get(port, "/metrics");
  INFO(text);
  const auto m = samples(text);
  auto events = [&](const char* kind) { return value(m, series("lease_events_total", "job=\"report\",kind=\"" + std::string(kind) + "\"")); };
  CHECK(events("won") == 3);
  CHECK(events("backup") == 3);
  CHECK(events("success") == 2);
  CHECK(events("failed") == 1);
  CHECK(events("takeover") == 1);
  CHECK(events("lost") == 1);
  // Every event of both instances is counted once, under its kind.
  std::map<std::string, double> expected;
  std::vector<event> all = a.events;
  all.insert(all.end(), b.events.begin(), b.events.end());
  for (const event& e : all) ++expected[std::string(lease::to_string(e.kind))];
  for (const auto& [kind, n] : expected) CHECK(events(kind.c_str()) == n);

  const auto handler = [&](const char* outcome, const char* what) {
    return value(m, series(std::string("lease_handler_duration_seconds_") + what,
                           "job=\"report\",outcome=\"" + std::string(outcome) + "\""));
  };
  const event takeover = b.of(event_kind::takeover)[0];
  const event b_success = b.of(event_kind::success)[0];
  const event lost = a.of(event_kind::lost)[0];
  CHECK(handler("success", "count") == 2);
  CHECK(handler("success", "sum") == Approx(4.0 + static_cast<double>(b_success.handler_duration->count()) / 1000));
  CHECK(handler("failed", "count") == 1);
  CHECK(handler("failed", "sum") == Approx(1.5));
  CHECK(handler("lost", "count") == 1);
  CHECK(handler("lost", "sum") == Approx(static_cast<double>((lost.at - at(180s)).count()) / 1000));
  // The 4 s success is in the 5 s bucket but not the 1 s one.
  CHECK(value(m, series("lease_handler_duration_seconds_bucket", "job=\"report\",outcome=\"success\",le=\"1\"")) == 0);

  REQUIRE(takeover.takeover_latency);
  CHECK(value(m, series("lease_takeover_latency_seconds_count", "job=\"report\"")) == 1);
  CHECK(value(m, series("lease_takeover_latency_seconds_sum", "job=\"report\"")) ==
        Approx(static_cast<double>(takeover.takeover_latency->count()) / 1000));
  CHECK(static_cast<double>(takeover.takeover_latency->count()) == static_cast<double>((takeover.at - at(225s)).count()));

  const auto round_trips = std::count_if(all.begin(), all.end(), [](const event& e) { return e.claim_round_trip.has_value(); });
  CHECK(round_trips >= 7);  // 3 won, 3 backup, 1 takeover at least
  CHECK(value(m, series("lease_claim_round_trip_seconds_count", "job=\"report\"")) == static_cast<double>(round_trips));

  CHECK(value(m, "lease_running_attempts") == 0);
  // api-1 woke past its self-abort deadline: its attempt was lost there, and
  // it watches the run as a backup until its next check finds it ended.
  CHECK(value(m, "lease_watched_runs") == 1);

  const auto [status, said] = promtool(text);
  INFO(said);
  CHECK(status == 0);
}

TEST_CASE("lease's metrics can live in the program's own registry, beside its own") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& mine = prometheus::BuildCounter().Name("app_requests_total").Help("requests").Register(*registry).Add({});
  mine.Increment(7);
  lease::prometheus_metrics metrics(registry);
  lease::event e;
  e.kind = event_kind::late;
  e.run = {"nightly", at(60s)};
  e.skipped_slots = 4;
  metrics.record(e);
  lease::prometheus_endpoint http(metrics, "127.0.0.1:0");
  const std::string text = http_get(http.port(), "/metrics");
  INFO(text);
  const auto m = samples(text);
  CHECK(value(m, "app_requests_total") == 7);
  CHECK(value(m, series("lease_events_total", "job=\"nightly\",kind=\"late\"")) == 1);
  CHECK(value(m, series("lease_skipped_slots_total", "job=\"nightly\"")) == 4);
  const auto [status, said] = promtool(text);
  INFO(said);
  CHECK(status == 0);
}

TEST_CASE("every event kind has a name for the kind label, so a new kind is counted without a list to update") {
  lease::prometheus_metrics metrics;
  for (int k = 0; k <= static_cast<int>(event_kind::stopped); ++k) {
    lease::event e;
    e.kind = static_cast<event_kind>(k);
    e.run.job = "j";
    CHECK(lease::to_string(e.kind) != "?");
    metrics.record(e);
  }
  lease::prometheus_endpoint http(metrics, "127.0.0.1:0");
  const auto m = samples(http_get(http.port(), "/metrics"));
  for (int k = 0; k <= static_cast<int>(event_kind::stopped); ++k)
    CHECK(value(m, series("lease_events_total",
                          "job=\"j\",kind=\"" + std::string(lease::to_string(static_cast<event_kind>(k))) + "\"")) == 1);
}

TEST_CASE("an endpoint on an address already in use fails with a sentence naming it") {
  lease::prometheus_metrics metrics;
  lease::prometheus_endpoint first(metrics, "127.0.0.1:0");
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    lease::prometheus_endpoint second(metrics, taken);
    FAIL("a second endpoint listened on " << taken);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("cannot listen on \"" + taken + "\"") != std::string::npos);
  }
}

// ---- real mode: the gauges are read by the HTTP threads while loop threads change them ----

namespace {

lease::options real_options(std::string name, duration catch_up) {
  lease::options o;
  o.lease = 600ms;  // heartbeat 100 ms
  o.claim_jitter = 0ms;
  o.catch_up = catch_up;
  o.catch_up_jitter = 0ms;
  o.instance = std::move(name);
  return o;
}

/// Scrapes until `ok(samples)` holds, for at most `limit` (real time).
template <class F>
bool scrape_until(int port, F ok, std::chrono::milliseconds limit) {
  for (auto waited = 0ms; waited < limit; waited += 20ms) {
    if (ok(samples(http_get(port, "/metrics")))) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("real schedulers: the gauges follow a running attempt and its backup while their loops run") {
  lease::memory_store<lease::system_clock> store;
  std::atomic<bool> finish{false};
  auto handler = [&finish](lease::run_context& ctx) {
    while (!finish.load() && !ctx.stop.stop_requested()) std::this_thread::sleep_for(5ms);
  };
  // A runs the latest hourly slot through catch-up; B, started after, backs it up.
  auto a = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = real_options("A", 2h));
  auto b = lease::make_scheduler(lease::store = store, lease::executor = lease::thread_pool{1},
                                 lease::settings = real_options("B", 0ms));
  lease::prometheus_metrics metrics;
  for (auto* s : {&a, &b}) {
    s->add("hourly", lease::every(1h), handler);
    metrics.attach(*s);
  }
  lease::prometheus_endpoint http(metrics, "127.0.0.1:0");
  const int port = http.port();
  a.start();
  REQUIRE(scrape_until(port, [](const auto& m) {
    return m.count("lease_running_attempts") && m.at("lease_running_attempts") == 1;
  }, 5s));
  b.start();
  CHECK(scrape_until(port, [](const auto& m) { return m.count("lease_watched_runs") && m.at("lease_watched_runs") == 1; }, 5s));
  finish = true;
  CHECK(scrape_until(port, [](const auto& m) {
    const auto ok = m.find("lease_events_total{job=\"hourly\",kind=\"success\"}");
    return ok != m.end() && ok->second == 1 && m.at("lease_running_attempts") == 0 && m.at("lease_watched_runs") == 0;
  }, 5s));
  a.stop(1s);
  b.stop(1s);
  const auto m = samples(http_get(port, "/metrics"));
  CHECK(value(m, series("lease_events_total", "job=\"hourly\",kind=\"catch_up\"")) == 1);
  CHECK(value(m, series("lease_events_total", "job=\"hourly\",kind=\"backup\"")) == 1);
  CHECK(value(m, series("lease_handler_duration_seconds_count", "job=\"hourly\",outcome=\"success\"")) == 1);
}
