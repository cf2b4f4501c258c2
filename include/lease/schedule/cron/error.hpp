// lease/schedule/cron/error.hpp — lease::cron_error, thrown when a cron
// expression or its time zone is not valid.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace lease {

/// An invalid cron expression, an expression that can never fire, or an
/// unknown time zone — always thrown by the lease::cron constructor, never
/// later. Fix the expression; retrying cannot help.
///
/// what() reads "minute: 61 is outside 0-59 (column 3)": the field, the
/// offending text, why, and where (1-based column in the expression). The
/// same parts are available separately for tools that underline the error.
class cron_error : public std::invalid_argument {
 public:
  cron_error(std::string field, std::string text, std::string reason, std::size_t column)
      : std::invalid_argument(compose(field, text, reason, column)),
        field_(std::move(field)),
        text_(std::move(text)),
        reason_(std::move(reason)),
        column_(column) {}

  /// "second", "minute", "hour", "day of month", "month", "day of week",
  /// "expression" (its shape as a whole) or "time zone".
  [[nodiscard]] const std::string& field() const noexcept { return field_; }
  /// The offending text, e.g. "61" (may be empty, e.g. for an empty list item).
  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  /// Why it is wrong, e.g. "is outside 0-59".
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// 1-based column of text in the expression; 0 when the error is not about
  /// a place in the expression (an unknown time zone).
  [[nodiscard]] std::size_t column() const noexcept { return column_; }

 private:
  static std::string compose(const std::string& field, const std::string& text, const std::string& reason,
                             std::size_t column) {
    std::string m = field + ": ";
    if (!text.empty()) m += text + " ";
    m += reason;
    if (column != 0) m += " (column " + std::to_string(column) + ")";
    return m;
  }

  std::string field_;
  std::string text_;
  std::string reason_;
  std::size_t column_;
};

}  // namespace lease
