// Small file helpers shared by the engine: whole-file reads and crash-safe writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace forja {

// Reads a whole file; throws forja::Error naming the path when it cannot.
std::string read_text_file(const std::filesystem::path& path);

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
