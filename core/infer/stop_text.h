// Stop strings on streamed text. Text that might be the start of a stop string is held back until the next
// pieces decide it, so the caller never shows text that a stop string later cuts off.
#pragma once

#include <string>
#include <vector>

namespace forja::infer {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops);
  // Adds a decoded piece; returns true when a stop string is now complete. `emit` receives the text that is
  // now certain (on a stop: everything before the stop string).
  bool add(const std::string& piece, std::string& emit);
  // End of stream: whatever is held back.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace forja::infer
