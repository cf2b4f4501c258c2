// Must not compile. Expected diagnostic:
//   "lease::scheduler::trigger needs a store that models lease::TriggerStore"
#include "lease/clock/fake.hpp"
#include "lease/executor/inline.hpp"
#include "lease/overlap/policies.hpp"
#include "lease/scheduler.hpp"
#include "lease/store/memory.hpp"

/// A Store with nothing more: no trigger(), no triggers().
struct plain_store {
  lease::memory_store<lease::fake_clock> m{lease::fake_clock{}};
  lease::claim_result claim(const lease::claim_request& r) { return m.claim(r); }
  bool heartbeat(const lease::run_key& k, std::string_view t, lease::duration l) { return m.heartbeat(k, t, l); }
  bool finish(const lease::run_key& k, std::string_view t, lease::run_status s) { return m.finish(k, t, s); }
  bool release(const lease::run_key& k, std::string_view t) { return m.release(k, t); }
  std::vector<lease::run_record> unfinished(std::string_view j) { return m.unfinished(j); }
  std::optional<lease::run_record> get(const lease::run_key& k) { return m.get(k); }
  lease::time_point now() const { return m.now(); }
};

int main() {
  lease::scheduler<plain_store, lease::fake_clock, lease::inline_executor, lease::skip_t> s(
      plain_store{}, lease::fake_clock{}, lease::inline_executor{}, lease::skip_t{});
  s.trigger("report");
}
