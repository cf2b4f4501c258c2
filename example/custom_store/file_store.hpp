// example/custom_store/file_store.hpp — a Store of your own: the whole table
// of runs in one file, shared by every process on one host.
//
// How it keeps the store rules (doc/store-rules.md): each operation takes an
// exclusive flock() on `<path>.lock`, reads the table from the file, applies
// the library's pure rules (lease::rules), writes the table to `<path>.tmp`
// and renames it over the file, and lets the lock go. The lock makes each
// operation atomic across processes; the rename makes a crash mid-write
// leave the old table, never half a new one (durability on power loss would
// also need fsync: left out to keep the example short).
//
// A lost file: the file records a random store id. A store object that has
// seen one id and then finds no file, or another id, knows the state is gone
// (someone deleted or replaced it) and applies rules::lose_state at its
// clock's now — the quarantine that keeps a forgotten run from starting
// twice. A file seen for the first time is no evidence of a loss.
//
// The clock is a caller-supplied function (the conformance suite passes a
// fake_clock); by default the host's wall clock.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <lease/clock/system.hpp>
#include <lease/error.hpp>
#include <lease/rules.hpp>
#include <lease/store/concept.hpp>

namespace example {

class file_store {
 public:
  using clock_fn = std::function<lease::time_point()>;

  explicit file_store(std::string path, clock_fn clock = [] { return lease::system_clock{}.now(); })
      : path_(std::move(path)), clock_(std::move(clock)) {
    // Open the store now: from here on, a file deleted or replaced under
    // this object is a loss it can see.
    (void)apply([](lease::rules::run_table&, lease::time_point) { return 0; });
  }

  lease::claim_result claim(const lease::claim_request& req) {
    return apply([&](lease::rules::run_table& t, lease::time_point now) { return lease::rules::claim(t, req, now); });
  }
  bool heartbeat(const lease::run_key& run, std::string_view token, lease::duration lease) {
    return apply([&](auto& t, auto now) { return lease::rules::heartbeat(t, run, token, lease, now); });
  }
  bool finish(const lease::run_key& run, std::string_view token, lease::run_status status) {
    return apply([&](auto& t, auto now) { return lease::rules::finish(t, run, token, status, now); });
  }
  bool release(const lease::run_key& run, std::string_view token) {
    return apply([&](auto& t, auto now) { return lease::rules::release(t, run, token, now); });
  }
  std::vector<lease::run_record> unfinished(std::string_view job) {
    return apply([&](auto& t, auto) { return lease::rules::unfinished(t, job); });
  }
  std::optional<lease::run_record> get(const lease::run_key& run) {
    return apply([&](auto& t, auto) { return lease::rules::get(t, run); });
  }
  [[nodiscard]] lease::time_point now() const { return clock_(); }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  /// One atomic operation: lock, read, apply `op` at now, write if changed.
  template <class Op>
  std::invoke_result_t<Op&, lease::rules::run_table&, lease::time_point> apply(Op op) {
    const int lock = ::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0) fail("cannot open the lock file " + path_ + ".lock");
    struct unlock {
      int fd;
      ~unlock() { ::close(fd); }  // closing releases the flock
    } guard{lock};
    if (::flock(lock, LOCK_EX) != 0) fail("cannot lock " + path_ + ".lock");
    const lease::time_point now = clock_();
    std::optional<std::string> id;
    lease::rules::run_table table = read(id);
    const lease::rules::run_table before = table;
    bool changed = false;
    if (seen_id_ && id != seen_id_) {
      // The file we knew is gone or replaced: whatever it held is lost.
      lease::rules::lose_state(table, now);
      if (before.lost_at && *before.lost_at > now) table.lost_at = before.lost_at;  // a later loss wins
      changed = true;
    }
    if (!id) {
      id = new_id();
      changed = true;
    }
    seen_id_ = id;
    auto result = op(table, now);
    if (changed || table != before) write(table, *id);
    return result;
  }

  [[noreturn]] static void fail(const std::string& what) {
    throw lease::store_error(lease::make_error_code(lease::errc::unavailable), "file_store: " + what);
  }

  static std::string hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out = "x";  // never empty, so every field is one token
    for (unsigned char c : bytes) {
      out += digits[c >> 4];
      out += digits[c & 15];
    }
    return out;
  }
  static std::string unhex(const std::string& text) {
    std::string out;
    for (std::size_t i = 1; i + 1 < text.size(); i += 2)
      out += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
    return out;
  }
  static std::string new_id() {
    std::random_device rd;
    return std::to_string(rd()) + "-" + std::to_string(rd());
  }

  /// The table in the file (empty if there is no file); `id` its store id.
  lease::rules::run_table read(std::optional<std::string>& id) const {
    lease::rules::run_table t;
    std::ifstream in(path_);
    if (!in) return t;
    std::string line;
    std::optional<std::string> job;  // the job whose runs follow
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string kind;
      f >> kind;
      if (kind == "store") {
        std::string v;
        f >> v;
        id = v;
      } else if (kind == "lost") {
        long long ms = 0;
        f >> ms;
        t.lost_at = lease::time_point{lease::duration{ms}};
      } else if (kind == "job") {
        std::string name;
        std::uint64_t fence = 0;
        f >> name >> fence;
        job = unhex(name);
        t.jobs[*job].fence = fence;
      } else if (kind == "run" && job) {
        lease::run_record r;
        long long slot = 0, lease_end = 0;
        std::string token, runner;
        int status = 0, released = 0;
        f >> slot >> r.attempt >> token >> r.fence >> runner >> status >> lease_end >> released >> r.handovers;
        if (!f) throw lease::store_error(lease::make_error_code(lease::errc::corrupt), "file_store: bad line in " + path_);
        r.job = *job;
        r.slot = lease::time_point{lease::duration{slot}};
        r.token = unhex(token);
        r.runner = unhex(runner);
        r.status = static_cast<lease::run_status>(status);
        r.lease_end = lease::time_point{lease::duration{lease_end}};
        r.released = released != 0;
        t.jobs[*job].runs[r.slot] = r;
      }
    }
    return t;
  }

  void write(const lease::rules::run_table& t, const std::string& id) const {
    const std::string tmp = path_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << "store " << id << "\n";
      if (t.lost_at) out << "lost " << t.lost_at->time_since_epoch().count() << "\n";
      for (const auto& [name, js] : t.jobs) {
        out << "job " << hex(name) << " " << js.fence << "\n";
        for (const auto& [slot, r] : js.runs)
          out << "run " << slot.time_since_epoch().count() << " " << r.attempt << " " << hex(r.token) << " "
              << r.fence << " " << hex(r.runner) << " " << static_cast<int>(r.status) << " "
              << r.lease_end.time_since_epoch().count() << " " << (r.released ? 1 : 0) << " " << r.handovers
              << "\n";
      }
      if (!out.flush()) fail("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) fail("cannot rename " + tmp + " over " + path_);
  }

  std::string path_;
  clock_fn clock_;
  std::optional<std::string> seen_id_;  ///< the store id this object has seen
};

static_assert(lease::Store<file_store>);

}  // namespace example
