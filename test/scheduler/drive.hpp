// drive.hpp — moves a cluster of deterministic-mode instances through fake
// time: the one driver of harness.hpp's cluster, counted_cluster.hpp's and
// trigger.cpp's, which differ only in their store and nodes.
#pragma once

#include <optional>

#include "lease/time.hpp"

namespace test {

/// Derived has `clock` (a lease::fake_clock) and `nodes` (pointers to nodes
/// with `s`, the scheduler, and `down`: crashed or frozen, neither polled
/// nor asked when it wants to be).
template <class Derived>
struct drive {
  void start_all() {
    for (auto& n : self().nodes) n->s->start();
  }

  void poll_all() {
    for (auto& n : self().nodes)
      if (!n->down) n->s->poll();
  }

  /// Moves the clock to `t`, stopping at every instant an instance wants to
  /// be polled, and polls every live instance there (in the order added).
  /// Handlers stay "running" until the test runs their tasks.
  void run_until(lease::time_point t) {
    auto& clock = self().clock;
    for (;;) {
      poll_all();
      std::optional<lease::time_point> next;
      for (auto& n : self().nodes) {
        if (n->down) continue;
        if (auto w = n->s->next_wakeup(); w && (!next || *w < *next)) next = w;
      }
      if (!next || *next > t) break;
      if (*next > clock.now()) clock.set(*next);
    }
    if (t > clock.now()) clock.set(t);
    poll_all();
  }

  void run_for(lease::duration d) { run_until(self().clock.now() + d); }

  /// Lets node `n`'s waiting handlers run now, then polls so their results reach the store.
  template <class Node>
  void finish_handlers(Node& n) {
    n.exec.run_all();
    poll_all();
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace test
