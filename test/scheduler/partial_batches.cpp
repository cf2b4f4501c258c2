// Scenario tests for a fault of lease::sim: a heartbeat batch answered in
// part (cluster::answer_heartbeats_in_part), as a Redis Cluster answers it
// with one master down: the runs on the other masters keep their leases, a
// refusal among the answers stops its runner at once, and an unanswered
// renewal, applied by the store or not, never counts as renewed. Likewise
// a claim batch answered in part (cluster::answer_claims_in_part): the
// answered claims start at once, and an unanswered one, applied by the
// store or not, starts once, on its resend's answer. And a batch of
// finishes answered in part (cluster::answer_finishes_in_part): the
// answered ones end their attempts at once, an unanswered one is read back
// or retried, and its master down does not hold up the other jobs.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "lease/schedule/every.hpp"
#include "lease/sim.hpp"

using namespace std::chrono_literals;
using lease::duration;
using lease::event_kind;
using lease::sim::store_op;

namespace {

/// n0 alone wins the 1 h + 1 min slot of jobs "a" and "b" (each runs 20 s
/// and honours its stop at once), so that its heartbeats renew both in one
/// batch; then n1 starts and becomes their backup.
struct two_runs {
  lease::sim::cluster<> sim;
  explicit two_runs(std::uint64_t seed) : sim(seed, [] {
    lease::options o;
    o.lease = 3s;  // heartbeat 500 ms, safety margin 300 ms
    o.catch_up = 0ms;
    o.claim_jitter = 0ms;
    o.max_attempts = 3;
    return o;
  }(), lease::time_point{} + 1h + 1ms) {  // 1 ms after slot 1 h: a slot due at start() runs, and these runs are the next slot's
    for (const char* job : {"a", "b"})
      sim.add_job(job, lease::every(60s), [](const lease::run_context&) {
        return lease::sim::script{.runs_for = 20s, .honours_stop = 0ms};
      });
    sim.add_instance("n0");
    sim.add_instance("n1");
    sim.start(0);
    sim.run_for(60s + 100ms);  // both slots won by n0
    sim.start(1);
    sim.run_for(50ms);
  }
  /// The heartbeats the store received at `at`, in batch order.
  [[nodiscard]] std::vector<store_op> heartbeats_at(lease::time_point at) const {
    std::vector<store_op> out;
    for (const auto& op : sim.recorded().ops)
      if (op.op == store_op::kind::heartbeat && op.at == at) out.push_back(op);
    return out;
  }
  /// The handler runs of `job`, in start order.
  [[nodiscard]] std::vector<lease::sim::handler_run> runs_of(const std::string& job) const {
    std::vector<lease::sim::handler_run> out;
    for (const auto& r : sim.recorded().handlers)
      if (r.run.job == job) out.push_back(r);
    return out;
  }
  /// The store time of the batch answered in part.
  [[nodiscard]] lease::time_point partial_at() const {
    for (const auto& [at, what] : sim.recorded().faults)
      if (what.rfind("heartbeat batch answered in part", 0) == 0) return at;
    FAIL("no batch was answered in part");
    return {};
  }
  [[nodiscard]] bool told(event_kind k, const std::string& instance, const std::string& job) const {
    for (const auto& e : sim.recorded().events)
      if (e.kind == k && e.instance == instance && e.run.job == job) return true;
    return false;
  }
};

// Two bits an element (world::partial_heartbeats): 0 answered, 2 applied
// with its reply lost, 3 never received. Element 0 is job a's renewal (its
// attempt began first), element 1 job b's: checked in each test.
constexpr std::uint64_t b_never_received = 3U << 2;
constexpr std::uint64_t b_reply_lost = 2U << 2;
/// The batches of 500 ms to 2.5 s after the claim: b's master down until
/// its runner's self-abort deadline (lease − margin, 2.7 s), and up again
/// for whoever takes b over.
constexpr int master_down = 5;

}  // namespace

