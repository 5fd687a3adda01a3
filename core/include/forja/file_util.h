// Small file helpers shared by the engine: whole-file reads and crash-safe writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace forja {

// Whole-file reads are parsed in memory (JSON, configs, datasets), which takes a few times the file's size:
// past 1 GiB that is better refused with a clear message than left to exhaust the machine's memory.
inline constexpr uint64_t kReadTextFileDefaultLimit = uint64_t(1) << 30;

// Reads a whole regular file of at most max_bytes; throws forja::Error naming the path when it cannot, when
// the path is not a regular file (a FIFO, /dev/zero) or when it is larger than max_bytes.
std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes = kReadTextFileDefaultLimit);

// Writes `data` to a temporary file beside `path`, fsyncs it, renames it over `path` and fsyncs the folder:
// a reader sees the old file or the new one, never half of either.
void write_file_atomic(const std::filesystem::path& path, std::string_view data);

// The same for a file written piece by piece (a model file too large to hold in memory): the pieces go to a
// temporary file beside `path`; commit() fsyncs it, renames it over `path` and fsyncs the folder. Destroyed
// without commit(), the temporary is removed and `path` stays as it was. Errors throw forja::Error naming
// `path`.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void append(std::string_view data);
  void commit();
  uint64_t written() const { return written_; }

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t written_ = 0;
};

// fsync a folder so that a rename inside it is durable.
void fsync_directory(const std::filesystem::path& dir);

}  // namespace forja
