// test/leasectl/store_url.cpp — leasectl's --store forms: which store each
// names, what messages call it (never with a password), and a clear error
// naming the accepted forms for anything else.
#include <catch2/catch.hpp>

#include "leasectl/store_url.hpp"

using leasectl::parse_store_url;
using leasectl::store_kind;

TEST_CASE("a path, sqlite:PATH and sqlite://PATH name a SQLite file", "[leasectl]") {
  for (const auto& [url, path] : {std::pair{"/var/lib/app/jobs.db", "/var/lib/app/jobs.db"},
                                  std::pair{"jobs.db", "jobs.db"}, std::pair{"sqlite:jobs.db", "jobs.db"},
                                  std::pair{"sqlite:///var/lib/app/jobs.db", "/var/lib/app/jobs.db"},
                                  std::pair{"./odd:name.db", "./odd:name.db"}}) {
    const auto s = parse_store_url(url);
    CHECK(s.kind == store_kind::sqlite);
    CHECK(s.target == path);
    CHECK(s.shown == std::string("sqlite:") + path);
  }
}

TEST_CASE("redis:// and redis+cluster:// name a Redis store whose password is never shown", "[leasectl]") {
  const auto one = parse_store_url("redis://ops:hunter%402@10.0.0.7:6379/2");
  CHECK(one.kind == store_kind::redis);
  CHECK_FALSE(one.cluster);
  CHECK(one.target == "redis://ops:hunter%402@10.0.0.7:6379/2");  // to the store as given: it decodes
  CHECK(one.shown == "redis://***@10.0.0.7:6379/2");
  CHECK(leasectl::scrub("AUTH hunter@2 / hunter%402 refused", one.secrets) == "AUTH *** / *** refused");

  const auto cluster = parse_store_url("redis+cluster://10.0.0.7:7000");
  CHECK(cluster.kind == store_kind::redis);
  CHECK(cluster.cluster);
  CHECK(cluster.target == "redis://10.0.0.7:7000");
  CHECK(cluster.shown == "redis+cluster://10.0.0.7:7000");
  CHECK(cluster.secrets.empty());

  // redis://secret@host: a password alone (AUTH secret).
  CHECK(parse_store_url("redis://s3cret@h:1").secrets == std::vector<std::string>{"s3cret"});
}

TEST_CASE("postgres:// postgresql:// and postgres:key=value name a PostgreSQL store whose password is never shown",
          "[leasectl]") {
  const auto uri = parse_store_url("postgresql://app:pw1@db1:5432/jobs?sslmode=require");
  CHECK(uri.kind == store_kind::postgres);
  CHECK(uri.target == "postgresql://app:pw1@db1:5432/jobs?sslmode=require");
  CHECK(uri.shown == "postgresql://***@db1:5432/jobs?sslmode=require");
  CHECK(parse_store_url("postgres://db1/jobs").kind == store_kind::postgres);
  // A user alone is no secret: "postgres" is not scrubbed from messages.
  CHECK(parse_store_url("postgresql://postgres@db1/jobs").secrets.empty());
  CHECK(leasectl::scrub("x", parse_store_url("postgres://db1/jobs?password=pw2").secrets) == "x");
  CHECK(leasectl::scrub("pw2", parse_store_url("postgres://db1/jobs?password=pw2").secrets) == "***");

  const auto kv = parse_store_url("postgres:host=db1 dbname=jobs password='p w3' user=app");
  CHECK(kv.kind == store_kind::postgres);
  CHECK(kv.target == "host=db1 dbname=jobs password='p w3' user=app");
  CHECK(kv.shown == "postgres:host=db1 dbname=jobs password='***' user=app");
}

TEST_CASE("an unknown scheme is an error naming the accepted forms, without the password", "[leasectl]") {
  for (const char* url : {"mysql://app:hunter2@db1/jobs", "rediss://app:hunter2@h:6380", "redis:h:6379", ""}) {
    try {
      (void)parse_store_url(url);
      FAIL("accepted " << url);
    } catch (const leasectl::bad_store_url& e) {
      const std::string m = e.what();
      CHECK(m.find("redis://[user:pass@]host[:port][/db]") != std::string::npos);
      CHECK(m.find("hunter2") == std::string::npos);
    }
  }
}
