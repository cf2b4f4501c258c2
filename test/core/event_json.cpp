// lease::json_lines_sink: every line is strict JSON with every key, and each
// key says what the event says — checked by parsing real scenarios' output.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>

#include "core/strict_json.hpp"
#include "lease/event/json.hpp"
#include "scheduler/harness.hpp"

using namespace test;
using lease::event;
using lease::event_kind;

namespace {

const std::vector<std::string> keys = {"at",     "at_ms",  "instance", "kind",       "job",
                                       "slot",   "slot_ms", "attempt", "fence",      "runner",
                                       "handler_ms", "takeover_latency_ms", "claim_round_trip_ms",
                                       "skipped_slots", "message"};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    REQUIRE(nl != std::string::npos);  // every line ends with a newline
    out.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return out;
}

void check_ms(const json::value& v, std::optional<duration> d) {
  if (!d) {
    CHECK(v.is_null());
  } else {
    REQUIRE(v.is_number());
    CHECK(v.integer() == d->count());
  }
}

/// One parsed line against the event it was written from.
void check_line(const std::string& line, const event& e) {
  INFO(line);
  const json::value parsed = json::parse(line);  // throws on anything not strict JSON
  REQUIRE(parsed.is_object());
  const json::object& o = parsed.obj();
  CHECK(o.size() == keys.size());
  for (const auto& k : keys) REQUIRE(o.count(k) == 1);
  const std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  CHECK(std::regex_match(o.at("at").str(), rfc3339));
  CHECK(o.at("at").str() == lease::detail::fmt(e.at));
  CHECK(o.at("at_ms").integer() == e.at.time_since_epoch().count());
  CHECK(o.at("instance").str() == e.instance);
  CHECK(o.at("kind").str() == lease::to_string(e.kind));
  if (e.run.job.empty()) {
    CHECK(o.at("job").is_null());
    CHECK(o.at("slot").is_null());
    CHECK(o.at("slot_ms").is_null());
  } else {
    CHECK(o.at("job").str() == e.run.job);
    CHECK(std::regex_match(o.at("slot").str(), rfc3339));
    CHECK(o.at("slot_ms").integer() == e.run.slot.time_since_epoch().count());
  }
  if (e.attempt == 0) CHECK(o.at("attempt").is_null());
  else CHECK(o.at("attempt").integer() == e.attempt);
  if (e.fence == 0) CHECK(o.at("fence").is_null());
  else CHECK(static_cast<std::uint64_t>(o.at("fence").integer()) == e.fence);
  if (e.runner.empty()) CHECK(o.at("runner").is_null());
  else CHECK(o.at("runner").str() == e.runner);
  check_ms(o.at("handler_ms"), e.handler_duration);
  check_ms(o.at("takeover_latency_ms"), e.takeover_latency);
  check_ms(o.at("claim_round_trip_ms"), e.claim_round_trip);
  if (!e.skipped_slots) CHECK(o.at("skipped_slots").is_null());
  else CHECK(o.at("skipped_slots").integer() == static_cast<std::int64_t>(*e.skipped_slots));
  CHECK(o.at("message").str() == e.message);  // messages of real events are valid UTF-8: kept as they are
}

}  // namespace

