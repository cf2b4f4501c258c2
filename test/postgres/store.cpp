// postgres_store beyond the conformance suite, against the binary's one real
// server: real schedulers, a 4-process race, hostile job names, the faults
// (57P01, statement timeout, a restart in the middle of heartbeats, an
// answer lost after the request was sent), schema versions, secrets in
// messages, batching, and the release listener (push hand-over).
#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "laws/two_schedulers.hpp"
#include "lease/clock/fake.hpp"
#include "lease/store/memory.hpp"
#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"
#include "support/loopback_listener.hpp"
#include "support/loopback_proxy.hpp"

using namespace std::chrono_literals;
using lease::claim_outcome;
using lease::claim_reason;
using lease::claim_request;
using lease::run_key;
using lease::run_status;
using lease::time_point;

namespace {

time_point at(std::int64_t ms) { return time_point{lease::duration{ms}}; }

lease::postgres_options options(std::string conninfo, std::string schema,
                                std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::postgres_options o;
  o.conninfo = std::move(conninfo);
  o.schema = std::move(schema);
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return o;
}

claim_request request(std::string job, time_point slot, std::string token,
                      claim_reason reason = claim_reason::scheduled) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "runner-" + token;
  r.token = std::move(token);
  r.reason = reason;
  r.lease = 30s;
  r.deadline = slot + 1h;
  return r;
}

/// Calls `op` until it stops throwing an unavailable store_error (bounded).
template <class Op>
auto until_available(Op op, std::chrono::seconds bound = 30s) {
  const auto end = std::chrono::steady_clock::now() + bound;
  for (;;) {
    try {
      return op();
    } catch (const lease::store_error& e) {
      INFO(e.what());
      REQUIRE(e.code() == lease::errc::unavailable);
      REQUIRE(std::chrono::steady_clock::now() < end);
      std::this_thread::sleep_for(20ms);
    }
  }
}

lease::testing::postgres_server& srv() { return lease::testing::shared_server(); }

/// A standby that answers a connect `after` a while: a few bytes of the
/// protocol, enough for libpq (sslmode and gssencmode disabled) to find the
/// session read-only and, under target_session_attrs=read-write, move on to
/// the next host by itself.
struct slow_standby {
  lease::testing::loopback_listener listener{8, "slow_standby"};
  const int port = listener.port();
  std::atomic<bool> stop{false};
  std::thread t;
  explicit slow_standby(std::chrono::milliseconds after) {
    t = std::thread([this, after] {
      while (!stop) {
        pollfd p{listener.fd(), POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const int c = ::accept(listener.fd(), nullptr, nullptr);
        if (c < 0) continue;
        char startup[1024];
        (void)::recv(c, startup, sizeof startup, 0);  // the startup packet
        std::this_thread::sleep_for(after);           // the standby's slowness is the fault under test
        const std::string reply = message('R', std::string("\0\0\0\0", 4)) +  // AuthenticationOk
                                  parameter("server_version", "15.0") + parameter("in_hot_standby", "on") +
                                  parameter("default_transaction_read_only", "on") +
                                  message('K', std::string(8, '\1')) + message('Z', "I");
        (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
        char rest[64];
        (void)::recv(c, rest, sizeof rest, 0);  // libpq's Terminate, or its close
        ::close(c);
      }
    });
  }
  ~slow_standby() {
    stop = true;
    t.join();
  }
  static std::string message(char type, const std::string& body) {
    const std::uint32_t n = htonl(static_cast<std::uint32_t>(body.size() + 4));
    return std::string(1, type) + std::string(reinterpret_cast<const char*>(&n), 4) + body;
  }
  static std::string parameter(const std::string& name, const std::string& value) {
    return message('S', name + std::string(1, '\0') + value + std::string(1, '\0'));
  }
};

}  // namespace

TEST_CASE("two schedulers on one postgres schema run every slot exactly once") {
  const std::string schema = lease::testing::fresh_schema("two");
  lease::testing::check_two_schedulers_run_each_slot_once(
      [&](lease::fake_clock c) { return lease::postgres_store{options(srv().conninfo(), schema, c)}; });
}

TEST_CASE("four processes racing for the same runs on the server's clock get exactly one winner per attempt") {
  constexpr int processes = 4, slots = 40, takeovers = 4;
  constexpr std::uint32_t max_attempts = 3;
  const auto o = options(srv().conninfo(), lease::testing::fresh_schema("race"));
  // Creates the schema before the race, and gives slots in the past.
  const time_point base = lease::postgres_store{o}.now() - lease::duration{1000 * slots};
  char tmpl[] = "/tmp/lease-pg-race-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;

  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    int code = 0;
    try {
      ::close(go[1]);
      char c;
      (void)!::read(go[0], &c, 1);  // EOF when the parent closes: all start together
      lease::postgres_store store{o};  // opened in the child: a connection must not cross fork()
      std::ofstream out(dir + "/wins-" + std::to_string(p));
      for (int s = 0; s < slots; ++s) {
        claim_request req;
        req.run = {"race", base + lease::duration{1000 * s}};
        req.runner = "p" + std::to_string(p);
        req.lease = 1ms;  // expired almost at once: takeovers race as well
        req.max_attempts = max_attempts;
        req.deadline = req.run.slot + 1h;
        req.overlap = lease::overlap_mode::allow;
        for (int k = 0; k <= takeovers; ++k) {
          req.reason = k == 0 ? claim_reason::scheduled : claim_reason::takeover;
          req.token = "p" + std::to_string(p) + "-s" + std::to_string(s) + "-k" + std::to_string(k);
          auto res = store.claim(req);
          if (res.outcome == claim_outcome::won)
            out << s << ' ' << res.record.attempt << ' ' << res.record.fence << ' ' << res.record.token << '\n';
        }
      }
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t c : children) {
    int status = 0;
    REQUIRE(::waitpid(c, &status, 0) == c);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  std::map<std::pair<int, std::uint32_t>, std::vector<std::string>> winners;
  std::set<std::uint64_t> fences;
  std::size_t wins = 0;
  for (int p = 0; p < processes; ++p) {
    std::ifstream in(dir + "/wins-" + std::to_string(p));
    int s = 0;
    std::uint32_t attempt = 0;
    std::uint64_t fence = 0;
    std::string token;
    while (in >> s >> attempt >> fence >> token) {
      winners[{s, attempt}].push_back(token);
      CHECK(fences.insert(fence).second);  // every win its own fence
      ++wins;
    }
  }
  std::filesystem::remove_all(dir);
  lease::postgres_store reader{o};
  for (int s = 0; s < slots; ++s) {
    const auto rec = reader.get({"race", base + lease::duration{1000 * s}});
    REQUIRE(rec);
    CHECK(rec->attempt <= max_attempts);
    for (std::uint32_t a = 1; a <= rec->attempt; ++a) {
      INFO("slot " << s << " attempt " << a);
      CHECK(winners[{s, a}].size() == 1);  // exactly one winner per attempt
    }
  }
  CHECK(wins == winners.size());
}

TEST_CASE("hostile job names round-trip as parameters, never as SQL") {
  const auto o = options(srv().conninfo(), lease::testing::fresh_schema("names"));
  lease::postgres_store store{o};
  const std::vector<std::string> names{
      "it's a \"job\"", "back\\slash\\\\", "'; DROP TABLE lease_runs; --", "\"; DROP SCHEMA public CASCADE; --",
      std::string(10'000, 'x') + "'", "Bericht über Größe — 報告 🚀", std::string("nul\0byte", 8), "$1 $$ %s @"};
  const time_point slot = store.now();
  int n = 0;
  for (const auto& job : names) {
    INFO("job #" << n);
    const std::string token = "tok-" + std::to_string(n++);
    auto res = store.claim(request(job, slot, token));
    REQUIRE(res.outcome == claim_outcome::won);
    CHECK(res.record.job == job);
    auto rec = store.get({job, slot});
    REQUIRE(rec);
    CHECK(rec->job == job);
    CHECK(rec->token == token);
    CHECK(store.heartbeat({job, slot}, token, 30s));
    const auto open = store.unfinished(job);
    REQUIRE(open.size() == 1);
    CHECK(open.front().job == job);
    CHECK(store.finish({job, slot}, token, run_status::success));
  }
  CHECK(srv().sql("SELECT count(*) FROM \"" + o.schema + "\".lease_runs") == std::to_string(names.size()));
}

TEST_CASE("heartbeat_many renews a batch in one round trip, answers in order") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(srv().conninfo(), lease::testing::fresh_schema("batch"), clock)};
  std::vector<lease::heartbeat_request> batch;
  for (int i = 0; i < 50; ++i) {
    const std::string job = "job-" + std::to_string(i);
    REQUIRE(store.claim(request(job, clock.now(), "t" + std::to_string(i))).outcome == claim_outcome::won);
    batch.push_back({{job, clock.now()}, i % 5 == 0 ? "stale" : "t" + std::to_string(i), 60s});
  }
  const auto before = store.round_trips();
  const auto answers = store.heartbeat_many(batch);
  CHECK(store.round_trips() == before + 1);
  REQUIRE(answers.size() == batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CHECK(answers[i] == (i % 5 != 0));
    CHECK(store.get(batch[i].run)->lease_end == clock.now() + (i % 5 != 0 ? 60s : 30s));
  }
}

TEST_CASE("heartbeat_many with a run named twice renews it as calls one by one would: both answered, the later lease stands") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(srv().conninfo(), lease::testing::fresh_schema("batchdup"), clock)};
  const time_point t = clock.now();
  REQUIRE(store.claim(request("a", t, "ta")).outcome == claim_outcome::won);
  REQUIRE(store.claim(request("b", t, "tb")).outcome == claim_outcome::won);
  const std::vector<lease::heartbeat_request> batch{
      {{"a", t}, "ta", 40s}, {{"b", t}, "stale", 90s}, {{"a", t}, "ta", 70s}, {{"b", t}, "tb", 50s},
      {{"a", t}, "stale", 90s}, {{"b", t}, "tb", 20s}, {{"c", t}, "tc", 90s}};
  const auto before = store.round_trips();
  CHECK(store.heartbeat_many(batch) == std::vector<bool>{true, false, true, true, false, true, false});
  CHECK(store.round_trips() == before + 1);
  CHECK(store.get({"a", t})->lease_end == t + 70s);
  CHECK(store.get({"b", t})->lease_end == t + 20s);
  CHECK(!store.get({"c", t}));
}

