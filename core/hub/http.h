// A small libcurl client for the Hub: GET into memory or appended to a file (resumed with Range), redirects
// followed, the last response's headers kept, progress and cancel. Proxies come from libcurl's own reading of
// https_proxy / http_proxy / all_proxy / no_proxy.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace forja::hub {

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the final response, names in lower case
  std::string body;
  std::string url;  // after redirects

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Returned by a download when the transfer stopped part way (connection cut, stalled, timed out): what
// arrived is in the file and the caller resumes from there. write_errno is set instead when the file could
// not take the bytes (a full disk): the caller, which knows the file, says so.
struct TransferBroken {
  std::string reason;
  int write_errno = 0;
};

class HttpClient {
 public:
  explicit HttpClient(std::string token);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET with the body in memory (refused past max_body). Throws forja::Error when the host cannot be reached.
  HttpResponse get(const std::string& url, size_t max_body);
  // GET appending to `out` from byte `offset` (a Range request when offset > 0). on_bytes(total written to
  // the file so far) returns false to cancel. Sets `broken` when the transfer stopped before its end.
  HttpResponse download(const std::string& url, std::FILE* out, uint64_t offset,
                        const std::function<bool(uint64_t)>& on_bytes, TransferBroken* broken,
                        bool* cancelled);

 private:
  struct Impl;
  Impl* impl_;
};

// Percent-encodes one path segment or query value (RFC 3986 unreserved characters stay).
std::string url_encode(const std::string& s, bool keep_slash);

}  // namespace forja::hub
