// leasectl/output.hpp — what `jobs` and `runs` print: an aligned table for a
// person, or one JSON document (--json) for a script.
//
// Times are the store's, UTC with milliseconds ("2026-11-29T06:00:00.140Z",
// as events print them); in JSON each time also comes as `<name>_ms`, ms
// since the Unix epoch, as lease::to_json does for events. A running run
// whose lease ended is shown "expired": the store has not marked it, but no
// instance holds it (doc/protocol.md §1). NEXT SLOT is computed here, from
// the schedule text the instances registered (next_of() below): no store
// keeps it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <lease/detail/printable.hpp>
#include <lease/event/json.hpp>
#include <lease/run.hpp>
#include <lease/schedule/parse.hpp>
#include <lease/scheduler/detail/format.hpp>
#include <lease/store/inspect.hpp>

namespace leasectl {

/// A job or runner name as a table cell or in a sentence: one line, every
/// byte shown (a name holding a newline or an escape sequence must not
/// forge a row or repaint the terminal).
[[nodiscard]] inline std::string cell(std::string_view name) { return lease::detail::printable(name, 200); }

/// Rows of cells under a header, columns padded to their widest cell, two spaces apart.
[[nodiscard]] inline std::string table(const std::vector<std::string>& header,
                                       const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      l += cells[c];
      if (c + 1 < cells.size()) l.append(width[c] - cells[c].size() + 2, ' ');
    }
    out += l;
    out += '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

/// "running", "expired" (running, lease ended at `now`), "success", "failed", "interrupted".
[[nodiscard]] inline std::string status_word(const lease::run_record& r, lease::time_point now) {
  if (r.status == lease::run_status::running && !r.live(now)) return "expired";
  return std::string(lease::to_string(r.status));
}

/// "3 s", "2 min", "5 h", "4 d": how long ago, for a person.
[[nodiscard]] inline std::string ago(lease::duration d) {
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(d).count();
  if (s < 120) return std::to_string(s < 0 ? 0 : s) + " s";
  if (s < 2 * 3600) return std::to_string(s / 60) + " min";
  if (s < 2 * 86400) return std::to_string(s / 3600) + " h";
  return std::to_string(s / 86400) + " d";
}

/// The newest registration of a job (RegistryStore), if any.
[[nodiscard]] inline const lease::job_registration* newest(const lease::stored_job& j) {
  const lease::job_registration* n = nullptr;
  for (const auto& r : j.instances)
    if (n == nullptr || r.last_seen > n->last_seen) n = &r;
  return n;
}

/// A registration not renewed for this long is of an instance that no
/// longer has the job (or is down): twice the longest register_every that
/// options::validated() accepts (1 day), so an instance that has the job
/// renews it well within that. It counts for nothing in NEXT SLOT.
inline constexpr lease::duration current_registration{2 * 86'400'000};

/// A job's next slot, as NEXT SLOT and next_slot show it.
struct next_slot {
  /// The first slot strictly after the store's now, of the schedule every
  /// current registration has; nullopt when there is none to tell (see `why`).
  std::optional<lease::time_point> at;
  /// Why there is no slot, when there is none.
  enum class none : std::uint8_t {
    no,            ///< there is one
    unregistered,  ///< no current registration: never registered here, or every instance that had it stopped renewing it
    unreadable,    ///< a user's schedule, a cron or zone this host cannot read, or no slot left
    disagree,      ///< current registrations with different schedules (or DST policies) or zones: each instance claims the slots of its own
  } why = none::no;
};

/// The next slot after `now`, the store's clock: the clock every time in the
/// table is read on and claims are judged by (leasectl's own clock may be a
/// laptop's). Slots themselves depend on the schedule alone (schedule/
/// concept.hpp, L4), so no instance's clock is needed. It is the next slot
/// whether or not the job is paused (jobs_table says "paused" instead).
[[nodiscard]] inline next_slot next_of(const lease::stored_job& j, lease::time_point now) {
  const lease::job_registration* first = nullptr;
  for (const auto& r : j.instances) {
    if (now - r.last_seen > current_registration) continue;
    if (first == nullptr) first = &r;
    else if (r.schedule != first->schedule || r.zone != first->zone) return {std::nullopt, next_slot::none::disagree};
  }
  if (first == nullptr) return {std::nullopt, next_slot::none::unregistered};
  const auto s = lease::parse_registered(first->schedule, first->zone);
  if (!s) return {std::nullopt, next_slot::none::unreadable};
  const lease::time_point at = lease::next_slot(*s, now);
  if (at == lease::time_point::max()) return {std::nullopt, next_slot::none::unreadable};
  return {at, next_slot::none::no};
}

/// NEXT SLOT's cell: the time; "paused" for a paused job (no slot of it runs
/// until a resume, whatever its schedule says); "instances disagree"; "-"
/// when there is nothing to tell (no current registration, or a schedule
/// leasectl cannot read: a user's schedule).
[[nodiscard]] inline std::string next_cell(const lease::stored_job& j, lease::time_point now) {
  if (j.paused) return "paused";
  const next_slot n = next_of(j, now);
  if (n.at) return lease::detail::fmt(*n.at);
  return n.why == next_slot::none::disagree ? "instances disagree" : "-";
}

/// SCHEDULE: as the instance that registered the job last has it ("0 6 * *
/// * Europe/Paris"); NEXT SLOT: next_cell(); INSTANCES: how many registered
/// it, and the newest one's last registration ("2, api-1 3 s ago"). FENCE is
/// in --json.
[[nodiscard]] inline std::string jobs_table(const std::vector<lease::stored_job>& jobs, lease::time_point now) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    const auto& r = j.last_run;
    const lease::job_registration* reg = newest(j);
    rows.push_back({cell(j.name),
                    reg ? cell(reg->schedule + (reg->zone.empty() ? "" : " " + reg->zone)) : "-", next_cell(j, now),
                    j.paused ? "yes" : "no", j.trigger ? lease::detail::fmt(*j.trigger) : "-",
                    r ? lease::detail::fmt(r->slot) : "-", r ? status_word(*r, now) : "-",
                    r && !r->runner.empty() ? cell(r->runner) : "-", r ? std::to_string(r->attempt) : "-",
                    reg ? std::to_string(j.instances.size()) + ", " + cell(reg->instance) + " " + ago(now - reg->last_seen) +
                              " ago"
                        : "-"});
  }
  return table({"NAME", "SCHEDULE", "NEXT SLOT", "PAUSED", "TRIGGERED", "LAST SLOT", "LAST STATUS", "RUNNER", "ATTEMPT",
                "INSTANCES"},
               rows);
}

