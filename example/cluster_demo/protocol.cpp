// cluster_demo/protocol.cpp — the line protocol (see protocol.hpp).
#include "protocol.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <vector>

namespace demo {
namespace {

std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

template <class T>
bool number(std::string_view s, T& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

}  // namespace

std::string format(const line& l) {
  std::string out;
  out += l.kind;
  for (const std::string& field :
       {std::to_string(l.at.time_since_epoch().count()), clean(l.instance), clean(l.what), clean(l.job),
        std::to_string(l.slot.time_since_epoch().count()), std::to_string(l.attempt), std::to_string(l.fence),
        clean(l.token), clean(l.message)}) {
    out += '\t';
    out += field;
  }
  out += '\n';
  return out;
}

std::optional<line> parse(std::string_view text) {
  std::vector<std::string_view> f;
  while (true) {
    const std::size_t tab = text.find('\t');
    f.push_back(text.substr(0, tab));
    if (tab == std::string_view::npos) break;
    text.remove_prefix(tab + 1);
  }
  if (f.size() != 10 || f[0].size() != 1) return std::nullopt;
  line l;
  l.kind = f[0][0];
  std::int64_t at = 0, slot = 0;
  if (!number(f[1], at) || !number(f[5], slot) || !number(f[6], l.attempt) || !number(f[7], l.fence))
    return std::nullopt;
  l.at = lease::time_point{lease::duration{at}};
  l.slot = lease::time_point{lease::duration{slot}};
  l.instance = f[2];
  l.what = f[3];
  l.job = f[4];
  l.token = f[8];
  l.message = f[9];
  return l;
}

std::string hms(lease::time_point t) {
  using namespace std::chrono;
  const hh_mm_ss clock{t - floor<days>(t)};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", static_cast<int>(clock.hours().count()),
                static_cast<int>(clock.minutes().count()), static_cast<int>(clock.seconds().count()));
  return buf;
}

}  // namespace demo