namespace {

/// The same state in two schemas: jobs whose runs are live, expired, or
/// finished at the clock's time, so a batch meets every kind of answer.
void prepare_mixed(lease::postgres_store& s, lease::fake_clock& clock) {
  const time_point t = clock.now();
  for (int k = 0; k < 50; ++k) {
    const std::string n = std::to_string(k);
    REQUIRE(s.claim(request("busy-" + n, t, "b" + n)).outcome == claim_outcome::won);
    auto short_lease = request("expired-" + n, t - 60s, "e" + n);
    short_lease.lease = 500ms;  // over before the batch
    REQUIRE(s.claim(short_lease).outcome == claim_outcome::won);
    REQUIRE(s.claim(request("done-" + n, t, "d" + n)).outcome == claim_outcome::won);
    REQUIRE(s.finish({"done-" + n, t}, "d" + n, run_status::success));
  }
}

/// 300 claims: won (new jobs, takeovers of expired runs), running (live
/// runs, and the second claim of a run that the batch itself won), late,
/// early, superseded (an older slot of a job the batch started), finished,
/// none (a takeover of a run without state).
std::vector<claim_request> mixed_batch(time_point t) {
  std::vector<claim_request> b;
  for (int k = 0; b.size() < 300; ++k) {
    const std::string n = std::to_string(k / 8), u = std::to_string(k);  // n: one prepared job per round
    switch (k % 8) {
      case 0: b.push_back(request("new-" + u, t, "n" + u)); break;
      case 1: b.push_back(request("busy-" + n, t, "x" + u)); break;
      case 2: {
        auto late = request("late-" + u, t - 2h, "l" + u);
        late.deadline = late.run.slot + 1h;
        b.push_back(late);
        break;
      }
      case 3:  // the same run twice, then an older slot of its job: won, running, superseded
        b.push_back(request("dup-" + u, t, "p" + u));
        b.push_back(request("dup-" + u, t, "q" + u));
        b.push_back(request("dup-" + u, t - 5s, "r" + u));
        break;
      case 4: b.push_back(request("expired-" + n, t - 60s, "y" + u, claim_reason::takeover)); break;
      case 5: b.push_back(request("done-" + n, t, "z" + u, claim_reason::catch_up)); break;
      case 6: b.push_back(request("early-" + u, t + 1h, "a" + u)); break;
      case 7: b.push_back(request("ghost-" + u, t, "g" + u, claim_reason::takeover)); break;
    }
  }
  b.resize(300);
  return b;
}

void check_same(const lease::claim_result& batched, const lease::claim_result& single) {
  CHECK(batched.outcome == single.outcome);
  CHECK(batched.store_now == single.store_now);
  CHECK(batched.record.job == single.record.job);
  CHECK(batched.record.slot == single.record.slot);
  CHECK(batched.record.token == single.record.token);
  CHECK(batched.record.attempt == single.record.attempt);
  CHECK(batched.record.fence == single.record.fence);
  CHECK(batched.record.runner == single.record.runner);
  CHECK(batched.record.status == single.record.status);
  CHECK(batched.record.lease_end == single.record.lease_end);
  CHECK(batched.record.released == single.record.released);
  CHECK(batched.record.handovers == single.record.handovers);
}

}  // namespace

TEST_CASE("claim_many: 300 mixed claims in one round trip get exactly the answers of 300 single claims") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store batched{options(srv().conninfo(), lease::testing::fresh_schema("cmany"), clock)};
  lease::postgres_store single{options(srv().conninfo(), lease::testing::fresh_schema("cone"), clock)};
  prepare_mixed(batched, clock);
  prepare_mixed(single, clock);
  clock.advance(1s);
  const auto batch = mixed_batch(clock.now() - 1s);

  const auto before = batched.round_trips();
  const auto got = batched.claim_many(batch);
  CHECK(batched.round_trips() == before + 1);
  REQUIRE(got.size() == batch.size());
  std::map<claim_outcome, int> seen;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO("claim " << i << " of " << batch[i].run.job << " with token " << batch[i].token);
    check_same(got[i], single.claim(batch[i]));
    ++seen[got[i].outcome];
  }
  // Every kind of answer was met, and in the numbers the batch was built with.
  // (30 rounds of 10 claims.)
  CHECK(seen[claim_outcome::won] == 90);  // new jobs, dup's first claims, takeovers
  CHECK(seen[claim_outcome::running] == 60);  // live runs, dup's second claims
  for (auto o : {claim_outcome::superseded, claim_outcome::late, claim_outcome::finished, claim_outcome::early,
                 claim_outcome::none})
    CHECK(seen[o] == 30);
  // Each won claim is the run's state now.
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (got[i].outcome == claim_outcome::won) CHECK(batched.get(batch[i].run)->token == batch[i].token);
}

TEST_CASE("claim_many: a claim refused by the server does not change the others' answers") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options(srv().conninfo(), lease::testing::fresh_schema("crefuse"), clock);
  o.statement_timeout = 300ms;
  lease::postgres_store store{o};
  REQUIRE(store.claim(request("held", clock.now(), "h0")).outcome == claim_outcome::won);
  // Another session holds one job's row lock: that claim times out (57014), the others go through.
  PGconn* c = PQconnectdb(srv().conninfo().c_str());
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PQclear(PQexec(c, "BEGIN"));
  PGresult* r = PQexec(c, ("SELECT 1 FROM \"" + o.schema + "\".lease_jobs WHERE job = 'held'::bytea FOR UPDATE").c_str());
  REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
  PQclear(r);
  std::vector<claim_request> batch{request("a", clock.now(), "a1"), request("held", clock.now(), "h1"),
                                   request("b", clock.now(), "b1")};
  CHECK_THROWS_AS(store.claim_many(batch), lease::store_error);  // as claim() throws for the refused one
  PQclear(PQexec(c, "ROLLBACK"));
  PQfinish(c);
  // Each claim was its own transaction: the ones around the refused one are applied.
  CHECK(store.get({"a", clock.now()})->token == "a1");
  CHECK(store.get({"b", clock.now()})->token == "b1");
  CHECK(store.get({"held", clock.now()})->token == "h0");
  // Resent with the same tokens (what the scheduler does with a failed batch): won, running, won.
  const auto again = store.claim_many(batch);
  CHECK(again[0].record.token == "a1");
  CHECK(again[1].outcome == claim_outcome::running);
  CHECK(again[2].record.token == "b1");
}

