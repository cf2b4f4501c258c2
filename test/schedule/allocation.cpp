// next() and latest() allocate nothing: they run on every scheduler tick, and
// the performance goal depends on it. This file replaces the global operator
// new for the whole test binary, only to count calls.
#include <atomic>
#include <cstdlib>
#include <new>

#include <catch2/catch.hpp>

#include "lease/schedule/cron.hpp"
#include "lease/schedule/every.hpp"
#include "support.hpp"

namespace {
std::atomic<long> allocations{0};
}  // namespace

namespace {
void* counted_alloc(std::size_t n) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_alloc_or_throw(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
}  // namespace

// Every (unaligned) form, so that each allocation is freed by its own kind
// (sanitizers check the pairs).
void* operator new(std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

TEST_CASE("Computing slots allocates no memory, with or without a zone") {
  const lease::cron utc_cron("*/5 * * * * *");
  const lease::cron berlin("0 3 * * 1-5", "Europe/Berlin");
  const lease::cron lord_howe("*/20 * * * *", "Australia/Lord_Howe", {.repeat = lease::dst_repeat::both});
  const lease::every every(std::chrono::seconds{30});
  lease::time_point t = schedule_test::utc("2026-01-01 00:00:00");

  const long before = allocations.load();
  for (int i = 0; i < 1000; ++i) {
    t = lord_howe.next(t);
    (void)utc_cron.next(t);
    (void)utc_cron.latest(t);
    (void)berlin.next(t);
    (void)berlin.latest(t);
    (void)every.next(t);
  }
  CHECK(allocations.load() - before == 0);
}
