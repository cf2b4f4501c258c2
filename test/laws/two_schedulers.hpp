// Moved: the two-schedulers law is installed with lease::testing.
#include "lease/testing/scheduler.hpp"  // IWYU pragma: export