TEST_CASE("a heartbeat batch answered in part keeps the answered run, and the other is taken over") {
  two_runs t(1);
  REQUIRE(t.runs_of("a").size() == 1);
  REQUIRE(t.runs_of("b").size() == 1);
  REQUIRE(t.runs_of("b").front().instance == "n0");
  t.sim.answer_heartbeats_in_part(0, master_down, b_never_received);
  t.sim.run_for(20s);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_heartbeat_batches() == 5);
  CHECK(t.sim.unanswered_renewals(false) == 5);
  const auto at = t.partial_at();
  const auto hbs = t.heartbeats_at(at);
  REQUIRE(hbs.size() == 1);  // b's renewal never reached the store
  CHECK(hbs.front().run.job == "a");
  CHECK(hbs.front().accepted);
  // a's runner counted its answers: it ran its 20 s, never taken over.
  const auto a = t.runs_of("a");
  REQUIRE(a.size() == 1);
  CHECK(a.front().ended == "returned");
  CHECK_FALSE(t.told(event_kind::lost, "n0", "a"));
  // b's runner counted nothing: it stopped at its self-abort deadline (its
  // claim's send + lease − margin), and n1 took b over once the lease the
  // store had from the claim ended.
  CHECK(t.told(event_kind::lost, "n0", "b"));
  const auto b = t.runs_of("b");
  REQUIRE(b.size() == 2);
  CHECK(b[0].observed_stop);
  CHECK(b[0].active_until < b[0].start + 3s);
  CHECK(b[1].instance == "n1");
  CHECK(b[1].attempt == 2);
  CHECK(b[1].start >= b[0].start + 3s);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a renewal applied with its reply lost in a partial batch does not count") {
  two_runs t(2);
  REQUIRE(t.runs_of("b").size() == 1);
  t.sim.answer_heartbeats_in_part(0, master_down, b_reply_lost);
  t.sim.run_for(20s);
  INFO(t.sim.describe());
  CHECK(t.sim.unanswered_renewals(true) == 5);
  const auto at = t.partial_at();
  const auto hbs = t.heartbeats_at(at);
  REQUIRE(hbs.size() == 2);  // both applied; b's answer lost
  CHECK(hbs[0].run.job == "a");
  CHECK(hbs[1].run.job == "b");
  CHECK(hbs[1].accepted);
  // The store extended b's lease with each renewal it applied; the last
  // one's end is the one that counts.
  const auto b = t.runs_of("b");
  REQUIRE(b.size() == 2);
  std::optional<lease::time_point> store_end;
  for (const auto& op : t.sim.recorded().ops)
    if (op.op == store_op::kind::heartbeat && op.token == b[0].token && op.accepted && op.after)
      store_end = op.after->lease_end;
  REQUIRE(store_end);
  CHECK(*store_end > b[0].start + 5s);
  // b's runner stops at its deadline (its claim's send + lease − margin),
  // long before the lease the store extended ends; the backup waits for
  // that end.
  CHECK(t.told(event_kind::lost, "n0", "b"));
  CHECK_FALSE(t.told(event_kind::lost, "n0", "a"));
  CHECK(b[0].active_until < b[0].start + 3s);
  CHECK(b[1].start >= *store_end);
  CHECK(t.runs_of("a").size() == 1);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a refusal answered in a partial batch stops its runner at once") {
  two_runs t(3);
  REQUIRE(t.runs_of("a").size() == 1);
  // An operator stops job a (its run handed over, its next renewal
  // refused); the batch answers a's refusal, and b's renewal is lost.
  REQUIRE(t.sim.stop_job("a") == 1);
  t.sim.answer_heartbeats_in_part(0, 1, b_never_received);
  t.sim.run_for(1s);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_refusals() == 1);
  const auto at = t.partial_at();
  const auto hbs = t.heartbeats_at(at);
  REQUIRE(hbs.size() == 1);
  CHECK(hbs.front().run.job == "a");
  CHECK_FALSE(hbs.front().accepted);
  // Stopped in the loop turn that had the answer: the handler saw its stop then.
  CHECK(t.told(event_kind::stopped, "n0", "a"));
  const auto a = t.runs_of("a");
  REQUIRE(a.size() == 1);
  CHECK(a.front().observed_stop);
  REQUIRE(a.front().end);
  CHECK(*a.front().end == at);
  // b's renewal, lost once, is answered at the next tick, within its
  // lease: b's runner keeps its run.
  t.sim.run_for(20s);
  CHECK_FALSE(t.told(event_kind::lost, "n0", "b"));
  const auto b = t.runs_of("b");
  REQUIRE(b.size() == 1);
  CHECK(b.front().ended == "returned");
  CHECK(t.sim.violations().empty());
}

