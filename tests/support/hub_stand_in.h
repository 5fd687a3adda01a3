// A Hugging Face Hub stand-in on 127.0.0.1 for the download tests (engine and window suites): the model-info
// API with ?blobs=true, resolve URLs with the Hub's headers (X-Repo-Commit, ETag / X-Linked-Etag,
// X-Linked-Size, X-Error-Code), LFS files redirected to a "CDN" path that honours Range, a gated repository,
// and faults on demand (a connection cut after N bytes, a stall that holds a transfer until released).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct StandInFile {
  std::string content;
  bool lfs = false;
  bool listed_only = false;  // in the API's listing, but its resolve URL answers 404 EntryNotFound
};

struct StandInRepo {
  std::string commit;                        // 40 hex digits
  std::map<std::string, StandInFile> files;  // path -> file
  bool gated = false;
  // The commit resolve URLs answer in X-Repo-Commit, whatever was asked (a mirror out of step); `commit` when
  // empty.
  std::string served_commit;
};

struct StandInRequest {
  std::string path;
  std::string range;  // the Range header, empty when none
  int status = 0;
};

class HubStandIn {
 public:
  static constexpr const char* kToken = "hf_forjaTestToken";

  HubStandIn();
  ~HubStandIn();

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void add_repo(const std::string& id, StandInRepo repo);
  // Every regular file of a folder; safetensors and tokenizer.model as LFS files, the rest as small files.
  static StandInRepo repo_from_folder(const std::filesystem::path& dir, const std::string& commit);

  // The next CDN transfer of `file` stops after `after_bytes` bytes of the file (the connection is closed).
  void cut_once(const std::string& file, uint64_t after_bytes);
  // CDN transfers of `file` hold at `at_byte` until release(); for killing a client mid-file.
  void stall_at(const std::string& file, uint64_t at_byte);
  void release();
  std::vector<StandInRequest> requests() const;
  int count(const std::string& path_part) const;
  void clear_requests();

  static std::string sha256(const std::string& content);
  static std::string git_blob_id(const std::string& content);

 private:
  void serve_cdn(const httplib::Request& req, httplib::Response& res, const std::string& sha);

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, StandInRepo> repos_;
  std::map<std::string, uint64_t> cut_;    // file path -> stop after this many bytes
  std::map<std::string, uint64_t> stall_;  // file path -> hold at this byte
  bool released_ = false, stopping_ = false;
  std::vector<StandInRequest> requests_;
};
