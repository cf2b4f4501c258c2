// lease/store/redis/sigpipe.hpp — keeps SIGPIPE from killing the process
// while hiredis writes to a socket the server has closed.
//
// hiredis 0.14 writes with write(2), not send(MSG_NOSIGNAL), so a write to a
// dropped connection raises SIGPIPE, whose default action ends the process.
// Rather than change the process-wide disposition behind the user's back,
// the guard blocks SIGPIPE in the calling thread for the duration of one
// exchange and swallows a SIGPIPE it caused before unblocking (the write
// then fails with EPIPE, which becomes a store_error).
#pragma once

#include <csignal>
#include <ctime>

#include <pthread.h>

namespace lease::detail::redis {

class sigpipe_guard {
 public:
  sigpipe_guard() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~sigpipe_guard() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_, nullptr, &zero);  // consume the one our write raised
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

}  // namespace lease::detail::redis
