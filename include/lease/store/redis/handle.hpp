// lease/store/redis/handle.hpp — RAII owners of hiredis's C handles.
//
// One std::unique_ptr per handle (redisContext, redisReply) with a stateless
// noexcept deleter, so a handle is freed on every path, exceptions included,
// and costs no more than the raw pointer. Raw pointers appear only at the C call.
#pragma once

#include <memory>

#include <hiredis/hiredis.h>

#if !defined(HIREDIS_MAJOR) || (HIREDIS_MAJOR == 0 && HIREDIS_MINOR < 14)
#error "lease::redis_store needs hiredis 0.14 or newer"
#endif

namespace lease::detail::redis {

struct context_deleter {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
struct reply_deleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};

/// An owned connection (redisFree on destruction).
using context_ptr = std::unique_ptr<redisContext, context_deleter>;
/// An owned reply tree (freeReplyObject on destruction).
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

}  // namespace lease::detail::redis
