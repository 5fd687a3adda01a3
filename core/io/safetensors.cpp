#include "forja/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "forja/error.h"
#include "forja/file_util.h"

namespace forja::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct DTypeEntry {
  DType dtype;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeEntry, 15> kDTypes{{{DType::BOOL, "BOOL", 1},   {DType::U8, "U8", 1},
                                               {DType::I8, "I8", 1},       {DType::I16, "I16", 2},
                                               {DType::U16, "U16", 2},     {DType::F16, "F16", 2},
                                               {DType::BF16, "BF16", 2},   {DType::I32, "I32", 4},
                                               {DType::U32, "U32", 4},     {DType::F32, "F32", 4},
                                               {DType::F64, "F64", 8},     {DType::I64, "I64", 8},
                                               {DType::U64, "U64", 8},     {DType::F8_E4M3, "F8_E4M3", 1},
                                               {DType::F8_E5M2, "F8_E5M2", 1}}};

const DTypeEntry& entry(DType d) {
  for (const auto& e : kDTypes)
    if (e.dtype == d) return e;
  throw Error("internal: unknown dtype");
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

[[noreturn]] void bad(const std::string& path, const std::string& problem) {
  throw_file_error(path, problem, "The file is not a valid safetensors checkpoint; download or export it again.");
}

}  // namespace

size_t dtype_size(DType dtype) { return entry(dtype).size; }
std::string_view dtype_name(DType dtype) { return entry(dtype).name; }
std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& e : kDTypes)
    if (e.name == name) return e.dtype;
  return std::nullopt;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::shared_ptr<MappedFile> MappedFile::open(const fs::path& path) {
  // O_NONBLOCK so that a FIFO in place of the file cannot block the open before the regular-file check;
  // it changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw_file_error(path.string(), std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw_file_error(path.string(), std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_file_error(path.string(), "not a regular file");
  }
  std::shared_ptr<MappedFile> m(new MappedFile());
  m->path_ = path;
  m->size_ = static_cast<size_t>(st.st_size);
  if (m->size_ > 0) {
    // MAP_PRIVATE: a stray write lands in a private copy, never in the user's checkpoint.
    void* p = ::mmap(nullptr, m->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw_file_error(path.string(), std::string("cannot map into memory: ") + std::strerror(err));
    }
    m->data_ = static_cast<uint8_t*>(p);
  }
  ::close(fd);
  return m;
}

void release_pages(const void* p, size_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin) return;
  // /proc/self/pagemap: one 64-bit entry per page; bit 63 present, bit 61 a file (or shared) page. Only those
  // are let go (MADV_DONTNEED): the next touch maps the same file page again, and the page cache keeps it. A
  // page written through the private mapping is anonymous now and stays.
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  constexpr uint64_t kPresent = uint64_t{1} << 63, kFilePage = uint64_t{1} << 61;
  std::array<uint64_t, 4096> entries;
  uintptr_t run = 0;  // start of the current run of file pages, 0 when none
  auto flush = [&](uintptr_t to) {
    if (run != 0) ::madvise(reinterpret_cast<void*>(run), to - run, MADV_DONTNEED);
    run = 0;
  };
  uintptr_t at = begin;
  while (at < end) {
    const size_t count = std::min<size_t>(entries.size(), (end - at) / page);
    const off_t offset = static_cast<off_t>(at / page * sizeof(uint64_t));
    const ssize_t got = ::pread(fd, entries.data(), count * sizeof(uint64_t), offset);
    if (got <= 0) break;
    for (size_t i = 0; i < static_cast<size_t>(got) / sizeof(uint64_t); ++i, at += page) {
      const bool file_page = (entries[i] & kPresent) && (entries[i] & kFilePage);
      if (file_page && run == 0) run = at;
      if (!file_page) flush(at);
    }
  }
  flush(at);
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

