// redis_script_text NAME — prints the store's Lua script NAME (claim,
// heartbeat, finish, ...) exactly as redis_store loads it, for scripts/lua-cost,
// which counts the instructions the server spends on each call.
#include <lease/store/redis/scripts.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

namespace {

// In the order of lease::detail::redis::script.
constexpr std::array<std::string_view, lease::detail::redis::script_count> names{
    "claim", "heartbeat", "finish",    "release",   "get",     "unfinished", "marker",        "pause",
    "resume", "paused",   "job_summary", "list_runs", "trigger", "stop",       "register_jobs", "purge"};

// A script added to the enum without a name here would leave its entry empty.
static_assert(std::ranges::none_of(names, [](std::string_view n) { return n.empty(); }),
              "every script needs its name in this list");

}  // namespace

int main(int argc, char** argv) {
  const std::string_view wanted = argc == 2 ? argv[1] : "";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] != wanted) continue;
    const std::string_view text = lease::detail::redis::scripts[i];
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::fputs("usage: redis_script_text NAME, where NAME is one of:", stderr);
  for (std::string_view n : names) std::fprintf(stderr, " %.*s", static_cast<int>(n.size()), n.data());
  std::fputs("\n", stderr);
  return 2;
}
