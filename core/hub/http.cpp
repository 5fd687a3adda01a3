#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "forja/error.h"

namespace forja::hub {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  HttpResponse* response = nullptr;
  std::string* body = nullptr;
  size_t max_body = 0;
  bool too_big = false;
  std::FILE* file = nullptr;
  uint64_t written = 0;
  bool write_failed = false;
  int write_errno = 0;
  const std::function<bool(uint64_t)>* on_bytes = nullptr;
  bool cancelled = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  // Each response of a redirect chain starts with its status line: keep only the last response's headers.
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t v = colon + 1;
  while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) ++v;
  t->response->headers[name] = line.substr(v);
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->file) {
    if (std::fwrite(data, 1, n, t->file) != n) {
      t->write_failed = true;
      t->write_errno = errno;
      return 0;  // aborts the transfer: the disk is full or the file went away
    }
    t->written += n;
    if (t->on_bytes && *t->on_bytes && !(*t->on_bytes)(t->written)) {
      t->cancelled = true;
      return 0;
    }
    return n;
  }
  if (t->body->size() + n > t->max_body) {
    t->too_big = true;
    return 0;
  }
  t->body->append(data, n);
  return n;
}

}  // namespace

struct HttpClient::Impl {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
};

HttpClient::HttpClient(std::string token) : impl_(new Impl) {
  global_init();
  impl_->curl = curl_easy_init();
  if (!impl_->curl) {
    delete impl_;
    throw Error("cannot start the HTTP client (libcurl)");
  }
  const std::string agent = std::string("forja/") + FORJA_VERSION + "; hf_hub-compatible";
  impl_->headers = curl_slist_append(impl_->headers, "Accept-Encoding: identity");
  if (!token.empty())
    impl_->headers = curl_slist_append(impl_->headers, ("Authorization: Bearer " + token).c_str());
  CURL* c = impl_->curl;
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, impl_->headers);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, impl_->error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
  // A connection that delivers nothing for a minute is dropped and resumed rather than waited on forever.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
}

HttpClient::~HttpClient() {
  curl_slist_free_all(impl_->headers);
  curl_easy_cleanup(impl_->curl);
  delete impl_;
}

HttpResponse HttpClient::get(const std::string& url, size_t max_body) {
  HttpResponse r;
  Transfer t;
  t.response = &r;
  t.body = &r.body;
  t.max_body = max_body;
  CURL* c = impl_->curl;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, curl_off_t(0));
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  impl_->error[0] = 0;
  const CURLcode rc = curl_easy_perform(c);
  if (t.too_big) throw Error(url + ": the answer is larger than " + std::to_string(max_body) + " bytes");
  if (rc != CURLE_OK)
    throw Error("cannot reach " + url + ": " + (impl_->error[0] ? impl_->error : curl_easy_strerror(rc)),
                "Check the network connection and the proxy (https_proxy); HF_ENDPOINT sets a mirror, "
                "HF_HUB_OFFLINE=1 uses the cache only.");
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  char* eff = nullptr;
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
  if (eff) r.url = eff;
  return r;
}

HttpResponse HttpClient::download(const std::string& url, std::FILE* out, uint64_t offset,
                                  const std::function<bool(uint64_t)>& on_bytes, TransferBroken* broken,
                                  bool* cancelled) {
  HttpResponse r;
  std::string error_body;
  Transfer t;
  t.response = &r;
  t.body = &error_body;
  t.max_body = 1 << 16;
  t.file = out;
  t.written = offset;
  t.on_bytes = &on_bytes;
  CURL* c = impl_->curl;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, curl_off_t(offset));
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  // An error status must not be written into the blob: fail on >= 400 and read the status afterwards.
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  impl_->error[0] = 0;
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 0L);
  curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, curl_off_t(0));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  *cancelled = t.cancelled;
  if (t.write_failed) {
    broken->write_errno = t.write_errno != 0 ? t.write_errno : EIO;
    return r;
  }
  if (rc == CURLE_OK || t.cancelled) return r;
  if (rc == CURLE_HTTP_RETURNED_ERROR) return r;  // the caller explains the status
  if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_PROXY)
    throw Error("cannot reach " + url + ": " + (impl_->error[0] ? impl_->error : curl_easy_strerror(rc)),
                "Check the network connection and the proxy (https_proxy); HF_ENDPOINT sets a mirror, "
                "HF_HUB_OFFLINE=1 uses the cache only.");
  broken->reason = impl_->error[0] ? impl_->error : curl_easy_strerror(rc);
  if (rc == CURLE_RANGE_ERROR) broken->reason = "range";
  return r;
}

std::string url_encode(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace forja::hub
