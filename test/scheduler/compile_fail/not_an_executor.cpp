// Must not compile. Expected diagnostic:
//   "the value given to lease::executor does not model lease::Executor"
#include "lease/make_scheduler.hpp"
int main() { auto s = lease::make_scheduler(lease::executor = 42); }
