// The redis store under faults: a server killed and restarted, a frozen
// client, LOADING, READONLY, OOM, NOSCRIPT, timeouts, a lost reply, bad
// credentials and foreign data. Every failure is a store_error whose code
// says what to do; nothing crashes; no run is lost or won twice.
#include <algorithm>
#include <csignal>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "lease/clock/fake.hpp"
#include "lease/store/redis.hpp"
#include "redis/server.hpp"
#include "redis/wait.hpp"
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

lease::redis_options options_for(std::string url, std::optional<lease::fake_clock> clock = std::nullopt) {
  lease::redis_options o;
  o.url = std::move(url);
  o.prefix = lease::testing::fresh_prefix("f");
  if (clock) o.clock = [c = *clock] { return c.now(); };
  return o;
}

claim_request request(std::string job, time_point slot, std::string token,
                      claim_reason reason = claim_reason::scheduled) {
  claim_request r;
  r.run = {std::move(job), slot};
  r.runner = "me";
  r.token = std::move(token);
  r.reason = reason;
  r.lease = 30s;
  r.deadline = slot + 1h;
  return r;
}

/// Calls `op` until it stops throwing store_error (at most `limit`); returns its value.
template <class Op>
auto until_available(Op op, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    try {
      return op();
    } catch (const lease::store_error& e) {
      REQUIRE(e.code() == lease::errc::unavailable);
      REQUIRE(std::chrono::steady_clock::now() < end);
      std::this_thread::sleep_for(20ms);
    }
  }
}

/// The errc condition of the store_error `op` throws.
template <class Op>
std::error_code error_of(Op op) {
  try {
    op();
  } catch (const lease::store_error& e) {
    return e.code();
  }
  FAIL("expected a store_error");
  return {};
}

}  // namespace

