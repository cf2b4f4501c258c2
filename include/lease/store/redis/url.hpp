// lease/store/redis/url.hpp — parsing `redis://[user:password@]host[:port][/db]`.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "lease/error.hpp"
#include "lease/store/redis/printable.hpp"

namespace lease::detail::redis {

/// Where and how to connect, from a redis:// URL.
struct endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::optional<std::string> user;      ///< set: AUTH user password (Redis 6+ ACL)
  std::optional<std::string> password;  ///< set: AUTH [user] password
  int db = 0;                           ///< non-zero: SELECT db
};

/// The URL with its credentials (everything before the last '@') replaced by
/// "***", printable: safe for messages, logs and notices whatever the URL holds,
/// even when it is malformed.
[[nodiscard]] inline std::string redact_url(std::string_view url) {
  std::string out;
  std::string_view rest = url;
  if (auto scheme = url.find("://"); scheme != std::string_view::npos) {
    out.assign(url.substr(0, scheme + 3));
    rest = url.substr(scheme + 3);
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    out.append("***@");
    rest = rest.substr(at + 1);
  }
  out.append(rest);
  return printable(out, 200);
}

/// Throws invalid_argument naming what is wrong, with the URL redacted.
[[noreturn]] inline void bad_url(std::string_view url, std::string_view why) {
  throw store_error(make_error_code(errc::invalid_argument),
                    "lease::redis_store: bad url '" + redact_url(url) + "': " + std::string(why) +
                        " (expected redis://[user:password@]host[:port][/db]; escape '%', '/' and '@' "
                        "in the user and password as %25, %2F and %40)");
}

/// Decodes %XX escapes (user names and passwords may hold any byte).
[[nodiscard]] inline std::string percent_decode(std::string_view s, std::string_view url) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= s.size() || std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16).ptr != s.data() + i + 3)
      bad_url(url, "bad %-escape");
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

[[nodiscard]] inline int parse_int(std::string_view s, std::string_view url, std::string_view what, int lo, int hi) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi) bad_url(url, what);
  return v;
}

/// Parses a redis:// URL; throws store_error(errc::invalid_argument) on a bad one.
[[nodiscard]] inline endpoint parse_url(std::string_view url) {
  constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) bad_url(url, "scheme must be redis:// (no TLS with hiredis 0.14)");
  std::string_view rest = url.substr(scheme.size());
  endpoint ep;
  // Credentials end at the last '@', before looking for the db: a raw '/' or
  // '@' in a password then parses as the user meant.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (auto colon = cred.find(':'); colon != std::string_view::npos) {
      if (colon > 0) ep.user = percent_decode(cred.substr(0, colon), url);
      ep.password = percent_decode(cred.substr(colon + 1), url);
    } else {
      ep.password = percent_decode(cred, url);  // redis://password@host, as redis-cli reads it
    }
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) ep.db = parse_int(db, url, "db must be a number", 0, 1 << 20);
    rest = rest.substr(0, slash);
  }
  std::string_view host = rest;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {  // [::1]:6379
    auto close = host.find(']');
    if (close == std::string_view::npos) bad_url(url, "unclosed [");
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') bad_url(url, "junk after ]");
      port = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.empty()) bad_url(url, "no host");
  ep.host = std::string(host);
  if (!port.empty()) ep.port = parse_int(port, url, "port must be 1-65535", 1, 65535);
  return ep;
}

}  // namespace lease::detail::redis
