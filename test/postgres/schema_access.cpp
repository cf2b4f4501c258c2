// test/postgres/schema_access.cpp — what a postgres_store opened with
// migrate = false (leasectl) does to the database: nothing. A schema without
// lease tables and an older layout are refused with a sentence, and no
// schema, table or version is written; and libpq's connect error reads as
// libpq wrote it.
#include <functional>
#include <string>

#include <catch2/catch.hpp>

#include "lease/store/postgres.hpp"
#include "postgres/server.hpp"

namespace {

lease::testing::postgres_server& srv() { return lease::testing::shared_server(); }

lease::postgres_options options(std::string conninfo, std::string schema, bool migrate) {
  lease::postgres_options o;
  o.conninfo = std::move(conninfo);
  o.schema = std::move(schema);
  o.migrate = migrate;
  return o;
}

/// The store_error `op` throws (FAIL if none).
lease::store_error error_of(const std::function<void()>& op) {
  try {
    op();
  } catch (const lease::store_error& e) {
    return e;
  }
  FAIL("no error");
  return lease::store_error(lease::make_error_code(lease::errc::corrupt), "unreachable");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string schema_count(const std::string& schema) {
  return srv().sql("SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'");
}
std::string table_count(const std::string& schema) {
  return srv().sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = '" + schema + "'");
}

}  // namespace

TEST_CASE("migrate = false: a schema that does not exist is refused with a sentence, and nothing is created") {
  const std::string schema = lease::testing::fresh_schema("typo");
  lease::postgres_store store{options(srv().conninfo(), schema, false)};
  // A read, and the writes an operator makes: none may create the schema.
  const std::function<void()> ops[] = {[&] { (void)store.get({"j", lease::time_point{}}); },
                                       [&] { (void)store.list_jobs(); },
                                       [&] { (void)store.pause("j"); },
                                       [&] { (void)store.trigger("j"); }};
  for (const auto& op : ops) {
    const lease::store_error e = error_of(op);
    const std::string what = e.what();
    INFO(what);
    CHECK(e.code() == lease::postgres_errc::schema_missing);
    CHECK(e.code() == lease::errc::unavailable);  // nothing changed; works once an instance made the schema
    CHECK(contains(what, "PostgreSQL schema '" + schema + "' has no lease tables"));
    CHECK(contains(what, "check the schema name (leasectl: --namespace, the instances' schema), or start an "
                         "instance first"));
  }
  CHECK(schema_count(schema) == "0");
  CHECK(table_count(schema) == "0");

  // An instance (migrate = true, the default) creates it; the same handle then works.
  CHECK(lease::postgres_options{}.migrate);
  { (void)lease::postgres_store{options(srv().conninfo(), schema, true)}.now(); }
  CHECK(store.pause("j"));
  CHECK(store.paused("j"));
}

TEST_CASE("migrate = false: an empty schema of that name gets no tables") {
  const std::string schema = lease::testing::fresh_schema("empty");
  srv().sql("CREATE SCHEMA \"" + schema + "\"");
  lease::postgres_store store{options(srv().conninfo(), schema, false)};
  const lease::store_error e = error_of([&] { (void)store.list_jobs(); });
  CHECK(e.code() == lease::postgres_errc::schema_missing);
  CHECK(contains(e.what(), "PostgreSQL schema '" + schema + "' has no lease tables"));
  CHECK(schema_count(schema) == "1");
  CHECK(table_count(schema) == "0");
}

TEST_CASE("migrate = false: an older schema is refused, says both versions, and is not migrated") {
  const std::string schema = lease::testing::fresh_schema("old");
  const std::string q = "\"" + schema + "\"";
  // Version 1's tables, as version 1 of this library created them.
  srv().sql(lease::detail::postgres::in_schema(lease::detail::postgres::create_v1, schema));
  const std::string tables_before = table_count(schema);
  lease::postgres_store store{options(srv().conninfo(), schema, false)};
  for (const std::function<void()>& op : {std::function<void()>([&] { (void)store.list_jobs(); }),
                                          std::function<void()>([&] { (void)store.pause("j"); })}) {
    const lease::store_error e = error_of(op);
    const std::string what = e.what();
    INFO(what);
    CHECK(e.code() == lease::postgres_errc::schema_outdated);
    CHECK(e.code() == lease::errc::unavailable);
    CHECK(contains(what, "PostgreSQL schema '" + schema + "' holds lease tables of version 1"));
    CHECK(contains(what, "this lease needs version 9"));
    CHECK(contains(what, "upgrade the schema by starting an upgraded instance"));
  }
  CHECK(srv().sql("SELECT max(version) FROM " + q + ".lease_schema_version") == "1");
  CHECK(table_count(schema) == tables_before);  // no lease_registrations (version 5's table)
  CHECK(srv().sql("SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + schema +
                  "' AND table_name = 'lease_jobs' AND column_name = 'paused'") == "0");

  // An upgraded instance migrates it; the read-only handle then works.
  { (void)lease::postgres_store{options(srv().conninfo(), schema, true)}.now(); }
  CHECK(srv().sql("SELECT max(version) FROM " + q + ".lease_schema_version") == "9");
  CHECK(store.list_jobs().empty());
}

TEST_CASE("migrate = false: a current schema is used as it is, a newer one is still refused") {
  const std::string schema = lease::testing::fresh_schema("cur");
  { (void)lease::postgres_store{options(srv().conninfo(), schema, true)}.now(); }
  lease::postgres_store store{options(srv().conninfo(), schema, false)};
  CHECK(store.pause("j"));
  srv().sql("UPDATE \"" + schema + "\".lease_schema_version SET version = 99");
  lease::postgres_store later{options(srv().conninfo(), schema, false)};
  const lease::store_error e = error_of([&] { (void)later.list_jobs(); });
  CHECK(e.code() == lease::postgres_errc::schema_version);
  CHECK(srv().sql("SELECT max(version) FROM \"" + schema + "\".lease_schema_version") == "99");
}

TEST_CASE("a refused connect says libpq's message as libpq wrote it: quotes once, no password") {
  const int closed = lease::testing::free_port();
  const std::string port = std::to_string(closed);
  lease::postgres_store store{
      options("host=127.0.0.1 port=" + port + " user=app password=s3cret connect_timeout=2", "lease", true)};
  // libpq 15: connection to server at "HOST", port PORT failed: Connection refused
  const std::string libpq = "connection to server at \"127.0.0.1\", port " + port + " failed: Connection refused";
  const lease::store_error first = error_of([&] { (void)store.list_jobs(); });
  const std::string what = first.what();
  INFO(what);
  CHECK(first.code() == lease::postgres_errc::connect_failed);
  CHECK(contains(what, "lease::postgres_store: cannot connect to postgres at "));
  CHECK(contains(what, ": " + libpq));
  CHECK(!contains(what, "\\\""));  // not \" (nor \\\", escaped twice)
  CHECK(!contains(what, "s3cret"));
  // At once again: the backoff's message quotes the same failure, also once.
  const lease::store_error again = error_of([&] { (void)store.list_jobs(); });
  const std::string what2 = again.what();
  INFO(what2);
  CHECK(again.code() == lease::postgres_errc::backing_off);
  CHECK(contains(what2, "the last connect or its setup failed (" + libpq));
  CHECK(!contains(what2, "\\\""));
  CHECK(!contains(what2, "s3cret"));
}

TEST_CASE("readable: a server's message keeps its quotes and backslashes, control characters are made visible") {
  using lease::detail::postgres::readable;
  CHECK(readable("relation \"a\\b\" does not exist", 400) == "relation \"a\\b\" does not exist");
  CHECK(readable(std::string("a\x01" "b\nc\xff", 6), 400) == "a\\x01b\\nc\\xff");
  CHECK(readable("\xe2\x80\xae" "evil", 400) == "\\u202eevil");  // no reordering of the line
  // At most max_bytes of escaped text, so never longer than printable()'s cut.
  CHECK(readable(std::string(500, '"'), 10) == std::string(5, '"') + "…");
}