TEST_CASE("a redis-server killed and restarted mid-heartbeats gives unavailable and then the runs resume") {
  lease::testing::redis_server srv{{.append_only = true, .extra_args = {}}};
  lease::fake_clock clock{at(1'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  const run_key run{"job", at(1'000'000)};
  REQUIRE(store.claim(request("job", run.slot, "t1")).outcome == claim_outcome::won);
  for (int i = 0; i < 5; ++i) REQUIRE(store.heartbeat(run, "t1", 30s));

  srv.kill();
  auto err = error_of([&] { (void)store.heartbeat(run, "t1", 30s); });
  CHECK(err == lease::errc::unavailable);
  CHECK(error_of([&] { (void)store.heartbeat(run, "t1", 30s); }) == lease::errc::unavailable);  // refused
  CHECK(error_of([&] { (void)store.get(run); }) == lease::errc::unavailable);  // backing off

  srv.restart();  // same port, same AOF: the state comes back
  CHECK(until_available([&] { return store.heartbeat(run, "t1", 30s); }));
  // The rules still hold after the restart: the fence counter continued, the
  // run is still ours and no one else can win it.
  CHECK(store.claim(request("job", run.slot, "t2", claim_reason::takeover)).outcome == claim_outcome::running);
  auto next = store.claim(request("job", at(1'000'500), "t3"));  // a next slot, not ahead of the store
  CHECK(next.outcome == claim_outcome::overlap);
  CHECK(store.finish(run, "t1", run_status::success));
  clock.advance(60s);
  next = store.claim(request("job", at(1'000'500), "t3"));
  REQUIRE(next.outcome == claim_outcome::won);
  CHECK(next.record.fence == 1'060'000);  // the counter continued: max(1'000'000 + 1, store-now)
}

TEST_CASE("a store whose server is not there yet fails fast with unavailable") {
  const int port = lease::testing::free_loopback_port();
  lease::redis_store store{options_for("redis://127.0.0.1:" + std::to_string(port), lease::fake_clock{at(0)})};
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) CHECK(error_of([&] { (void)store.get({"j", at(0)}); }) == lease::errc::unavailable);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // refused and backing off: no waiting
}

TEST_CASE("a client frozen by SIGSTOP past its lease is fenced when it resumes") {
  lease::testing::redis_server srv;
  const std::string prefix = lease::testing::fresh_prefix("frozen");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  time_point slot;
  {
    lease::redis_options o = options_for(srv.url());
    o.prefix = prefix;
    lease::redis_store probe{o};
    slot = probe.now();
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The runner: wins, then heartbeats every 100 ms with a 600 ms lease on
    // the server's clock, until refused. Exit 0 only if, once refused, its
    // finish is refused too.
    int code = 3;
    try {
      lease::redis_options o = options_for(srv.url());
      o.prefix = prefix;
      lease::redis_store runner{o};
      auto req = request("frozen", slot, "a1");
      req.lease = 600ms;
      if (runner.claim(req).outcome != claim_outcome::won) ::_exit(4);
      if (::write(ready[1], "W", 1) != 1) ::_exit(5);
      code = 2;
      for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(100ms);
        if (!runner.heartbeat(req.run, "a1", 600ms)) {
          code = runner.finish(req.run, "a1", run_status::success) ? 1 : 0;
          break;
        }
      }
    } catch (...) {
      code = 6;
    }
    ::_exit(code);
  }
  ::close(ready[1]);  // a child that exits before winning must end the read below, not hang it
  char c = 0;
  if (::read(ready[0], &c, 1) != 1) {
    int status = 0;
    ::waitpid(child, &status, 0);
    FAIL("the runner process did not win its claim (exit status " << WEXITSTATUS(status) << ")");
  }
  std::this_thread::sleep_for(250ms);
  REQUIRE(::kill(child, SIGSTOP) == 0);
  std::this_thread::sleep_for(900ms);  // past its 600 ms lease
  lease::redis_options o = options_for(srv.url());
  o.prefix = prefix;
  lease::redis_store backup{o};
  auto taken = backup.claim(request("frozen", slot, "b7", claim_reason::takeover));
  REQUIRE(::kill(child, SIGCONT) == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(taken.outcome == claim_outcome::won);
  CHECK(taken.record.attempt == 2);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the resumed runner was refused, heartbeat and finish
  auto rec = backup.get({"frozen", slot});
  REQUIRE(rec);
  CHECK(rec->token == "b7");
  CHECK(rec->status == run_status::running);
  CHECK(backup.heartbeat({"frozen", slot}, "b7", 30s));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("at maxmemory writes fail as unavailable and reads still answer") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(2'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  const run_key run{"j", at(2'000'000)};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  srv.command({"CONFIG", "SET", "maxmemory", "1"});
  std::error_code err;
  try {
    (void)store.claim(request("j", at(2'010'000), "t2"));
  } catch (const lease::store_error& e) {
    err = e.code();
  }
  CHECK(err == lease::errc::unavailable);
  CHECK(err == lease::make_error_code(lease::redis_errc::oom));
  CHECK(error_of([&] { (void)store.heartbeat(run, "t1", 30s); }) == lease::redis_errc::oom);
  CHECK(store.get(run)->token == "t1");  // no-writes scripts run at maxmemory
  CHECK(store.unfinished("j").size() == 1);
  srv.command({"CONFIG", "SET", "maxmemory", "0"});
  CHECK(store.heartbeat(run, "t1", 30s));
  CHECK_FALSE(store.get({"j", at(2'010'000)}));  // the refused claim left nothing behind
}

TEST_CASE("a server turned read-only replica refuses writes as unavailable and serves reads") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(3'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  const run_key run{"j", at(3'000'000)};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  const int nowhere = lease::testing::free_loopback_port();
  srv.command({"REPLICAOF", "127.0.0.1", std::to_string(nowhere)});
  auto err = error_of([&] { (void)store.heartbeat(run, "t1", 30s); });
  CHECK(err == lease::errc::unavailable);
  CHECK(err == lease::redis_errc::readonly);
  CHECK(store.get(run)->token == "t1");
  srv.command({"REPLICAOF", "NO", "ONE"});
  CHECK(store.heartbeat(run, "t1", 30s));
}

TEST_CASE("a flushed script cache is reloaded transparently") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(4'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  const run_key run{"j", at(4'000'000)};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  srv.command({"SCRIPT", "FLUSH"});
  CHECK(store.heartbeat(run, "t1", 30s));
  srv.command({"SCRIPT", "FLUSH"});
  std::vector<lease::heartbeat_request> batch{{run, "t1", 30s}, {run, "nope", 30s}};
  CHECK(store.heartbeat_many(batch) == std::vector<bool>{true, false});
  srv.command({"SCRIPT", "FLUSH"});
  CHECK(store.claim(request("j", run.slot, "t2")).outcome == claim_outcome::running);
}

TEST_CASE("a server loading its dataset answers unavailable until it is loaded") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(5'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  const run_key run{"j", at(5'000'000)};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  srv.command({"DEBUG", "POPULATE", "2000"});
  REQUIRE(srv.command({"SAVE"})->type == REDIS_REPLY_STATUS);
  // 1 ms per key: about 2 s of loading after the restart, answering clients
  // (with LOADING) every kB instead of every 2 MB.
  srv.restart({"--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024"},
              /*wait_ready=*/false);
  bool saw_loading = false;
  const bool renewed = until_available([&] {
    try {
      return store.heartbeat(run, "t1", 30s);
    } catch (const lease::store_error& e) {
      if (e.code() == lease::redis_errc::loading) saw_loading = true;
      throw;
    }
  });
  CHECK(saw_loading);
  CHECK(renewed);  // the run was in the snapshot
}

TEST_CASE("a command that outlives command_timeout fails as unavailable and the store recovers") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(6'000'000)};
  auto o = options_for(srv.url(), clock);
  o.command_timeout = 200ms;
  lease::redis_store store{o};
  const run_key run{"j", at(6'000'000)};
  REQUIRE(store.claim(request("j", run.slot, "t1")).outcome == claim_outcome::won);
  std::jthread sleeper([&] { srv.command({"DEBUG", "SLEEP", "0.6"}); });  // joined on every way out
  // The call must reach a server already asleep: wait until a PING of
  // another connection goes unanswered (the sleep has begun).
  REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
  auto err = error_of([&] { (void)store.heartbeat(run, "t1", 30s); });
  sleeper.join();
  CHECK(err == lease::errc::unavailable);
  CHECK(err == lease::redis_errc::timeout);
  CHECK(until_available([&] { return store.heartbeat(run, "t1", 30s); }));
}

