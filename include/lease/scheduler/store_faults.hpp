// lease/scheduler/store_faults.hpp — one instance's store faults as episodes:
// one event when a fault starts, a summary while it lasts, one when it ends.
//
// Why: a store that is down fails every call of every pending claim, every
// heartbeat tick and every finish retry. One event per failed call buried
// the one sentence an operator needs (30,000 events in 8 s with 200 jobs and
// a full disk). The slots that do not run still get one event each, saying
// why (late: the store did not answer before the deadline).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lease/error.hpp"
#include "lease/scheduler/detail/format.hpp"
#include "lease/time.hpp"

namespace lease::detail {

/// What the caller of a store should do about `e`, in words.
inline std::string advice(const store_error& e) {
  if (e.code() == errc::unavailable) return "the store is unreachable or busy";
  if (e.code() == errc::outcome_unknown) return "the outcome is unknown";
  if (e.code() == errc::corrupt) return "stored data is not understood: an operator must look";
  if (e.code() == errc::invalid_argument) return "the store rejected the call as invalid: check its settings";
  return "unexpected store failure";
}

class store_faults {
 public:
  /// How often a fault that lasts is summarised.
  static constexpr duration summary_every{10'000};

  /// A store call `op` failed with `e` at `now`. Returns the sentence to
  /// emit now (the fault's start, or a periodic summary), or nothing.
  std::optional<std::string> failed(std::string_view op, const store_error& e, steady_point now) {
    last_ = std::string(op) + ": " + e.what() + " — " + advice(e);
    ++total_;
    ++since_summary_[std::string(op)];
    if (!since_) {
      since_ = now;
      summarised_ = now;
      since_summary_.clear();
      return "store fault began: " + last_ + ". Calls are retried with backoff; while the fault lasts, one summary every " +
             fmt(summary_every) + " replaces an event per failed call";
    }
    if (now - summarised_ < summary_every) return std::nullopt;
    std::string text = "store fault continues (" + fmt(now - *since_) + " so far): in the last " +
                       fmt(now - summarised_) + ", " + counts() + " failed; the latest: " + last_;
    summarised_ = now;
    since_summary_.clear();
    return text;
  }

  /// A store call succeeded at `now`. Returns the sentence that ends a fault, if one was going on.
  std::optional<std::string> succeeded(steady_point now) {
    if (!since_) return std::nullopt;
    std::string text = "store fault ended: the store answers again after " + fmt(now - *since_) + " and " +
                       std::to_string(total_) + " failed call(s)";
    since_.reset();
    total_ = 0;
    since_summary_.clear();
    return text;
  }

  [[nodiscard]] bool ongoing() const noexcept { return since_.has_value(); }

 private:
  std::string counts() const {
    std::string out;
    for (const auto& [op, n] : since_summary_) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + op;
    return out.empty() ? "no call" : out;
  }

  std::optional<steady_point> since_;
  steady_point summarised_{};
  std::uint64_t total_ = 0;
  std::map<std::string, std::uint64_t> since_summary_;
  std::string last_;
};

}  // namespace lease::detail
