// huggingface_hub's cache layout, read and written: models--org--name/{blobs,snapshots,refs}. Blobs are named
// by their ETag, snapshots hold relative symlinks to them, refs/<revision> holds the commit.
#include "hub/cache.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "forja/error.h"
#include "forja/file_util.h"

namespace forja::hub {
namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool env_true(const char* name) {
  std::string v = env_or_empty(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

bool valid_repo_part(const std::string& s) {
  if (s.empty() || s.size() > 96 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

// fnmatch's bracket expression at p (just past '['); returns the position after ']' or npos when unclosed.
size_t match_bracket(const std::string& p, size_t i, char c, bool& matched) {
  bool negate = false;
  if (i < p.size() && (p[i] == '!' || p[i] == '^')) negate = true, ++i;
  bool any = false;
  const size_t start = i;
  for (; i < p.size(); ++i) {
    if (p[i] == ']' && i > start) {
      matched = any != negate;
      return i + 1;
    }
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      if (c >= p[i] && c <= p[i + 2]) any = true;
      i += 2;
    } else if (p[i] == c) {
      any = true;
    }
  }
  return std::string::npos;
}

bool glob_at(const std::string& p, size_t pi, const std::string& s, size_t si) {
  while (pi < p.size()) {
    const char pc = p[pi];
    if (pc == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      if (pi == p.size()) return true;
      for (size_t k = si; k <= s.size(); ++k)
        if (glob_at(p, pi, s, k)) return true;
      return false;
    }
    if (si == s.size()) return false;
    if (pc == '?') {
      ++pi, ++si;
    } else if (pc == '[') {
      bool matched = false;
      const size_t next = match_bracket(p, pi + 1, s[si], matched);
      if (next == std::string::npos) {  // an unclosed '[' is a literal, as in fnmatch
        if (s[si] != '[') return false;
        ++pi, ++si;
      } else {
        if (!matched) return false;
        pi = next, ++si;
      }
    } else {
      if (pc != s[si]) return false;
      ++pi, ++si;
    }
  }
  return si == s.size();
}

bool is_symlink_or_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(p, ec)) || fs::is_regular_file(p, ec);
}

uint64_t folder_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2) && !it->is_symlink(e2)) total += it->file_size(e2);
  }
  return total;
}

// Whether a snapshot has config.json and every weight file its index names (or a single model.safetensors).
bool snapshot_complete(const fs::path& snap) {
  std::error_code ec;
  if (!fs::exists(snap / "config.json", ec)) return false;
  const fs::path index = snap / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    try {
      const auto j = nlohmann::json::parse(read_text_file(index));
      std::set<std::string> shards;
      for (const auto& [name, file] : j.at("weight_map").items()) shards.insert(file.get<std::string>());
      for (const auto& s : shards)
        if (!fs::exists(snap / s, ec)) return false;
      return !shards.empty();
    } catch (const std::exception&) {
      return false;
    }
  }
  for (const auto& e : fs::directory_iterator(snap, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 12 && name.ends_with(".safetensors") && fs::exists(e.path(), ec)) return true;
  }
  return false;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  std::string p = pattern;
  if (!p.empty() && p.back() == '/') p += "*";
  return glob_at(p, 0, path, 0);
}

RepoRef parse_repo_ref(const std::string& text) {
  RepoRef ref;
  std::string id = text;
  if (const auto at = text.find('@'); at != std::string::npos) {
    id = text.substr(0, at);
    ref.revision = text.substr(at + 1);
    if (ref.revision.empty()) throw Error("'" + text + "': the revision after '@' is empty");
  }
  const auto slash = id.find('/');
  if (slash == std::string::npos || id.find('/', slash + 1) != std::string::npos ||
      !valid_repo_part(id.substr(0, slash)) || !valid_repo_part(id.substr(slash + 1)))
    throw Error("'" + text + "' is not a Hugging Face repo id",
                "A repo id is organisation/name, e.g. Qwen/Qwen2.5-0.5B-Instruct, optionally @revision.");
  ref.repo_id = id;
  return ref;
}

bool looks_like_repo_id(const std::string& text) {
  std::error_code ec;
  if (text.empty() || text[0] == '.' || text[0] == '/' || text[0] == '~' || fs::exists(text, ec))
    return false;
  try {
    parse_repo_ref(text);
    return true;
  } catch (const Error&) {
    return false;
  }
}

HubSettings settings_from_environment() {
  HubSettings s;
  if (std::string e = trim(env_or_empty("HF_ENDPOINT")); !e.empty()) {
    while (!e.empty() && e.back() == '/') e.pop_back();
    s.endpoint = e;
  }
  fs::path home_dir;
  if (std::string h = env_or_empty("HF_HOME"); !h.empty()) {
    home_dir = h;
  } else if (std::string x = env_or_empty("XDG_CACHE_HOME"); !x.empty()) {
    home_dir = fs::path(x) / "huggingface";
  } else {
    const std::string home = env_or_empty("HOME");
    home_dir = (home.empty() ? fs::path(".") : fs::path(home)) / ".cache" / "huggingface";
  }
  if (std::string c = env_or_empty("HF_HUB_CACHE"); !c.empty()) {
    s.cache_dir = c;
  } else if (std::string legacy = env_or_empty("HUGGINGFACE_HUB_CACHE"); !legacy.empty()) {
    s.cache_dir = legacy;
  } else {
    s.cache_dir = home_dir / "hub";
  }
  s.token = trim(env_or_empty("HF_TOKEN"));
  if (s.token.empty()) s.token = trim(env_or_empty("HUGGING_FACE_HUB_TOKEN"));
  if (s.token.empty()) {
    std::string token_path = env_or_empty("HF_TOKEN_PATH");
    const fs::path file = token_path.empty() ? home_dir / "token" : fs::path(token_path);
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      try {
        s.token = trim(read_text_file(file, 1 << 16));
      } catch (const Error&) {
        // An unreadable token file is the same as none: anonymous requests still reach public models.
      }
    }
  }
  s.offline = env_true("HF_HUB_OFFLINE");
  return s;
}