TEST_CASE("a claim whose reply is lost and cannot be read back is outcome_unknown and may have been applied") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(7'000'000)};
  auto o = options_for(srv.url(), clock);
  o.command_timeout = 150ms;
  lease::redis_store store{o};
  REQUIRE_FALSE(store.get({"j", at(7'000'000)}));  // connected
  std::jthread sleeper([&] { srv.command({"DEBUG", "SLEEP", "0.8"}); });
  // The call must reach a server already asleep: wait until a PING of
  // another connection goes unanswered (the sleep has begun).
  REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
  auto err = error_of([&] { (void)store.claim(request("j", at(7'000'000), "t1")); });
  sleeper.join();
  CHECK(err == lease::errc::outcome_unknown);
  // One prefix, however many errors the message quotes.
  try {
    (void)store.get({"j", at(7'000'000)});
  } catch (const lease::store_error&) {
  }
  {
    std::jthread again([&] { srv.command({"DEBUG", "SLEEP", "0.5"}); });
    REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
    std::string what;
    try {
      (void)store.claim(request("j", at(7'000'001), "t2"));
    } catch (const lease::store_error& e) {
      what = e.what();
    }
    again.join();
    CAPTURE(what);
    CHECK(what.find("lease::redis_store:") == 0);
    CHECK(what.find("lease::redis_store:", 1) == std::string::npos);
  }
  // It was applied once the server woke: reading back shows our token.
  auto rec = until_available([&] { return store.get({"j", at(7'000'000)}); });
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK(rec->fence == 7'000'000);
}

