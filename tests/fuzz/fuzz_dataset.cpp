// The dataset readers (core/data/reader.cpp, records.cpp): the input as a JSONL file or a JSON array, read as
// every record shape with bad records skipped, and once with auto-detection stopping at the first problem.
#include "forja/dataset.h"

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const forja::RecordFormat formats[] = {forja::RecordFormat::Auto, forja::RecordFormat::Alpaca,
                                                forja::RecordFormat::Chat, forja::RecordFormat::ShareGpt,
                                                forja::RecordFormat::Text};
  const auto path = forja::fuzz::write_scratch("data.jsonl", data, size);
  for (const auto format : formats) {
    forja::ReadOptions options;
    options.format = format;
    options.on_bad_record = forja::OnBadRecord::Skip;
    options.max_problems_kept = 4;
    forja::fuzz::guarded([&] {
      const auto result = forja::read_dataset_file(path, options);
      for (const auto& r : result.records) (void)r.where();
    });
  }
  forja::fuzz::guarded([&] { (void)forja::read_dataset_file(path); });
  // One record on its own, as the UI's preview parses it.
  forja::fuzz::guarded([&] {
    (void)forja::parse_record(std::string_view(reinterpret_cast<const char*>(data), size),
                              forja::RecordFormat::Auto, "record", 1);
  });
  return 0;
}
