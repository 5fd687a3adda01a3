// Planning and downloading a model repository through the Hub's HTTP API, as huggingface_hub does it:
// /api/models/{repo}/revision/{rev}?blobs=true for the commit and the files (sizes, git blob ids, LFS
// SHA-256),
// /{repo}/resolve/{commit}/{file} for the bytes (redirects to the CDN followed, Range to resume).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/hub.h"
#include "forja/model_config.h"
#include "hub/cache.h"
#include "hub/http.h"
#include "util/sha1.h"
#include "util/sha256.h"

namespace forja::hub {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The files Forja reads from a model folder (weights are chosen separately): config, tokenizer, template.
const std::set<std::string> kModelFiles = {"config.json",
                                           "generation_config.json",
                                           "tokenizer.json",
                                           "tokenizer.model",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "added_tokens.json",
                                           "vocab.json",
                                           "merges.txt",
                                           "chat_template.jinja",
                                           "chat_template.json",
                                           "adapter_config.json",
                                           "README.md",
                                           "LICENSE",
                                           "LICENSE.txt",
                                           "model.safetensors.index.json"};

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  for (const char* x : suffixes)
    if (s.ends_with(x)) return true;
  return false;
}

bool is_pickle(const std::string& path) {
  return ends_with_any(path, {".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle"});
}

// Bytes a pull keeps free on the disk beyond its files, so that finishing it never fills the disk for
// everything else.
constexpr uint64_t kFreeSpaceMargin = 64ull << 20;

uint64_t free_space(const fs::path& dir) {
  if (const char* fake = std::getenv("FORJA_TEST_FREE_BYTES")) return std::strtoull(fake, nullptr, 10);
  fs::path p = dir;
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  const auto info = fs::space(p.empty() ? fs::path(".") : p, ec);
  return ec ? 0 : info.available;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1ull << 20));
  return buf;
}

[[noreturn]] void throw_hub_error(const HubSettings& s, const HttpResponse& r, const std::string& repo,
                                  const std::string& what) {
  if (r.status == 407)
    throw Error("the proxy refused the request to " + s.endpoint + ": it asks for credentials (HTTP 407)",
                "Put them in the proxy's URL: https_proxy=http://user:password@host:port (http_proxy for an "
                "http:// endpoint).");
  const std::string code = r.header("x-error-code");
  const std::string message = r.header("x-error-message");
  const std::string page = s.endpoint + "/" + repo;
  if (code == "GatedRepo" || ((r.status == 401 || r.status == 403) && code.empty() && !what.empty())) {
    if (s.token.empty())
      throw Error(
          repo + " is a gated model: its files need an account that accepted its conditions",
          "Accept them at " + page + ", create a read token at " + s.endpoint +
              "/settings/tokens, then set HF_TOKEN=<token> (or write it to $HF_HOME/token) and pull again.");
    throw Error("the token given has no access to " + repo + (message.empty() ? "" : " (" + message + ")"),
                "Accept the model's conditions at " + page + " with the account the token belongs to.");
  }
  if (code == "RepoNotFound" || (r.status == 401 && what.empty()))
    throw Error("repository " + repo + " was not found on " + s.endpoint,
                s.token.empty() ? "Check the repo id; a private repository also needs HF_TOKEN."
                                : "Check the repo id, and that the token can read it.");
  if (code == "RevisionNotFound") throw Error("revision not found in " + repo + ": " + message);
  if (code == "EntryNotFound" || (r.status == 404 && !what.empty()))
    throw Error(what + " was not found in " + repo + (message.empty() ? "" : ": " + message));
  if (r.status == 404) throw Error("repository " + repo + " was not found on " + s.endpoint);
  throw Error(s.endpoint + " answered HTTP " + std::to_string(r.status) + " for " +
              (what.empty() ? repo : what) + (message.empty() ? "" : ": " + message));
}

