// libforja_sentencepiece: libsentencepiece behind a plain C interface, loaded by sp_processor.cpp with dlopen
// (RTLD_LOCAL | RTLD_DEEPBIND). Debian's libsentencepiece carries its own protobuf-lite and exports those
// symbols; LibTorch loads the system libprotobuf. Linked into one process, libprotobuf's static initialisers
// bind to sentencepiece's copies and crash before main(). Behind this module each library keeps its own
// protobuf. Nothing here throws across the C boundary: errors come back as text.
#include <sentencepiece_processor.h>

#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

void set_error(char* err, size_t err_len, const std::string& text) {
  if (!err || err_len == 0) return;
  const size_t n = std::min(err_len - 1, text.size());
  std::memcpy(err, text.data(), n);
  err[n] = '\0';
}

}  // namespace

extern "C" {

using forja_sp_sink = void (*)(void* ctx, const int* ids, size_t count);

__attribute__((visibility("default"))) void* forja_sp_load(const char* data, size_t len, char* err,
                                                           size_t err_len) {
  try {
    auto* sp = new sentencepiece::SentencePieceProcessor;
    const auto status = sp->LoadFromSerializedProto(std::string_view(data, len));
    if (!status.ok()) {
      set_error(err, err_len, status.ToString());
      delete sp;
      return nullptr;
    }
    return sp;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return nullptr;
  }
}

__attribute__((visibility("default"))) void forja_sp_free(void* sp) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(sp);
}

__attribute__((visibility("default"))) int forja_sp_encode(const void* sp, const char* text, size_t len,
                                                           forja_sp_sink sink, void* ctx, char* err,
                                                           size_t err_len) {
  try {
    std::vector<int> ids;
    const auto status = static_cast<const sentencepiece::SentencePieceProcessor*>(sp)->Encode(
        std::string_view(text, len), &ids);
    if (!status.ok()) {
      set_error(err, err_len, status.ToString());
      return 1;
    }
    sink(ctx, ids.data(), ids.size());
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

// The same with each piece's byte span in `text` (sentencepiece maps normalized pieces back to the input).
using forja_sp_span_sink = void (*)(void* ctx, const int* ids, const unsigned* begins, const unsigned* ends,
                                    size_t count);

__attribute__((visibility("default"))) int forja_sp_encode_spans(const void* sp, const char* text, size_t len,
                                                                 forja_sp_span_sink sink, void* ctx,
                                                                 char* err, size_t err_len) {
  try {
    const auto spt = static_cast<const sentencepiece::SentencePieceProcessor*>(sp)->EncodeAsImmutableProto(
        std::string_view(text, len));
    std::vector<int> ids;
    std::vector<unsigned> begins, ends;
    for (const auto& piece : spt.pieces()) {
      ids.push_back(static_cast<int>(piece.id()));
      begins.push_back(piece.begin());
      ends.push_back(piece.end());
    }
    sink(ctx, ids.data(), begins.data(), ends.data(), ids.size());
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
}

__attribute__((visibility("default"))) int forja_sp_piece_size(const void* sp) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(sp)->GetPieceSize();
}

// The piece's bytes stay valid while the processor lives (sentencepiece returns a reference into its model).
__attribute__((visibility("default"))) const char* forja_sp_id_to_piece(const void* sp, int id, size_t* len) {
  const std::string& piece = static_cast<const sentencepiece::SentencePieceProcessor*>(sp)->IdToPiece(id);
  *len = piece.size();
  return piece.data();
}

__attribute__((visibility("default"))) int forja_sp_piece_to_id(const void* sp, const char* piece,
                                                                size_t len) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(sp)->PieceToId(
      std::string_view(piece, len));
}

// what: 0 unk_id, 1 bos_id, 2 eos_id.
__attribute__((visibility("default"))) int forja_sp_special_id(const void* sp, int what) {
  const auto* p = static_cast<const sentencepiece::SentencePieceProcessor*>(sp);
  return what == 0 ? p->unk_id() : what == 1 ? p->bos_id() : p->eos_id();
}

// what: 0 control, 1 unknown, 2 byte.
__attribute__((visibility("default"))) int forja_sp_is(const void* sp, int id, int what) {
  const auto* p = static_cast<const sentencepiece::SentencePieceProcessor*>(sp);
  return what == 0 ? p->IsControl(id) : what == 1 ? p->IsUnknown(id) : p->IsByte(id);
}

}  // extern "C"
