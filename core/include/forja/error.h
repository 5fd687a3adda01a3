// forja::Error: the one exception type the engine throws at users. The message names the file and the problem;
// the hint says what to do. Library code throws; the CLI and the UI catch and show.
#pragma once

#include <stdexcept>
#include <string>

namespace forja {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {});

  const std::string& message() const noexcept { return message_; }
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string message_;
  std::string hint_;
};

// "path: problem" — the shape of every file-related message.
[[noreturn]] void throw_file_error(const std::string& path, const std::string& problem, std::string hint = {});

}  // namespace forja