// The Hub names the commit a resolve URL was served from in X-Repo-Commit. A mirror that answers a commit's
// URL from another revision would mix two versions of the model in one snapshot; refuse its file instead.
void check_served_commit(const HubSettings& s, const HttpResponse& r, const std::string& repo,
                         const std::string& commit, const std::string& file) {
  const std::string served = r.header("x-repo-commit");
  if (!served.empty() && served != commit)
    throw Error(
        s.endpoint + " served " + repo + "/" + file + " from commit " + served + ", not from " + commit +
            ", the commit it listed",
        "The endpoint is out of step with the Hub (a mirror still syncing?); try again later, or without "
        "HF_ENDPOINT.");
}

std::string file_url(const HubSettings& s, const std::string& repo, const std::string& commit,
                     const std::string& file) {
  return s.endpoint + "/" + repo + "/resolve/" + url_encode(commit, false) + "/" + url_encode(file, true);
}

// Which of the repository's files to fetch, and why each other one is left out.
void choose_files(const PullOptions& o, const std::vector<RepoFile>& all, const json* index, PullPlan& plan) {
  std::set<std::string> shards;
  if (index && index->contains("weight_map"))
    for (const auto& [name, file] : (*index)["weight_map"].items()) shards.insert(file.get<std::string>());
  bool any_safetensors = false, any_pickle = false;
  for (const auto& f : all) {
    any_safetensors |= f.path.ends_with(".safetensors");
    any_pickle |= is_pickle(f.path);
  }
  for (const auto& f : all) {
    bool wanted;
    if (!o.include.empty()) {
      wanted = std::any_of(o.include.begin(), o.include.end(),
                           [&](const std::string& g) { return glob_match(g, f.path); });
    } else if (f.path.find('/') == std::string::npos && f.path.ends_with(".safetensors")) {
      wanted = shards.empty() || shards.count(f.path);
    } else {
      wanted = kModelFiles.count(f.path) > 0;
    }
    if (wanted && std::any_of(o.exclude.begin(), o.exclude.end(),
                              [&](const std::string& g) { return glob_match(g, f.path); })) {
      plan.left_out.push_back(f.path + " (excluded)");
      continue;
    }
    if (wanted && is_pickle(f.path)) {
      plan.left_out.push_back(f.path +
                              " (a pickle: loading it could run code; Forja reads only safetensors)");
      continue;
    }
    if (!wanted) {
      plan.left_out.push_back(is_pickle(f.path) ? f.path + " (a pickle: Forja reads only safetensors)"
                                                : f.path);
      continue;
    }
    plan.files.push_back(f);
    plan.total_bytes += f.size;
  }
  if (o.include.empty() && !any_safetensors && any_pickle)
    throw Error(
        o.ref.repo_id + " has only PyTorch pickle weights (.bin / .pt), no safetensors",
        "Forja never loads pickles: unpickling can run any code the file carries. Look for a "
        "safetensors version of the model (many repos have a refs/pr/... revision with one), or convert "
        "it once where you trust the file.");
  // Small files first, so the plan's checks (config, tokenizer) are in the cache before the weights move.
  std::stable_sort(plan.files.begin(), plan.files.end(),
                   [](const RepoFile& a, const RepoFile& b) { return a.size < b.size; });
}

void check_support(const std::string& config_text, PullPlan& plan) {
  try {
    const auto cfg = parse_model_config_text(config_text, plan.repo_id + "/config.json");
    plan.model_type = cfg.model_type;
    plan.architecture_supported = true;
    plan.support_note = std::string("loads as the ") + family_name(cfg.family) + " family";
  } catch (const Error& e) {
    try {
      plan.model_type = json::parse(config_text).value("model_type", "");
    } catch (const std::exception&) {
    }
    plan.support_note = e.what();
  }
  for (const auto& f : plan.files) {
    if (f.path == "tokenizer.json") plan.tokenizer = "tokenizer.json";
    if (f.path == "tokenizer.model" && plan.tokenizer.empty()) plan.tokenizer = "tokenizer.model";
  }
}