TEST_CASE("claim_many whose answers were lost: each claim is resolved by reading its run back") {
  lease::testing::loopback_proxy proxy{srv().port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string ci = "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " user=postgres dbname=postgres";
  lease::postgres_store store{options(ci, lease::testing::fresh_schema("cdoubt"), clock)};
  REQUIRE(store.claim(request("busy", clock.now(), "b0")).outcome == claim_outcome::won);
  std::vector<claim_request> batch;
  for (int i = 0; i < 20; ++i) batch.push_back(request("j" + std::to_string(i), clock.now(), "t" + std::to_string(i)));
  batch.push_back(request("busy", clock.now(), "b1"));
  proxy.lose_next_reply();
  const auto got = store.claim_many(batch);
  CHECK(proxy.cuts() == 1);
  REQUIRE(got.size() == batch.size());
  for (int i = 0; i < 20; ++i) {
    INFO("claim " << i);
    REQUIRE(got[static_cast<std::size_t>(i)].outcome == claim_outcome::won);
    CHECK(got[static_cast<std::size_t>(i)].record.token == "t" + std::to_string(i));
    CHECK(got[static_cast<std::size_t>(i)].record.attempt == 1);
    CHECK(got[static_cast<std::size_t>(i)].record.fence == 1'700'000'000'000);  // applied once
  }
  CHECK(got.back().outcome == claim_outcome::running);
  CHECK(got.back().record.token == "b0");
}

namespace {

/// Runs in every state an end can meet, the same in each store: live (two
/// tokens tried), expired, released, finished, and no state at all.
template <class S>
void prepare_ends(S& s, lease::fake_clock& clock) {
  const time_point t = clock.now();
  for (int k = 0; k < 10; ++k) {
    const std::string n = std::to_string(k);
    for (const char* kind : {"live-", "expired-", "released-", "done-"}) {
      auto req = request(kind + n, t, std::string(kind) + "t" + n);
      if (std::string_view(kind) == "expired-") req.lease = 500ms;
      REQUIRE(s.claim(req).outcome == claim_outcome::won);
    }
    REQUIRE(s.release({"released-" + n, t}, "released-t" + n));
    REQUIRE(s.finish({"done-" + n, t}, "done-t" + n, run_status::failed));
  }
  clock.advance(1s);
}

/// Finishes with each status, releases, stale tokens, finish(running), runs
/// without state, and the same run ended twice (the second refused).
std::vector<lease::finish_request> mixed_ends(time_point t) {
  std::vector<lease::finish_request> b;
  const run_status statuses[] = {run_status::success, run_status::failed, run_status::interrupted};
  for (int k = 0; k < 10; ++k) {
    const std::string n = std::to_string(k);
    const std::optional<run_status> end = k % 4 == 3 ? std::nullopt : std::optional{statuses[k % 3]};
    b.push_back({{"live-" + n, t}, "stale", end});
    b.push_back({{"live-" + n, t}, "live-t" + n, end});
    b.push_back({{"live-" + n, t}, "live-t" + n, run_status::success});  // after its end: refused
    b.push_back({{"expired-" + n, t}, "expired-t" + n, end});  // lease over: still its run to end
    b.push_back({{"released-" + n, t}, "released-t" + n, end});
    b.push_back({{"done-" + n, t}, "done-t" + n, std::nullopt});
    b.push_back({{"ghost-" + n, t}, "g", end});
    b.push_back({{"expired-" + n, t}, "expired-t" + n, run_status::running});
  }
  return b;
}

}  // namespace

TEST_CASE("finish_many: a mixed batch in one round trip gets the answers and leaves the state of the rules, a bad status sends nothing") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("fmany");
  lease::postgres_store batched{options(srv().conninfo(), schema, clock)};
  lease::postgres_store single{options(srv().conninfo(), lease::testing::fresh_schema("fone"), clock)};
  lease::memory_store<lease::fake_clock> rules{clock};  // the reference: the pure rules
  const time_point t = clock.now();
  prepare_ends(batched, clock);
  clock.set(t);
  prepare_ends(single, clock);
  clock.set(t);
  prepare_ends(rules, clock);
  const auto batch = mixed_ends(t);

  // Each ended run is announced, as a single finish or release announces it.
  std::mutex m;
  std::map<std::string, int> heard;
  lease::postgres_store watcher{options(srv().conninfo(), schema, clock)};
  watcher.listen_releases([&](std::string_view job) {
    std::scoped_lock lock(m);
    ++heard[std::string(job)];
  });
  for (int i = 0; i < 1000 && watcher.listener_connects() == 0; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(watcher.listener_connects() == 1);
  std::this_thread::sleep_for(100ms);  // LISTEN is sent after the connect: give it its round trip

  const auto before = batched.round_trips();
  const auto got = batched.finish_many(batch);
  CHECK(batched.round_trips() == before + 1);
  const auto expected = rules.finish_many(batch);
  REQUIRE(got.size() == batch.size());
  REQUIRE(expected.size() == batch.size());
  std::map<std::string, int> ended;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO("element " << i << ": " << batch[i].run.job << " with token " << batch[i].token);
    const bool one = batch[i].status ? single.finish(batch[i].run, batch[i].token, *batch[i].status)
                                     : single.release(batch[i].run, batch[i].token);
    CHECK(got[i] == one);
    CHECK(got[i] == expected[i]);
    if (got[i]) ++ended[batch[i].run.job];
    const auto rec = batched.get(batch[i].run), ref = rules.get(batch[i].run);
    REQUIRE(rec.has_value() == ref.has_value());
    if (!rec) continue;
    CHECK(rec->status == ref->status);
    CHECK(rec->released == ref->released);
    CHECK(rec->handovers == ref->handovers);
    CHECK(rec->lease_end == ref->lease_end);
    CHECK(rec->token == ref->token);
  }
  CHECK(std::count(got.begin(), got.end(), true) == 20);  // each live and expired run, once
  for (int i = 0; i < 1000; ++i) {
    {
      std::scoped_lock lock(m);
      if (heard == ended) break;
    }
    std::this_thread::sleep_for(10ms);  // bounded poll
  }
  {
    std::scoped_lock lock(m);
    CHECK(heard == ended);
  }

  // A status that is not one: invalid_argument before anything is sent. An empty batch: no round trip.
  REQUIRE(batched.claim(request("bad", clock.now(), "t")).outcome == claim_outcome::won);
  const auto trips = batched.round_trips();
  CHECK(batched.finish_many({}).empty());
  const std::vector<lease::finish_request> bad{{{"bad", clock.now()}, "t", run_status::success},
                                               {{"bad", clock.now()}, "t", static_cast<run_status>(9)}};
  try {
    (void)batched.finish_many(bad);
    FAIL("no error");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::invalid_argument);
    CHECK(std::string(e.what()).find("not a run_status") != std::string::npos);
  }
  CHECK(batched.round_trips() == trips);
  CHECK(batched.get({"bad", clock.now()})->status == run_status::running);
}

TEST_CASE("finish_many whose answers were lost: each end is resolved by reading its run back, applied once") {
  lease::testing::loopback_proxy proxy{srv().port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string ci = "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " user=postgres dbname=postgres";
  lease::postgres_store store{options(ci, lease::testing::fresh_schema("fdoubt"), clock)};
  std::vector<lease::finish_request> batch;
  for (int i = 0; i < 20; ++i) {
    const std::string n = std::to_string(i);
    REQUIRE(store.claim(request("j" + n, clock.now(), "t" + n)).outcome == claim_outcome::won);
    batch.push_back({{"j" + n, clock.now()}, "t" + n, i % 2 == 0 ? std::optional{run_status::success} : std::nullopt});
  }
  batch.push_back({{"j0", clock.now()}, "stale", std::nullopt});
  proxy.lose_next_reply();
  const auto got = store.finish_many(batch);
  CHECK(proxy.cuts() == 1);
  REQUIRE(got.size() == batch.size());
  for (int i = 0; i < 20; ++i) {
    INFO("element " << i);
    CHECK(got[static_cast<std::size_t>(i)]);
    const auto rec = store.get(batch[static_cast<std::size_t>(i)].run);
    CHECK(rec->status == (i % 2 == 0 ? run_status::success : run_status::running));
    CHECK(rec->handovers == (i % 2 == 0 ? 0u : 1u));  // applied once
  }
  CHECK_FALSE(got.back());

  // The same run twice among the unanswered: reading it back cannot tell which did what.
  REQUIRE(store.claim(request("twice", clock.now(), "w")).outcome == claim_outcome::won);
  const std::vector<lease::finish_request> twice{{{"twice", clock.now()}, "w", std::nullopt},
                                                 {{"twice", clock.now()}, "w", run_status::success}};
  proxy.lose_next_reply();
  try {
    (void)store.finish_many(twice);
    FAIL("no error");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::outcome_unknown);
  }
}

TEST_CASE("57P01 admin_shutdown of the store's connection: the next call reconnects, the run is still the runner's") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(srv().conninfo(), lease::testing::fresh_schema("term"), clock)};
  const run_key run{"j", clock.now()};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  const int pid = store.backend_pid();
  REQUIRE(pid > 0);
  CHECK(srv().sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")") == "t");
  for (int i = 0; srv().sql("SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid)) != "0"; ++i) {
    REQUIRE(i < 1000);  // bounded: the backend exits within milliseconds, seconds on a loaded machine
    std::this_thread::sleep_for(10ms);
  }
  // The idle connection's end (a FATAL message, then the close) is noticed
  // before sending: the heartbeat reconnects and goes through at once, not
  // sent on the dead socket and failed as "may have been applied".
  CHECK(store.heartbeat(run, "t1", 30s));
  CHECK(store.backend_pid() != pid);
  // Another instance finds the run alive: no second winner.
  auto other = lease::postgres_store{options(srv().conninfo(), store.options().schema, clock)};
  CHECK(other.claim(request("j", run.slot, "t2")).outcome == claim_outcome::running);
}

TEST_CASE("a backend that said FATAL while idle is not sent to, even before its socket closes") {
  // The backend leaves pg_stat_activity after its FATAL message and before
  // its socket closes. The proxy makes that gap as long as the test needs:
  // the goodbye reaches the store, the close does not.
  lease::testing::loopback_proxy proxy{srv().port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string ci = "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " user=postgres dbname=postgres";
  auto o = options(ci, lease::testing::fresh_schema("fatal"), clock);
  o.command_timeout = 1000ms;  // without the fix the heartbeat waits this long on the dead socket
  lease::postgres_store store{o};
  const run_key run{"j", clock.now()};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  const int pid = store.backend_pid();
  proxy.hold_close(true);
  CHECK(srv().sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ")") == "t");
  for (int i = 0; proxy.server_ends() == 0; ++i) {
    REQUIRE(i < 1000);  // bounded: the backend exits within milliseconds, seconds on a loaded machine
    std::this_thread::sleep_for(10ms);
  }
  CHECK(store.heartbeat(run, "t1", 30s));
  CHECK(store.backend_pid() != pid);
  proxy.hold_close(false);
}

TEST_CASE("a statement stuck on a lock past statement_timeout is unavailable, applied nothing, and the next call works") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options(srv().conninfo(), lease::testing::fresh_schema("stmt"), clock);
  o.statement_timeout = 300ms;
  lease::postgres_store store{o};
  const run_key run{"j", clock.now()};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  // Another session holds the job's row lock in an open transaction.
  PGconn* c = PQconnectdb(srv().conninfo().c_str());
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PQclear(PQexec(c, "BEGIN"));
  PGresult* r = PQexec(c, ("SELECT 1 FROM \"" + o.schema + "\".lease_jobs FOR UPDATE").c_str());
  REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
  PQclear(r);
  clock.advance(31s);  // expired: a takeover would win
  try {
    (void)store.claim(request("j", run.slot, "t2", claim_reason::takeover));
    FAIL("the claim went through a held lock");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::unavailable);
    CHECK(e.code() == lease::postgres_errc::statement_timeout);
    CHECK(std::string(e.what()).find("57014") != std::string::npos);
  }
  PQclear(PQexec(c, "ROLLBACK"));
  PQfinish(c);
  CHECK(store.get(run)->token == "t1");  // nothing applied
  auto res = store.claim(request("j", run.slot, "t3", claim_reason::takeover));
  CHECK(res.outcome == claim_outcome::won);
  CHECK(res.record.attempt == 2);
}

