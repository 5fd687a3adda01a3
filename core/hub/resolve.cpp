// A model argument as users type it: a folder, or a Hub repo id found in the cache (or pulled on request).
#include "forja/error.h"
#include "forja/hub.h"

namespace forja::hub {
namespace fs = std::filesystem;

fs::path resolve_model_dir(const std::string& text, bool allow_pull, const PullProgressFn& progress) {
  std::error_code ec;
  if (!looks_like_repo_id(text)) return fs::path(text);
  const RepoRef ref = parse_repo_ref(text);
  PullOptions options;
  options.ref = ref;
  options.settings = settings_from_environment();
  if (auto snap = find_cached_snapshot(options.settings, ref)) return *snap;
  if (!allow_pull)
    throw Error(text + " is neither a folder nor a model in the Hugging Face cache (" +
                    options.settings.cache_dir.string() + ")",
                "Download it first with: forja-cli pull " + text + "   (or add --pull to this command).");
  return pull(options, progress);
}

}  // namespace forja::hub
