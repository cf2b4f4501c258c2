// cluster_demo — lease's main demo (scripts/demo, the README's first command).
//
//   cluster_demo [--store URL] [--svg PATH] [--keep]
//                                          the orchestrator (default): starts 3
//                                          instances on one store (by default a
//                                          SQLite file in a temporary directory;
//                                          see stores.hpp) and injects faults
//   cluster_demo instance NAME STORE NS    one instance (the orchestrator runs
//                                          these itself, via /proc/self/exe)
//
// The orchestrator prints a timeline, then a summary of invariant checks, and
// writes an SVG timeline (default ./cluster-demo.svg). Exit code 0 if every
// check passed, 1 if one failed, 2 on a usage or setup error, 130 on Ctrl-C.
#include <cstdio>
#include <string>
#include <vector>

#include "demo.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "instance") {
    if (args.size() != 4) {
      std::fprintf(stderr, "usage: cluster_demo instance NAME STORE NAMESPACE\n");
      return 2;
    }
    return demo::run_instance(args[1], args[2], args[3]);
  }
  std::string svg = "cluster-demo.svg";
  bool keep = false;
  std::string store;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--svg" && i + 1 < args.size()) {
      svg = args[++i];
    } else if (args[i] == "--store" && i + 1 < args.size()) {
      store = args[++i];
    } else if (args[i] == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr,
                   "usage: cluster_demo [--store URL] [--svg PATH] [--keep]\n"
                   "  --store URL a SQLite file path (default: one in a temporary directory),\n"
                   "              redis://host:port[/db], or postgres[ql]://user@host:port/db\n"
                   "  --svg PATH  where to write the SVG timeline (default ./cluster-demo.svg)\n"
                   "  --keep      keep the temporary directory with the SQLite file\n");
      return 2;
    }
  }
  return demo::run_orchestrator(argv[0], svg, keep, store);
}
