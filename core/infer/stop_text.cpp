#include "stop_text.h"

#include <algorithm>

namespace forja::infer {

StopText::StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

bool StopText::add(const std::string& piece, std::string& emit) {
  held_ += piece;
  // The text already emitted ends in no prefix of a stop string, so a match can only start inside held_.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    emit = held_.substr(0, first);
    held_.clear();
    return true;
  }
  // Hold back the longest tail of held_ that is a proper prefix of some stop string. A stop string is valid
  // UTF-8, so the cut never splits a character.
  size_t keep = 0;
  for (const auto& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  emit = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

std::string StopText::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace forja::infer
