// Output files: atomic replacement of regular files, write-through for devices, FIFOs and sockets,
// symlinks resolved, directories refused (see safe_output.h).
#include "core/safe_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mplan {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool under_special_tree(const std::string& p) { return p.rfind("/dev/", 0) == 0 || p.rfind("/proc/", 0) == 0; }

// Follows symbolic links of the last component (also dangling ones, so that writing through a link
// to a file that does not exist yet creates that file). Returns "" when the chain is too long.
std::string resolve_links(std::string path) {
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return path;
    std::string target(buf, size_t(n));
    path = target.empty() || target[0] == '/' ? target : dir_of(path) + "/" + target;
  }
  return "";
}

std::string write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // a FIFO opened non-blocking whose reader is slow: wait a little
      ::usleep(1000);
      continue;
    }
    if (n <= 0) return path + ": write failed (" + (n < 0 ? errno_text() : std::string("no progress")) + ")";
    off += size_t(n);
  }
  return {};
}

// Devices, FIFOs, sockets: open the path itself and write into it (no temporary file, no rename).
std::string write_through(const std::string& path, std::string_view bytes, bool fifo) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (fifo && errno == ENXIO) return path + ": a FIFO with no reader; start the reader first, or give a file name";
    return path + ": cannot open for writing (" + errno_text() + ")";
  }
  std::string err = write_all(fd, bytes, path);
  if (::close(fd) != 0 && err.empty() && errno != EINVAL) err = path + ": close failed (" + errno_text() + ")";
  return err;
}

std::string temp_name(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  return target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Regular files and new names: temp file beside the target, fsync, rename over it.
std::string write_atomic(const std::string& target, std::string_view bytes, const struct stat* old) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = temp_name(target);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return target + ": cannot write (" + errno_text() + ")";
  std::string err = write_all(fd, bytes, target);
  if (err.empty() && old) ::fchmod(fd, old->st_mode & 07777);  // keep the replaced file's permissions
  if (err.empty() && ::fsync(fd) != 0) err = target + ": fsync failed (" + errno_text() + ")";
  if (::close(fd) != 0 && err.empty()) err = target + ": close failed (" + errno_text() + ")";
  if (err.empty() && std::rename(tmp.c_str(), target.c_str()) != 0) err = target + ": cannot replace (" + errno_text() + ")";
  if (!err.empty()) ::unlink(tmp.c_str());
  return err;
}

enum class Kind { missing, regular, through, fifo, directory, error };

struct Target {
  Kind kind = Kind::error;
  std::string path;     // what is written (links resolved for regular files and new names)
  std::string message;  // for directory / error
  struct stat st {};
};

Target classify(const std::string& path) {
  Target t;
  t.path = path;
  if (path.empty()) {
    t.message = "empty output path; give a file name";
    return t;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {  // follows links: what the path names in the end
    t.st = st;
    if (S_ISDIR(st.st_mode)) {
      t.kind = Kind::directory;
      t.message = path + ": is a directory; give a file name (e.g. " + (path.back() == '/' ? path : path + "/") + "out.json)";
      return t;
    }
    if (S_ISFIFO(st.st_mode)) {
      t.kind = Kind::fifo;
      return t;
    }
    if (!S_ISREG(st.st_mode) || under_special_tree(path)) {
      t.kind = Kind::through;
      return t;
    }
  } else if (errno != ENOENT) {
    t.message = path + ": cannot write (" + errno_text() + ")";
    return t;
  }
  std::string real = resolve_links(path);
  if (real.empty()) {
    t.message = path + ": too many levels of symbolic links";
    return t;
  }
  t.path = real;
  if (under_special_tree(real)) {
    t.kind = Kind::through;
    return t;
  }
  t.kind = ::stat(real.c_str(), &st) == 0 ? Kind::regular : Kind::missing;
  if (t.kind == Kind::missing) {
    struct stat dst {};
    std::string dir = dir_of(real);
    if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
      t.kind = Kind::error;
      t.message = path + ": the directory " + dir + " does not exist; create it first or give another path";
    }
  }
  return t;
}

}  // namespace

std::string check_output_path(const std::string& path) {
  if (path == "-") return {};
  Target t = classify(path);
  return t.kind == Kind::directory || t.kind == Kind::error ? t.message : std::string();
}

std::string write_output_file(const std::string& path, std::string_view bytes) {
  if (path == "-") {
    std::fflush(stdout);
    return write_all(STDOUT_FILENO, bytes, "standard output");
  }
  Target t = classify(path);
  switch (t.kind) {
    case Kind::directory:
    case Kind::error:
      return t.message;
    case Kind::fifo:
      return write_through(t.path, bytes, true);
    case Kind::through:
      return write_through(t.path, bytes, false);
    case Kind::regular:
      return write_atomic(t.path, bytes, &t.st);
    case Kind::missing:
      return write_atomic(t.path, bytes, nullptr);
  }
  return path + ": cannot write";
}

}  // namespace mplan