TEST_CASE("a claim that timed out on a stalled server is resolved as won whichever copy ran first") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(7'500'000)};
  auto o = options_for(srv.url(), clock);
  o.command_timeout = 300ms;
  lease::redis_store store{o};
  REQUIRE_FALSE(store.get({"j", at(7'500'000)}));  // connected
  std::jthread sleeper([&] { srv.command({"DEBUG", "SLEEP", "0.45"}); });
  // The call must reach a server already asleep: wait until a PING of
  // another connection goes unanswered (the sleep has begun).
  REQUIRE(lease::testing::wait_for([&] { return srv.busy(); }, 5s));
  // Sent within the sleep's first ~25 ms, the claim times out at ~325 ms; the
  // read back, sent then, is answered after the server wakes at ~450 ms,
  // before or after the first copy runs. Either way the claim is ours, and
  // it ran once.
  auto res = store.claim(request("j", at(7'500'000), "t1"));
  sleeper.join();
  CHECK(res.outcome == claim_outcome::won);
  CHECK(res.record.token == "t1");
  CHECK(res.record.attempt == 1);
  CHECK(res.record.fence == 7'500'000);
}

TEST_CASE("a claim whose reply was lost is resolved by reading the run back, not by winning twice") {
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  lease::fake_clock clock{at(8'000'000)};
  lease::redis_store store{options_for(proxy.url(), clock)};
  const run_key run{"j", at(8'000'000)};
  REQUIRE_FALSE(store.get(run));  // connected through the proxy

  proxy.lose_next_reply();
  auto res = store.claim(request("j", run.slot, "t1"));
  CHECK(proxy.cuts() == 1);
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.record.token == "t1");
  CHECK(res.record.attempt == 1);
  CHECK(res.record.fence == 8'000'000);  // applied once: the fence moved once
  CHECK(res.store_now == at(8'000'000));

  proxy.lose_next_reply();  // a lost finish is resolved the same way
  CHECK(store.finish(run, "t1", run_status::success));
  CHECK(proxy.cuts() == 2);
  CHECK(store.get(run)->status == run_status::success);

  // A claim that lost: read back shows another token, so the store asks again
  // and the rules answer (finished), without touching the run.
  proxy.lose_next_reply();
  auto lost = store.claim(request("j", run.slot, "t9"));
  CHECK(lost.outcome == claim_outcome::finished);
  CHECK(lost.record.token == "t1");
}

TEST_CASE("a manual claim whose reply was lost after it answered its trigger with a refusal is left unknown, not none") {
  // The lost copy found the job paused: answered `paused`, trigger cleared.
  // Resent at once it would be answered `none`, and the scheduler would drop
  // the trigger without an event; unknown, it is resent after a backoff and
  // a `none` then is explained (scheduler claim_answered).
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  lease::fake_clock clock{at(8'000'000)};
  lease::redis_store store{options_for(proxy.url(), clock)};
  REQUIRE(store.pause("j"));
  const lease::time_point slot = store.trigger("j");

  proxy.lose_next_reply();
  try {
    (void)store.claim(request("j", slot, "m1", claim_reason::manual));
    FAIL("a manual claim whose reply was lost and whose run is not there was answered");
  } catch (const lease::store_error& e) {
    CHECK(e.code() == lease::errc::outcome_unknown);
  }
  CHECK(proxy.cuts() == 1);
  CHECK(store.triggers(std::vector<std::string>{"j"}).empty());  // the lost copy answered it
  CHECK(store.claim(request("j", slot, "m1", claim_reason::manual)).outcome == claim_outcome::none);
}

TEST_CASE("a claim held up in the network and delivered after it was resolved changes nothing") {
  lease::testing::redis_server srv;
  lease::testing::loopback_proxy proxy{srv.port()};
  lease::fake_clock clock{at(8'500'000)};
  lease::redis_store store{options_for(proxy.url(), clock)};
  const run_key run{"j", at(8'500'000)};
  REQUIRE_FALSE(store.get(run));  // connected through the proxy

  proxy.delay_next_request(300ms);
  // The connection drops with the claim unsent: reading back finds no state,
  // so the store sends it again, and wins.
  auto res = store.claim(request("j", run.slot, "t1"));
  REQUIRE(res.outcome == claim_outcome::won);
  CHECK(res.record.fence == 8'500'000);
  std::this_thread::sleep_for(500ms);  // the held copy arrives now
  REQUIRE(proxy.cuts() == 1);
  auto rec = store.get(run);
  REQUIRE(rec);
  CHECK(rec->token == "t1");
  CHECK(rec->attempt == 1);
  CHECK(rec->fence == 8'500'000);  // the late copy found the run live: nothing moved
}

