// forja-cli bench tokenize --model DIR --text FILE [--threads N] [--json]: encode throughput in MB/s on a
// text file, one line per document: one thread line by line, then encode_batch over all lines on N threads.
// bench/tokenize_bench.py runs Hugging Face `tokenizers` on the same file and prints the side-by-side table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench.h"
#include "forja/error.h"
#include "forja/tokenizer.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_tokenize_bench(forja::cli::Args& args) {
  args.reject_unknown({"model", "text", "threads", "repeat"});
  const std::string model = args.option("model").value_or("");
  const std::string text_path = args.option("text").value_or("");
  if (model.empty() || text_path.empty())
    throw forja::Error("bench tokenize needs --model DIR and --text FILE");
  const unsigned threads = static_cast<unsigned>(
      std::stoul(args.option_or("threads", std::to_string(std::thread::hardware_concurrency()))));
  const int repeat = std::max(1, std::stoi(args.option_or("repeat", "3")));

  std::ifstream in(text_path, std::ios::binary);
  if (!in) forja::throw_file_error(text_path, "cannot be opened");
  std::vector<std::string> lines;
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    bytes += line.size();
    lines.push_back(std::move(line));
  }

  const auto t_load = std::chrono::steady_clock::now();
  const forja::Tokenizer tok = forja::Tokenizer::load(model);
  const double load_s = seconds_since(t_load);

  // Best of `repeat` runs, as the Python side does; the first run also fills the word cache, as HF's does.
  double single_s = 1e30, batch_s = 1e30;
  size_t tokens = 0;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    for (const auto& l : lines) n += tok.encode(l, false).size();
    single_s = std::min(single_s, seconds_since(t0));
    tokens = n;
    t0 = std::chrono::steady_clock::now();
    const auto all = tok.encode_batch(lines, false, threads);
    batch_s = std::min(batch_s, seconds_since(t0));
    size_t m = 0;
    for (const auto& ids : all) m += ids.size();
    if (m != n)
      throw forja::Error("bench tokenize: encode_batch gave " + std::to_string(m) + " tokens, encode " +
                         std::to_string(n));
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  if (args.flag("json")) {
    const nlohmann::ordered_json j = {{"model", model},       {"text", text_path},
                                      {"bytes", bytes},       {"lines", lines.size()},
                                      {"tokens", tokens},     {"load_s", load_s},
                                      {"single_s", single_s}, {"single_mb_s", mb / single_s},
                                      {"batch_s", batch_s},   {"batch_mb_s", mb / batch_s},
                                      {"threads", threads}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("tokenizer   %s (%s), loaded in %.3f s\n", model.c_str(), tok.info().backend.c_str(), load_s);
  std::printf("text        %s: %.2f MB, %zu lines, %zu tokens\n", text_path.c_str(), mb, lines.size(),
              tokens);
  std::printf("1 thread    %.3f s  %8.2f MB/s\n", single_s, mb / single_s);
  std::printf("%u threads  %.3f s  %8.2f MB/s (encode_batch)\n", threads, batch_s, mb / batch_s);
  return 0;
}

}  // namespace

FORJA_BENCH(tokenize, "Encode throughput (MB/s) on a text file, one thread and encode_batch",
            "bench tokenize --model DIR --text FILE [--threads N] [--repeat N] [--json]", run_tokenize_bench);