fs::path repo_cache_dir(const HubSettings& settings, const std::string& repo_id) {
  std::string folder = "models--" + repo_id;
  for (size_t i = 0; (i = folder.find('/', i)) != std::string::npos;) folder.replace(i, 1, "--");
  return settings.cache_dir / folder;
}

std::optional<std::string> cached_commit(const HubSettings& settings, const RepoRef& ref) {
  const fs::path repo = repo_cache_dir(settings, ref.repo_id);
  std::error_code ec;
  const fs::path ref_file = repo / "refs" / ref.revision;
  if (fs::is_regular_file(ref_file, ec)) {
    const std::string commit = trim(read_text_file(ref_file, 4096));
    if (!commit.empty()) return commit;
  }
  if (fs::is_directory(repo / "snapshots" / ref.revision, ec)) return ref.revision;  // a commit hash given
  return std::nullopt;
}

std::optional<fs::path> find_cached_snapshot(const HubSettings& settings, const RepoRef& ref) {
  const auto commit = cached_commit(settings, ref);
  if (!commit) return std::nullopt;
  const fs::path snap = repo_cache_dir(settings, ref.repo_id) / "snapshots" / *commit;
  std::error_code ec;
  if (!fs::exists(snap / "config.json", ec)) return std::nullopt;
  return snap;
}

fs::path blob_path(const HubSettings& settings, const std::string& repo_id, const std::string& etag) {
  return repo_cache_dir(settings, repo_id) / "blobs" / etag;
}

void link_snapshot_file(const fs::path& snapshot, const std::string& file, const std::string& etag) {
  const fs::path link = snapshot / fs::path(file);
  fs::create_directories(link.parent_path());
  // From snapshots/<commit>/<dirs...>/<name> back up to the repository folder, then into blobs.
  fs::path target;
  const auto depth = std::count(file.begin(), file.end(), '/');
  for (long i = 0; i < depth + 2; ++i) target /= "..";
  target = target / "blobs" / etag;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(link, ec)) && fs::read_symlink(link, ec) == target) return;
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec) throw_file_error(link.string(), "cannot create the link to its blob: " + ec.message());
}

void write_ref(const HubSettings& settings, const RepoRef& ref, const std::string& commit) {
  if (ref.revision == commit) return;  // as huggingface_hub: a commit needs no ref
  const fs::path file = repo_cache_dir(settings, ref.repo_id) / "refs" / ref.revision;
  fs::create_directories(file.parent_path());
  write_file_atomic(file, commit);
}

std::vector<CachedModel> list_cached_models(const HubSettings& settings) {
  std::vector<CachedModel> out;
  std::error_code ec;
  if (!fs::is_directory(settings.cache_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(settings.cache_dir, ec)) {
    const std::string folder = entry.path().filename().string();
    if (!entry.is_directory() || !folder.starts_with("models--")) continue;
    std::string id = folder.substr(8);
    const auto sep = id.find("--");
    if (sep == std::string::npos)
      continue;  // a model without an organisation ("gpt2"): not a repo id we accept
    id.replace(sep, 2, "/");
    const uint64_t bytes = folder_bytes(entry.path());
    std::map<std::string, std::vector<std::string>> refs_by_commit;
    const fs::path refs = entry.path() / "refs";
    if (fs::is_directory(refs, ec)) {
      for (auto it = fs::recursive_directory_iterator(refs, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file()) continue;
        try {
          refs_by_commit[trim(read_text_file(it->path(), 4096))].push_back(
              fs::relative(it->path(), refs).generic_string());
        } catch (const Error&) {
        }
      }
    }
    const fs::path snaps = entry.path() / "snapshots";
    if (!fs::is_directory(snaps, ec)) continue;
    for (const auto& snap : fs::directory_iterator(snaps, ec)) {
      if (!snap.is_directory()) continue;
      CachedModel m;
      m.repo_id = id;
      m.commit = snap.path().filename().string();
      m.snapshot = snap.path();
      m.disk_bytes = bytes;
      m.complete = snapshot_complete(snap.path());
      if (auto it = refs_by_commit.find(m.commit); it != refs_by_commit.end()) m.revisions = it->second;
      std::sort(m.revisions.begin(), m.revisions.end());
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) {
    return std::tie(a.repo_id, a.commit) < std::tie(b.repo_id, b.commit);
  });
  return out;
}

uint64_t delete_cached_model(const HubSettings& settings, const std::string& repo_id) {
  parse_repo_ref(repo_id);  // a path-like or empty id must never reach remove_all
  const fs::path dir = repo_cache_dir(settings, repo_id);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("'" + repo_id + "' is not in the cache (" + dir.string() + ")");
  const uint64_t bytes = folder_bytes(dir);
  fs::remove_all(dir, ec);
  if (ec) throw_file_error(dir.string(), "cannot delete: " + ec.message());
  return bytes;
}

bool blob_present(const fs::path& blob, uint64_t size) {
  std::error_code ec;
  return fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == size && !ec;
}

bool snapshot_has(const fs::path& snapshot, const std::string& file) {
  return is_symlink_or_file(snapshot / fs::path(file));
}

}  // namespace forja::hub