// Found by a review: one element stuck past statement_timeout failed the
// batch as unavailable ("nothing applied") after the others had committed;
// the scheduler then resent their finishes, was refused, and reported the
// recorded results as lost.
TEST_CASE("finish_many with one element past statement_timeout leaves every outcome unknown, the others applied") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  auto o = options(srv().conninfo(), lease::testing::fresh_schema("ftimeout"), clock);
  o.statement_timeout = 300ms;
  lease::postgres_store store{o};
  for (const char* job : {"a", "b", "c"})
    REQUIRE(store.claim(request(job, clock.now(), std::string("t-") + job)).outcome == claim_outcome::won);
  PGconn* c = PQconnectdb(srv().conninfo().c_str());
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PQclear(PQexec(c, "BEGIN"));
  PGresult* r = PQexec(c, ("SELECT 1 FROM \"" + o.schema + "\".lease_runs WHERE job = 'b'::bytea FOR UPDATE").c_str());
  REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
  PQclear(r);
  const std::vector<lease::finish_request> batch = {{{"a", clock.now()}, "t-a", run_status::success},
                                                    {{"b", clock.now()}, "t-b", run_status::success},
                                                    {{"c", clock.now()}, "t-c", run_status::success}};
  std::error_code err;
  std::string what;
  try {
    (void)store.finish_many(batch);
  } catch (const lease::store_error& e) {
    err = e.code();
    what = e.what();
  }
  PQclear(PQexec(c, "ROLLBACK"));
  PQfinish(c);
  CHECK(err == lease::errc::outcome_unknown);  // read each back: a resend of a or c would be refused
  CHECK(what.find("57014") != std::string::npos);
  CHECK(what.find("may have been applied") != std::string::npos);
  CHECK(store.get({"a", clock.now()})->status == run_status::success);
  CHECK(store.get({"b", clock.now()})->status == run_status::running);
  CHECK(store.get({"c", clock.now()})->status == run_status::success);
}

TEST_CASE("claim, finish and release whose answers were lost are resolved by reading the run back") {
  lease::testing::loopback_proxy proxy{srv().port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string ci = "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " user=postgres dbname=postgres";
  lease::postgres_store store{options(ci, lease::testing::fresh_schema("doubt"), clock)};
  const run_key run{"j", clock.now()};
  REQUIRE_FALSE(store.get(run));  // connected (and the schema made) through the proxy

  proxy.lose_next_reply();
  auto res = store.claim(request("j", run.slot, "t1"));
  CHECK(proxy.cuts() == 1);
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.record.token == "t1");
  CHECK(res.record.attempt == 1);
  CHECK(res.record.fence == 1'700'000'000'000);  // applied once: the fence moved once
  CHECK(res.store_now == clock.now());

  proxy.lose_next_reply();
  CHECK(store.release(run, "t1"));
  CHECK(proxy.cuts() == 2);
  auto rec = store.get(run);
  CHECK(rec->released);
  CHECK(rec->handovers == 1);  // once

  auto again = store.claim(request("j", run.slot, "t2", claim_reason::takeover));
  REQUIRE(again.outcome == claim_outcome::won);
  proxy.lose_next_reply();
  CHECK(store.finish(run, "t2", run_status::success));
  CHECK(proxy.cuts() == 3);
  CHECK(store.get(run)->status == run_status::success);

  // A claim that lost: read back shows another token; sent again, the rules answer.
  proxy.lose_next_reply();
  auto lost = store.claim(request("j", run.slot, "t9"));
  CHECK(lost.outcome == claim_outcome::finished);
  CHECK(lost.record.token == "t2");
}

TEST_CASE("a manual claim whose answer was lost after it answered its trigger with a refusal is left unknown, not none") {
  // The lost copy found the job paused: answered `paused`, trigger cleared.
  // Resent at once it would be answered `none`, and the scheduler would drop
  // the trigger without an event; unknown, it is resent after a backoff and
  // a `none` then is explained (scheduler claim_answered).
  lease::testing::loopback_proxy proxy{srv().port()};
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string ci = "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " user=postgres dbname=postgres";
  lease::postgres_store store{options(ci, lease::testing::fresh_schema("manualdoubt"), clock)};
  REQUIRE(store.pause("j"));
  const time_point slot = store.trigger("j");

  proxy.lose_next_reply();
  try {
    (void)store.claim(request("j", slot, "m1", claim_reason::manual));
    FAIL("a manual claim whose answer was lost and whose run is not there was answered");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::outcome_unknown);
  }
  CHECK(proxy.cuts() == 1);
  CHECK(store.triggers(std::vector<std::string>{"j"}).empty());  // the lost copy answered it
  CHECK(store.claim(request("j", slot, "m1", claim_reason::manual)).outcome == claim_outcome::none);
}

TEST_CASE("a server restarted in the middle of heartbeats: unavailable, then the same runner carries on, no second winner") {
  // A server of its own: restarting the shared one would disturb nothing
  // here, but other test cases may run in the same process.
  lease::testing::postgres_server own;
  const std::string schema = lease::testing::fresh_schema("restart");
  lease::postgres_store runner{options(own.conninfo(), schema)};
  lease::postgres_store backup{options(own.conninfo(), schema)};
  const time_point slot = runner.now();
  auto won = runner.claim(request("j", slot, "t1"));
  REQUIRE(won.outcome == claim_outcome::won);
  REQUIRE(runner.heartbeat({"j", slot}, "t1", 30s));
  REQUIRE(backup.claim(request("j", slot, "b1")).outcome == claim_outcome::running);

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, refused{0}, errors{0};
  std::thread beats([&] {
    while (!stop) {
      try {
        (runner.heartbeat({"j", slot}, "t1", 30s) ? ok : refused)++;
      } catch (const lease::store_error& e) {
        if (e.code() != lease::errc::unavailable) refused += 1000;
        ++errors;
      }
      std::this_thread::sleep_for(5ms);
    }
  });
  while (ok < 5) std::this_thread::sleep_for(5ms);
  own.restart();
  const int after_restart = ok;
  while (ok < after_restart + 5) std::this_thread::sleep_for(5ms);
  stop = true;
  beats.join();
  CHECK(errors >= 1);     // the restart was seen as unavailable…
  CHECK(refused == 0);    // …never as a refusal: the run is still ours
  auto second = until_available([&] { return backup.claim(request("j", slot, "b2", claim_reason::takeover)); });
  CHECK(second.outcome == claim_outcome::running);
  CHECK(second.record.token == "t1");
  CHECK(second.record.fence == won.record.fence);
}

// A connect waits for each host connect_timeout on the monotonic clock
// (connect.hpp). libpq's own wait read the wall clock and rounded anything
// below 2 s up to 2 s, so these fail on it by their messages and their time.
// The server that does not answer is a black-holed proxy: the TCP connect
// succeeds, the startup packet is never answered.
TEST_CASE("a connect to a server that does not answer gives up after connect_timeout, and the next one connects once it answers") {
  lease::testing::loopback_proxy silent(srv().port());
  silent.black_hole(true);
  auto o = options("host=127.0.0.1 port=" + std::to_string(silent.port()) + " user=postgres dbname=postgres",
                   lease::testing::fresh_schema("silent"));
  o.connect_timeout = 300ms;
  lease::postgres_store store{o};
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store.claim(request("j", store.now(), "t1"));
    FAIL("a claim went through a server that does not answer");
  } catch (const lease::store_error& e) {
    INFO(e.what());
    CHECK(e.code() == lease::errc::unavailable);
    CHECK(std::string(e.what()).find("no answer from 127.0.0.1:" + std::to_string(silent.port()) +
                                     " within 300 ms (connect_timeout)") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < 1900ms);  // libpq's own wait is 2 s at least
  silent.black_hole(false);
  const auto won = until_available([&] { return store.claim(request("j", store.now(), "t1")); });
  CHECK(won.outcome == claim_outcome::won);
}

// Three hosts: the first is a standby that answers after 250 ms (libpq
// moves on by itself), the second does not answer, the third works. The second host gets its own
// connect_timeout from when libpq reached it, once: counted from the first
// host's start, it would have 50 ms. PGCONNECT_TIMEOUT, set in this
// process's environment, changes nothing: the setting is explicit.
TEST_CASE("a conninfo of a standby, a silent and a working host connects to the third, giving the silent one connect_timeout once") {
  slow_standby standby(250ms);
  lease::testing::loopback_proxy silent(srv().port());
  silent.black_hole(true);
  auto o = options("host=127.0.0.1,127.0.0.1,127.0.0.1 port=" + std::to_string(standby.port) + "," +
                       std::to_string(silent.port()) + "," + std::to_string(srv().port()) +
                       " user=postgres dbname=postgres target_session_attrs=read-write sslmode=disable gssencmode=disable",
                   lease::testing::fresh_schema("threehost"));
  o.connect_timeout = 300ms;
  (void)lease::postgres_store{options(srv().conninfo(), o.schema)}.now();  // the schema made: not timed below
  struct env_guard {
    env_guard() { ::setenv("PGCONNECT_TIMEOUT", "10", 1); }
    ~env_guard() { ::unsetenv("PGCONNECT_TIMEOUT"); }
  } pgconnect_timeout;
  lease::postgres_store store{o};
  const auto start = std::chrono::steady_clock::now();
  const time_point slot = store.now();  // a connect, on the first try: no error
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 540ms);  // 250 ms on the first host, then the silent one's own 300 ms
  CHECK(took < 1900ms);  // libpq's own wait is 2 s at least
  CHECK(silent.accepted() == 1);
  CHECK(store.claim(request("j", slot, "t1")).outcome == claim_outcome::won);  // the silent host forwards nothing

  // All three failing: the message names each host's failure.
  const std::string refused = std::to_string(lease::testing::free_port());
  auto none = options("host=127.0.0.1,127.0.0.1,127.0.0.1 port=" + refused + "," + std::to_string(silent.port()) + "," +
                          refused + " user=postgres dbname=postgres",
                      lease::testing::fresh_schema("threehost"));
  none.connect_timeout = 300ms;
  lease::postgres_store failing{none};
  try {
    (void)failing.now();
    FAIL("connected with no host that works");
  } catch (const lease::store_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(e.code() == lease::errc::unavailable);
    CHECK(what.find("no answer from 127.0.0.1:" + std::to_string(silent.port()) + " within 300 ms") != std::string::npos);
    const auto first = what.find("port " + refused);
    CHECK(first != std::string::npos);
    CHECK(what.find("port " + refused, first + 1) != std::string::npos);  // the refusals before and after it
  }
}

