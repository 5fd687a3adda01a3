// SpProcessor: the part of sentencepiece::SentencePieceProcessor that Forja uses, with the same method names,
// reached through libforja_sentencepiece (sp_shim.cpp) loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) so that
// sentencepiece's bundled protobuf never meets LibTorch's libprotobuf (see sp_shim.cpp for the crash this
// avoids).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forja {

class SpProcessor {
 public:
  struct Status {
    std::string error;  // empty: ok
    bool ok() const { return error.empty(); }
    const std::string& ToString() const { return error; }
  };

  SpProcessor() = default;
  ~SpProcessor();
  SpProcessor(const SpProcessor&) = delete;
  SpProcessor& operator=(const SpProcessor&) = delete;

  // Throws forja::Error when the helper library cannot be loaded (it names the file and says how to fix it).
  Status LoadFromSerializedProto(std::string_view data);
  Status Encode(std::string_view text, std::vector<int>* ids) const;
  // With each piece's byte span in `text`, as sentencepiece maps its normalized pieces back to the input.
  Status EncodeWithSpans(std::string_view text, std::vector<int>* ids,
                         std::vector<std::pair<size_t, size_t>>* spans) const;
  int GetPieceSize() const;
  std::string IdToPiece(int id) const;
  int PieceToId(std::string_view piece) const;
  int unk_id() const;
  int bos_id() const;
  int eos_id() const;
  bool IsControl(int id) const;
  bool IsUnknown(int id) const;
  bool IsByte(int id) const;

  // Where the helper library was loaded from (for the doctor and error messages).
  static std::string library_path();

 private:
  void* sp_ = nullptr;
};

}  // namespace forja