PullPlan plan_from_cache(const PullOptions& o) {
  const auto commit = cached_commit(o.settings, o.ref);
  if (!commit)
    throw Error(o.ref.repo_id + "@" + o.ref.revision + " is not in the cache (" +
                    o.settings.cache_dir.string() + ") and HF_HUB_OFFLINE is set",
                "Unset HF_HUB_OFFLINE to download it.");
  PullPlan plan;
  plan.repo_id = o.ref.repo_id, plan.revision = o.ref.revision, plan.commit = *commit;
  const fs::path snap = repo_cache_dir(o.settings, o.ref.repo_id) / "snapshots" / *commit;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snap, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory()) continue;
    RepoFile f;
    f.path = fs::relative(it->path(), snap).generic_string();
    f.size = it->is_regular_file() ? it->file_size() : 0;
    plan.files.push_back(f);
    plan.total_bytes += f.size;
  }
  if (fs::exists(snap / "config.json", ec)) check_support(read_text_file(snap / "config.json"), plan);
  plan.free_bytes = free_space(o.settings.cache_dir);
  return plan;
}

class BlobLock {
 public:
  explicit BlobLock(const fs::path& file) {
    fs::create_directories(file.parent_path());
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw_file_error(file.string(), std::string("cannot create the lock: ") + std::strerror(errno));
    if (::flock(fd_, LOCK_EX) != 0) throw_file_error(file.string(), "cannot lock");
  }
  ~BlobLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

bool blob_verified(const fs::path& blob, const RepoFile& f) {
  if (!f.lfs_sha256.empty()) return sha256_file(blob) == f.lfs_sha256;
  if (f.blob_id.empty()) return true;  // nothing to check against (offline plan)
  Sha1 h = git_blob_hasher(f.size);
  std::FILE* in = std::fopen(blob.c_str(), "rb");
  if (!in) return false;
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) h.update(buf.data(), n);
  std::fclose(in);
  return h.hex_digest() == f.blob_id;
}

struct Totals {
  uint64_t done = 0, total = 0, received = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// One file into blobs/<etag>: appended to <etag>.incomplete from where an earlier attempt (or process) left
// it, retried when the connection breaks, verified, then renamed. Returns false when cancelled.
bool download_blob(HttpClient& http, const PullOptions& o, const PullPlan& plan, const RepoFile& f,
                   const fs::path& blob, Totals& totals, const PullProgressFn& progress,
                   const CancelFn& cancelled) {
  const fs::path part = blob.string() + ".incomplete";
  const std::string url = file_url(o.settings, plan.repo_id, plan.commit, f.path);
  constexpr int kAttempts = 6;
  bool restarted_after_mismatch = false;
  for (int attempt = 0;;) {
    if (cancelled && cancelled()) return false;
    std::error_code ec;
    uint64_t offset = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    if (offset > f.size) {
      fs::remove(part, ec);
      offset = 0;
    }
    if (offset < f.size || f.size == 0) {
      std::FILE* out = std::fopen(part.c_str(), offset ? "ab" : "wb");
      if (!out) throw_file_error(part.string(), std::string("cannot write: ") + std::strerror(errno));
      const uint64_t base_done = totals.done;
      uint64_t last_reported = offset;
      const auto on_bytes = [&](uint64_t in_file) {
        totals.received += in_file - last_reported;
        totals.done = base_done + (in_file - offset);
        last_reported = in_file;
        if (progress) {
          const double secs =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - totals.start).count();
          progress(
              {f.path, in_file, f.size, totals.done, totals.total, secs > 0 ? totals.received / secs : 0});
        }
        return !(cancelled && cancelled());
      };
      TransferBroken broken;
      bool was_cancelled = false;
      HttpResponse r;
      try {
        r = http.download(url, out, offset, on_bytes, &broken, &was_cancelled);
      } catch (...) {
        std::fclose(out);
        throw;
      }
      const bool flushed = std::fflush(out) == 0 && ::fsync(fileno(out)) == 0;
      const int write_errno = broken.write_errno != 0 ? broken.write_errno : flushed ? 0 : errno;
      std::fclose(out);
      if (was_cancelled) return false;
      if (write_errno != 0)
        throw Error(f.path + " from " + plan.repo_id + ": cannot write " + part.string() + ": " +
                        std::strerror(write_errno),
                    "Free some space on the cache's disk (or set HF_HUB_CACHE to another disk) and pull "
                    "again: the " +
                        gib(fs::file_size(part, ec)) + " already downloaded are kept and resumed.");
      if (r.status >= 400) {
        // Bytes kept from an earlier attempt stay for the next pull to resume; an empty file is only litter.
        if (fs::file_size(part, ec) == 0) fs::remove(part, ec);
        throw_hub_error(o.settings, r, plan.repo_id, f.path);
      }
      if (const std::string served = r.header("x-repo-commit"); !served.empty() && served != plan.commit) {
        fs::remove(part, ec);  // what this answer appended is another revision's: not a base to resume on
        check_served_commit(o.settings, r, plan.repo_id, plan.commit, f.path);
      }
      if (!broken.reason.empty()) {
        if (broken.reason == "range") {  // the server ignored Range: start this file over
          fs::remove(part, ec);
        } else if (++attempt >= kAttempts) {
          throw Error("downloading " + f.path + " from " + plan.repo_id + " failed " +
                          std::to_string(kAttempts) + " times: " + broken.reason,
                      "Run the same pull again: the " + gib(fs::file_size(part, ec)) +
                          " already downloaded are kept and resumed.");
        }
        continue;
      }
    }
    const uint64_t got = fs::file_size(part, ec);
    if (got < f.size) {
      if (++attempt >= kAttempts) throw Error("downloading " + f.path + " stopped short after retries");
      continue;
    }
    if (got != f.size || !blob_verified(part, f)) {
      fs::remove(part, ec);
      if (restarted_after_mismatch)
        throw Error(f.path + " from " + plan.repo_id + " does not match the checksum the Hub gives for it",
                    "The mirror or a proxy is altering the file; try again later or without HF_ENDPOINT.");
      restarted_after_mismatch = true;
      continue;
    }
    fs::rename(part, blob, ec);
    if (ec) throw_file_error(blob.string(), "cannot move the finished download into place: " + ec.message());
    fsync_directory(blob.parent_path());
    return true;
  }
}

}  // namespace

