// Builds without libcurl have the cache (models other tools downloaded are found) but no downloader.
#include "forja/error.h"
#include "forja/hub.h"

namespace forja::hub {

bool downloads_available() {
  return false;
}

PullPlan plan_pull(const PullOptions&) {
  throw Error("this build of Forja has no Hub downloads (it was built without libcurl)",
              "Install libcurl4-openssl-dev and rebuild, or download the model with another tool into the "
              "Hugging Face cache: Forja finds it there.");
}

std::filesystem::path pull(const PullOptions& options, const PullProgressFn&, const CancelFn&) {
  plan_pull(options);
  return {};
}

}  // namespace forja::hub
