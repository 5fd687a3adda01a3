#include "forja/file_util.h"

#include <fcntl.h>
#include <unistd.h>

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

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_file_error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw_file_error(path.string(), "read failed");
  return ss.str();
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