namespace {

/// Which batches of n0 three_jobs answers in part.
enum class in_part { claims, finishes };

/// n0 alone, three jobs a, b, c due at the same instant (1 h + 1 min), each
/// running 5 s: their claims go in one batch, and their finishes in
/// another. After the start's slot (1 h) has run and ended, the first
/// `batches` claim or finish batches are answered in part by `pattern`
/// (two bits an element, as above; a, b, c in order, checked in each test).
struct three_jobs {
  lease::sim::cluster<> sim;
  static constexpr lease::time_point slot = lease::time_point{} + 1h + 1min;
  three_jobs(std::uint64_t seed, in_part which, int batches, std::uint64_t pattern) : sim(seed, [] {
    lease::options o;
    o.lease = 3s;
    o.catch_up = 0ms;
    o.claim_jitter = 0ms;
    return o;
  }(), lease::time_point{} + 1h + 1ms) {
    for (const char* job : {"a", "b", "c"})
      sim.add_job(job, lease::every(60s), [](const lease::run_context&) {
        return lease::sim::script{.runs_for = 5s, .honours_stop = 0ms};
      });
    sim.add_instance("n0");
    sim.start(0);
    sim.run_for(30s);  // the start's slot (1 h) run and ended
    if (which == in_part::claims) sim.answer_claims_in_part(0, batches, pattern);
    else sim.answer_finishes_in_part(0, batches, pattern);
    sim.run_for(30s + 20s);
  }
  /// The store operations of `kind` it received for `of`, in order.
  [[nodiscard]] std::vector<store_op> ops(store_op::kind kind, lease::time_point of = slot) const {
    std::vector<store_op> out;
    for (const auto& op : sim.recorded().ops)
      if (op.op == kind && op.run.slot == of) out.push_back(op);
    return out;
  }
  [[nodiscard]] std::vector<store_op> claims() const { return ops(store_op::kind::claim); }
  [[nodiscard]] std::vector<store_op> finishes(lease::time_point of = slot) const {
    return ops(store_op::kind::finish, of);
  }
  /// The handler runs of slot 1 h + 1 min of `job`.
  [[nodiscard]] std::vector<lease::sim::handler_run> runs_of(const std::string& job) const {
    std::vector<lease::sim::handler_run> out;
    for (const auto& r : sim.recorded().handlers)
      if (r.run.job == job && r.run.slot == slot) out.push_back(r);
    return out;
  }
  /// When n0 said `job`'s run of `of` succeeded, if it did.
  [[nodiscard]] std::optional<lease::time_point> success_of(const std::string& job, lease::time_point of = slot) const {
    for (const auto& e : sim.recorded().events)
      if (e.kind == event_kind::success && e.run.job == job && e.run.slot == of) return e.at;
    return std::nullopt;
  }
};

// The batch's elements in order: a, b, c (checked in each test).
constexpr std::uint64_t second_never_received = 3U << 2;
constexpr std::uint64_t second_reply_lost = 2U << 2;

}  // namespace

