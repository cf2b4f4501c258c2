// lease/event/json.hpp — lease::to_json and lease::json_lines_sink: events as
// JSON lines, one object per event, for a log pipeline.
//
// Every line has every key, in this order, so a pipeline can rely on the
// schema; a field that does not apply or is not known is `null`:
//
//   {"at":"2026-11-29T06:00:03.052Z","at_ms":1795932003052,"instance":"api-1",
//    "kind":"takeover","job":"report","slot":"2026-11-29T06:00:00.000Z",
//    "slot_ms":1795932000000,"attempt":2,"fence":1795932003052,"runner":"api-1",
//    "handler_ms":null,"takeover_latency_ms":52,"claim_round_trip_ms":1,
//    "skipped_slots":null,"message":"takeover claim won: …"}
//
// Times are RFC 3339 UTC with milliseconds, and milliseconds since the Unix
// epoch beside them (`at` is the emitting instance's wall clock). Durations
// are whole milliseconds. Strings are valid UTF-8 whatever the message holds
// (a handler's exception text may hold anything): a byte that does not begin
// a valid UTF-8 character becomes U+FFFD, control characters are escaped.
// The meaning of each field is on lease::event (lease/event.hpp); keys are
// only ever added.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "lease/event.hpp"
#include "lease/scheduler/detail/format.hpp"

namespace lease {

namespace detail {

/// Appends `s` as a JSON string literal (quotes included).
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  // Length of the valid UTF-8 character at i (Unicode table 3-7), 0 if none.
  const auto valid_length = [&](std::size_t i) -> std::size_t {
    const unsigned char b = byte(i);
    const auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
      return i + k < s.size() && byte(i + k) >= lo && byte(i + k) <= hi;
    };
    if (b >= 0xC2 && b <= 0xDF) return cont(1) ? 2 : 0;
    if (b == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (b == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
    if (b == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (b >= 0xF1 && b <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (b == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char b = byte(i);
    if (b < 0x80) {
      switch (b) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (b < 0x20) {
            out += "\\u00";
            out += hex[b >> 4];
            out += hex[b & 0xF];
          } else {
            out += static_cast<char>(b);
          }
      }
      ++i;
      continue;
    }
    if (const std::size_t n = valid_length(i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";  // not UTF-8: replaced, one byte at a time
      ++i;
    }
  }
  out += '"';
}

inline void append_json_ms(std::string& out, std::optional<duration> d) {
  out += d ? std::to_string(d->count()) : "null";
}

}  // namespace detail

/// `e` as one JSON object on one line (no newline at the end); the schema is
/// in this header's banner.
[[nodiscard]] inline std::string to_json(const event& e) {
  std::string out;
  out.reserve(320 + e.message.size());
  const auto key = [&](std::string_view k) {
    out += out.empty() ? "{\"" : ",\"";
    out += k;
    out += "\":";
  };
  const auto text_or_null = [&](std::string_view s) {
    if (s.empty())
      out += "null";
    else
      detail::append_json_string(out, s);
  };
  const bool has_run = !e.run.job.empty();
  key("at");
  detail::append_json_string(out, detail::fmt(e.at));
  key("at_ms");
  out += std::to_string(e.at.time_since_epoch().count());
  key("instance");
  detail::append_json_string(out, e.instance);
  key("kind");
  detail::append_json_string(out, to_string(e.kind));
  key("job");
  text_or_null(e.run.job);
  key("slot");
  if (has_run)
    detail::append_json_string(out, detail::fmt(e.run.slot));
  else
    out += "null";
  key("slot_ms");
  out += has_run ? std::to_string(e.run.slot.time_since_epoch().count()) : "null";
  key("attempt");
  out += e.attempt ? std::to_string(e.attempt) : "null";
  key("fence");
  out += e.fence ? std::to_string(e.fence) : "null";
  key("runner");
  text_or_null(e.runner);
  key("handler_ms");
  detail::append_json_ms(out, e.handler_duration);
  key("takeover_latency_ms");
  detail::append_json_ms(out, e.takeover_latency);
  key("claim_round_trip_ms");
  detail::append_json_ms(out, e.claim_round_trip);
  key("skipped_slots");
  out += e.skipped_slots ? std::to_string(*e.skipped_slots) : "null";
  key("message");
  detail::append_json_string(out, e.message);
  out += '}';
  return out;
}

/// An event sink that writes each event as one JSON line to `out` and flushes
/// it, so a line is complete in the log even if the process dies next:
///
///     scheduler.on_event(lease::json_lines_sink(std::clog));
///
/// `out` must outlive every scheduler the sink is given to. Copies share one
/// lock, so one sink (or its copies) may serve several schedulers writing to
/// one stream: lines never interleave. A stream error is left in the stream's
/// state (the scheduler swallows sink exceptions anyway).
class json_lines_sink {
 public:
  explicit json_lines_sink(std::ostream& out) : out_(&out), lock_(std::make_shared<std::mutex>()) {}

  void operator()(const event& e) const {
    std::string line = to_json(e);
    line += '\n';
    std::scoped_lock hold(*lock_);
    out_->write(line.data(), static_cast<std::streamsize>(line.size()));
    out_->flush();
  }

 private:
  std::ostream* out_;
  std::shared_ptr<std::mutex> lock_;
};

}  // namespace lease
