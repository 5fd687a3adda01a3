// Small file helpers shared by the engine: whole-file reads and crash-safe writes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace forja {

// Reads a whole file; throws forja::Error naming the path when it cannot.
std::string read_text_file(const std::filesystem::path& path);

// Writes `data` to a temporary file beside `path`, fsyncs it, renames it over `path` and fsyncs the folder:
// a reader sees the old file or the new one, never half of either.
void write_file_atomic(const std::filesystem::path& path, std::string_view data);

// fsync a folder so that a rename inside it is durable.
void fsync_directory(const std::filesystem::path& dir);

}  // namespace forja