TEST_CASE("a claim batch answered in part starts the answered claims at once and resends only the other") {
  three_jobs t(4, in_part::claims, 1, second_never_received);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_claim_batches() == 1);
  CHECK(t.sim.unanswered_claims(false) == 1);
  const auto claims = t.claims();
  REQUIRE(claims.size() == 3);  // a and c in the batch, then b resent alone
  CHECK(claims[0].run.job == "a");
  CHECK(claims[1].run.job == "c");
  CHECK(claims[0].batch == claims[1].batch);
  CHECK(claims[2].run.job == "b");
  CHECK(claims[2].batch == 0);
  CHECK(claims[2].at > claims[0].at);
  // a and c started at the batch's instant: their answers were acted on,
  // not thrown away with b's failure.
  for (const char* job : {"a", "c"}) {
    const auto runs = t.runs_of(job);
    REQUIRE(runs.size() == 1);
    CHECK(runs.front().start == claims[0].at);
    CHECK(runs.front().attempt == 1);
  }
  // b ran once, from its resend.
  const auto b = t.runs_of("b");
  REQUIRE(b.size() == 1);
  CHECK(b.front().start == claims[2].at);
  CHECK(b.front().token == claims[2].token);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a claim applied with its reply lost in a partial batch starts once, on its resend's answer") {
  three_jobs t(5, in_part::claims, 1, second_reply_lost);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_claim_batches() == 1);
  CHECK(t.sim.unanswered_claims(true) == 1);
  const auto claims = t.claims();
  REQUIRE(claims.size() == 4);  // a, b and c in the batch, then b resent alone
  CHECK(claims[1].run.job == "b");
  CHECK(claims[1].outcome == lease::claim_outcome::won);
  CHECK(claims[3].run.job == "b");
  CHECK(claims[3].token == claims[1].token);  // resent with its token: the store knows it as its own
  CHECK(claims[3].outcome == lease::claim_outcome::running);
  for (const char* job : {"a", "c"}) {
    const auto runs = t.runs_of(job);
    REQUIRE(runs.size() == 1);
    CHECK(runs.front().start == claims[0].at);
  }
  const auto b = t.runs_of("b");
  REQUIRE(b.size() == 1);
  CHECK(b.front().start == claims[3].at);
  CHECK(b.front().attempt == 1);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a master down for many claim batches does not hold up the other jobs' slots") {
  // Every claim batch of n0 for the next two minutes leaves b unanswered:
  // a and c run each minute on time. (What becomes of b is the model's:
  // it answers a claim sent alone whole, as it does one renewal, where a
  // real cluster would fail it with its master. The checks of
  // violations() hold either way: every slot of b says why.)
  three_jobs t(6, in_part::claims, 1000, second_never_received);
  t.sim.run_for(2min);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_claim_batches() >= 3);
  for (const char* job : {"a", "c"}) {
    std::size_t on_time = 0;
    for (const auto& r : t.sim.recorded().handlers)
      if (r.run.job == job && r.run.slot >= three_jobs::slot) on_time += r.start == r.run.slot ? 1 : 0;
    CHECK(on_time == 3);  // slots 1 h + 1, 2 and 3 min
  }
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a finish batch answered in part ends the answered runs at once and retries only the other") {
  three_jobs t(7, in_part::finishes, 1, second_never_received);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_finish_batches() == 1);
  CHECK(t.sim.unanswered_ends(false) == 1);
  const auto finishes = t.finishes();
  REQUIRE(finishes.size() == 3);  // a and c in the batch, then b read back, found running, and sent again
  CHECK(finishes[0].run.job == "a");
  CHECK(finishes[1].run.job == "c");
  CHECK(finishes[0].batch == finishes[1].batch);
  CHECK(finishes[2].run.job == "b");
  CHECK(finishes[2].at > finishes[0].at);
  for (const auto& f : finishes) CHECK(f.accepted);
  // a and c succeeded at the batch's instant: their answers were acted on,
  // not retried with b's.
  for (const char* job : {"a", "c"}) {
    REQUIRE(t.success_of(job));
    CHECK(*t.success_of(job) == finishes[0].at);
  }
  REQUIRE(t.success_of("b"));
  CHECK(*t.success_of("b") == finishes[2].at);
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a finish applied with its reply lost in a partial batch is read back, not sent again") {
  three_jobs t(8, in_part::finishes, 1, second_reply_lost);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_finish_batches() == 1);
  CHECK(t.sim.unanswered_ends(true) == 1);
  const auto finishes = t.finishes();
  REQUIRE(finishes.size() == 3);  // one each: b's applied copy is the only one
  for (const auto& f : finishes) CHECK(f.accepted);
  CHECK(finishes[1].run.job == "b");
  // Its outcome read back in the same loop turn: a success, told at once.
  for (const char* job : {"a", "b", "c"}) {
    REQUIRE(t.success_of(job));
    CHECK(*t.success_of(job) == finishes[0].at);
  }
  CHECK(t.sim.violations().empty());
}

TEST_CASE("a master down for many finish batches does not delay the other jobs' ends") {
  // Every finish batch of n0 for the next three minutes leaves b
  // unanswered: a and c are recorded as success the instant their handlers
  // return, each minute, not after a retry. (b's finish, retried alone, is
  // answered whole by the model, where a real cluster would fail it with
  // its master.)
  three_jobs t(9, in_part::finishes, 1000, second_never_received);
  t.sim.run_for(2min);
  INFO(t.sim.describe());
  CHECK(t.sim.partial_finish_batches() >= 3);
  for (const char* job : {"a", "c"})
    for (const lease::time_point of : {three_jobs::slot, three_jobs::slot + 1min, three_jobs::slot + 2min}) {
      INFO(job << " at slot " << of.time_since_epoch().count() << " ms");
      REQUIRE(t.success_of(job, of));
      CHECK(*t.success_of(job, of) == of + 5s);  // started on time, ran 5 s, recorded at once
    }
  // b's ends, read back (outcome unknown) and found not applied, were sent
  // again: each of its runs is recorded too, later.
  for (const lease::time_point of : {three_jobs::slot, three_jobs::slot + 1min, three_jobs::slot + 2min}) {
    INFO("b at slot " << of.time_since_epoch().count() << " ms");
    REQUIRE(t.success_of("b", of));
    CHECK(*t.success_of("b", of) > of + 5s);
  }
  CHECK(t.sim.violations().empty());
}
