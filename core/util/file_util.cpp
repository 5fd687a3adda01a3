#include "forja/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "forja/error.h"
#include "forja/fault.h"

namespace forja {
namespace fs = std::filesystem;

std::string read_text_file(const fs::path& path, uint64_t max_bytes) {
  // O_NONBLOCK so that a FIFO cannot block the open; the regular-file check below then refuses it (and
  // /dev/zero, which would never end).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw_file_error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw_file_error(path.string(), std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw_file_error(path.string(), "not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    throw_file_error(path.string(), "is too large to read whole (" + std::to_string(size) +
                                        " bytes; the limit is " + std::to_string(max_bytes) + ")");
  std::string out;
  out.resize(static_cast<size_t>(size));
  size_t got = 0;
  // The file may change under us: read until EOF, but never past the limit.
  for (;;) {
    if (got == out.size()) {
      if (out.size() >= max_bytes) {
        char probe = 0;
        ssize_t n = ::read(fd, &probe, 1);
        while (n < 0 && errno == EINTR) n = ::read(fd, &probe, 1);
        if (n > 0)
          throw_file_error(path.string(),
                           "grew past the limit of " + std::to_string(max_bytes) + " bytes while being read");
        break;
      }
      out.resize(
          static_cast<size_t>(std::min<uint64_t>(max_bytes, std::max<uint64_t>(4096, out.size() * 2))));
    }
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_file_error(path.string(), std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: some filesystems do not allow opening folders
  ::fsync(fd);
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(fs::path path) : path_(std::move(path)) {
  std::random_device rd;
  tmp_ = path_;
  tmp_ += ".tmp-" + std::to_string(rd());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_file_error(path_.string(), std::string("cannot create: ") + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::append(std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  // The crash tests' torn write: half of this piece reaches the temporary file, then the process dies.
  const bool torn = fault_points_armed() && fault_hit("write:" + path_.filename().string());
  if (torn) left /= 2;
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      throw_file_error(path_.string(), std::string("write failed: ") + std::strerror(err),
                       err == ENOSPC ? "Free some disk space and try again." : "");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (torn) fault_kill();
  written_ += data.size();
}

void AtomicFileWriter::commit() {
  const int fd = std::exchange(fd_, -1);
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    throw_file_error(path_.string(), std::string("fsync failed: ") + std::strerror(errno));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw_file_error(path_.string(), std::string("rename failed: ") + std::strerror(errno));
  committed_ = true;
  fsync_directory(path_.parent_path());
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  AtomicFileWriter out(path);
  out.append(data);
  out.commit();
}

}  // namespace forja
