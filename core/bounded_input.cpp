// Bounded reading of regular input files and standard input (see bounded_input.h).
#include "core/bounded_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mplan {

namespace {

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  return buf;
}

std::string refuse(const std::string& path, mode_t m) {
  return path + ": is " + kind_of(m) + "; give a regular file (or - for standard input)";
}

// Reads at most max_bytes + 1 bytes, so that a file that grows past the cap is noticed.
bool read_capped(int fd, size_t max_bytes, std::string& out, std::string& err) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    out.append(buf, size_t(n));
    if (out.size() > max_bytes) {
      err = "larger than the " + mib(max_bytes) + " mplan reads";
      return false;
    }
  }
}

}  // namespace

std::string check_input_file(const std::string& path) {
  if (path == "-") return {};
  if (path.empty()) return "empty file name";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + ": cannot open (" + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return refuse(path, st.st_mode);
  return {};
}

std::optional<std::string> read_input_file(const std::string& path, size_t max_bytes, std::vector<std::string>& problems) {
  std::string out, err;
  if (path == "-") {
    if (!read_capped(STDIN_FILENO, max_bytes, out, err)) {
      problems.push_back("standard input: " + err);
      return std::nullopt;
    }
    return out;
  }
  if (path.empty()) {
    problems.push_back("empty file name; give a path");
    return std::nullopt;
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked before any read.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    problems.push_back(path + ": cannot open (" + std::strerror(errno) + ")");
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problems.push_back(path + ": cannot open (" + std::strerror(errno) + ")");
    ::close(fd);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    problems.push_back(refuse(path, st.st_mode));
    ::close(fd);
    return std::nullopt;
  }
  if (size_t(st.st_size) > max_bytes) {
    problems.push_back(path + ": " + mib(size_t(st.st_size)) + ", larger than the " + mib(max_bytes) +
                       " mplan reads; is this the right file?");
    ::close(fd);
    return std::nullopt;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  out.reserve(size_t(st.st_size));
  bool ok = read_capped(fd, max_bytes, out, err);
  ::close(fd);
  if (!ok) {
    problems.push_back(path + ": " +
                       (err.rfind("larger", 0) == 0 ? err + "; is this the right file?" : "read failed (" + err + ")"));
    return std::nullopt;
  }
  return out;
}

}  // namespace mplan
