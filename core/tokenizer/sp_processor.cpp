// SpProcessor: finds and opens libforja_sentencepiece once per process, then forwards every call to it.
#include "sp_processor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "forja/error.h"

namespace forja {
namespace {
namespace fs = std::filesystem;

using Sink = void (*)(void*, const int*, size_t);
using SpanSink = void (*)(void*, const int*, const unsigned*, const unsigned*, size_t);

struct ShimApi {
  void* (*load)(const char*, size_t, char*, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  int (*encode)(const void*, const char*, size_t, Sink, void*, char*, size_t) = nullptr;
  int (*encode_spans)(const void*, const char*, size_t, SpanSink, void*, char*, size_t) = nullptr;
  int (*piece_size)(const void*) = nullptr;
  const char* (*id_to_piece)(const void*, int, size_t*) = nullptr;
  int (*piece_to_id)(const void*, const char*, size_t) = nullptr;
  int (*special_id)(const void*, int) = nullptr;
  int (*is)(const void*, int, int) = nullptr;
  std::string path;
  std::string error;
};

constexpr const char* kShimName = "libforja_sentencepiece.so";

// The sanitizer runtimes refuse RTLD_DEEPBIND; a sanitizer build has no LibTorch, so no second protobuf to
// avoid.
#if defined(__SANITIZE_ADDRESS__)
#define FORJA_SP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORJA_SP_ASAN 1
#endif
#endif
#ifdef FORJA_SP_ASAN
constexpr int kOpenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kOpenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// Where to look, in order: FORJA_SENTENCEPIECE_SHIM, beside the executable and in ../lib/forja (an installed
// or relocated tree), the install directory, then the build tree this binary came from.
std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* v = std::getenv("FORJA_SENTENCEPIECE_SHIM"); v && *v) out.emplace_back(v);
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const fs::path dir = fs::path(std::string(exe, static_cast<size_t>(n))).parent_path();
    out.push_back(dir / kShimName);
    out.push_back(dir.parent_path() / "lib" / "forja" / kShimName);
  }
  out.push_back(fs::path(FORJA_SP_SHIM_INSTALL_DIR) / kShimName);
  out.push_back(fs::path(FORJA_SP_SHIM_BUILD_PATH));
  return out;
}

const ShimApi& api() {
  static ShimApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const fs::path& p : candidates()) {
      std::error_code ec;
      if (!fs::exists(p, ec)) {
        tried += (tried.empty() ? "" : ", ") + p.string();
        continue;
      }
      // LOCAL: its symbols (and sentencepiece's protobuf) stay out of the global scope LibTorch's libprotobuf
      // binds in; DEEPBIND: sentencepiece binds its own protobuf first, not the global libprotobuf.
      void* h = ::dlopen(p.c_str(), kOpenFlags);
      if (!h) {
        a.error = p.string() + ": " + ::dlerror();
        return;
      }
      auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
        if (!fn && a.error.empty()) a.error = p.string() + ": the symbol " + name + " is missing";
      };
      bind(a.load, "forja_sp_load");
      bind(a.free, "forja_sp_free");
      bind(a.encode, "forja_sp_encode");
      bind(a.encode_spans, "forja_sp_encode_spans");
      bind(a.piece_size, "forja_sp_piece_size");
      bind(a.id_to_piece, "forja_sp_id_to_piece");
      bind(a.piece_to_id, "forja_sp_piece_to_id");
      bind(a.special_id, "forja_sp_special_id");
      bind(a.is, "forja_sp_is");
      a.path = p.string();
      return;
    }
    a.error = std::string(kShimName) + " was not found (looked in " + tried + ")";
  });
  if (!a.error.empty())
    throw Error("SentencePiece support could not be loaded: " + a.error,
                "reinstall Forja, or point FORJA_SENTENCEPIECE_SHIM at libforja_sentencepiece.so");
  return a;
}

}  // namespace

SpProcessor::~SpProcessor() {
  if (sp_) api().free(sp_);
}

SpProcessor::Status SpProcessor::LoadFromSerializedProto(std::string_view data) {
  const ShimApi& a = api();
  char err[512] = {};
  void* sp = a.load(data.data(), data.size(), err, sizeof(err));
  if (!sp) return {err[0] ? std::string(err) : std::string("unknown error")};
  if (sp_) a.free(sp_);
  sp_ = sp;
  return {};
}

SpProcessor::Status SpProcessor::Encode(std::string_view text, std::vector<int>* ids) const {
  char err[512] = {};
  ids->clear();
  const Sink sink = [](void* ctx, const int* v, size_t n) {
    static_cast<std::vector<int>*>(ctx)->assign(v, v + n);
  };
  if (api().encode(sp_, text.data(), text.size(), sink, ids, err, sizeof(err)) != 0)
    return {std::string(err)};
  return {};
}

SpProcessor::Status SpProcessor::EncodeWithSpans(std::string_view text, std::vector<int>* ids,
                                                 std::vector<std::pair<size_t, size_t>>* spans) const {
  char err[512] = {};
  ids->clear();
  spans->clear();
  struct Out {
    std::vector<int>* ids;
    std::vector<std::pair<size_t, size_t>>* spans;
  } out{ids, spans};
  const SpanSink sink = [](void* ctx, const int* v, const unsigned* b, const unsigned* e, size_t n) {
    auto* o = static_cast<Out*>(ctx);
    o->ids->assign(v, v + n);
    for (size_t i = 0; i < n; ++i) o->spans->emplace_back(b[i], e[i]);
  };
  if (api().encode_spans(sp_, text.data(), text.size(), sink, &out, err, sizeof(err)) != 0)
    return {std::string(err)};
  return {};
}

int SpProcessor::GetPieceSize() const {
  return api().piece_size(sp_);
}

std::string SpProcessor::IdToPiece(int id) const {
  size_t len = 0;
  const char* p = api().id_to_piece(sp_, id, &len);
  return std::string(p, len);
}

int SpProcessor::PieceToId(std::string_view piece) const {
  return api().piece_to_id(sp_, piece.data(), piece.size());
}
int SpProcessor::unk_id() const {
  return api().special_id(sp_, 0);
}
int SpProcessor::bos_id() const {
  return api().special_id(sp_, 1);
}
int SpProcessor::eos_id() const {
  return api().special_id(sp_, 2);
}
bool SpProcessor::IsControl(int id) const {
  return api().is(sp_, id, 0) != 0;
}
bool SpProcessor::IsUnknown(int id) const {
  return api().is(sp_, id, 1) != 0;
}
bool SpProcessor::IsByte(int id) const {
  return api().is(sp_, id, 2) != 0;
}

std::string SpProcessor::library_path() {
  return api().path;
}

}  // namespace forja
