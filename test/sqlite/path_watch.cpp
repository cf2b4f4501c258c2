// test/sqlite/path_watch.cpp — lease::detail::path_watch on real directories:
// quiet while no name on the store file's path comes or goes, and "changed"
// (once) for every way of making the path name another file, so that
// sqlite_store::check_file() may skip its stat() calls only when they would
// find the same inodes. The store-level consequences (the loss noticed,
// recorded, quarantined) are test/sqlite/replaced.cpp's and
// process_faults.cpp's, which run with the watch on.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/mount.h>
#include <sys/vfs.h>

#include "lease/store/sqlite/path_watch.hpp"
#include "sqlite/temp_dir.hpp"

namespace fs = std::filesystem;
using lease::detail::path_watch;

namespace {

void touch(const fs::path& p) { std::ofstream{p} << "x"; }

/// A directory `dir/d` holding jobs.db, jobs.db-wal and jobs.db-shm, watched.
struct watched_store_files {
  lease::testing::temp_dir top;
  fs::path dir = top.path() / "d";
  std::string file = (dir / "jobs.db").string();
  path_watch w;

  watched_store_files() {
    fs::create_directory(dir);
    for (const char* suffix : {"", "-wal", "-shm"}) touch(file + suffix);
    const bool started = w.start(file);
    // On ext4 or tmpfs (every directory from / down) the watch must start;
    // elsewhere the store stat()s, and these tests have nothing to test.
    if (local_all_the_way(dir)) REQUIRE(started);
    else if (!started) WARN("path_watch does not watch " << file << " on this file system: its tests are skipped");
  }

  static bool local_all_the_way(fs::path p) {
    for (;; p = p.parent_path()) {
      struct ::statfs s {};
      if (::statfs(p.c_str(), &s) != 0) return false;
      const auto type = static_cast<std::uint32_t>(s.f_type);
      if (type != 0xEF53u && type != 0x01021994u) return false;  // ext2/3/4, tmpfs
      if (p == p.root_path()) return true;
    }
  }
};

}  // namespace

TEST_CASE("a watched path is quiet while no name on it comes or goes") {
  watched_store_files f;
  if (!f.w.active()) return;
  CHECK(f.w.quiet());
  CHECK(f.w.quiet());
  std::ofstream{f.file, std::ios::app} << "written in place";  // a write is not a replacement
  touch(f.dir / "neighbour.log");                              // nor a neighbour's file
  fs::remove(f.dir / "neighbour.log");
  touch(f.dir / "jobs.db-journal");                            // nor a rollback journal
  touch(f.top.path() / "beside-d");                           // nor a name beside a directory of the path
  CHECK(f.w.quiet());
  CHECK(f.w.active());
}

TEST_CASE("every way of making a watched path name another file is a change, told once") {
  watched_store_files f;
  if (!f.w.active()) return;
  SECTION("the file renamed over") {
    touch(f.dir / "backup.db");
    fs::rename(f.dir / "backup.db", f.file);
  }
  SECTION("the file deleted") { fs::remove(f.file); }
  SECTION("the file renamed away and back (a stat() later would see no change; the caller's stat() decides)") {
    fs::rename(f.file, f.dir / "aside");
    fs::rename(f.dir / "aside", f.file);
  }
  SECTION("the -wal deleted") { fs::remove(f.file + "-wal"); }
  SECTION("the -shm deleted and made again") {
    fs::remove(f.file + "-shm");
    touch(f.file + "-shm");
  }
  SECTION("the -wal created where there was none") {
    fs::remove(f.file + "-wal");
    REQUIRE_FALSE(f.w.quiet());
    touch(f.file + "-wal");
  }
  SECTION("a hard link made over the file (ln -f)") {
    touch(f.dir / "other.db");
    fs::remove(f.file);
    fs::create_hard_link(f.dir / "other.db", f.file);
  }
  CHECK_FALSE(f.w.quiet());
  CHECK(f.w.quiet());  // consumed: the caller has looked
}

