#include "forja/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "forja/error.h"

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

void write_file_atomic(const fs::path& path, std::string_view data) {
  std::random_device rd;
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_file_error(path.string(), std::string("cannot create: ") + std::strerror(errno));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_file_error(path.string(), std::string("write failed: ") + std::strerror(err),
                       err == ENOSPC ? "Free some disk space and try again." : "");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_file_error(path.string(), std::string("fsync failed: ") + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_file_error(path.string(), std::string("rename failed: ") + std::strerror(err));
  }
  fsync_directory(path.parent_path());
}

}  // namespace forja