SafetensorsFile SafetensorsFile::open(const fs::path& path) { return parse(MappedFile::open(path), path.string()); }

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<MappedFile> mapping, const std::string& path) {
  const uint64_t file_size = mapping->size();
  if (file_size < 8) bad(path, "too small to be a safetensors file (" + std::to_string(file_size) + " bytes)");
  const uint64_t header_len = read_u64_le(mapping->data());
  if (header_len > kMaxHeaderBytes)
    bad(path, "header length " + std::to_string(header_len) + " exceeds the " + std::to_string(kMaxHeaderBytes) +
         "-byte limit (corrupt file?)");
  if (header_len > file_size - 8)
    bad(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
         std::to_string(file_size) + " bytes): the file is truncated");
  const char* hbegin = reinterpret_cast<const char*>(mapping->data() + 8);
  json header;
  try {
    header = json::parse(hbegin, hbegin + header_len);
  } catch (const json::exception& e) {
    bad(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) bad(path, "header is not a JSON object");

  SafetensorsFile f;
  f.path_ = path;
  f.data_ = mapping->data() + 8 + header_len;
  f.data_size_ = file_size - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) bad(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) bad(path, "__metadata__ value for '" + m.key() + "' is not a string");
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "': ";
    if (!v.is_object()) bad(path, where + "entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) bad(path, where + "missing or non-string \"dtype\"");
    if (!v.contains("shape") || !v["shape"].is_array()) bad(path, where + "missing or non-array \"shape\"");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      bad(path, where + "\"data_offsets\" must be [begin, end]");
    TensorInfo t;
    t.name = key;
    auto dt = parse_dtype(v["dtype"].get<std::string>());
    if (!dt) bad(path, where + "unknown dtype \"" + v["dtype"].get<std::string>() + "\"");
    t.dtype = *dt;
    uint64_t numel = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) bad(path, where + "shape entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) bad(path, where + "shape overflows");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    for (const auto& o : v["data_offsets"])
      if (!o.is_number_unsigned()) bad(path, where + "data_offsets must be non-negative integers");
    t.begin = v["data_offsets"][0].get<uint64_t>();
    t.end = v["data_offsets"][1].get<uint64_t>();
    if (t.end < t.begin) bad(path, where + "data_offsets end before they begin");
    const uint64_t esz = dtype_size(t.dtype);
    if (numel > std::numeric_limits<uint64_t>::max() / esz) bad(path, where + "shape overflows");
    if (t.end - t.begin != numel * esz)
      bad(path, where + "data_offsets span " + std::to_string(t.end - t.begin) + " bytes but " +
           std::string(dtype_name(t.dtype)) + " with this shape needs " + std::to_string(numel * esz));
    if (t.end > f.data_size_)
      bad(path, where + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
           "] go past the end of the data (" + std::to_string(f.data_size_) + " bytes): the file is truncated");
    f.tensors_.push_back(std::move(t));
  }
  // The buffer must be covered exactly: sorted by offset, each tensor starts where the previous one ended.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : f.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t pos = 0;
  for (const TensorInfo* t : by_offset) {
    if (t->begin < pos) bad(path, "tensor '" + t->name + "' overlaps the tensor before it");
    if (t->begin > pos) bad(path, "a gap of " + std::to_string(t->begin - pos) + " bytes before tensor '" + t->name + "'");
    pos = t->end;
  }
  if (pos != f.data_size_)
    bad(path, std::to_string(f.data_size_ - pos) + " bytes after the last tensor are not part of any tensor");
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  f.mapping_ = std::move(mapping);
  return f;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return (it != tensors_.end() && it->name == name) ? &*it : nullptr;
}

const TensorInfo& SafetensorsFile::at(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (!t) throw_file_error(path_.string(), "has no tensor '" + std::string(name) + "'");
  return *t;
}

std::span<const uint8_t> SafetensorsFile::bytes(const TensorInfo& t) const {
  return {data_ + t.begin, static_cast<size_t>(t.end - t.begin)};
}

std::string serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) throw Error("safetensors writer: tensor '" + t.name + "' has a negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * dtype_size(t.dtype) != t.data.size())
      throw Error("safetensors writer: tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
                  " bytes but its shape needs " + std::to_string(numel * dtype_size(t.dtype)));
    if (header.contains(t.name)) throw Error("safetensors writer: tensor '" + t.name + "' given twice");
    header[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + h.size() + offset);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += h;
  for (const auto& t : tensors) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

void write_safetensors(const fs::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata));
}

}  // namespace forja::io