bool downloads_available() {
  return true;
}

PullPlan plan_pull(const PullOptions& o) {
  if (o.settings.offline) return plan_from_cache(o);
  HttpClient http(o.settings.token);
  const std::string api = o.settings.endpoint + "/api/models/" + o.ref.repo_id + "/revision/" +
                          url_encode(o.ref.revision, false) + "?blobs=true";
  const HttpResponse r = http.get(api, 64 << 20);
  if (r.status != 200) {
    if (r.header("x-error-code").empty() && r.status == 404)
      throw Error("repository " + o.ref.repo_id + " or its revision '" + o.ref.revision +
                  "' was not found on " + o.settings.endpoint);
    throw_hub_error(o.settings, r, o.ref.repo_id, "");
  }
  PullPlan plan;
  plan.repo_id = o.ref.repo_id;
  plan.revision = o.ref.revision;
  std::vector<RepoFile> all;
  try {
    const json info = json::parse(r.body);
    plan.commit = info.at("sha").get<std::string>();
    for (const auto& s : info.at("siblings")) {
      RepoFile f;
      f.path = s.at("rfilename").get<std::string>();
      if (!s.contains("size") || !s.contains("blobId"))
        throw Error(o.settings.endpoint + " did not give the size and id of " + f.path,
                    "The endpoint must answer ?blobs=true as the Hub does.");
      f.size = s.at("size").get<uint64_t>();
      f.blob_id = s.at("blobId").get<std::string>();
      if (s.contains("lfs") && s["lfs"].is_object()) {
        f.lfs_sha256 = s["lfs"].at("sha256").get<std::string>();
        f.size = s["lfs"].value("size", f.size);
      }
      if (f.path.empty() || f.path.find("..") != std::string::npos || f.path[0] == '/')
        throw Error(o.settings.endpoint + " listed an unsafe file name: " + f.path);
      all.push_back(std::move(f));
    }
  } catch (const json::exception& e) {
    throw Error(api + ": the answer is not the Hub's model info: " + e.what());
  }
  if (plan.commit.size() != 40) throw Error(api + ": the commit '" + plan.commit + "' is not a commit hash");

  std::optional<json> index;
  const auto has = [&](const std::string& name) {
    return std::any_of(all.begin(), all.end(), [&](const RepoFile& f) { return f.path == name; });
  };
  if (has("model.safetensors.index.json")) {
    const auto ir =
        http.get(file_url(o.settings, plan.repo_id, plan.commit, "model.safetensors.index.json"), 64 << 20);
    if (ir.status != 200) throw_hub_error(o.settings, ir, plan.repo_id, "model.safetensors.index.json");
    check_served_commit(o.settings, ir, plan.repo_id, plan.commit, "model.safetensors.index.json");
    try {
      index = json::parse(ir.body);
    } catch (const json::exception& e) {
      throw Error(plan.repo_id + "/model.safetensors.index.json is not valid JSON: " + e.what());
    }
  }
  choose_files(o, all, index ? &*index : nullptr, plan);
  if (has("config.json")) {
    const auto cr = http.get(file_url(o.settings, plan.repo_id, plan.commit, "config.json"), 16 << 20);
    if (cr.status != 200) throw_hub_error(o.settings, cr, plan.repo_id, "config.json");
    check_served_commit(o.settings, cr, plan.repo_id, plan.commit, "config.json");
    check_support(cr.body, plan);
  } else {
    plan.support_note = "the repository has no config.json: not a model Forja loads";
  }
  for (const auto& f : plan.files)
    if (!blob_present(blob_path(o.settings, plan.repo_id, f.etag()), f.size)) plan.download_bytes += f.size;
  plan.free_bytes = free_space(o.settings.cache_dir);
  return plan;
}

