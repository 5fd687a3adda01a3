// Models from the Hugging Face Hub: the same cache as huggingface_hub (so downloads are shared with every
// other tool), a download client for the Hub's HTTP API, and repo ids accepted wherever a model folder is.
// Plain C++ (no LibTorch, no Qt) so the window and the CLI use it alike.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace forja::hub {

// "org/name" or "org/name@revision" (branch, tag or commit; default main).
struct RepoRef {
  std::string repo_id;
  std::string revision = "main";
};
// Throws forja::Error for text that is not a repo id.
RepoRef parse_repo_ref(const std::string& text);
// True for "org/name[@rev]" text that is not an existing path: what a user typed where a folder was expected.
bool looks_like_repo_id(const std::string& text);

// Where the Hub is and who we are, from huggingface_hub's environment variables: HF_ENDPOINT (mirrors),
// HF_TOKEN or the token file ($HF_TOKEN_PATH, else $HF_HOME/token), HF_HUB_CACHE, else $HF_HOME/hub (HF_HOME
// defaulting to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface), HF_HUB_OFFLINE.
struct HubSettings {
  std::string endpoint = "https://huggingface.co";
  std::string token;  // empty: anonymous
  std::filesystem::path cache_dir;
  bool offline = false;
};
HubSettings settings_from_environment();

// One file of a repository at a commit, as the Hub lists it.
struct RepoFile {
  std::string path;  // relative, with '/' separators
  uint64_t size = 0;
  std::string blob_id;     // git blob id (SHA-1) of the file, or of the LFS pointer for an LFS file
  std::string lfs_sha256;  // the content's SHA-256 for an LFS file; empty for a small file
  // The name of its blob in the cache: the LFS SHA-256, else the git blob id (what the ETag says).
  const std::string& etag() const { return lfs_sha256.empty() ? blob_id : lfs_sha256; }
};

struct PullOptions {
  RepoRef ref;
  // huggingface_hub's allow_patterns / ignore_patterns (fnmatch globs; "dir/" means "dir/*"). With no
  // include, Forja takes what it loads: config, tokenizer and chat template files, and the safetensors
  // weights.
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  HubSettings settings;
};

// What a pull would do, known before any weight byte moves.
struct PullPlan {
  std::string repo_id, revision, commit;
  std::vector<RepoFile> files;        // chosen, in download order
  std::vector<std::string> left_out;  // files of the repository that are not downloaded, with why
  uint64_t total_bytes = 0;           // of the chosen files
  uint64_t download_bytes = 0;        // of those not already whole in the cache
  uint64_t free_bytes = 0;            // free space of the cache's file system
  std::string model_type;             // from config.json; empty when the repository has none
  bool architecture_supported = false;
  std::string support_note;  // why not, or what Forja will load it as
  std::string tokenizer;     // "tokenizer.json", "tokenizer.model" or "" (none: Forja cannot chat)
};

struct PullProgress {
  std::string file;
  uint64_t file_done = 0, file_total = 0;
  uint64_t done = 0, total = 0;  // over the whole pull (bytes to download)
  double bytes_per_second = 0;
};
using PullProgressFn = std::function<void(const PullProgress&)>;
using CancelFn = std::function<bool()>;

// True when this build has the download client (libcurl); the cache functions work without it.
bool downloads_available();

// Asks the Hub for the commit and file list and chooses the files; reads config.json to tell whether Forja
// loads the model. Offline (HF_HUB_OFFLINE), plans from the cache alone. Throws forja::Error: unknown repo,
// revision or file (404), gated or private (401/403, saying where to accept and how to give a token), only
// pickle weights, no connection.
PullPlan plan_pull(const PullOptions& options);

// Downloads what the plan lacks into the cache (blobs/<etag>, written as <etag>.incomplete, resumed with
// Range after a dropped connection or a killed process, verified before the rename), links
// snapshots/<commit>/<file> and writes refs/<revision>. Refuses, with the numbers, a pull that would not fit
// on the disk. Returns the snapshot folder: a model folder like any other.
std::filesystem::path pull(const PullOptions& options, const PullProgressFn& progress = {},
                           const CancelFn& cancelled = {});

// The cache's folder for a repository: <cache>/models--org--name.
std::filesystem::path repo_cache_dir(const HubSettings& settings, const std::string& repo_id);
// The snapshot a revision points to in the cache, if it is there with a config.json.
std::optional<std::filesystem::path> find_cached_snapshot(const HubSettings& settings, const RepoRef& ref);

// A model folder from what the user typed: an existing folder as it is; a repo id from the cache, or pulled
// when allow_pull (with progress); otherwise an error saying how to get it (forja-cli pull / --pull).
std::filesystem::path resolve_model_dir(const std::string& text, bool allow_pull,
                                        const PullProgressFn& progress = {});

// A model in the cache, for the model library.
struct CachedModel {
  std::string repo_id;
  std::string commit;
  std::vector<std::string> revisions;  // refs pointing at this commit ("main")
  std::filesystem::path snapshot;
  uint64_t disk_bytes = 0;  // files of the whole repository folder (what deleting it frees)
  bool complete = false;    // config.json and the weights it names are all there
};
std::vector<CachedModel> list_cached_models(const HubSettings& settings);
// Deletes a repository from the cache; returns the bytes freed.
uint64_t delete_cached_model(const HubSettings& settings, const std::string& repo_id);

// huggingface_hub's fnmatch-style glob ('*' also crosses '/'), exposed for the tests.
bool glob_match(const std::string& pattern, const std::string& path);

}  // namespace forja::hub
