// test/sqlite/faulty_vfs.hpp — a SQLite VFS ("lease-faulty") over the real
// one that fails writes to WAL files on demand, to test what the store does
// when the disk fails at commit time, or that opens a main database file
// read-only as the unix VFS does when it may not write it (EACCES: a file
// restored by root, which a test running as root cannot make). Open a store
// on it with a URI:
// "file:/path/jobs.db?vfs=lease-faulty". Not a mock of SQLite: every call goes
// to the real VFS and file except the writes it is told to fail and the opens
// it is told to make read-only.
#pragma once

#include <sqlite3.h>

#include <atomic>

namespace lease::testing::faulty_vfs {

/// While true, every write to a WAL file fails with SQLITE_IOERR_WRITE.
inline std::atomic<bool> fail_wal_writes{false};
/// While true, every write to a WAL file fails with SQLITE_FULL, as the unix
/// VFS answers a write that meets ENOSPC (a full disk at commit time).
inline std::atomic<bool> wal_disk_full{false};
/// While true, every read of the database or its WAL fails with
/// SQLITE_IOERR_READ (before anything is written).
inline std::atomic<bool> fail_reads{false};
/// While true, a main database file opened read-write is opened read-only
/// instead, and SQLite is told so (*out): the real VFS's fallback when the
/// file is not writable, which SQLite then serves silently.
inline std::atomic<bool> open_main_read_only{false};

/// Every fault off again when it goes out of scope: a test that fails while
/// one is on does not fail the tests after it.
struct faults_off_at_scope_end {
  faults_off_at_scope_end() = default;
  faults_off_at_scope_end(const faults_off_at_scope_end&) = delete;
  faults_off_at_scope_end& operator=(const faults_off_at_scope_end&) = delete;
  ~faults_off_at_scope_end() {
    fail_wal_writes = false;
    wal_disk_full = false;
    fail_reads = false;
    open_main_read_only = false;
  }
};

namespace detail {

struct file {
  sqlite3_file base;   // must be first: SQLite sees this
  sqlite3_file* real;  // the real VFS's file, stored right after this struct
  bool is_wal;
};

inline sqlite3_vfs* real_vfs() { return sqlite3_vfs_find(nullptr); }
inline sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<file*>(f)->real; }

inline int x_close(sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); }
inline int x_read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
  if (fail_reads.load()) return SQLITE_IOERR_READ;
  return real(f)->pMethods->xRead(real(f), b, n, o);
}
inline int x_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
  if (reinterpret_cast<file*>(f)->is_wal && fail_wal_writes.load()) return SQLITE_IOERR_WRITE;
  if (reinterpret_cast<file*>(f)->is_wal && wal_disk_full.load()) return SQLITE_FULL;
  return real(f)->pMethods->xWrite(real(f), b, n, o);
}
inline int x_truncate(sqlite3_file* f, sqlite3_int64 s) { return real(f)->pMethods->xTruncate(real(f), s); }
inline int x_sync(sqlite3_file* f, int fl) { return real(f)->pMethods->xSync(real(f), fl); }
inline int x_size(sqlite3_file* f, sqlite3_int64* s) { return real(f)->pMethods->xFileSize(real(f), s); }
inline int x_lock(sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); }
inline int x_unlock(sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); }
inline int x_reserved(sqlite3_file* f, int* r) { return real(f)->pMethods->xCheckReservedLock(real(f), r); }
inline int x_control(sqlite3_file* f, int op, void* a) { return real(f)->pMethods->xFileControl(real(f), op, a); }
inline int x_sector(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
inline int x_device(sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); }
inline int x_shm_map(sqlite3_file* f, int i, int sz, int ext, void volatile** p) {
  return real(f)->pMethods->xShmMap(real(f), i, sz, ext, p);
}
inline int x_shm_lock(sqlite3_file* f, int off, int n, int fl) { return real(f)->pMethods->xShmLock(real(f), off, n, fl); }
inline void x_shm_barrier(sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); }
inline int x_shm_unmap(sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); }
inline int x_fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return real(f)->pMethods->xFetch(real(f), o, n, p); }
inline int x_unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) { return real(f)->pMethods->xUnfetch(real(f), o, p); }

inline const sqlite3_io_methods methods = {
    3,          x_close,     x_read,       x_write,    x_truncate,    x_sync,       x_size,
    x_lock,     x_unlock,    x_reserved,   x_control,  x_sector,      x_device,     x_shm_map,
    x_shm_lock, x_shm_barrier, x_shm_unmap, x_fetch,   x_unfetch};

inline int x_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
  auto* w = reinterpret_cast<file*>(f);
  w->real = reinterpret_cast<sqlite3_file*>(w + 1);
  w->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
  const bool read_only = (flags & SQLITE_OPEN_MAIN_DB) != 0 && (flags & SQLITE_OPEN_READWRITE) != 0 &&
                         open_main_read_only.load();
  if (read_only) flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
  const int rc = real_vfs()->xOpen(real_vfs(), name, w->real, flags, out);
  if (read_only && rc == SQLITE_OK && out != nullptr) *out = flags;
  // Only a file the real VFS opened (it set pMethods) is closed later.
  f->pMethods = w->real->pMethods != nullptr ? &methods : nullptr;
  return rc;
}

}  // namespace detail

/// Registers the VFS once (not as the default); returns its name.
inline const char* install() {
  static sqlite3_vfs vfs = [] {
    sqlite3_vfs v = *detail::real_vfs();
    v.zName = "lease-faulty";
    v.szOsFile = static_cast<int>(sizeof(detail::file)) + detail::real_vfs()->szOsFile;
    v.xOpen = detail::x_open;
    v.pNext = nullptr;
    return v;
  }();
  // SQLite keeps a pointer to the object it registers: a static one.
  static const bool registered = [] { return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK; }();
  (void)registered;
  return vfs.zName;
}

}  // namespace lease::testing::faulty_vfs