TEST_CASE("the JSON lines of a takeover, a loss and a failure parse strictly and say what the events say") {
  // A job name with a quote, a backslash and non-ASCII text: escaped, not broken.
  const std::string job = "report \"daily\" \\ café ☕";
  cluster c{at(1s)};
  std::ostringstream out;
  auto& a = c.add(spec_options("runner", 1), job);
  auto& b = c.add(spec_options("backup", 2), job);
  a.s->on_event(lease::json_lines_sink(out));
  b.s->on_event(lease::json_lines_sink(out));
  a.s->start();
  b.s->start();
  c.run_until(at(75s));
  a.down = true;  // dies after its 75 s heartbeat: backup takes over
  c.run_until(at(125s));
  a.down = false;  // wakes up: lost
  c.poll_all();
  b.behaviour = ends::throws;
  c.finish_handlers(b);  // attempt 2 fails

  std::vector<event> all;  // in emission order: the two instances are polled in turn
  const std::vector<std::string> lines = lines_of(out.str());
  // Each node's lines are in its own order; match them up per instance.
  std::size_t ia = 0, ib = 0;
  for (const std::string& line : lines) {
    const std::string who = json::parse(line).obj().at("instance").str();
    const event& e = who == "runner" ? a.events.at(ia++) : b.events.at(ib++);
    check_line(line, e);
    all.push_back(e);
  }
  CHECK(ia == a.events.size());
  CHECK(ib == b.events.size());
  // The scenario produced the kinds whose fields matter most.
  for (event_kind k : {event_kind::won, event_kind::backup, event_kind::takeover, event_kind::lost, event_kind::failed})
    CHECK(std::count_if(all.begin(), all.end(), [k](const event& e) { return e.kind == k; }) == 1);
  const auto takeover = *std::find_if(all.begin(), all.end(), [](const event& e) { return e.kind == event_kind::takeover; });
  REQUIRE(takeover.takeover_latency);  // so the line checked above had a number, not null
}

TEST_CASE("a message that is not UTF-8 or holds control characters is escaped into valid JSON") {
  event e;
  e.kind = event_kind::failed;
  e.run = {"job", at(60s)};
  e.attempt = 1;
  e.fence = 1'795'932'003'052ULL;
  e.instance = "api-1";
  e.at = at(61s) + 7ms;
  e.message = std::string("the handler threw (\"quoted\"\n\ttab \x01 bell\x7f bad:\xff\xc0\xaf é ☕ \xed\xa0\x80 \xf4\x90\x80\x80 end") +
              '\0' + "after-nul)";
  e.runner = "api-1";
  e.handler_duration = 1'500ms;
  const std::string line = lease::to_json(e);
  CHECK(line.find('\n') == std::string::npos);  // one line
  const json::object o = json::parse(line).obj();
  CHECK(o.at("message").str() ==
        std::string("the handler threw (\"quoted\"\n\ttab \x01 bell\x7f bad:\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD é ☕ "
                    "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end") +
            '\0' + "after-nul)");
  CHECK(o.at("at").str() == "1970-01-01T00:01:01.007Z");
  CHECK(o.at("at_ms").integer() == 61'007);
  CHECK(o.at("slot").str() == "1970-01-01T00:01:00.000Z");
  CHECK(o.at("fence").integer() == 1'795'932'003'052LL);
  CHECK(o.at("handler_ms").integer() == 1500);
  CHECK(o.at("takeover_latency_ms").is_null());
  CHECK(line.find("\\u0001") != std::string::npos);
  CHECK(line.find("\\u0000") != std::string::npos);
}

TEST_CASE("an event about the store as a whole has null job, slot, attempt and fence") {
  event e;
  e.kind = event_kind::store_notice;
  e.instance = "api-1";
  e.at = time_point{} + 1'795'932'003'052ms;
  e.message = "the store lost its state";
  const json::object o = json::parse(lease::to_json(e)).obj();
  CHECK(o.at("at").str() == "2026-11-29T06:00:03.052Z");
  for (const char* k : {"job", "slot", "slot_ms", "attempt", "fence", "runner", "handler_ms", "skipped_slots"})
    CHECK(o.at(k).is_null());
}

TEST_CASE("the strict parser used here rejects what is not JSON") {
  for (const char* bad : {"{\"a\":1,}", "{\"a\":01}", "{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\\ud800\"}",
                          "{\"a\":1}{", "{\"a\":1,\"a\":2}", "{'a':1}", "{\"a\":NaN}", "{\"a\":\"\xc0\xaf\"}"}) {
    INFO(bad);
    CHECK_THROWS(json::parse(bad));
  }
  CHECK(json::parse("{\"a\":[1,-2.5e3,true,null,\"\\u00e9\\ud83d\\ude00\"]}").is_object());
}
