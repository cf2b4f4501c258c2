// lease/make_scheduler.hpp — lease::make_scheduler, a scheduler from named
// arguments in any order, with defaults for the ones left out:
//
//   auto s = lease::make_scheduler(lease::store    = lease::memory_store<>{},
//                                  lease::executor = lease::thread_pool{4},
//                                  lease::overlap  = lease::skip,
//                                  lease::settings = lease::options{.lease = 30s});
//
// Keywords and defaults:
//   lease::store     a lease::Store            memory_store<Clock> on the clock below
//                                              (one process only)
//   lease::clock     a lease::Clock            lease::system_clock
//   lease::executor  a lease::Executor         lease::thread_pool (hardware threads)
//   lease::overlap   a lease::OverlapPolicy    lease::skip
//   lease::settings  a lease::options          lease::options{}
//
// An argument that is not one of these keywords, a keyword given twice, or a
// value that does not model its keyword's concept stops compilation with a
// static_assert naming the keyword and the concept. After yandex/ozo's
// Boost.Hana named options.
#pragma once

#include <type_traits>
#include <utility>

#include <boost/hana/at_key.hpp>
#include <boost/hana/contains.hpp>
#include <boost/hana/map.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/type.hpp>

#include "lease/clock/concept.hpp"
#include "lease/clock/system.hpp"
#include "lease/executor/concept.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/options.hpp"
#include "lease/overlap/concept.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/scheduler.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/memory.hpp"

namespace lease {

namespace detail {

/// `keyword = value` makes one of these: the value, tagged with its keyword.
template <class Tag, class V>
struct named_arg {
  using tag = Tag;
  V value;
};

/// A keyword object; `lease::store = x` is `keyword<store_tag>::operator=(x)`.
template <class Tag>
struct keyword {
  template <class V>
  constexpr named_arg<Tag, std::decay_t<V>> operator=(V&& v) const {  // NOLINT: a keyword, not assignment
    return {std::forward<V>(v)};
  }
};

struct store_tag {};
struct clock_tag {};
struct executor_tag {};
struct overlap_tag {};
struct settings_tag {};

template <class T>
inline constexpr bool is_named_arg = false;
template <class Tag, class V>
inline constexpr bool is_named_arg<named_arg<Tag, V>> = true;

template <class T>
inline constexpr bool is_known_keyword =
    std::is_same_v<typename T::tag, store_tag> || std::is_same_v<typename T::tag, clock_tag> ||
    std::is_same_v<typename T::tag, executor_tag> || std::is_same_v<typename T::tag, overlap_tag> ||
    std::is_same_v<typename T::tag, settings_tag>;

template <class Tag, class... Args>
inline constexpr int count_keyword = (0 + ... + (std::is_same_v<typename Args::tag, Tag> ? 1 : 0));

/// The value given for `Tag`, or `make()` when it was left out (built only then).
template <class Tag, class Map, class Make>
auto value_or(Map& map, Make make) {
  if constexpr (decltype(boost::hana::contains(map, boost::hana::type_c<Tag>))::value)
    return std::move(map[boost::hana::type_c<Tag>]);
  else
    return make();
}

template <class>
inline constexpr bool always_false = false;

}  // namespace detail

/// The store the scheduler coordinates through (a lease::Store).
inline constexpr detail::keyword<detail::store_tag> store{};
/// The instance's wall clock (a lease::Clock).
inline constexpr detail::keyword<detail::clock_tag> clock{};
/// Where handlers run (a lease::Executor).
inline constexpr detail::keyword<detail::executor_tag> executor{};
/// What a new slot does while an earlier run is alive (a lease::OverlapPolicy).
inline constexpr detail::keyword<detail::overlap_tag> overlap{};
/// The instance's lease::options. Not called `lease::options`: that name is
/// already the struct's, and `lease::options = lease::options{…}` could not
/// be both a type and a keyword.
inline constexpr detail::keyword<detail::settings_tag> settings{};

/// Builds a lease::scheduler from named arguments in any order (see the top
/// of this header for keywords and defaults). The result is returned as a
/// prvalue: `auto s = lease::make_scheduler(...);` (a scheduler is not movable).
/// Throws what the scheduler's constructor throws (std::invalid_argument for
/// bad options).
template <class... Args>
auto make_scheduler(Args&&... args) {
  static_assert((detail::is_named_arg<std::decay_t<Args>> && ...),
                "lease::make_scheduler takes named arguments only, e.g. lease::store = ..., lease::clock = ..., "
                "lease::executor = ..., lease::overlap = ..., lease::settings = ...");
  if constexpr ((detail::is_named_arg<std::decay_t<Args>> && ...)) {
    static_assert((detail::is_known_keyword<std::decay_t<Args>> && ...),
                  "lease::make_scheduler: unknown keyword; the keywords are lease::store, lease::clock, "
                  "lease::executor, lease::overlap and lease::settings");
    static_assert(detail::count_keyword<detail::store_tag, std::decay_t<Args>...> <= 1 &&
                      detail::count_keyword<detail::clock_tag, std::decay_t<Args>...> <= 1 &&
                      detail::count_keyword<detail::executor_tag, std::decay_t<Args>...> <= 1 &&
                      detail::count_keyword<detail::overlap_tag, std::decay_t<Args>...> <= 1 &&
                      detail::count_keyword<detail::settings_tag, std::decay_t<Args>...> <= 1,
                  "lease::make_scheduler: a keyword is given twice");
    namespace hana = boost::hana;
    auto map = hana::make_map(
        hana::make_pair(hana::type_c<typename std::decay_t<Args>::tag>, std::forward<Args>(args).value)...);

    auto clk = detail::value_or<detail::clock_tag>(map, [] { return system_clock{}; });
    using C = decltype(clk);
    static_assert(Clock<C>, "lease::make_scheduler: the value given to lease::clock does not model lease::Clock "
                            "(a copyable type with `time_point now() const`)");
    auto sto = detail::value_or<detail::store_tag>(map, [&] {
      if constexpr (Clock<C>) return memory_store<C>{clk};
      else return 0;
    });
    using S = decltype(sto);
    static_assert(Store<S>, "lease::make_scheduler: the value given to lease::store does not model lease::Store "
                            "(claim, heartbeat, finish, release, unfinished, get and now; see lease/store/concept.hpp)");
    auto exe = detail::value_or<detail::executor_tag>(map, [] { return thread_pool{}; });
    using E = decltype(exe);
    static_assert(Executor<E>, "lease::make_scheduler: the value given to lease::executor does not model "
                               "lease::Executor (a movable type with `execute(lease::task)`)");
    auto ovl = detail::value_or<detail::overlap_tag>(map, [] { return skip_t{}; });
    using P = decltype(ovl);
    static_assert(OverlapPolicy<P>, "lease::make_scheduler: the value given to lease::overlap does not model "
                                    "lease::OverlapPolicy (e.g. lease::skip, lease::allow, lease::buffer_one, "
                                    "lease::replace)");
    auto opts = detail::value_or<detail::settings_tag>(map, [] { return options{}; });
    static_assert(std::is_same_v<decltype(opts), options>,
                  "lease::make_scheduler: the value given to lease::settings must be a lease::options");
    if constexpr (Clock<C> && Store<S> && Executor<E> && OverlapPolicy<P> && std::is_same_v<decltype(opts), options>)
      return scheduler<S, C, E, P>(std::move(sto), std::move(clk), std::move(exe), std::move(ovl), std::move(opts));
  }
}

}  // namespace lease
