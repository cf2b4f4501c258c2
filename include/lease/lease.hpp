// lease/lease.hpp — one include for the core: vocabulary, concepts, the
// scheduler and its policies (clocks, executors, overlap, schedules), the
// memory store and the simulation. Backends (sqlite, redis, postgres) are
// included separately, each with its own CMake target.
#pragma once

#include "lease/clock/concept.hpp"
#include "lease/clock/fake.hpp"
#include "lease/clock/system.hpp"
#include "lease/error.hpp"
#include "lease/event.hpp"
#include "lease/executor/concept.hpp"
#include "lease/executor/inline.hpp"
#include "lease/executor/manual.hpp"
#include "lease/executor/thread_pool.hpp"
#include "lease/make_scheduler.hpp"
#include "lease/options.hpp"
#include "lease/overlap/concept.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/rules.hpp"
#include "lease/run.hpp"
#include "lease/run_context.hpp"
#include "lease/schedule/concept.hpp"
#include "lease/schedule/every.hpp"
#include "lease/scheduler.hpp"
#include "lease/sim.hpp"
#include "lease/store/concept.hpp"
#include "lease/store/memory.hpp"
#include "lease/time.hpp"
#include "lease/token.hpp"