// libpq leaves a host whose socket does not exist inside
// PQconnectStartParams: the connect is already on the second host when it
// returns. Taken for the first, the silent host's timeout was put on the
// socket, and the connect of the rest waited on the silent host again.
TEST_CASE("a conninfo whose first host libpq leaves at once names and waits on the silent second host once") {
  lease::testing::loopback_proxy silent(srv().port());
  silent.black_hole(true);
  const std::string sp = std::to_string(silent.port());
  auto o = options("host=/nonexistent-lease-socket-dir,127.0.0.1,127.0.0.1 port=" + sp + "," + sp + "," +
                       std::to_string(srv().port()) + " user=postgres dbname=postgres",
                   lease::testing::fresh_schema("nosocket"));
  o.connect_timeout = 300ms;
  lease::postgres_store store{o};
  CHECK(store.claim(request("j", store.now(), "t1")).outcome == claim_outcome::won);
  CHECK(silent.accepted() == 1);
}

TEST_CASE("a schema with a version this library does not know is a clear error") {
  const std::string schema = lease::testing::fresh_schema("ver");
  { (void)lease::postgres_store{options(srv().conninfo(), schema)}.now(); }
  srv().sql("UPDATE \"" + schema + "\".lease_schema_version SET version = 99");
  lease::postgres_store store{options(srv().conninfo(), schema)};
  try {
    (void)store.get({"j", at(0)});
    FAIL("a newer schema was used");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::corrupt);
    CHECK(std::string(e.what()).find("has lease schema version '99', this library knows version 9") !=
          std::string::npos);
  }
}

namespace {

/// Version 1's claim function, as version 1 of this library created it (the
/// library now creates version 1's tables only, and version 2's function
/// over them, on the way to the current version).
constexpr std::string_view v1_claim = R"SQL(
-- A claim: rules::claim of lease/rules.hpp, answer for answer. Outcomes are
-- claim_outcome's values (won 0, running 1, overlap 2, late 3, superseded 4,
-- finished 5, none 6, early 7, quarantined 8); reasons and overlap modes
-- likewise. p_marker: the store marker the caller saw ('' if none);
-- p_known: the highest fence of the job the caller saw (0 if none): a
-- stored fence below it can only be a loss of state.
CREATE FUNCTION @.lease_claim(p_now int8, p_marker text, p_known int8, p_job bytea, p_slot int8, p_runner bytea,
    p_token bytea, p_reason int4, p_lease int8, p_max_attempts int4, p_deadline int8, p_overlap int4,
    p_history int4, p_retain int8,
    OUT o_outcome int4, OUT o_now int8, OUT o_detected bool, OUT o_marker text, OUT o_lost_at int8,
    OUT o_slot int8, OUT o_attempt int4, OUT o_token bytea, OUT o_fence int8, OUT o_runner bytea,
    OUT o_status int4, OUT o_lease_end int8, OUT o_released bool, OUT o_handovers int4)
LANGUAGE plpgsql VOLATILE AS $f$
DECLARE
  v_fence int8;
  v_row @.lease_runs%ROWTYPE;
  v_run @.lease_runs%ROWTYPE;
  v_found bool := false;
  v_newer bool := false;
  v_others int4 := 0;
BEGIN
  o_detected := false;
  o_slot := p_slot;
  -- 1. The job's row: every claim of the job waits here for the one before.
  SELECT j.fence INTO v_fence FROM @.lease_jobs j WHERE j.job = p_job FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO @.lease_jobs AS j (job, fence) VALUES (p_job, 0)
      ON CONFLICT (job) DO UPDATE SET fence = j.fence RETURNING j.fence INTO v_fence;
  END IF;
  -- 2. The run, the job's newer runs and its running runs, locked (slot
  --    order) and read in one pass, so heartbeats, finishes and releases of
  --    them order with this claim.
  FOR v_row IN SELECT * FROM @.lease_runs r WHERE r.job = p_job AND (r.slot >= p_slot OR r.status = 0)
                 ORDER BY r.slot FOR UPDATE LOOP
    IF v_row.slot = p_slot THEN
      v_run := v_row;
      v_found := true;
    ELSE
      IF v_row.slot > p_slot THEN v_newer := true; END IF;
      IF v_row.status = 0 THEN v_others := v_others + 1; END IF;
    END IF;
  END LOOP;
  -- 3. The clock, once every lock is held.
  o_now := @.lease_now(p_now);
  -- 4. Evidence of a loss of state.
  SELECT s.marker, s.lost_at INTO o_marker, o_lost_at FROM @.lease_store s WHERE s.id = 1;
  IF p_marker <> '' AND p_marker <> o_marker THEN
    o_detected := true;
  ELSIF p_known > v_fence THEN
    o_detected := true;
    v_fence := p_known;  -- fences never go back, not even after a loss
    UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job;
  END IF;
  IF o_detected THEN
    UPDATE @.lease_store s SET lost_at = greatest(s.lost_at, o_now) WHERE s.id = 1 RETURNING s.lost_at INTO o_lost_at;
  END IF;
  -- 5. The rules.
  IF v_found THEN
    IF v_run.status <> 0 THEN
      o_outcome := 5;
    ELSIF o_now < v_run.lease_end THEN
      o_outcome := 1;
    ELSIF v_newer OR v_run.attempt - v_run.handovers >= p_max_attempts THEN
      UPDATE @.lease_runs r SET status = 3 WHERE r.job = p_job AND r.slot = p_slot;
      v_run.status := 3;
      o_outcome := 5;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSE
      v_fence := greatest(v_fence + 1, o_now);
      UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job;
      UPDATE @.lease_runs r SET attempt = r.attempt + 1, token = p_token, runner = p_runner, fence = v_fence,
          status = 0, lease_end = o_now + p_lease, released = false
        WHERE r.job = p_job AND r.slot = p_slot RETURNING r.* INTO v_run;
      o_outcome := 0;
    END IF;
  ELSE
    IF p_reason = 2 THEN o_outcome := 6; RETURN; END IF;
    IF o_now > p_deadline + 10000 THEN o_outcome := 3; RETURN; END IF;
    IF p_slot > o_now + 1000 THEN o_outcome := 7; RETURN; END IF;
    IF v_newer THEN o_outcome := 4; RETURN; END IF;
    IF v_others > 0 AND p_overlap IN (0, 2) THEN
      SELECT * INTO v_run FROM @.lease_runs r
        WHERE r.job = p_job AND r.status = 0 AND o_now < r.lease_end ORDER BY r.slot DESC LIMIT 1;
      v_found := FOUND;
    END IF;
    IF v_found THEN
      o_outcome := 2;
    ELSIF o_lost_at IS NOT NULL AND o_now < o_lost_at + p_lease THEN
      o_outcome := 8;
      o_lease_end := o_lost_at + p_lease;
      RETURN;
    ELSIF o_lost_at IS NOT NULL AND p_slot <= o_lost_at + 1000 THEN
      o_outcome := 8;  -- a slot that may have run before the loss never starts (lease end: never)
      RETURN;
    ELSE
      IF v_others > 0 THEN
        UPDATE @.lease_runs r SET status = 3
          WHERE r.job = p_job AND r.status = 0 AND (r.lease_end <= o_now OR p_overlap = 3);
      END IF;
      v_fence := greatest(v_fence + 1, o_now);
      UPDATE @.lease_jobs j SET fence = v_fence WHERE j.job = p_job;
      INSERT INTO @.lease_runs VALUES (p_job, p_slot, 1, p_token, v_fence, p_runner, 0, o_now + p_lease, false, 0)
        RETURNING * INTO v_run;
      -- Pruning: ended runs past the horizon, except the newest p_history ended ones.
      DELETE FROM @.lease_runs r
        WHERE r.job = p_job AND r.status <> 0 AND r.slot < o_now - p_retain - 10000
          AND r.slot < coalesce((SELECT min(k.slot) FROM (SELECT k2.slot FROM @.lease_runs k2
                                   WHERE k2.job = p_job AND k2.status <> 0 ORDER BY k2.slot DESC LIMIT p_history) k),
                                9223372036854775807);
      o_outcome := 0;
    END IF;
  END IF;
  o_slot := v_run.slot; o_attempt := v_run.attempt; o_token := v_run.token; o_fence := v_run.fence;
  o_runner := v_run.runner; o_status := v_run.status; o_lease_end := v_run.lease_end;
  o_released := v_run.released; o_handovers := v_run.handovers;
END
$f$;
)SQL";

}  // namespace

