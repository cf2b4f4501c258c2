// Must not compile. Expected diagnostic: "lease::make_scheduler: unknown keyword"
#include "lease/make_scheduler.hpp"
struct colour_tag {};
inline constexpr lease::detail::keyword<colour_tag> colour{};
int main() { auto s = lease::make_scheduler(colour = 3); }
