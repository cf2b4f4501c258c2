// Builds against an installed lease: the core rules over a fake clock.
#include <lease/rules.hpp>
#include <lease/store/memory.hpp>

int main() {
  using namespace std::chrono_literals;
  lease::fake_clock clock{lease::time_point{1'000'000ms}};
  lease::memory_store<lease::fake_clock> store{clock};
  lease::claim_request req;
  req.run = {"consumer", clock.now()};
  req.runner = "consumer-1";
  req.token = "t1";
  req.deadline = clock.now() + 30s;
  return store.claim(req).outcome == lease::claim_outcome::won ? 0 : 1;
}
