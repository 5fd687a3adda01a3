// Dataset files: JSONL (one object per line) or a JSON array of objects. The array is cut into its elements
// by a small structural scan (strings, escapes, nesting) before any element is parsed, so that each element
// is parsed on its own: one broken element is reported at its own line and can be skipped without losing the
// rest of the file.
#include <nlohmann/json.hpp>

#include "data_internal.h"
#include "forja/dataset.h"
#include "forja/error.h"
#include "forja/file_util.h"

namespace forja {
namespace {

struct Chunk {
  std::string_view text;
  size_t line = 0;
};

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view strip_bom(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  return s;
}

std::vector<Chunk> jsonl_chunks(std::string_view text) {
  std::vector<Chunk> out;
  size_t line = 1, begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(begin, end - begin);
    bool blank = true;
    for (char c : l) blank = blank && is_blank(c);
    if (!blank) out.push_back({l, line});
    ++line;
    begin = end + 1;
  }
  return out;
}

// Elements of a top-level JSON array, each with the line where it begins. Only the structure is checked here;
// the elements themselves are parsed (and their errors reported) one by one.
std::vector<Chunk> json_array_chunks(std::string_view text, const std::string& file) {
  std::vector<Chunk> out;
  size_t i = 0, line = 1;
  auto skip_blank = [&] {
    while (i < text.size() && is_blank(text[i])) line += text[i++] == '\n';
  };
  skip_blank();
  ++i;  // the '[' the caller saw
  skip_blank();
  if (i < text.size() && text[i] == ']') {
    ++i;
  } else {
    while (true) {
      skip_blank();
      size_t begin = i, begin_line = line;
      int depth = 0;
      bool in_string = false;
      for (; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\n') ++line;
        if (in_string) {
          if (c == '\\') {
            ++i;  // an escaped character never ends the string (an escaped newline is not valid JSON anyway)
          } else if (c == '"') {
            in_string = false;
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (depth == 0) break;
          --depth;
        } else if (c == ',' && depth == 0) {
          break;
        }
      }
      if (i >= text.size())
        throw_file_error(file + ":" + std::to_string(begin_line),
                         "the JSON array is not closed (missing ']')",
                         "The file ends inside the array; it may have been cut short.");
      std::string_view element = text.substr(begin, i - begin);
      while (!element.empty() && is_blank(element.back())) element.remove_suffix(1);
      out.push_back({element, begin_line});
      if (text[i++] == ']') break;
    }
  }
  skip_blank();
  if (i < text.size())
    throw_file_error(file + ":" + std::to_string(line), "unexpected text after the end of the JSON array",
                     "A JSON file must hold one array of records; for one record per line use JSONL.");
  return out;
}

std::string clean_parse_message(const std::string& what) {
  // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error while ..."
  size_t pos = what.find("column ");
  if (pos != std::string::npos) {
    size_t colon = what.find(": ", pos);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

}  // namespace

nlohmann::json parse_json_at(std::string_view text, const std::string& file, size_t line) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based and points at the character that broke the parse; report that character's own line.
    size_t upto = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    size_t at_line = line, column = 1;
    for (size_t k = 0; k < upto; ++k) {
      if (text[k] == '\n') {
        ++at_line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw RecordError(
        {file, at_line,
         "not valid JSON (column " + std::to_string(column) + "): " + clean_parse_message(e.what())});
  } catch (const nlohmann::json::exception& e) {
    // Well-formed but beyond what a double holds, such as 1e999 (json's out_of_range.406).
    throw RecordError({file, line, "not valid JSON: " + clean_parse_message(e.what())});
  }
}

ReadResult read_dataset_file(const std::filesystem::path& path, const ReadOptions& options) {
  const std::string file = path.string();
  // A folder would read as an empty dataset and a FIFO would block the read forever.
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::directory)
    throw_file_error(file, "is a folder, not a dataset file", "Choose a .jsonl or .json file inside it.");
  if (!ec && type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    throw_file_error(file, "is not a regular file (a pipe or device), so it cannot be read as a dataset");
  // Datasets are read whole and may be far larger than the configs and tokenizer files the default limit is
  // for; memory is their real bound.
  const std::string content = read_text_file(path, uint64_t{64} << 30);
  std::string_view text = strip_bom(content);
  size_t first = 0;
  while (first < text.size() && is_blank(text[first])) ++first;
  std::vector<Chunk> chunks =
      first < text.size() && text[first] == '[' ? json_array_chunks(text, file) : jsonl_chunks(text);

  ReadResult result;
  result.records.reserve(chunks.size());
  for (const Chunk& chunk : chunks) {
    try {
      result.records.push_back(parse_record(chunk.text, options.format, file, chunk.line));
    } catch (const RecordError& e) {
      if (options.on_bad_record == OnBadRecord::Stop) throw;
      ++result.skipped;
      if (result.problems.size() < options.max_problems_kept) result.problems.push_back(e.problem);
    }
  }
  return result;
}

}  // namespace forja
