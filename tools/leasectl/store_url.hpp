// leasectl/store_url.hpp — `--store URL`: which store, where, and how to name
// it in a message without its password.
//
//   PATH, sqlite:PATH, sqlite://PATH          sqlite_store on that file (it must exist:
//                                             leasectl never creates an empty store)
//   redis://[user:pass@]host[:port][/db]      redis_store on one server
//   redis+cluster://[user:pass@]host[:port]   redis_store on a Redis Cluster, that node the seed
//   postgres://… or postgresql://…            postgres_store (a libpq URI)
//   postgres:key=value …                      postgres_store (a libpq key=value conninfo); the
//                                             schema (--namespace) must exist and be current:
//                                             leasectl never creates nor migrates one
//
// example/cluster_demo/stores.hpp does much the same for the demo; a tool
// does not include an example, and this one also needs the cluster form,
// the existence check and the password scrubbing below.
#pragma once

#include <charconv>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <lease/store/sqlite.hpp>
#if LEASECTL_WITH_REDIS
#include <lease/store/redis.hpp>
#endif
#if LEASECTL_WITH_POSTGRES
#include <lease/store/postgres.hpp>
#endif

namespace leasectl {

/// A --store value leasectl cannot use (exit code 2, like any usage error).
struct bad_store_url : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr std::string_view accepted_store_forms =
    "PATH | sqlite:PATH | redis://[user:pass@]host[:port][/db] | redis+cluster://[user:pass@]host[:port] | "
    "postgres://… | postgresql://… | postgres:key=value …";

/// A store kind this leasectl was built without (exit code 3: it cannot).
struct not_built : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class store_kind { sqlite, redis, postgres };

struct store_spec {
  store_kind kind = store_kind::sqlite;
  std::string target;                  ///< the file, the redis:// URL, or the libpq conninfo
  bool cluster = false;                ///< Redis Cluster (redis+cluster://)
  std::string shown;                   ///< what messages call it: never holds a password
  std::vector<std::string> secrets;    ///< passwords in the URL, raw and %-decoded: scrubbed from any message
};

namespace detail {

[[nodiscard]] inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

[[nodiscard]] inline std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned v = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16).ptr == s.data() + i + 3) {
      out.push_back(static_cast<char>(v));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

/// scheme://user:pass@rest -> scheme://***@rest, and the password (raw and
/// decoded) into `secrets`. Credentials end at the last '@', as the Redis
/// store parses them; `lone_is_password`: "scheme://x@host" means password x
/// (Redis) rather than user x (libpq).
[[nodiscard]] inline std::string redact_uri(std::string_view url, std::vector<std::string>& secrets,
                                            bool lone_is_password) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  std::string_view rest = url.substr(scheme + 3);
  const auto at = rest.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  const std::string_view userinfo = rest.substr(0, at);
  if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
    const std::string_view pass = userinfo.substr(colon + 1);
    if (!pass.empty()) {
      secrets.emplace_back(pass);
      secrets.push_back(percent_decoded(pass));
    }
  } else if (lone_is_password && !userinfo.empty()) {
    secrets.emplace_back(userinfo);  // redis://secret@host: a password alone
  }
  return std::string(url.substr(0, scheme + 3)) + "***@" + std::string(rest.substr(at + 1));
}

/// password=… in a key=value conninfo (quoted or not) into `secrets`.
inline void conninfo_secrets(std::string_view ci, std::vector<std::string>& secrets) {
  for (std::size_t p = ci.find("password"); p != std::string_view::npos; p = ci.find("password", p + 1)) {
    std::size_t i = p + 8;
    while (i < ci.size() && ci[i] == ' ') ++i;
    if (i >= ci.size() || ci[i] != '=') continue;
    ++i;
    while (i < ci.size() && ci[i] == ' ') ++i;
    std::string value;
    if (i < ci.size() && ci[i] == '\'') {
      for (++i; i < ci.size() && ci[i] != '\''; ++i) {
        if (ci[i] == '\\' && i + 1 < ci.size()) ++i;
        value.push_back(ci[i]);
      }
    } else {
      for (; i < ci.size() && ci[i] != ' '; ++i) value.push_back(ci[i]);
    }
    if (!value.empty()) secrets.push_back(value);
  }
}

}  // namespace detail

/// Every occurrence of a secret in `text` replaced by "***".
[[nodiscard]] inline std::string scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    for (auto p = text.find(s); p != std::string::npos; p = text.find(s, p + 3)) text.replace(p, s.size(), "***");
  }
  return text;
}