TEST_CASE("ACL users and passwords and a database number in the url are used") {
  lease::testing::redis_server srv;
  srv.command({"ACL", "SETUSER", "alice", "on", ">s3cr:t@", "~*", "+@all"});
  lease::fake_clock clock{at(9'000'000)};
  lease::redis_store alice{options_for("redis://alice:s3cr%3At%40@127.0.0.1:" + std::to_string(srv.port()) + "/3", clock)};
  auto o = alice.options();
  REQUIRE(alice.claim(request("j", at(9'000'000), "t1")).outcome == claim_outcome::won);
  CHECK(srv.command({"DBSIZE"})->integer == 0);  // db 0 is untouched: SELECT 3 was used
  o.url = "redis://127.0.0.1:" + std::to_string(srv.port()) + "/3";
  lease::redis_store same_db{o};
  CHECK(same_db.get({"j", at(9'000'000)})->token == "t1");

  lease::redis_store wrong{options_for("redis://alice:nope@127.0.0.1:" + std::to_string(srv.port()), clock)};
  CHECK(error_of([&] { (void)wrong.get({"j", at(0)}); }) == lease::errc::invalid_argument);
}

TEST_CASE("a malformed url never shows its password in the error") {
  for (std::string url : {"redis://alice:hunter2@h:99999", "redis://alice:hunter2@h:0", "redis://alice:hunter2@h:1/x",
                          "redis://alice:hunter2%zz@h", "redis://alice:hun%2ter2@h", "redis://alice:hun/ter2@h:port",
                          "redis://alice:hun@ter2@[::1", "http://alice:hunter2@h", "redis://hunter2@:6379",
                          "redis://alice:hunter2@h:1/99999999"}) {
    CAPTURE(url);
    std::string what;
    try {
      lease::redis_store s{options_for(url)};
    } catch (const lease::store_error& e) {
      CHECK(e.code() == lease::errc::invalid_argument);
      what = e.what();
    }
    CAPTURE(what);
    REQUIRE_FALSE(what.empty());
    CHECK(what.find("hunter2") == std::string::npos);
    CHECK(what.find("hun") == std::string::npos);
    CHECK(what.find("ter2") == std::string::npos);
    CHECK(what.find("***@") != std::string::npos);
    CHECK(what.find("lease::redis_store:", 1) == std::string::npos);
  }
  CHECK(lease::detail::redis::redact_url("redis://u:p@ss/w@host:1/2") == "redis://***@host:1/2");
  CHECK(lease::detail::redis::redact_url("redis://h\n\x01:1") == "redis://h\\n\\x01:1");
}

TEST_CASE("a raw slash or at sign in a password is read as the user meant") {
  lease::testing::redis_server srv;
  srv.command({"ACL", "SETUSER", "bob", "on", ">pa/ss@word", "~*", "+@all"});
  lease::redis_store bob{options_for("redis://bob:pa/ss@word@127.0.0.1:" + std::to_string(srv.port()) + "/2",
                                     lease::fake_clock{at(9'500'000)})};
  CHECK(bob.claim(request("j", at(9'500'000), "t1")).outcome == claim_outcome::won);
  CHECK(srv.command({"DBSIZE"})->integer == 0);  // in db 2
}

TEST_CASE("a wrong database number or refused credentials are invalid_argument with a sentence, never corrupt") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(9'600'000)};
  auto what_of = [](lease::redis_store& s) {
    try {
      (void)s.get({"j", at(0)});
    } catch (const lease::store_error& e) {
      CHECK(e.code() == lease::errc::invalid_argument);
      return std::string(e.what());
    }
    FAIL("expected a store_error");
    return std::string();
  };
  const std::string port = std::to_string(srv.port());
  lease::redis_store no_db{options_for("redis://127.0.0.1:" + port + "/99", clock)};
  std::string what = what_of(no_db);
  CHECK(what.find("refused SELECT 99: use a database number below the server's `databases` setting") !=
        std::string::npos);
  CHECK(error_of([&] { (void)no_db.get({"j", at(0)}); }) == lease::redis_errc::backing_off);  // not hammered

  lease::redis_store needless{options_for("redis://:topsecret@127.0.0.1:" + port, clock)};
  what = what_of(needless);
  CHECK(what.find("has no password set, but the url gives one") != std::string::npos);
  CHECK(what.find("topsecret") == std::string::npos);

  srv.command({"ACL", "SETUSER", "carol", "on", ">right", "~*", "+@all"});
  lease::redis_store wrong{options_for("redis://carol:topsecret@127.0.0.1:" + port, clock)};
  what = what_of(wrong);
  CHECK(what.find("refused the url's user or password") != std::string::npos);
  CHECK(what.find("topsecret") == std::string::npos);

  srv.command({"CONFIG", "SET", "requirepass", "needed"});
  lease::redis_store none{options_for("redis://127.0.0.1:" + port, clock)};
  CHECK(what_of(none).find("needs credentials: put them in the url") != std::string::npos);
}

