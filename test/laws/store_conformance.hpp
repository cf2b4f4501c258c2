// Moved: the store conformance suite is installed with lease::testing.
#include "lease/testing/store.hpp"  // IWYU pragma: export