/// Parses a --store value; throws bad_store_url naming the accepted forms.
[[nodiscard]] inline store_spec parse_store_url(std::string_view url) {
  using detail::starts_with;
  store_spec s;
  if (url.empty()) throw bad_store_url("--store is empty; accepted forms: " + std::string(accepted_store_forms));
  if (starts_with(url, "redis://") || starts_with(url, "redis+cluster://")) {
    s.kind = store_kind::redis;
    s.cluster = starts_with(url, "redis+cluster://");
    s.target = "redis://" + std::string(url.substr(url.find("://") + 3));
    s.shown = detail::redact_uri(url, s.secrets, true);
    return s;
  }
  if (starts_with(url, "postgres://") || starts_with(url, "postgresql://")) {
    s.kind = store_kind::postgres;
    s.target = std::string(url);
    s.shown = detail::redact_uri(url, s.secrets, false);
    detail::conninfo_secrets(url, s.secrets);  // ?password=… in the query string
    return s;
  }
  if (starts_with(url, "postgres:")) {
    s.kind = store_kind::postgres;
    s.target = std::string(url.substr(9));
    detail::conninfo_secrets(s.target, s.secrets);
    s.shown = scrub("postgres:" + s.target, s.secrets);
    return s;
  }
  std::string_view path = url;
  if (starts_with(url, "sqlite://")) {
    path = url.substr(9);
  } else if (starts_with(url, "sqlite:")) {
    path = url.substr(7);
  } else if (const auto colon = url.find(':'); colon != std::string_view::npos && colon > 0) {
    // "mysql://…", "redis:host": a scheme we do not know, not a file name.
    const std::string_view scheme = url.substr(0, colon);
    bool word = true;
    for (char c : scheme) word = word && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+');
    if (word) {
      std::vector<std::string> ignored;
      throw bad_store_url("--store '" + detail::redact_uri(url, ignored, true) + "': unknown scheme '" +
                          std::string(scheme) + ":'; accepted forms: " + std::string(accepted_store_forms) +
                          " (a file whose name has a ':' in it: write ./NAME or sqlite:NAME)");
    }
  }
  if (path.empty()) throw bad_store_url("--store '" + std::string(url) + "' names no file");
  s.kind = store_kind::sqlite;
  s.target = std::string(path);
  s.shown = "sqlite:" + s.target;
  return s;
}

/// The store's connection settings that leasectl lets an operator choose.
struct store_settings {
  std::string ns = "lease";  ///< Redis key prefix or PostgreSQL schema (both stores' default)
};

/// Calls f(store) with the store `spec` names and returns what f returns.
/// Throws lease::store_error (the store's own, e.g. a malformed Redis URL),
/// not_built (a store this build lacks) or std::runtime_error (no such file).
template <class F>
decltype(auto) with_store(const store_spec& spec, [[maybe_unused]] const store_settings& settings, F&& f) {
  switch (spec.kind) {
    case store_kind::sqlite: {
      // sqlite_store creates a missing file: an operator's typo would show
      // an empty store and pause a job nobody runs there.
      std::error_code ec;
      if (!std::filesystem::is_regular_file(spec.target, ec))
        throw std::runtime_error("no SQLite file at '" + spec.target +
                                 "' (leasectl opens a store its instances use; it never creates one)");
      // An empty file (touched, or a failed copy) is not a store either:
      // opening it would write a new, empty store into it.
      if (std::filesystem::file_size(spec.target, ec) == 0 && !ec)
        throw std::runtime_error("the SQLite file at '" + spec.target +
                                 "' is empty: no instance has used it as a store (check the path; leasectl never "
                                 "creates a store)");
      // Nor upgrades one: the instances of an older release would claim no
      // more (as for PostgreSQL's migrate = false below).
      lease::sqlite_store s{spec.target, {.upgrade = false}};
      return f(s);
    }
    case store_kind::redis: {
#if LEASECTL_WITH_REDIS
      lease::redis_options o;
      o.url = spec.target;
      o.cluster = spec.cluster;
      o.prefix = settings.ns;
      lease::redis_store s{std::move(o)};
      return f(s);
#else
      throw not_built("this leasectl was built without Redis support (lease::redis)");
#endif
    }
    case store_kind::postgres: {
#if LEASECTL_WITH_POSTGRES
      lease::postgres_options o;
      o.conninfo = spec.target;
      o.schema = settings.ns;
      // As for SQLite: an operator's look (or pause, trigger, stop, purge)
      // must not create a store. A mistyped --namespace would otherwise
      // leave a new, empty schema in the user's database, and an older
      // schema would be migrated under the instances by a tool.
      o.migrate = false;
      lease::postgres_store s{std::move(o)};
      return f(s);
#else
      throw not_built("this leasectl was built without PostgreSQL support (lease::postgres)");
#endif
    }
  }
  throw std::logic_error("unknown store kind");
}

}  // namespace leasectl
