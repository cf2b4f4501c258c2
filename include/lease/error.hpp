// lease/error.hpp — errors a store operation can raise, sorted by what the caller should do.
//
// Losing a race is never an error (it is a claim_outcome). A store_error means
// the store could not complete an operation; its code compares equal to one
// `lease::errc` condition, which says what to do next. The backend's own code
// (SQLite extended result code, SQLSTATE, hiredis error) stays in the
// error_code's category so nothing is lost for the log.
#pragma once

#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace lease {

/// What the caller should do about a failed store operation.
enum class errc {
  /// The store can't be reached or is busy: retry with backoff.
  unavailable = 1,
  /// The request may or may not have been applied (e.g. the connection dropped
  /// after a claim was sent). Never retry blindly: read the run back and
  /// compare its token with the one you sent.
  outcome_unknown,
  /// Stored data is not what this library wrote (foreign schema, bad value):
  /// an operator must look; retrying won't help.
  corrupt,
  /// The call itself is wrong (bad name, bad option): fix the caller.
  invalid_argument,
};

namespace detail {
class errc_category_impl final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "lease"; }
  [[nodiscard]] std::string message(int c) const override {
    switch (static_cast<errc>(c)) {
      case errc::unavailable: return "store unavailable (retry with backoff)";
      case errc::outcome_unknown:
        return "outcome unknown (read the run back before retrying)";
      case errc::corrupt: return "stored data not understood";
      case errc::invalid_argument: return "invalid argument";
    }
    return "unknown lease error";
  }
};
}  // namespace detail

/// The category of `lease::errc` conditions.
[[nodiscard]] inline const std::error_category& errc_category() noexcept {
  static const detail::errc_category_impl instance;
  return instance;
}

[[nodiscard]] inline std::error_condition make_error_condition(errc e) noexcept {
  return {static_cast<int>(e), errc_category()};
}
[[nodiscard]] inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), errc_category()};
}

/// Thrown by a store operation that could not complete. `code()` compares
/// equal to one `lease::errc` (e.g. `e.code() == lease::errc::unavailable`).
/// Backends throw it with their own category whose default_error_condition
/// maps each native code onto an errc.
class store_error : public std::system_error {
 public:
  using std::system_error::system_error;
};

/// Thrown by a batch call whose elements failed only in part: on a Redis
/// Cluster one master down while the others answered, or renewals short of
/// their replicas beside refusals, which need none. `answers()[i]` is
/// element i's answer, or nullopt where it failed as `code()` says. A
/// caller that catches store_error alone loses only the answers, as if the
/// whole batch had failed; the scheduler applies them, so one master down
/// does not stop the renewals of runs on the others.
template <class Answer>
class partial_batch_error : public store_error {
 public:
  partial_batch_error(std::error_code code, const std::string& what, std::vector<std::optional<Answer>> answers)
      : store_error(code, what), answers_(std::move(answers)) {}
  [[nodiscard]] const std::vector<std::optional<Answer>>& answers() const noexcept { return answers_; }

 private:
  std::vector<std::optional<Answer>> answers_;
};

/// The end of a batch call that may fail in part: with no `failed`, the
/// answers (every element then has one); else `failed` thrown, as it is
/// when no element was answered (the whole batch failed, as one call
/// would), or as a partial_batch_error carrying the answers there are.
template <class Answer>
std::vector<Answer> answers_or_throw(std::vector<std::optional<Answer>> answers,
                                     const std::optional<store_error>& failed) {
  if (failed) {
    bool answered = false;
    for (const auto& a : answers) answered = answered || a.has_value();
    if (!answered) throw *failed;
    throw partial_batch_error<Answer>(failed->code(), failed->what(), std::move(answers));
  }
  std::vector<Answer> out;
  out.reserve(answers.size());
  for (auto& a : answers) out.push_back(std::move(*a));
  return out;
}

}  // namespace lease

template <>
struct std::is_error_condition_enum<lease::errc> : std::true_type {};