fs::path pull(const PullOptions& o, const PullProgressFn& progress, const CancelFn& cancelled) {
  const PullPlan plan = plan_pull(o);
  const fs::path repo = repo_cache_dir(o.settings, o.ref.repo_id);
  const fs::path snapshot = repo / "snapshots" / plan.commit;
  if (o.settings.offline) {
    if (!find_cached_snapshot(o.settings, o.ref))
      throw Error(o.ref.repo_id + " is in the cache without its config.json, and HF_HUB_OFFLINE is set");
    return snapshot;
  }
  if (plan.download_bytes + kFreeSpaceMargin > plan.free_bytes)
    throw Error("not enough disk space for " + plan.repo_id + ": the download needs " +
                    gib(plan.download_bytes) + " (plus " + gib(kFreeSpaceMargin) + " kept free), and " +
                    o.settings.cache_dir.string() + " has " + gib(plan.free_bytes) + " free",
                "Free some space, or set HF_HUB_CACHE to a folder on a larger disk.");
  fs::create_directories(repo / "blobs");
  fs::create_directories(snapshot);
  HttpClient http(o.settings.token);
  Totals totals;
  totals.total = plan.download_bytes;
  const fs::path locks = o.settings.cache_dir / ".locks" / repo.filename();
  for (const auto& f : plan.files) {
    const fs::path blob = blob_path(o.settings, plan.repo_id, f.etag());
    BlobLock lock(locks / (f.etag() + ".lock"));
    std::error_code ec;
    if (blob_present(blob, f.size) && !blob_verified(blob, f)) {
      // A cached blob that no longer matches its checksum (a bad disk, an edit through the symlink) is
      // fetched again rather than trained on.
      fs::remove(blob, ec);
      totals.total += f.size;
    }
    if (!blob_present(blob, f.size)) {
      if (!download_blob(http, o, plan, f, blob, totals, progress, cancelled))
        throw Error("the download of " + plan.repo_id + " was cancelled",
                    "What was downloaded is kept: the same pull resumes it.");
    }
    link_snapshot_file(snapshot, f.path, f.etag());
  }
  write_ref(o.settings, o.ref, plan.commit);
  if (progress) progress({"", totals.total, totals.total, totals.total, totals.total, 0});
  return snapshot;
}

}  // namespace forja::hub
