#include "hub_stand_in.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/sha1.h"
#include "util/sha256.h"

namespace fs = std::filesystem;

namespace {

void hub_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  res.status = status;
  res.set_header("X-Error-Code", code);
  res.set_header("X-Error-Message", message);
  res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
}

}  // namespace

std::string HubStandIn::sha256(const std::string& content) {
  return forja::sha256_hex(content);
}

std::string HubStandIn::git_blob_id(const std::string& content) {
  forja::Sha1 h = forja::git_blob_hasher(content.size());
  h.update(content.data(), content.size());
  return h.hex_digest();
}

StandInRepo HubStandIn::repo_from_folder(const fs::path& dir, const std::string& commit) {
  StandInRepo repo;
  repo.commit = commit;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string rel = fs::relative(e.path(), dir).generic_string();
    repo.files[rel] = {ss.str(), rel.ends_with(".safetensors") || rel.ends_with("tokenizer.model")};
  }
  return repo;
}

HubStandIn::HubStandIn() {
  server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    std::lock_guard lock(mu_);
    requests_.push_back({req.path, req.get_header_value("Range"), res.status});
  });
  server_.Get(R"(/api/models/([^/]+)/([^/]+)/revision/(.+))", [this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    std::lock_guard lock(mu_);
    const std::string id = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
    const std::string rev = req.matches[3];
    auto it = repos_.find(id);
    if (it == repos_.end()) return hub_error(res, 401, "RepoNotFound", "Repository Not Found for url");
    const StandInRepo& repo = it->second;
    if (rev != "main" && rev != repo.commit)
      return hub_error(res, 404, "RevisionNotFound", "Invalid rev id: " + rev);
    nlohmann::json j = {{"id", id}, {"sha", repo.commit}, {"gated", repo.gated ? "manual" : "false"}};
    j["siblings"] = nlohmann::json::array();
    for (const auto& [path, f] : repo.files) {
      nlohmann::json s = {{"rfilename", path}};
      if (req.has_param("blobs")) {
        s["size"] = f.content.size();
        if (f.lfs) {
          // The blob id of an LFS file is its pointer's; the content is known by its SHA-256.
          const std::string pointer =
              "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256(f.content) + "\nsize " +
              std::to_string(f.content.size()) + "\n";
          s["blobId"] = git_blob_id(pointer);
          s["lfs"] = {
              {"sha256", sha256(f.content)}, {"size", f.content.size()}, {"pointerSize", pointer.size()}};
        } else {
          s["blobId"] = git_blob_id(f.content);
        }
      }
      j["siblings"].push_back(s);
    }
    res.set_content(j.dump(), "application/json");
  });
  server_.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
              [this](const httplib::Request& req, httplib::Response& res) {
                std::lock_guard lock(mu_);
                const std::string id = std::string(req.matches[1]) + "/" + std::string(req.matches[2]);
                auto it = repos_.find(id);
                if (it == repos_.end())
                  return hub_error(res, 401, "RepoNotFound", "Repository Not Found for url");
                const StandInRepo& repo = it->second;
                const std::string rev = req.matches[3];
                if (rev != "main" && rev != repo.commit)
                  return hub_error(res, 404, "RevisionNotFound", "Invalid rev id");
                if (repo.gated) {
                  const std::string auth = req.get_header_value("Authorization");
                  if (auth.empty())
                    return hub_error(res, 401, "GatedRepo",
                                     "Access to model " + id + " is restricted. You must have access");
                  if (auth != std::string("Bearer ") + kToken)
                    return hub_error(res, 403, "GatedRepo",
                                     "Access to model " + id +
                                         " is restricted and you are not in the "
                                         "authorized list");
                }
                auto f = repo.files.find(req.matches[4]);
                if (f == repo.files.end() || f->second.listed_only)
                  return hub_error(res, 404, "EntryNotFound", "Entry not found");
                const std::string& served = repo.served_commit.empty() ? repo.commit : repo.served_commit;
                res.set_header("X-Repo-Commit", served);
                if (f->second.lfs) {
                  const std::string sha = sha256(f->second.content);
                  res.set_header("X-Linked-Etag", "\"" + sha + "\"");
                  res.set_header("X-Linked-Size", std::to_string(f->second.content.size()));
                  res.set_redirect("/cdn/" + sha + "?file=" + f->first, 302);
                  return;
                }
                res.set_header("ETag", "\"" + git_blob_id(f->second.content) + "\"");
                res.set_content(f->second.content, "application/octet-stream");
              });
  server_.Get(R"(/cdn/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
    serve_cdn(req, res, req.matches[1]);
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  // bind_to_any_port already listens: connections queue until the accept loop runs.
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

HubStandIn::~HubStandIn() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_.stop();
  thread_.join();
}

void HubStandIn::serve_cdn(const httplib::Request& req, httplib::Response& res, const std::string& sha) {
  std::string content, file = req.get_param_value("file");
  {
    std::lock_guard lock(mu_);
    bool found = false;
    for (const auto& [id, repo] : repos_)
      for (const auto& [path, f] : repo.files)
        if (!found && f.lfs && sha256(f.content) == sha) content = f.content, found = true;
    if (!found) return hub_error(res, 404, "EntryNotFound", "no such object");
  }
  uint64_t cut = UINT64_MAX, stall = UINT64_MAX;
  {
    std::lock_guard lock(mu_);
    if (auto c = cut_.find(file); c != cut_.end()) cut = c->second, cut_.erase(c);
    if (auto s = stall_.find(file); s != stall_.end()) stall = s->second;
  }
  auto body = std::make_shared<std::string>(std::move(content));
  res.set_content_provider(body->size(), "application/octet-stream",
                           [this, body, cut, stall](size_t offset, size_t length, httplib::DataSink& sink) {
                             const uint64_t stop = std::min(cut, stall);
                             if (offset >= stop) {
                               if (stop == stall) {
                                 std::unique_lock lock(mu_);
                                 cv_.wait(lock, [this] { return released_ || stopping_; });
                               }
                               return false;  // closes the connection part way
                             }
                             size_t n = std::min<size_t>({length, 16384, size_t(stop - offset)});
                             return sink.write(body->data() + offset, n);
                           });
}

void HubStandIn::add_repo(const std::string& id, StandInRepo repo) {
  std::lock_guard lock(mu_);
  repos_[id] = std::move(repo);
}

void HubStandIn::cut_once(const std::string& file, uint64_t after_bytes) {
  std::lock_guard lock(mu_);
  cut_[file] = after_bytes;
}

void HubStandIn::stall_at(const std::string& file, uint64_t at_byte) {
  std::lock_guard lock(mu_);
  stall_[file] = at_byte;
  released_ = false;
}

void HubStandIn::release() {
  {
    std::lock_guard lock(mu_);
    released_ = true;
    stall_.clear();
  }
  cv_.notify_all();
}

std::vector<StandInRequest> HubStandIn::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int HubStandIn::count(const std::string& path_part) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& r : requests_) n += r.path.find(path_part) != std::string::npos;
  return n;
}

void HubStandIn::clear_requests() {
  std::lock_guard lock(mu_);
  requests_.clear();
}