TEST_CASE("a directory of a watched path moved, replaced or deleted is a change") {
  watched_store_files f;
  if (!f.w.active()) return;
  SECTION("the file's directory renamed away and made again") {
    fs::rename(f.dir, f.top.path() / "old");
    fs::create_directory(f.dir);
    touch(f.file);
    CHECK_FALSE(f.w.quiet());
  }
  SECTION("the file's directory replaced by a symlink to another") {
    fs::create_directory(f.top.path() / "v2");
    fs::rename(f.dir, f.top.path() / "v1");
    fs::create_directory_symlink(f.top.path() / "v2", f.dir);
    CHECK_FALSE(f.w.quiet());
  }
  SECTION("a directory above it renamed and the path made again (the file's directory moved with it, unaware)") {
    const fs::path above = f.top.path() / "above";
    fs::create_directories(above / "d");
    path_watch w;
    const fs::path deep = above / "d" / "jobs.db";
    touch(deep);
    REQUIRE(w.start(deep.string()));
    fs::rename(above, f.top.path() / "moved");
    fs::create_directories(above / "d");
    touch(deep);
    CHECK_FALSE(w.quiet());
  }
  SECTION("the file's directory deleted: the watch is lost, and says so from then on") {
    fs::remove_all(f.dir);
    CHECK_FALSE(f.w.quiet());
    CHECK_FALSE(f.w.active());
    fs::create_directory(f.dir);
    CHECK_FALSE(f.w.quiet());
  }
}

TEST_CASE("a path the watch cannot answer for is refused, so the store stat()s it every time") {
  lease::testing::temp_dir top;
  fs::create_directory(top.path() / "v1");
  touch(top.path() / "v1" / "jobs.db");
  fs::create_directory_symlink(top.path() / "v1", top.path() / "current");
  fs::create_symlink(top.path() / "v1" / "jobs.db", top.path() / "v1" / "link.db");
  path_watch w;
  if (!w.start((top.path() / "v1" / "jobs.db").string())) return;  // nothing is watched here (see above)
  CHECK_FALSE(w.start((top.path() / "current" / "jobs.db").string()));  // a directory symlink on the path
  CHECK_FALSE(w.start((top.path() / "v1" / "link.db").string()));       // the file a symlink
  touch(top.path() / "v1" / "side.db");
  fs::create_symlink(top.path() / "elsewhere-wal", top.path() / "v1" / "side.db-wal");
  CHECK_FALSE(w.start((top.path() / "v1" / "side.db").string()));  // its -wal a symlink
  CHECK_FALSE(w.start((top.path() / "v1" / ".." / "v1" / "jobs.db").string()));
  CHECK_FALSE(w.start((top.path() / "v1" / "." / "jobs.db").string()));
  CHECK_FALSE(w.start("v1/jobs.db"));  // relative
  CHECK_FALSE(w.start((top.path() / "v1" / "").string()));
  CHECK_FALSE(w.active());
  CHECK_FALSE(w.quiet());
  CHECK(w.start((top.path() / "v1" / "jobs.db").string()));  // and a good one after them
  CHECK(w.quiet());
}

TEST_CASE("a moved watch answers for its path, and the one moved from answers nothing") {
  watched_store_files f;
  if (!f.w.active()) return;
  path_watch moved = std::move(f.w);
  CHECK_FALSE(f.w.active());
  CHECK(moved.quiet());
  fs::remove(f.file + "-shm");
  CHECK_FALSE(moved.quiet());
}

TEST_CASE("a file system mounted over a directory of a watched path is a change") {
  watched_store_files f;
  if (!f.w.active()) return;
  if (::mount("lease-test", f.dir.c_str(), "tmpfs", 0, nullptr) != 0) {
    WARN("cannot mount here (" << std::strerror(errno) << "): what a mount does to the watch is not tested");
    return;
  }
  const bool quiet = f.w.quiet();
  ::umount(f.dir.c_str());
  CHECK_FALSE(quiet);
  CHECK_FALSE(f.w.active());  // the path may go through other directories now: the caller starts it again
  CHECK_FALSE(f.w.quiet());
  REQUIRE(f.w.start(f.file));
  CHECK(f.w.quiet());
}

TEST_CASE("a watch whose queue overflowed answers changed and stops: an event of the path may be among those dropped") {
  watched_store_files f;
  if (!f.w.active()) return;
  std::uint32_t queued = 16384;  // fs.inotify.max_queued_events, by default
  if (std::ifstream limit{"/proc/sys/fs/inotify/max_queued_events"}; limit) limit >> queued;
  if (queued > 200000) return;  // too many to overflow in a test
  for (std::uint32_t i = 0; i <= queued / 2 + 1; ++i) {  // two events each: created, deleted
    touch(f.file + "-journal");  // not a name the watch answers for, but queued all the same
    fs::remove(f.file + "-journal");
  }
  CHECK_FALSE(f.w.quiet());
  CHECK_FALSE(f.w.active());
}
