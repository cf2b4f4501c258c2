// cluster_demo/demo.hpp — what the orchestrator records while the demo runs,
// and the three things it does with it: the checks, the summary, the SVG.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <lease/time.hpp>

#include "protocol.hpp"

namespace demo {

/// `cluster_demo instance <name> <store> <namespace>`: one scheduler process; returns its exit code.
int run_instance(const std::string& name, const std::string& store, const std::string& ns);

/// `cluster_demo [--store URL] [--svg PATH] [--keep]`: the scripted cluster;
/// an empty `store` is a SQLite file in the temporary directory. Returns the exit code.
int run_orchestrator(const std::string& self, const std::string& svg_path, bool keep_dir, const std::string& store);

/// Something the orchestrator did to a process.
struct fault {
  lease::time_point at{};
  std::string instance;
  std::string kind;  ///< start, kill, stop, cont, term, exit
  std::string text;  ///< e.g. "kill -9 api-2 (runner of 20:01:04 attempt 1)"
};

/// One life of an instance process, start to exit.
struct life {
  std::string instance;
  lease::time_point from{}, to{};
  bool ended = false;
  bool killed = false;  ///< by the orchestrator's kill -9
  int status = 0;       ///< waitpid status
};

/// A span during which an instance was frozen by SIGSTOP.
struct freeze {
  std::string instance;
  lease::time_point from{}, to{};
};

/// What the orchestrator's own connection saw of one attempt in the store.
struct sampled_attempt {
  lease::time_point lease_end{};  ///< the last lease end seen while running
  bool released = false;          ///< last seen released (handed over)
};

/// The verdict of one check.
struct check {
  enum class verdict : std::uint8_t { pass, fail, note };
  verdict v = verdict::pass;
  std::string name;
  std::string detail;
};

/// Everything the demo saw; filled by the orchestrator, read by the checks and the SVG.
struct history {
  lease::time_point t0{};  ///< when the orchestrator started
  lease::time_point t_end{};
  std::vector<line> lines;
  std::vector<fault> faults;
  std::vector<life> lives;
  std::vector<freeze> freezes;
  // The orchestrator samples the store every ~100 ms.
  std::size_t samples = 0;
  std::size_t max_live = 0;
  std::size_t sample_errors = 0;
  std::vector<std::string> overlaps;  ///< a description of every sample with two live leases
  std::map<std::pair<lease::time_point, std::uint32_t>, sampled_attempt> sampled;  ///< (slot, attempt)
  std::vector<check> checks;  ///< the scripted faults' own checks, in order
  /// Every run's record read back at the end: slot -> (attempt, handovers).
  std::map<lease::time_point, std::pair<std::uint32_t, std::uint32_t>> final_records;
};

/// One attempt as the events tell it: who ran it, from when to when, how it ended.
struct attempt_bar {
  std::string instance;
  lease::time_point slot{};
  std::uint32_t attempt = 0;
  std::uint64_t fence = 0;
  std::string how;  ///< won, takeover or catch_up
  lease::time_point from{}, to{};
  std::string outcome;  ///< success, failed, lost, handed_over, abandoned, killed, running
};

/// The attempts, in start order (used by the checks and the SVG).
std::vector<attempt_bar> attempts_of(const history& h);

/// The invariant checks over the whole history, after the scripted ones.
void check_invariants(history& h);

/// Writes the SVG timeline; throws std::runtime_error if the file cannot be written.
void write_svg(const history& h, const std::string& path);

}  // namespace demo