TEST_CASE("a version 1 schema with live runs is migrated to version 9 at the first connect, and its runs carry on") {
  const std::string schema = lease::testing::fresh_schema("v1");
  // The layout and the claim function as version 1 of this library made them, and a run won through it.
  srv().sql(lease::detail::postgres::in_schema(lease::detail::postgres::create_v1, schema) +
            lease::detail::postgres::in_schema(v1_claim, schema));
  const std::string q = "\"" + schema + "\"";
  CHECK(srv().sql("SELECT o_outcome::text FROM " + q + ".lease_claim(1700000000000, '', 0, 'old'::bytea, "
                  "1700000000000, 'r1'::bytea, 't1'::bytea, 0, 30000, 3, 1700003600000, 0, 10, 300000)") == "0");
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "1");

  lease::fake_clock clock{at(1'700'000'000'000)};  // the time of that claim
  lease::postgres_store store{options(srv().conninfo(), schema, clock)};
  const auto rec = store.get({"old", at(1'700'000'000'000)});  // connects: migrates
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "9");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_schema_version") == "1");
  // Version 5's registrations (none yet), no placeholder job row, no purge yet; stop and purge functions.
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_registrations") == "0");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_jobs WHERE placeholder") == "0");
  CHECK(srv().sql("SELECT coalesce(purged_at::text, 'none') FROM " + q + ".lease_store") == "none");
  CHECK(srv().sql("SELECT count(*)::text FROM pg_proc WHERE proname IN ('lease_stop', 'lease_purge') AND "
                  "pronamespace = '" + q + "'::regnamespace") == "2");
  // Version 2's claim function, version 3's indexes (the primary key only: finishes are HOT updates).
  CHECK(srv().sql("SELECT (prosrc LIKE '%never claimed%')::text FROM pg_proc WHERE proname = 'lease_claim' AND "
                  "pronamespace = '" + q + "'::regnamespace") == "true");
  CHECK(srv().sql("SELECT string_agg(indexrelid::regclass::text, ',') FROM pg_index WHERE indrelid = '" + q +
                  ".lease_runs'::regclass") == schema + ".lease_runs_pkey");
  // Version 6's room on each page of runs, for heartbeats as HOT updates.
  CHECK(srv().sql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = '" + q + ".lease_runs'::regclass") ==
        "fillfactor=50");
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  // The run won under version 1 is still the runner's; its job's fence goes on from where it was.
  CHECK(store.claim(request("old", rec->slot, "t2", claim_reason::takeover)).outcome == claim_outcome::running);
  CHECK(store.heartbeat({"old", rec->slot}, "t1", 30s));
  auto next = store.claim(request("old", rec->slot + 1s, "t3"));
  CHECK(next.outcome == claim_outcome::overlap);
  CHECK(store.finish({"old", rec->slot}, "t1", run_status::success));
  next = store.claim(request("old", rec->slot + 1s, "t3"));
  REQUIRE(next.outcome == claim_outcome::won);
  CHECK(next.record.fence == rec->fence + 1);
  // A new job on the migrated schema.
  CHECK(store.claim(request("new", clock.now(), "n1")).outcome == claim_outcome::won);
  // Version 4's pause.
  CHECK(store.finish({"new", clock.now()}, "n1", run_status::success));
  CHECK(store.pause("new"));
  clock.advance(1s);
  CHECK(store.claim(request("new", clock.now(), "n2")).outcome == claim_outcome::paused);
  // Version 5's stop, registrations and purge, on the run won through version 1's fence counter.
  CHECK(store.stop("old") == 1);
  const lease::job_registration reg[] = {{"old", "i-1", "every 1s", "", {}}};
  store.register_jobs(reg);
  clock.advance(2h);
  CHECK(store.purge("old", 1h).outcome == lease::purge_outcome::purged);
  CHECK_FALSE(store.get({"old", rec->slot}));
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_registrations") == "0");
}

TEST_CASE("a version 3 schema with live runs is migrated to version 9: no job paused, runs and fences kept, pauses then held") {
  const std::string schema = lease::testing::fresh_schema("v3");
  // Version 3 exactly as the previous release left it: its migrations, in order.
  srv().sql(lease::detail::postgres::in_schema(lease::detail::postgres::schema_at(3), schema));
  const std::string q = "\"" + schema + "\"";
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "3");
  // A run won through version 3's claim function: a runner still holds it.
  CHECK(srv().sql("SELECT o_outcome::text FROM " + q + ".lease_claim(1700000000000, '', 0, 'old'::bytea, "
                  "1700000000000, 'r1'::bytea, 't1'::bytea, 0, 30000, 3, 1700003600000, 0, 10, 300000)") == "0");

  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(srv().conninfo(), schema, clock)};
  const auto rec = store.get({"old", at(1'700'000'000'000)});  // connects: migrates
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "9");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_schema_version") == "1");
  // Version 5's registrations (none yet), no placeholder job row, no purge yet; stop and purge functions.
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_registrations") == "0");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_jobs WHERE placeholder") == "0");
  CHECK(srv().sql("SELECT coalesce(purged_at::text, 'none') FROM " + q + ".lease_store") == "none");
  CHECK(srv().sql("SELECT count(*)::text FROM pg_proc WHERE proname IN ('lease_stop', 'lease_purge') AND "
                  "pronamespace = '" + q + "'::regnamespace") == "2");
  CHECK(srv().sql("SELECT string_agg(paused::text, ',') FROM " + q + ".lease_jobs") == "false");
  CHECK(srv().sql("SELECT (prosrc LIKE '%v_paused%')::text FROM pg_proc WHERE proname = 'lease_claim' AND "
                  "pronamespace = '" + q + "'::regnamespace") == "true");
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK_FALSE(store.paused("old"));
  CHECK(store.claim(request("old", rec->slot, "t2", claim_reason::takeover)).outcome == claim_outcome::running);

  // Paused while t1 runs: t1 goes on and finishes; the next slot does not start.
  CHECK(store.pause("old"));
  CHECK_FALSE(store.pause("old"));
  {
    lease::postgres_store other{options(srv().conninfo(), schema, clock)};  // another instance
    CHECK(other.paused("old"));
    CHECK(other.heartbeat({"old", rec->slot}, "t1", 30s));
    CHECK(other.finish({"old", rec->slot}, "t1", run_status::success));
    clock.advance(60s);
    const auto p = other.claim(request("old", rec->slot + 60s, "t3"));
    CHECK(p.outcome == claim_outcome::paused);
    CHECK(p.record.slot == rec->slot + 60s);
    CHECK(p.record.token.empty());
    CHECK_FALSE(other.get({"old", rec->slot + 60s}));  // nothing created
  }
  // A job that never ran can be paused: its row is created.
  CHECK(store.pause("never-ran"));
  CHECK(store.claim(request("never-ran", clock.now(), "n1")).outcome == claim_outcome::paused);
  CHECK(store.resume("old"));
  CHECK_FALSE(store.resume("old"));
  const auto next = store.claim(request("old", rec->slot + 60s, "t4"));
  REQUIRE(next.outcome == claim_outcome::won);
  CHECK(next.record.fence > rec->fence);  // fences go on growing after the migration
}