TEST_CASE("bad urls and prefixes are invalid_argument at construction") {
  for (std::string url : {"http://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h:1/x", "redis://u:%zz@h"}) {
    CAPTURE(url);
    CHECK(error_of([&] { lease::redis_store s{options_for(url)}; }) == lease::errc::invalid_argument);
  }
  auto o = options_for("redis://127.0.0.1");
  o.prefix = "a{b";
  CHECK(error_of([&] { lease::redis_store s{o}; }) == lease::errc::invalid_argument);
}

TEST_CASE("foreign data under the store's keys is corrupt, not a crash or a win") {
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(10'000'000)};
  auto o = options_for(srv.url(), clock);
  lease::redis_store store{o};
  auto keys = lease::detail::redis::keys_for(o.prefix, "j");
  srv.command({"SET", keys.runs, "not a hash"});
  CHECK(error_of([&] { (void)store.claim(request("j", at(10'000'000), "t1")); }) == lease::errc::corrupt);
  srv.command({"DEL", keys.runs});
  {  // the server's message quotes the key, job name bytes and all: printable in what()
    auto odd = lease::detail::redis::keys_for(o.prefix, std::string("j\n\x01\xff", 4));
    srv.command({"HSET", odd.runs, "10000000", "garbage"});
    std::string what;
    try {
      (void)store.get({std::string("j\n\x01\xff", 4), at(10'000'000)});
    } catch (const lease::store_error& e) {
      CHECK(e.code() == lease::errc::corrupt);
      what = e.what();
    }
    CAPTURE(what);
    CHECK(what.find(":4:j \\x01\\xff}") != std::string::npos);  // redis turns the newline into a space
    CHECK(std::none_of(what.begin(), what.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  }
  srv.command({"HSET", keys.runs, "10000000", "garbage"});
  CHECK(error_of([&] { (void)store.get({"j", at(10'000'000)}); }) == lease::errc::corrupt);
  CHECK(error_of([&] { (void)store.heartbeat({"j", at(10'000'000)}, "t1", 1s); }) == lease::errc::corrupt);
  CHECK(error_of([&] { (void)store.claim(request("j", at(10'000'000), "t1")); }) == lease::errc::corrupt);
}

TEST_CASE("a connection the server dropped mid-write is a store_error, never a SIGPIPE") {
  // The default SIGPIPE action would end this process: make sure it is in force.
  struct sigaction dfl {}, old{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  REQUIRE(::sigaction(SIGPIPE, &dfl, &old) == 0);
  lease::testing::redis_server srv;
  lease::fake_clock clock{at(11'000'000)};
  lease::redis_store store{options_for(srv.url(), clock)};
  std::vector<lease::heartbeat_request> batch;
  for (int i = 0; i < 20'000; ++i) batch.push_back({{"job-" + std::to_string(i), at(11'000'000)}, "t", 30s});
  CHECK(store.heartbeat_many(batch).size() == batch.size());  // connected: all refused, no state
  srv.command({"CLIENT", "KILL", "TYPE", "normal"});
  // Megabytes to write into a closed connection: the first write gets a
  // reset, the next one EPIPE (and SIGPIPE, which the store blocks).
  auto err = error_of([&] { (void)store.heartbeat_many(batch); });
  CHECK(err == lease::errc::unavailable);
  CHECK(store.heartbeat_many(batch).size() == batch.size());  // reconnected
  ::sigaction(SIGPIPE, &old, nullptr);
}
