// test/leasectl/seed.cpp — `leasectl_seed URL`: seed.hpp's runs in a real
// store, so check.sh can read them back with the real leasectl. Exit 0 when
// every claim, finish and release answered as the rules say; 1 otherwise
// (the test fails before leasectl runs).
//
// `leasectl_seed URL claim JOB`: an instance's claim of JOB's slot now;
// prints its outcome ("won", "paused", …): what a pause does to instances.
// (Overlap allowed: report's seeded run is still live.)
//
// `leasectl_seed URL caps`: what the store can do beyond pause and listings
// ("trigger stop registry"), so check.sh expects exit code 3 for the rest.
//
// `leasectl_seed URL claim-trigger JOB`: an instance's manual claim of JOB's
// pending trigger; prints its outcome ("won"; "none" once it was answered).
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>

#include "leasectl/store_url.hpp"
#include "seed.hpp"

int main(int argc, char** argv) {
  const std::string verb = argc >= 3 ? argv[2] : "";
  if (argc != 2 && !(argc == 4 && (verb == "claim" || verb == "claim-trigger")) && !(argc == 3 && verb == "caps")) {
    std::fprintf(stderr, "usage: leasectl_seed URL [claim JOB | claim-trigger JOB | caps]\n");
    return 1;
  }
  const auto act = [&](auto& s) {
    using S = std::remove_cvref_t<decltype(s)>;
    if (verb == "caps") {
      std::printf("%s%s%s\n", lease::TriggerStore<S> ? "trigger " : "", lease::StopStore<S> ? "stop " : "",
                  lease::RegistryStore<S> ? "registry" : "");
    } else if (verb == "claim") {
      std::printf("%s\n", leasectl_test::claim_now(s, argv[3]).c_str());
    } else if (verb == "claim-trigger") {
      if constexpr (lease::TriggerStore<std::remove_cvref_t<decltype(s)>> &&
                    lease::InspectStore<std::remove_cvref_t<decltype(s)>>)
        std::printf("%s\n", leasectl_test::claim_trigger(s, argv[3]).c_str());
      else
        std::printf("not a TriggerStore\n");
    } else {
      leasectl_test::seed(s);
    }
  };
  try {
    const auto spec = leasectl::parse_store_url(argv[1]);
    if (spec.kind == leasectl::store_kind::sqlite) {
      // A new file: its instances would wait out a quarantine first (a file
      // that replaced a lost one may hide runs that started); ours has none.
      lease::sqlite_options o;
      o.quarantine_new_file = false;
      lease::sqlite_store s{spec.target, std::move(o)};
      act(s);
#if LEASECTL_WITH_POSTGRES
    } else if (spec.kind == leasectl::store_kind::postgres) {
      // The seed plays the instances: it creates the schema, which
      // leasectl's own store (migrate = false) never does.
      lease::postgres_options o;
      o.conninfo = spec.target;
      o.schema = leasectl::store_settings{}.ns;
      lease::postgres_store s{std::move(o)};
      act(s);
#endif
    } else {
      leasectl::with_store(spec, {}, act);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "leasectl_seed: %s\n", e.what());
    return 1;
  }
  return 0;
}
