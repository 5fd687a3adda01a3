#include "forja/error.h"

namespace forja {

Error::Error(std::string message, std::string hint)
    : std::runtime_error(message), message_(std::move(message)), hint_(std::move(hint)) {}

void throw_file_error(const std::string& path, const std::string& problem, std::string hint) {
  throw Error(path + ": " + problem, std::move(hint));
}

}  // namespace forja