TEST_CASE("a version 7 schema is migrated to version 9: a purged job's remembered fence still proves no loss, runs "
          "are kept, and a version 7 instance still connected keeps claiming") {
  namespace pg = lease::detail::postgres;
  const std::string schema = lease::testing::fresh_schema("v7");
  // Version 7 exactly as the previous release left it: its migrations, in order.
  srv().sql(pg::in_schema(pg::schema_at(7), schema));
  const std::string q = "\"" + schema + "\"";
  REQUIRE(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "7");
  // An instance of version 7, connected, its claim prepared (the statement is the same in version 8).
  pg::connection old{{.conninfo = srv().conninfo()}};
  REQUIRE(old.open());
  old.prepare("old_claim", pg::in_schema(pg::stmt_sql[static_cast<unsigned>(pg::stmt::claim)], schema));
  auto old_claim = [&](std::string_view job, std::int64_t slot, std::string_view token) {
    pg::params p;
    p.i64(slot).text("").i64(0).bytes(job).i64(slot).bytes("r-" + std::string(token)).bytes(token).i32(0).i64(30'000)
        .i32(3).i64(slot + 3'600'000).i32(0).i32(10).i64(300'000);
    auto r = old.exec_prepared("old_claim", p, "old claim");
    return pg::row{r.get(), 0}.i32(0, "old claim");
  };
  REQUIRE(old_claim("old", 1'700'000'000'000, "t1") == 0);  // won under version 7

  lease::fake_clock clock{at(1'700'000'000'000)};
  lease::postgres_store store{options(srv().conninfo(), schema, clock)};
  const auto rec = store.get({"old", clock.now()});  // connects: migrates
  CHECK(srv().sql("SELECT max(version)::text FROM " + q + ".lease_schema_version") == "9");
  CHECK(srv().sql("SELECT count(*)::text FROM " + q + ".lease_schema_version") == "1");
  // No CHECK on the status any more (version 9: compiled at every write of a run).
  CHECK(srv().sql("SELECT count(*)::text FROM pg_constraint WHERE conname = 'lease_runs_status_check' AND connamespace = '" +
                  q + "'::regnamespace") == "0");
  // The claim's condition on a remembered fence no longer holds a query of its own.
  CHECK(srv().sql("SELECT (prosrc LIKE '%v_purged%' AND prosrc NOT LIKE '%(SELECT coalesce(s.purged_at%')::text "
                  "FROM pg_proc WHERE proname = 'lease_claim' AND pronamespace = '" + q + "'::regnamespace") == "true");
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK(store.claim(request("old", rec->slot, "t2", claim_reason::takeover)).outcome == claim_outcome::running);

  // The rule the change touched: this handle wins a job and so remembers its
  // fence; another purges the job; this one's next claim finds no counter
  // (the job is gone), and the fence it remembers is at most the purge's
  // clock: not a loss of state, so no quarantine. (Read as 0, purged_at
  // would make it one.)
  CHECK(store.claim(request("p", clock.now(), "p1")).outcome == claim_outcome::won);
  CHECK(store.finish({"p", clock.now()}, "p1", run_status::success));
  clock.advance(1s);
  CHECK(lease::postgres_store{options(srv().conninfo(), schema, clock)}.purge("p", 0s).outcome ==
        lease::purge_outcome::purged);
  clock.advance(1s);
  const auto again = store.claim(request("p", clock.now(), "p2"));
  CHECK(again.outcome == claim_outcome::won);
  CHECK_FALSE(store.lost_at());

  // The version 7 instance, still connected, keeps claiming on the migrated schema.
  CHECK(old_claim("old7", 1'700'000'002'000, "o1") == 0);
  const auto o1 = store.get({"old7", at(1'700'000'002'000)});
  REQUIRE(o1);
  CHECK(o1->token == "o1");
}

TEST_CASE("many stores starting at once on a new schema migrate it once") {
  const std::string schema = lease::testing::fresh_schema("mig");
  const std::string ci = srv().conninfo();  // the server starts on this thread (server.hpp: PDEATHSIG)
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int i = 0; i < 6; ++i)
    ts.emplace_back([&] {
      try {
        lease::postgres_store s{options(ci, schema)};
        (void)s.now();
      } catch (const std::exception&) {
        ++failures;
      }
    });
  for (auto& t : ts) t.join();
  CHECK(failures == 0);
  CHECK(srv().sql("SELECT count(*) FROM \"" + schema + "\".lease_schema_version") == "1");
}

TEST_CASE("bad options are invalid_argument with a sentence, and a password is never in a message") {
  auto code_of = [](auto f) {
    try {
      f();
    } catch (const lease::store_error& e) {
      CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
      return e.code().default_error_condition();
    }
    FAIL("no error");
    return std::error_condition{};
  };
  CHECK(code_of([] { lease::postgres_store{options("host=127.0.0.1", "bad-name")}; }) == lease::errc::invalid_argument);
  CHECK(code_of([] { lease::postgres_store{options("host=127.0.0.1", "1abc")}; }) == lease::errc::invalid_argument);
  CHECK(code_of([] {
          auto o = options("host=127.0.0.1", "ok");
          o.connect_timeout = 0ms;  // every connect would fail at once
          lease::postgres_store{o};
        }) == lease::errc::invalid_argument);
  CHECK(code_of([] { lease::postgres_store{options("password=s3cret host", "ok")}; }) == lease::errc::invalid_argument);
  try {  // an unescaped '@' in a URI's password: its tail would be taken for the host, shown and looked up
    lease::postgres_store s{options("postgresql://app:top@SECRET@127.0.0.1:1/db", "ok")};
    FAIL("a host with '@' was accepted");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::invalid_argument);
    CHECK(std::string(e.what()).find("SECRET") == std::string::npos);
    CHECK(std::string(e.what()).find("%40") != std::string::npos);
  }
  const int closed = lease::testing::free_port();
  for (const std::string& ci : {"postgresql://app:s3cret@127.0.0.1:" + std::to_string(closed) + "/db",
                               "host=127.0.0.1 port=" + std::to_string(closed) + " password=s3cret user=app"}) {
    lease::postgres_store s{options(ci, "ok")};
    try {
      (void)s.get({"j", at(0)});
      FAIL("connected to a closed port");
    } catch (const lease::store_error& e) {
      const std::string what = e.what();
      CHECK(e.code() == lease::errc::unavailable);
      CHECK(what.find("s3cret") == std::string::npos);
      CHECK(what.find("127.0.0.1") != std::string::npos);
      CHECK(what.find("user=app") != std::string::npos);
    }
  }
}

TEST_CASE("take_notices says what the server's durability settings mean, once") {
  lease::postgres_store store{options(srv().conninfo(), lease::testing::fresh_schema("notice"))};
  (void)store.now();
  const auto notices = store.take_notices();
  REQUIRE(notices.size() == 1);
  CHECK(notices.front().find("synchronous_commit=on") != std::string::npos);
  CHECK(notices.front().find("fsync=off") != std::string::npos);  // the test server runs without fsync
  CHECK(notices.front().find("a crash of the server may lose the last acknowledged runs") != std::string::npos);
  (void)store.now();
  CHECK(store.take_notices().empty());
}

TEST_CASE("a release or finish by one store reaches another store's listener, and a cut listener reconnects") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("push");
  std::mutex m;
  std::vector<std::string> heard;
  lease::postgres_store watcher{options(srv().conninfo(), schema, clock)};
  lease::postgres_store runner{options(srv().conninfo(), schema, clock)};
  watcher.listen_releases([&](std::string_view job) {
    std::scoped_lock lock(m);
    heard.emplace_back(job);
  });
  auto heard_job = [&](const std::string& job) {
    std::scoped_lock lock(m);
    return std::count(heard.begin(), heard.end(), job) > 0;
  };
  auto wait_for = [&](auto pred) {  // bounded poll
    for (int i = 0; i < 1000 && !pred(); ++i) std::this_thread::sleep_for(10ms);
    return pred();
  };
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1; }));

  const std::string job = "it's {a} job ✓";
  REQUIRE(runner.claim(request(job, clock.now(), "t1")).outcome == claim_outcome::won);
  CHECK(runner.release({job, clock.now()}, "t1"));
  CHECK(wait_for([&] { return heard_job(job); }));

  REQUIRE(runner.claim(request("ends", clock.now(), "t2")).outcome == claim_outcome::won);
  CHECK(runner.finish({"ends", clock.now()}, "t2", run_status::success));
  CHECK(wait_for([&] { return heard_job("ends"); }));

  // Cut the listener's connection: it reconnects and hears the next release.
  CHECK(srv().sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = "
                  "'lease-listener' AND query LIKE 'LISTEN%" + schema + "%'") == "1");
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 2; }));
  clock.advance(1s);
  REQUIRE(runner.claim(request("after", clock.now(), "t3")).outcome == claim_outcome::won);
  CHECK(runner.release({"after", clock.now()}, "t3"));
  CHECK(wait_for([&] { return heard_job("after"); }));

  // Stopped: nothing more is heard, and stop returned after the last call.
  watcher.listen_releases({});
  const std::size_t n = [&] { std::scoped_lock lock(m); return heard.size(); }();
  clock.advance(1s);
  REQUIRE(runner.claim(request("late", clock.now(), "t4")).outcome == claim_outcome::won);
  CHECK(runner.release({"late", clock.now()}, "t4"));
  std::this_thread::sleep_for(200ms);  // a negative: give a stray notification the time to arrive
  std::scoped_lock lock(m);
  CHECK(heard.size() == n);
}

TEST_CASE("a postgres finish is announced with its run's slot (listen_ends), a release or stop with none") {
  lease::fake_clock clock{at(1'700'000'000'000)};
  const std::string schema = lease::testing::fresh_schema("ends");
  std::mutex m;
  std::vector<std::pair<std::string, std::optional<time_point>>> heard;
  lease::postgres_store watcher{options(srv().conninfo(), schema, clock)};
  lease::postgres_store runner{options(srv().conninfo(), schema, clock)};
  auto count = [&] {
    std::scoped_lock lock(m);
    return heard.size();
  };
  watcher.listen_ends([&](std::string_view job, std::optional<time_point> finished) {
    std::scoped_lock lock(m);
    heard.emplace_back(job, finished);
  });
  auto wait_for = [&](auto pred) {  // bounded poll
    for (int i = 0; i < 1000 && !pred(); ++i) std::this_thread::sleep_for(10ms);
    return pred();
  };
  REQUIRE(wait_for([&] { return watcher.listener_connects() == 1; }));

  const std::string job = "it's {a} job ✓";
  const time_point s1 = clock.now() - 3s, s2 = s1 + 1s, s3 = s1 + 2s, s4 = s1 + 3s;
  for (auto [slot, token] : {std::pair{s1, "t1"}, {s2, "t2"}, {s3, "t3"}, {s4, "t4"}}) {
    auto req = request(job, slot, token);
    req.overlap = lease::overlap_mode::allow;  // four runs of one job at once
    REQUIRE(runner.claim(req).outcome == claim_outcome::won);
  }
  CHECK_FALSE(runner.finish({job, s1}, "not-the-token", run_status::success));  // refused: no announcement
  CHECK(runner.finish({job, s1}, "t1", run_status::failed));
  CHECK(runner.release({job, s2}, "t2"));
  const std::vector<lease::finish_request> batch{{{job, s3}, "t3", run_status::success}, {{job, s4}, "t4", std::nullopt}};
  CHECK(runner.finish_many(batch) == std::vector<bool>{true, true});
  REQUIRE(wait_for([&] { return count() == 4; }));
  {
    std::scoped_lock lock(m);
    CHECK(heard[0] == std::pair{job, std::optional{s1}});  // a finish: the run it ended
    CHECK(heard[1] == std::pair{job, std::optional<time_point>{}});  // a release: check every watched run
    CHECK(heard[2] == std::pair{job, std::optional{s3}});
    CHECK(heard[3] == std::pair{job, std::optional<time_point>{}});
  }
  // A stop hands a run over: job only.
  clock.advance(1s);
  REQUIRE(runner.claim(request(job, clock.now(), "t5")).outcome == claim_outcome::won);
  CHECK(runner.stop(job) == 1);
  REQUIRE(wait_for([&] { return count() == 5; }));
  std::scoped_lock lock(m);
  CHECK(heard[4] == std::pair{job, std::optional<time_point>{}});
}

