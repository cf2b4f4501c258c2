// cluster_demo/stores.hpp — `--store URL`: the same demo on any store.
//
//   /path/to/file.db (or no --store)   SQLite, one file (the default: a file in
//                                      the demo's temporary directory)
//   redis://host:port[/db]             Redis or Valkey
//   postgres://… or postgresql://…     PostgreSQL (a libpq URI; key=value
//                                      conninfo strings work with postgres: before them)
//
// Each demo run keeps its state apart on a shared server: a key prefix
// (Redis) or a schema (PostgreSQL) named after the orchestrator's pid,
// passed to every instance as its namespace. The instance and the
// orchestrator call with_store(), which builds the concrete store and hands
// it to a generic lambda, so the scheduler stays fully typed.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <lease/store/sqlite.hpp>
#if LEASE_DEMO_WITH_REDIS
#include <lease/store/redis.hpp>
#endif
#if LEASE_DEMO_WITH_POSTGRES
#include <lease/store/postgres.hpp>
#endif

namespace demo {

enum class store_kind { sqlite, redis, postgres };

[[nodiscard]] inline store_kind kind_of(std::string_view spec) {
  auto starts = [&](std::string_view p) { return spec.substr(0, p.size()) == p; };
  if (starts("redis://")) return store_kind::redis;
  if (starts("postgres://") || starts("postgresql://") || starts("postgres:")) return store_kind::postgres;
  return store_kind::sqlite;
}

/// What to tell the user the instances share.
[[nodiscard]] inline std::string describe_store(std::string_view spec, std::string_view ns) {
  switch (kind_of(spec)) {
    case store_kind::sqlite: return "one SQLite file, " + std::string(spec);
    case store_kind::redis:
#if LEASE_DEMO_WITH_REDIS
      return "one Redis, " + lease::detail::redis::redact_url(spec) + ", key prefix " + std::string(ns);
#else
      break;
#endif
    case store_kind::postgres:
#if LEASE_DEMO_WITH_POSTGRES
      return "one PostgreSQL, " + lease::detail::postgres::redact_conninfo(std::string(spec)) + ", schema " +
             std::string(ns);
#else
      break;
#endif
  }
  return std::string(spec);
}

/// Calls f(store) with a new store of the spec's kind on namespace `ns`.
template <class F>
decltype(auto) with_store(const std::string& spec, const std::string& ns, F&& f) {
  switch (kind_of(spec)) {
    case store_kind::sqlite: return f(lease::sqlite_store{spec});
    case store_kind::redis: {
#if LEASE_DEMO_WITH_REDIS
      lease::redis_options o;
      o.url = spec;
      o.prefix = ns;
      return f(lease::redis_store{std::move(o)});
#else
      throw std::runtime_error("this cluster_demo was built without Redis support (lease::redis)");
#endif
    }
    case store_kind::postgres: {
#if LEASE_DEMO_WITH_POSTGRES
      lease::postgres_options o;
      // "postgres:host=… port=…" is a key=value conninfo; URIs go to libpq as they are.
      o.conninfo = spec.rfind("postgres:", 0) == 0 && spec.rfind("postgres://", 0) != 0 ? spec.substr(9) : spec;
      o.schema = ns;
      return f(lease::postgres_store{std::move(o)});
#else
      throw std::runtime_error("this cluster_demo was built without PostgreSQL support (lease::postgres)");
#endif
    }
  }
  throw std::logic_error("unknown store kind");
}

/// The orchestrator's own view of the store: the three reads it samples.
class any_store {
 public:
  template <class S>
  explicit any_store(S s) : self_(std::make_shared<model<S>>(std::move(s))) {}
  std::optional<lease::run_record> get(const lease::run_key& k) { return self_->get(k); }
  std::vector<lease::run_record> unfinished(std::string_view job) { return self_->unfinished(job); }
  lease::time_point now() { return self_->now(); }

 private:
  struct base {
    virtual ~base() = default;
    virtual std::optional<lease::run_record> get(const lease::run_key&) = 0;
    virtual std::vector<lease::run_record> unfinished(std::string_view) = 0;
    virtual lease::time_point now() = 0;
  };
  template <class S>
  struct model final : base {
    explicit model(S x) : s(std::move(x)) {}
    std::optional<lease::run_record> get(const lease::run_key& k) override { return s.get(k); }
    std::vector<lease::run_record> unfinished(std::string_view j) override { return s.unfinished(j); }
    lease::time_point now() override { return s.now(); }
    S s;
  };
  std::shared_ptr<base> self_;
};

[[nodiscard]] inline any_store open_any(const std::string& spec, const std::string& ns) {
  return with_store(spec, ns, [](auto s) { return any_store{std::move(s)}; });
}

}  // namespace demo
