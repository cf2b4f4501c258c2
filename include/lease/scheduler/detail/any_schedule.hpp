// lease/scheduler/detail/any_schedule.hpp — a type-erased Schedule, one per job.
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <type_traits>

#include "lease/schedule/concept.hpp"
#include "lease/schedule/cron/dst.hpp"

namespace lease::detail {

/// Holds any Schedule by value behind one virtual call (cron and every differ
/// per job, and a scheduler holds many jobs).
class any_schedule {
 public:
  // Not for any_schedule itself: checking Schedule<any_schedule> would ask
  // whether it is copyable, which asks this constructor again (clang recurses).
  template <class S>
    requires(!std::is_same_v<S, any_schedule> && Schedule<S>)
  explicit any_schedule(S s)
      : text_(text_of(s)), registered_(registered_text(s)), zone_(zone_of(s)), impl_(std::make_shared<model<S>>(std::move(s))) {}

  [[nodiscard]] time_point next(time_point t) const { return impl_->next(t); }
  [[nodiscard]] time_point latest(time_point t) const { return impl_->latest(t); }
  /// The schedule as registered, for scheduler::jobs().
  [[nodiscard]] const std::string& text() const noexcept { return text_; }
  /// The schedule as a RegistryStore records it (job_registration::schedule):
  /// a cron's expression as written (and its DST policy when it is not the
  /// default: "30 2 * * * (DST: gap skip)"), an every's text() ("every
  /// 30s"), a user's schedule's text() if it has one, else "custom
  /// schedule". schedule/parse.hpp reads an every's and a cron's back.
  [[nodiscard]] const std::string& registered() const noexcept { return registered_; }
  /// Its time zone (job_registration::zone): a cron's zone name, a
  /// schedule's zone() if it has one, else "".
  [[nodiscard]] const std::string& zone() const noexcept { return zone_; }

 private:
  /// cron: its expression and zone; every (and any other schedule): its
  /// own text(), if it has one.
  template <class S>
  static std::string text_of(const S& s) {
    if constexpr (requires {
                    { s.text() } -> std::convertible_to<std::string>;
                  })
      return std::string(s.text());
    else if constexpr (requires {
                         { s.expression() } -> std::convertible_to<std::string>;
                         { s.zone() } -> std::convertible_to<std::string>;
                       })
      return "cron \"" + std::string(s.expression()) + "\" " + std::string(s.zone());
    else if constexpr (requires { s.interval().count(); })
      return "every " + std::to_string(s.interval().count()) + " ms";
    else
      return "custom schedule";
  }

  template <class S>
  static std::string registered_text(const S& s) {
    if constexpr (requires {
                    { s.expression() } -> std::convertible_to<std::string>;
                  }) {
      std::string out(s.expression());
      if constexpr (requires {
                      { s.dst() } -> std::convertible_to<dst_policy>;
                    })
        out += registered_dst(s.dst());
      return out;
    } else if constexpr (requires {
                         { s.text() } -> std::convertible_to<std::string>;
                       })
      return std::string(s.text());
    else
      return "custom schedule";
  }
  template <class S>
  static std::string zone_of(const S& s) {
    if constexpr (requires {
                    { s.zone() } -> std::convertible_to<std::string>;
                  })
      return std::string(s.zone());
    else
      return {};
  }

  struct base {
    virtual ~base() = default;
    [[nodiscard]] virtual time_point next(time_point t) const = 0;
    [[nodiscard]] virtual time_point latest(time_point t) const = 0;
  };
  template <class S>
  struct model final : base {
    explicit model(S x) : s(std::move(x)) {}
    [[nodiscard]] time_point next(time_point t) const override { return s.next(t); }
    [[nodiscard]] time_point latest(time_point t) const override { return s.latest(t); }
    S s;
  };
  std::string text_;
  std::string registered_;
  std::string zone_;
  std::shared_ptr<const base> impl_;
};

}  // namespace lease::detail