TEST_CASE("an announcement is read as a job and, for a finish, its slot, and one of another shape names no job") {
  using lease::detail::postgres::parse_announcement;
  const auto release = parse_announcement("6e696768746c79");  // "nightly", as every version sends a release
  CHECK(release.job == "nightly");
  CHECK_FALSE(release.finished);
  const auto finish = parse_announcement("6e696768746c79:1700000000000");
  CHECK(finish.job == "nightly");
  CHECK(finish.finished == at(1'700'000'000'000));
  CHECK(parse_announcement("6e696768746c79:-5").finished == at(-5));  // slots before 1970 are slots too
  for (const char* odd : {"", ":1", "6e69:", "6e69:12x", "6e69:1:2", "zz", "6e6"})
    CHECK(parse_announcement(odd).job.empty());  // too long to announce, or not ours: dropped, never misread
}

TEST_CASE("version 9's claim answers each step of random histories as version 8's did and leaves the same rows") {
  // Version 9 rewrote the claim for speed (schema.hpp, upgrade_to_v9) and
  // kept version 8's rules. This holds it to that: histories of random steps
  // run on two schemas, one left at version 8, one at version 9 (claims of
  // every reason, overlap mode, attempt limit, history and retention, with
  // fences seen before and, rarely, above the counter, or a stranger's
  // marker; finishes, heartbeats, releases, pauses, stops, purges,
  // triggers, losses recorded; the clock injected so both read the same times, and moved now
  // and then to a lease's last millisecond or the one after), every answer
  // and every row compared after each step. A loss is recorded for good, so
  // each history has fresh schemas, and most of them see one.
  namespace pg = lease::detail::postgres;
  pg::connection c{{.conninfo = srv().conninfo()}};
  REQUIRE(c.open());
  // Every column of every row of the result, as text ('~' for NULL).
  auto all = [&](const std::string& sql) {
    auto r = c.exec_simple(sql, "comparing versions");
    std::string out;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      for (int j = 0; j < PQnfields(r.get()); ++j)
        out += (PQgetisnull(r.get(), i, j) != 0 ? std::string("~") : std::string(PQgetvalue(r.get(), i, j))) + "|";
      out += "\n";
    }
    return out;
  };
  const std::uint32_t seed = Catch::rngSeed() != 0 ? Catch::rngSeed() : 20261207;
  std::mt19937 rng(seed);
  INFO("seed " << seed << " (catch's --rng-seed)");
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint32_t>(n)); };
  std::map<int, int> outcomes;  // outcome: how many, over all histories
  for (int history = 0; history < 8; ++history) {
    const std::string s8 = lease::testing::fresh_schema("v8eq"), s9 = lease::testing::fresh_schema("v9eq");
    srv().sql(pg::in_schema(pg::schema_at(8), s8));
    srv().sql(pg::in_schema(pg::schema_at(9), s9));
    REQUIRE(srv().sql("SELECT max(version)::text FROM \"" + s9 + "\".lease_schema_version") == "9");
    // One marker for both, so that claims can carry the store's own, as they do.
    srv().sql(pg::in_schema("UPDATE @.lease_store SET marker = 'ours'", s8) +
              pg::in_schema(";UPDATE @.lease_store SET marker = 'ours'", s9));
    // The same statement on both schemas ('@' = the schema): both answers.
    auto both = [&](std::string_view sql) { return std::pair{all(pg::in_schema(sql, s8)), all(pg::in_schema(sql, s9))}; };
    auto rows = [&] {
      const auto runs = both("SELECT * FROM @.lease_runs ORDER BY job, slot");
      const auto jobs = both("SELECT job, fence, paused, trigger, placeholder FROM @.lease_jobs ORDER BY job");
      const auto store = both("SELECT lost_at, purged_at FROM @.lease_store");
      return std::pair{runs.first + jobs.first + store.first, runs.second + jobs.second + store.second};
    };
    std::int64_t now = 1'700'000'000'000;
    std::map<std::string, std::int64_t> seen;     // the highest fence answered, per job
    std::map<std::string, std::int64_t> pending;  // the slot of the last trigger set, per job
    for (int step = 0; step < 500; ++step) {
      const char name = static_cast<char>('a' + pick(3));
      const std::string job(1, name), hex = std::string("'\\x6") + static_cast<char>('0' + (name - '`')) + "'::bytea";
      const int kind = pick(12), reason = pick(4);
      // Every 10 s, a few ahead of the clock; a manual claim, half of the
      // time, of the job's last trigger.
      std::int64_t slot = (now / 10'000 + 2 - pick(12)) * 10'000;
      if (kind >= 5 && reason == 3 && pending.count(job) != 0 && pick(2) == 0) slot = pending[job];
      const std::string run = hex + ", " + std::to_string(slot);
      std::string sql;
      switch (kind) {
        case 0: {  // time passes: at random, or to a running run's lease end (or 1 ms past it)
          auto r = c.exec_simple(pg::in_schema("SELECT min(lease_end) FROM @.lease_runs WHERE status = 0 AND lease_end >= " +
                                                   std::to_string(now), s8),
                                 "next lease end");
          if (pick(2) == 0 && PQgetisnull(r.get(), 0, 0) == 0) now = std::stoll(PQgetvalue(r.get(), 0, 0)) + pick(2);
          else now += pick(40'000);
          continue;
        }
        case 1:  // finish: success, failed or interrupted
          sql = "UPDATE @.lease_runs SET status = " + std::to_string(1 + pick(3)) + " WHERE (job, slot) = (" + run +
                ") AND status = 0 AND NOT released RETURNING 1";
          break;
        case 2:  // heartbeat or release
          sql = pick(2) == 0 ? "UPDATE @.lease_runs SET lease_end = " + std::to_string(now + 5'000 * (1 + pick(6))) +
                                   " WHERE (job, slot) = (" + run + ") AND status = 0 AND NOT released RETURNING 1"
                             : "UPDATE @.lease_runs SET lease_end = " + std::to_string(now) +
                                   ", released = true, handovers = handovers + 1 WHERE (job, slot) = (" + run +
                                   ") AND status = 0 AND NOT released RETURNING 1";
          break;
        case 3:  // pause or resume, or stop (lease_stop), or purge (lease_purge)
          switch (pick(6)) {
            case 0:
              sql = "SELECT @.lease_stop(" + std::to_string(now) + ", " + hex + ", 'lease_eq')";
              break;
            case 1:
              sql = "SELECT * FROM @.lease_purge(" + std::to_string(now) + ", " + hex + ", 60000)";
              break;
            default:
              sql = "INSERT INTO @.lease_jobs AS j (job, fence, paused) VALUES (" + hex + ", 0, " +
                    (pick(2) == 0 ? "true" : "false") + ") ON CONFLICT (job) DO UPDATE SET paused = excluded.paused";
          }
          break;
        case 4:  // a trigger pending at this slot or, rarely, a loss recorded now
          if (pick(100) == 0) {
            sql = "UPDATE @.lease_store SET lost_at = " + std::to_string(now) + " WHERE id = 1";
            break;
          }
          pending[job] = slot;
          sql = "INSERT INTO @.lease_jobs AS j (job, fence, trigger) VALUES (" + hex + ", 0, " + std::to_string(slot) +
                ") ON CONFLICT (job) DO UPDATE SET trigger = excluded.trigger";
          break;
        default: {  // a claim: no fence seen, the one seen, or (rarely: a loss) one above the counter
          const int known = pick(200);
          const std::int64_t fence = known < 80 ? 0 : known < 199 ? seen[job] : seen[job] + 1 + pick(3);
          sql = "SELECT o_outcome, o_now, o_detected, o_lost_at, o_slot, o_attempt, o_token, o_fence, o_runner, o_status, "
                "o_lease_end, o_released, o_handovers, o_manual FROM @.lease_claim(" +
                std::to_string(now) + ", '" + (pick(1000) == 0 ? "a stranger" : pick(3) == 0 ? "" : "ours") + "', " +
                std::to_string(fence) +
                ", " + hex + ", " + std::to_string(slot) + ", 'r" + std::to_string(pick(3)) + "'::bytea, 't" +
                std::to_string(step) + "'::bytea, " + std::to_string(reason) + ", " + std::to_string(5'000 * (1 + pick(6))) +
                ", " + std::to_string(1 + pick(3)) + ", " + std::to_string(slot + (pick(3) == 0 ? 20'000 : 3'600'000)) +
                ", " + std::to_string(pick(4)) + ", " + std::to_string(pick(3)) + ", " + std::to_string(pick(2) * 30'000) + ")";
        }
      }
      INFO("history " << history << ", step " << step << ": " << sql);
      const auto [old_answer, new_answer] = both(sql);
      REQUIRE(new_answer == old_answer);
      if (sql.find("lease_claim") != std::string::npos) {
        ++outcomes[std::stoi(old_answer.substr(0, old_answer.find('|')))];
        auto r = c.exec_simple(pg::in_schema("SELECT fence FROM @.lease_jobs WHERE job = " + hex, s8), "fence");
        if (PQntuples(r.get()) == 1) seen[job] = std::max<std::int64_t>(seen[job], std::stoll(PQgetvalue(r.get(), 0, 0)));
      }
      const auto [old_rows, new_rows] = rows();
      REQUIRE(new_rows == old_rows);
      now += pick(3) == 0 ? pick(3'000) : 0;
    }
  }
  std::string reached;
  for (const auto& [o, n] : outcomes) reached += std::to_string(o) + ":" + std::to_string(n) + " ";
  INFO("outcomes reached (outcome:count): " << reached);
  for (int o : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) CHECK(outcomes[o] > 0);
}