[[nodiscard]] inline std::string runs_table(const std::vector<lease::run_record>& runs, lease::time_point now) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : runs)
    rows.push_back({lease::detail::fmt(r.slot), r.manual ? "manual" : "schedule", status_word(r, now), std::to_string(r.attempt),
                    std::to_string(r.handovers), r.runner.empty() ? "-" : cell(r.runner), std::to_string(r.fence),
                    lease::detail::fmt(r.lease_end), r.released ? "yes" : "no"});
  return table({"SLOT", "BY", "STATUS", "ATTEMPT", "HANDOVERS", "RUNNER", "FENCE", "LEASE END", "RELEASED"}, rows);
}

namespace detail {

/// Builds one JSON object, keys in the order they are added.
class json_object {
 public:
  json_object& text(std::string_view k, std::string_view v) {
    key(k);
    lease::detail::append_json_string(out_, v);
    return *this;
  }
  json_object& number(std::string_view k, std::uint64_t v) {
    key(k);
    out_ += std::to_string(v);
    return *this;
  }
  json_object& boolean(std::string_view k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
    return *this;
  }
  /// "k": ISO string and "k_ms": ms since the epoch.
  json_object& time(std::string_view k, lease::time_point t) {
    text(k, lease::detail::fmt(t));
    return number(std::string(k) + "_ms", static_cast<std::uint64_t>(t.time_since_epoch().count()));
  }
  json_object& raw(std::string_view k, std::string_view json) {
    key(k);
    out_ += json;
    return *this;
  }
  [[nodiscard]] std::string str() const { return out_.empty() ? "{}" : out_ + "}"; }

 private:
  void key(std::string_view k) {
    out_ += out_.empty() ? "{\"" : ",\"";
    out_ += k;
    out_ += "\":";
  }
  std::string out_;
};

[[nodiscard]] inline std::string array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ",\n " : "\n ") + items[i];
  out += items.empty() ? "]\n" : "\n]\n";
  return out;
}

}  // namespace detail

/// One run: job, slot, manual (an operator's trigger, not the schedule),
/// status ("expired" as in the table), attempt, handovers, runner, fence,
/// lease_end, released.
[[nodiscard]] inline std::string run_json(const lease::run_record& r, lease::time_point now) {
  return detail::json_object{}
      .text("job", r.job)
      .time("slot", r.slot)
      .boolean("manual", r.manual)
      .text("status", status_word(r, now))
      .number("attempt", r.attempt)
      .number("handovers", r.handovers)
      .text("runner", r.runner)
      .number("fence", r.fence)
      .time("lease_end", r.lease_end)
      .boolean("released", r.released)
      .str();
}

[[nodiscard]] inline std::string jobs_json(const std::vector<lease::stored_job>& jobs, lease::time_point now) {
  std::vector<std::string> items;
  for (const auto& j : jobs) {
    detail::json_object o;
    o.text("name", j.name).boolean("paused", j.paused);
    // A pending trigger: the slot of the manual run it asks for.
    if (j.trigger)
      o.time("trigger", *j.trigger);
    else
      o.raw("trigger", "null");
    // The schedule's next slot, paused or not ("paused" says whether it runs);
    // null when next_of() has none (no current registration, a schedule
    // leasectl cannot read, instances that disagree).
    if (const next_slot n = next_of(j, now); n.at)
      o.time("next_slot", *n.at);
    else
      o.raw("next_slot", "null");
    std::vector<std::string> regs;
    for (const auto& r : j.instances)
      regs.push_back(detail::json_object{}
                         .text("instance", r.instance)
                         .text("schedule", r.schedule)
                         .text("zone", r.zone)
                         .time("last_seen", r.last_seen)
                         .str());
    std::string instances = "[";
    for (std::size_t i = 0; i < regs.size(); ++i) instances += (i ? "," : "") + regs[i];
    instances += "]";
    items.push_back(o.number("fence", j.fence)
                        .raw("last_run", j.last_run ? run_json(*j.last_run, now) : "null")
                        .raw("instances", instances)
                        .str());
  }
  return detail::array(items);
}

[[nodiscard]] inline std::string runs_json(const std::vector<lease::run_record>& runs, lease::time_point now) {
  std::vector<std::string> items;
  for (const auto& r : runs) items.push_back(run_json(r, now));
  return detail::array(items);
}

}  // namespace leasectl
