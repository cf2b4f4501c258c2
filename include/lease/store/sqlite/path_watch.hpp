// lease/store/sqlite/path_watch.hpp — has any name on the path of the open
// store file changed since the last look? One poll() with a zero timeout,
// where sqlite_store::check_file() would otherwise stat() the file, its -wal
// and its -shm before every operation (three path lookups, ~1 us each on a
// small VM, against a whole raw heartbeat transaction of ~4 us).
//
// What it watches, with inotify (Linux): the file's directory for its three
// names entering or leaving it (created, deleted, moved in or out); every
// directory from / down to it for being moved or deleted itself; and the
// mount table (/proc/self/mounts signals a change with POLLPRI). Every way
// of making the path name another file than the one SQLite has open goes
// through one of these: a rename over or an unlink of the file, its -wal or
// its -shm; a directory of the path moved or deleted (a directory cannot be
// replaced without being moved or deleted first, since it is not empty, and
// each directory on the path is watched); a file system mounted or
// unmounted on the path. So when nothing came in, the stat() calls would
// have found the same inodes, and are skipped; when anything did, the
// caller stat()s as before, which decides (a name that left and came back
// is harmless). Names coming and going beside the path (in /tmp, say) raise
// no event at all.
//
// Why it is as strong as the stat() calls it replaces: the kernel queues an
// inotify event inside the rename(), unlink() or mkdir() that causes it,
// before that call returns, and a mount change before mount() returns; an
// operation that starts after another process replaced the file therefore
// finds the event, as a stat() would have found the new inode. (Neither
// sees a replacement in the microseconds between the check and the
// operation's write; the next operation does.) A poll() that failed
// answers "changed". A queue that overflowed (an event of ours may be among
// those dropped), a watch the kernel dropped, or a change of the mount
// table (the path may now go through other directories than the watched
// ones) answers "changed" and stops the watch: the caller stat()s from then
// on, and may start() it again, before its next stat().
//
// Where it is not used (sqlite_store stat()s every time, as before): a path
// with a symlink, "." or ".." in it (the names that matter would be other
// directories' names), a directory on a file system whose changes inotify
// may not hear of (NFS, CIFS, FUSE: another host's rename raises no event;
// only ext2/3/4, XFS, tmpfs and overlayfs are trusted; overlayfs sees every
// change made through it, and writing into its layers behind its back is
// undefined behaviour of its own; not Btrfs, where deleting a subvolume
// removes a directory that still holds files, telling only its parent), or
// a process that cannot get an inotify instance or a watch
// (fs.inotify.max_user_instances, 128 per user by default, or
// max_user_watches reached; /proc not mounted).
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace lease::detail {

class path_watch {
 public:
  path_watch() = default;
  path_watch(path_watch&& o) noexcept
      : inotify_(std::exchange(o.inotify_, -1)),
        mounts_(std::exchange(o.mounts_, -1)),
        file_wd_(o.file_wd_),
        file_name_(std::move(o.file_name_)) {}
  path_watch& operator=(path_watch&& o) noexcept {
    if (this != &o) {
      stop();
      inotify_ = std::exchange(o.inotify_, -1);
      mounts_ = std::exchange(o.mounts_, -1);
      file_wd_ = o.file_wd_;
      file_name_ = std::move(o.file_name_);
    }
    return *this;
  }
  path_watch(const path_watch&) = delete;
  path_watch& operator=(const path_watch&) = delete;
  ~path_watch() { stop(); }

  /// Watches the path of `file` (absolute) and its -wal and -shm; true if
  /// quiet() can now answer for them. False, watching nothing, where it
  /// cannot (the header's list): the caller checks by stat() every time.
  /// Call it before the stat() that records which inodes the caller has
  /// open: a change after start() is never missed, one before it is the
  /// caller's stat() to see.
  bool start(std::string_view file) {
    stop();
    std::vector<std::string_view> names;  // the path's components, the file last
    if (!file.starts_with('/')) return false;
    for (std::size_t at = 1; at <= file.size();) {
      const std::size_t end = std::min(file.find('/', at), file.size());
      const std::string_view name = file.substr(at, end - at);
      if (name.empty() || name == "." || name == "..") return false;
      names.push_back(name);
      at = end + 1;
    }
    if (names.empty()) return false;
    inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    mounts_ = ::open("/proc/self/mounts", O_RDONLY | O_CLOEXEC);
    if (inotify_ < 0 || mounts_ < 0) return fail();
    // Each directory from / down, not followed if it is a symlink
    // (IN_DONT_FOLLOW | IN_ONLYDIR: the watch is refused). One replaced
    // before its watch is in place is the caller's stat() to see (start()'s
    // comment); one replaced after is moved or deleted under its watch.
    std::string dir = "/";
    for (std::size_t i = 0; i < names.size(); ++i) {
      const bool last = i + 1 == names.size();
      const int wd = ::inotify_add_watch(inotify_, dir.c_str(), last ? names_events : self_events);
      struct ::statfs fs {};
      if (wd < 0 || ::statfs(dir.c_str(), &fs) != 0 || !trusted(fs)) return fail();
      if (last) {
        file_wd_ = wd;
        file_name_ = names[i];
      } else {
        dir += (i == 0 ? "" : "/") + std::string(names[i]);
      }
    }
    // The file itself, and its -wal and -shm if there: a symlink would make
    // its target's directory the one to watch.
    struct ::stat st {};
    const std::string path(file);
    if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return fail();
    for (const char* side : {"-wal", "-shm"})
      if (::lstat((path + side).c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return fail();
    return true;
  }

  /// Stops watching (quiet() answers false).
  void stop() noexcept {
    if (inotify_ >= 0) ::close(inotify_);
    if (mounts_ >= 0) ::close(mounts_);
    inotify_ = mounts_ = -1;
  }

  /// Watching (start() succeeded and no watch was lost since).
  [[nodiscard]] bool active() const noexcept { return inotify_ >= 0; }

  /// True: none of the file's names entered or left its directory, no
  /// directory of the path was moved or deleted, no event was dropped, and
  /// the mount table did not change, since start() or the previous call
  /// (one poll(), no path lookup). False: something may have; stat() to
  /// know. Events are consumed: a change of a name answers false once (the
  /// caller must not forget it before its stat() has answered); a watch
  /// lost, an overflow or a mount answers false from then on (active() is
  /// false) until start() again.
  [[nodiscard]] bool quiet() {
    if (inotify_ < 0) return false;
    std::array<::pollfd, 2> p{{{inotify_, POLLIN, 0}, {mounts_, POLLPRI, 0}}};
    const int n = ::poll(p.data(), p.size(), 0);
    if (n == 0) return true;
    if (n < 0) return false;  // EINTR, ENOMEM: look the slow way this time
    if (p[1].revents & (POLLPRI | POLLERR | POLLHUP | POLLNVAL)) return lost();  // the mount table changed
    if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return lost();
    return drain();
  }

 private:
  /// A directory above the file's: moved or deleted.
  static constexpr std::uint32_t self_events = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;
  /// The file's directory: that, and a name entering or leaving it.
  static constexpr std::uint32_t names_events = self_events | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;

  /// File systems on which every change of a name raises an inotify event
  /// on this host (their statfs magic numbers, linux/magic.h).
  static bool trusted(const struct ::statfs& fs) noexcept {
    switch (static_cast<std::uint32_t>(fs.f_type)) {
      case 0xEF53u:      // ext2, ext3, ext4
      case 0x58465342u:  // XFS
      case 0x01021994u:  // tmpfs
      case 0x794C7630u:  // overlayfs
        return true;
      default:
        return false;
    }
  }

  bool fail() noexcept {
    stop();
    return false;
  }

  /// A watch is gone (its directory deleted or unmounted) or the instance
  /// failed: nothing can be answered any more; the caller stat()s from now on.
  bool lost() noexcept {
    stop();
    return false;
  }

  /// Reads every queued event; true if none concerns a watched name.
  bool drain() {
    alignas(::inotify_event) char buf[4096];
    bool quiet = true;
    for (;;) {
      const ::ssize_t n = ::read(inotify_, buf, sizeof buf);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return quiet;
        if (errno == EINTR) continue;
        return lost();
      }
      if (n == 0) return lost();
      for (std::size_t at = 0; at + sizeof(::inotify_event) <= static_cast<std::size_t>(n);) {
        const auto* e = reinterpret_cast<const ::inotify_event*>(buf + at);
        at += sizeof(::inotify_event) + e->len;
        // Events were dropped (any of them may have been a directory of the
        // path moving), or a watched directory is gone from its place: no
        // watch answers for the path now.
        if (e->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) return lost();
        if (e->wd == file_wd_ && e->len > 0 && concerns(e->name)) quiet = false;
      }
    }
  }

  /// A name in the file's directory that is the file, its -wal or its -shm.
  bool concerns(std::string_view name) const noexcept {
    if (!name.starts_with(file_name_)) return false;
    const std::string_view suffix = name.substr(file_name_.size());
    return suffix.empty() || suffix == "-wal" || suffix == "-shm";
  }

  int inotify_ = -1;
  int mounts_ = -1;
  int file_wd_ = -1;       ///< the watch of the file's directory
  std::string file_name_;  ///< the file's name in it
};

}  // namespace lease::detail
