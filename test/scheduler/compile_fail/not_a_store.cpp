// Must not compile. Expected diagnostic:
//   "the value given to lease::store does not model lease::Store"
#include "lease/make_scheduler.hpp"
struct not_a_store {};
int main() { auto s = lease::make_scheduler(lease::store = not_a_store{}); }
