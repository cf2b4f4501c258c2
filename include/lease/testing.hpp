// lease/testing.hpp — lease::testing in one include: prove your own Store,
// Clock, Executor or Schedule against the laws the library's own models
// pass, and property-test your job settings on a simulated cluster.
//
// Link the CMake target lease::testing (it brings Catch2 v2 and RapidCheck;
// it is not part of the core). Each check has a form that returns its
// verdict (store_conforms, clock_violations, …) and a Catch2 form (check_*).
#pragma once

#include "lease/testing/clock.hpp"
#include "lease/testing/executor.hpp"
#include "lease/testing/schedule.hpp"
#include "lease/testing/scheduler.hpp"
#include "lease/testing/sim.hpp"
#include "lease/testing/store.hpp"
