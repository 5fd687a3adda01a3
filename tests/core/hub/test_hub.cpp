// Hub downloads against a local stand-in of the Hub (hub_stand_in.h): the cache layout huggingface_hub uses,
// resume after a cut connection and after a killed process, verification, the Hub's errors, offline mode, the
// disk-space check, and a model pulled by repo id that then trains and generates through forja-cli.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/hub.h"
#include "forja/model_info.h"
#include "hub_stand_in.h"
#include "util/sha1.h"
#include "util/sha256.h"

namespace fs = std::filesystem;
using forja::hub::PullOptions;

namespace {

const fs::path kDemo = fs::path(FORJA_SOURCE_DIR) / "resources" / "demo" / "model";
const fs::path kLlama = fs::path(FORJA_FIXTURES_DIR) / "models" / "llama";
// Commit ids of the stand-in's repositories: any 40 hex digits.
const std::string kDemoCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kLlamaCommit = "89abcdef0123456789abcdef0123456789abcdef";

std::string read_all(const fs::path& p) {
  return forja::read_text_file(p);
}

QString error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const forja::Error& e) {
    return QString::fromStdString(std::string(e.what()) + " | " + e.hint());
  }
  return {};
}

// An HTTP forward proxy on 127.0.0.1, as a company network has one: it takes absolute-form requests, passes
// them on unchanged (no redirect followed, Range and authorization kept) and records what it passed. With
// `basic_credentials` (base64 of user:password) it answers 407 to a request without that Proxy-Authorization.
class ForwardProxy {
 public:
  explicit ForwardProxy(std::string basic_credentials = {}) : credentials_(std::move(basic_credentials)) {
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) { forward(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ForwardProxy() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& user_info = {}) const {
    return "http://" + user_info + "127.0.0.1:" + std::to_string(port_);
  }
  std::vector<std::string> passed() const {
    std::lock_guard lock(mu_);
    return passed_;
  }

 private:
  void forward(const httplib::Request& req, httplib::Response& res) {
    if (!credentials_.empty() && req.get_header_value("Proxy-Authorization") != "Basic " + credentials_) {
      res.status = 407;
      res.set_header("Proxy-Authenticate", "Basic realm=\"forja-test\"");
      return;
    }
    // The target is absolute: http://host:port/path?query.
    const std::string& target = req.target;
    const size_t host_start = target.find("://"), path_start = target.find('/', host_start + 3);
    if (host_start == std::string::npos || path_start == std::string::npos) {
      res.status = 400;
      return;
    }
    httplib::Client upstream(target.substr(0, path_start));
    httplib::Headers headers;
    for (const auto& [name, value] : req.headers)
      if (name != "Proxy-Authorization" && name != "Proxy-Connection" && name != "Host")
        headers.emplace(name, value);
    const auto answer = upstream.Get(target.substr(path_start), headers);
    {
      std::lock_guard lock(mu_);
      passed_.push_back(target);
    }
    if (!answer) {
      res.status = 502;
      return;
    }
    res.status = answer->status;
    for (const auto& [name, value] : answer->headers)
      if (name != "Content-Length" && name != "Transfer-Encoding" && name != "Connection")
        res.headers.emplace(name, value);
    res.body = answer->body;
  }

  std::string credentials_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<std::string> passed_;
};

// A local port bound but not listening: connections to it are refused, and no other process can take it
// while this lives.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      qFatal("no local port to bind");
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
};

// Sets the proxy variables for one test (libcurl reads them at each transfer) and restores them after.
class ProxyEnvironment {
 public:
  explicit ProxyEnvironment(const std::string& proxy) {
    for (const char* name : kNames) {
      if (const char* v = std::getenv(name)) saved_.emplace_back(name, v);
      qunsetenv(name);
    }
    qputenv("http_proxy", QByteArray::fromStdString(proxy));
  }
  ~ProxyEnvironment() {
    for (const char* name : kNames) qunsetenv(name);
    for (const auto& [name, value] : saved_) qputenv(name.c_str(), QByteArray::fromStdString(value));
  }

 private:
  static constexpr const char* kNames[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                           "all_proxy",  "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace

class TestHub : public QObject {
  Q_OBJECT

  std::unique_ptr<HubStandIn> hub_;
  std::unique_ptr<QTemporaryDir> tmp_;

  PullOptions options(const std::string& repo) const {
    PullOptions o;
    o.ref = forja::hub::parse_repo_ref(repo);
    o.settings.endpoint = hub_->endpoint();
    o.settings.cache_dir = fs::path(tmp_->path().toStdString()) / "hub";
    return o;
  }
  fs::path repo_dir(const std::string& repo) const {
    return forja::hub::repo_cache_dir(options(repo).settings, repo);
  }
  std::string demo_sha(const std::string& file) const { return forja::sha256_file(kDemo / file); }

 private Q_SLOTS:
  void init() {
    hub_ = std::make_unique<HubStandIn>();
    tmp_ = std::make_unique<QTemporaryDir>();
    StandInRepo demo = HubStandIn::repo_from_folder(kDemo, kDemoCommit);
    demo.files["pytorch_model.bin"] = {"not a real pickle", true};
    demo.files["onnx/model.onnx"] = {"onnx bytes", true};
    demo.files["original/params.json"] = {"{}", false};
    hub_->add_repo("forja-test/demo", demo);
    StandInRepo gated = HubStandIn::repo_from_folder(kDemo, kDemoCommit);
    gated.gated = true;
    hub_->add_repo("forja-test/gated", gated);
    StandInRepo llama = HubStandIn::repo_from_folder(kLlama, kLlamaCommit);
    llama.files["model.safetensors"] = {"an old single-file copy that the index does not name", true};
    hub_->add_repo("forja-test/sharded", llama);
    StandInRepo pickles;
    pickles.commit = kLlamaCommit;
    pickles.files["config.json"] = {read_all(kLlama / "config.json"), false};
    pickles.files["pytorch_model.bin"] = {"pickle", true};
    hub_->add_repo("forja-test/pickles", pickles);
    StandInRepo stale = HubStandIn::repo_from_folder(kDemo, kDemoCommit);
    stale.served_commit = kLlamaCommit;
    hub_->add_repo("forja-test/stale-mirror", stale);
    StandInRepo stale_small;
    stale_small.commit = kDemoCommit;
    stale_small.served_commit = kLlamaCommit;
    stale_small.files["tokenizer.json"] = {read_all(kDemo / "tokenizer.json"), false};
    hub_->add_repo("forja-test/stale-mirror-no-config", stale_small);
    StandInRepo gone = HubStandIn::repo_from_folder(kDemo, kDemoCommit);
    gone.files["tokenizer.json"].listed_only = true;
    hub_->add_repo("forja-test/listed-but-gone", gone);
  }
  void cleanup() {
    hub_.reset();
    tmp_.reset();
    qunsetenv("FORJA_TEST_FREE_BYTES");
  }

  void sha1KnownAnswers() {
    // FIPS 180-4 examples, and git's id of a blob (`printf 'hello\n' | git hash-object --stdin`).
    QCOMPARE(forja::sha1_hex("abc"), std::string("a9993e364706816aba3e25717850c26c9cd0d89d"));
    QCOMPARE(forja::sha1_hex(""), std::string("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    QCOMPARE(forja::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("84983e441c3bd26ebaae4aa1f95129e5e54670f1"));
    forja::Sha1 blob = forja::git_blob_hasher(6);
    blob.update("hello\n", 6);
    QCOMPARE(blob.hex_digest(), std::string("ce013625030ba8dba906f756967f9e9ca394464a"));
    // A million 'a's crosses many blocks through update() in uneven pieces.
    forja::Sha1 big;
    const std::string chunk(997, 'a');
    size_t left = 1000000;
    while (left) {
      const size_t n = std::min(left, chunk.size());
      big.update(chunk.data(), n);
      left -= n;
    }
    QCOMPARE(big.hex_digest(), std::string("34aa973cd4c4daa4f61eeb2bdbad27316534016f"));
  }

  void globsAsHuggingfaceHub() {
    using forja::hub::glob_match;
    QVERIFY(glob_match("*.json", "config.json"));
    QVERIFY(glob_match("*.json", "original/params.json"));  // fnmatch's '*' crosses '/'
    QVERIFY(!glob_match("*.json", "model.safetensors"));
    QVERIFY(glob_match("tokenizer*", "tokenizer_config.json"));
    QVERIFY(glob_match("model-0000[1-2]-of-00003.safetensors", "model-00002-of-00003.safetensors"));
    QVERIFY(!glob_match("model-0000[1-2]-of-00003.safetensors", "model-00003-of-00003.safetensors"));
    QVERIFY(glob_match("model-0000[!1]*", "model-00003-of-00003.safetensors"));
    QVERIFY(glob_match("onnx/", "onnx/model.onnx"));
    QVERIFY(glob_match("?onfig.json", "config.json"));
    QVERIFY(!glob_match("config.json", "xconfig.json"));
  }

  void repoRefs() {
    const auto r = forja::hub::parse_repo_ref("Qwen/Qwen2.5-0.5B-Instruct@v1.0");
    QCOMPARE(r.repo_id, std::string("Qwen/Qwen2.5-0.5B-Instruct"));
    QCOMPARE(r.revision, std::string("v1.0"));
    QCOMPARE(forja::hub::parse_repo_ref("a/b").revision, std::string("main"));
    for (const char* bad : {"name", "a/b/c", "org/", "/name", "org/na me", "org/name@", "../x"})
      QVERIFY2(!error_of([&] { forja::hub::parse_repo_ref(bad); }).isEmpty(), bad);
    QVERIFY(forja::hub::looks_like_repo_id("org/name"));
    QVERIFY(!forja::hub::looks_like_repo_id(kDemo.string()));  // an existing folder stays a folder
    QVERIFY(!forja::hub::looks_like_repo_id("./org/name"));
  }

  void settingsFromTheEnvironment() {
    const QByteArray keys[] = {
        "HF_ENDPOINT",           "HF_HOME",       "HF_HUB_CACHE",   "HF_TOKEN",
        "HF_HUB_OFFLINE",        "HF_TOKEN_PATH", "XDG_CACHE_HOME", "HUGGINGFACE_HUB_CACHE",
        "HUGGING_FACE_HUB_TOKEN"};
    for (const auto& k : keys) qunsetenv(k);
    const fs::path home = fs::path(tmp_->path().toStdString()) / "hfhome";
    fs::create_directories(home);
    forja::write_file_atomic(home / "token", "hf_fromfile\n");
    qputenv("HF_HOME", QByteArray::fromStdString(home.string()));
    qputenv("HF_ENDPOINT", "https://mirror.example/");
    auto s = forja::hub::settings_from_environment();
    QCOMPARE(s.cache_dir, home / "hub");
    QCOMPARE(s.token, std::string("hf_fromfile"));
    QCOMPARE(s.endpoint, std::string("https://mirror.example"));
    QVERIFY(!s.offline);
    qputenv("HF_HUB_CACHE", "/elsewhere/cache");
    qputenv("HF_TOKEN", "hf_fromenv");
    qputenv("HF_HUB_OFFLINE", "1");
    s = forja::hub::settings_from_environment();
    QCOMPARE(s.cache_dir, fs::path("/elsewhere/cache"));
    QCOMPARE(s.token, std::string("hf_fromenv"));
    QVERIFY(s.offline);
    for (const auto& k : keys) qunsetenv(k);
  }

  void fullPullHasHuggingfaceHubsLayout() {
    const auto plan = forja::hub::plan_pull(options("forja-test/demo"));
    QCOMPARE(plan.commit, kDemoCommit);
    QVERIFY(plan.architecture_supported);
    QCOMPARE(plan.tokenizer, std::string("tokenizer.json"));
    std::set<std::string> chosen;
    for (const auto& f : plan.files) chosen.insert(f.path);
    const std::set<std::string> expected = {"config.json",       "generation_config.json",
                                            "model.safetensors", "special_tokens_map.json",
                                            "tokenizer.json",    "tokenizer_config.json"};
    QCOMPARE(chosen, expected);  // expected.json, the pickle, onnx/ and original/ are not what Forja loads
    QCOMPARE(plan.download_bytes, plan.total_bytes);
    const QString left = QString::fromStdString(nlohmann::json(plan.left_out).dump());
    QVERIFY2(left.contains("pytorch_model.bin (a pickle"), qPrintable(left));
    QVERIFY2(left.contains("\"onnx/model.onnx\""), qPrintable(left));

    const fs::path snap = forja::hub::pull(options("forja-test/demo"));
    const fs::path repo = repo_dir("forja-test/demo");
    QCOMPARE(repo.filename().string(), std::string("models--forja-test--demo"));
    QCOMPARE(snap, repo / "snapshots" / kDemoCommit);
    QCOMPARE(read_all(repo / "refs" / "main"), kDemoCommit);
    // LFS files are named by their SHA-256, small ones by their git blob id; snapshots link to them
    // relatively.
    QCOMPARE(fs::read_symlink(snap / "model.safetensors"),
             fs::path("..") / ".." / "blobs" / demo_sha("model.safetensors"));
    QCOMPARE(fs::read_symlink(snap / "config.json"),
             fs::path("..") / ".." / "blobs" / HubStandIn::git_blob_id(read_all(kDemo / "config.json")));
    for (const auto& f : expected) QCOMPARE(forja::sha256_file(snap / f), demo_sha(f));
    for (const auto& e : fs::directory_iterator(repo / "blobs"))
      QVERIFY2(!e.path().string().ends_with(".incomplete"), e.path().c_str());
    QCOMPARE(forja::inspect_model(snap).family, std::string("llama"));
  }

  void secondPullDownloadsNothing() {
    forja::hub::pull(options("forja-test/demo"));
    hub_->clear_requests();
    const auto plan = forja::hub::plan_pull(options("forja-test/demo"));
    QCOMPARE(plan.download_bytes, uint64_t(0));
    forja::hub::pull(options("forja-test/demo"));
    QCOMPARE(hub_->count("/cdn/"), 0);
    for (const auto& r : hub_->requests())  // only the model info and the config read by each plan
      QVERIFY2(r.path.find("/api/") == 0 || r.path.ends_with("/config.json"), r.path.c_str());
  }

  void shardedModelTakesTheIndexShards() {
    const auto plan = forja::hub::plan_pull(options("forja-test/sharded"));
    std::set<std::string> chosen;
    for (const auto& f : plan.files) chosen.insert(f.path);
    QVERIFY(chosen.count("model-00001-of-00003.safetensors") &&
            chosen.count("model-00003-of-00003.safetensors"));
    QVERIFY(chosen.count("model.safetensors.index.json"));
    QVERIFY(!chosen.count("model.safetensors"));  // not named by the index
    const fs::path snap = forja::hub::pull(options("forja-test/sharded"));
    QCOMPARE(forja::inspect_model(snap).parameters, forja::inspect_model(kLlama).parameters);
  }

  void includeAndExclude() {
    auto o = options("forja-test/demo");
    o.include = {"*.json"};
    o.exclude = {"original/"};
    const auto plan = forja::hub::plan_pull(o);
    std::set<std::string> chosen;
    for (const auto& f : plan.files) chosen.insert(f.path);
    QVERIFY(chosen.count("config.json") && chosen.count("expected.json"));
    QVERIFY(!chosen.count("original/params.json") && !chosen.count("model.safetensors"));
    o.include = {"*.bin", "*.json"};  // a pickle is never taken, even when asked for
    for (const auto& f : forja::hub::plan_pull(o).files) QVERIFY(!f.path.ends_with(".bin"));
  }

  void cutConnectionResumesWithRange() {
    // The first transfer of the weights stops 700,000 bytes in; the client resumes from there.
    hub_->cut_once("model.safetensors", 700000);
    const fs::path snap = forja::hub::pull(options("forja-test/demo"));
    QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
    std::vector<std::string> ranges;
    for (const auto& r : hub_->requests())
      if (r.path.find("/cdn/") == 0) ranges.push_back(r.range);
    QCOMPARE(ranges.size(), size_t(2));
    QCOMPARE(ranges[0], std::string());
    QCOMPARE(ranges[1], std::string("bytes=700000-"));
  }

  void killedPullResumesWhereItStopped() {
    const fs::path cache = fs::path(tmp_->path().toStdString()) / "hub";
    const fs::path part =
        repo_dir("forja-test/demo") / "blobs" / (demo_sha("model.safetensors") + ".incomplete");
    hub_->stall_at("model.safetensors", 1200000);
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HF_ENDPOINT", QString::fromStdString(hub_->endpoint()));
    env.insert("HF_HUB_CACHE", QString::fromStdString(cache.string()));
    p.setProcessEnvironment(env);
    p.start(FORJA_CLI_PATH, {"pull", "forja-test/demo"});
    QVERIFY(p.waitForStarted());
    // The server holds the transfer at 1,200,000 bytes; stdio may still buffer the last few KiB.
    QTRY_VERIFY_WITH_TIMEOUT(fs::exists(part) && fs::file_size(part) >= 1200000 - 65536, 120000);
    p.kill();
    QVERIFY(p.waitForFinished(30000));
    const uint64_t kept = fs::file_size(part);
    QVERIFY(kept > 0 && kept <= 1200000);
    hub_->release();
    hub_->clear_requests();
    QProcess again;
    again.setProcessEnvironment(env);
    again.start(FORJA_CLI_PATH, {"pull", "forja-test/demo"});
    QVERIFY(again.waitForFinished(120000));
    QVERIFY2(again.exitCode() == 0, again.readAllStandardError().constData());
    const fs::path snap = repo_dir("forja-test/demo") / "snapshots" / kDemoCommit;
    QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
    bool resumed = false;
    for (const auto& r : hub_->requests()) resumed |= r.range == "bytes=" + std::to_string(kept) + "-";
    QVERIFY2(resumed, "the second pull did not resume with Range from the kept bytes");
    QVERIFY(!fs::exists(part));
  }

  void corruptedBlobIsFetchedAgain() {
    const fs::path snap = forja::hub::pull(options("forja-test/demo"));
    const fs::path blob = repo_dir("forja-test/demo") / "blobs" / demo_sha("model.safetensors");
    {
      std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(1000);
      f.put('\x7f');
    }
    QVERIFY(forja::sha256_file(blob) != demo_sha("model.safetensors"));
    hub_->clear_requests();
    forja::hub::pull(options("forja-test/demo"));
    QCOMPARE(hub_->count("/cdn/"), 1);
    QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
  }

  void hubErrorsSayWhatIsWrong() {
    QString e = error_of([&] { forja::hub::plan_pull(options("forja-test/nothing")); });
    QVERIFY2(e.contains("forja-test/nothing was not found"), qPrintable(e));
    e = error_of([&] { forja::hub::plan_pull(options("forja-test/demo@no-such-branch")); });
    QVERIFY2(e.contains("revision"), qPrintable(e));
    e = error_of([&] { forja::hub::pull(options("forja-test/pickles")); });
    QVERIFY2(e.contains("only PyTorch pickle weights") && e.contains("never loads pickles"), qPrintable(e));
    QVERIFY(!fs::exists(repo_dir("forja-test/pickles") / "blobs"));
  }

  void listedFileThatIsGoneIsNamed() {
    // The listing names tokenizer.json but its download answers 404 EntryNotFound (a mirror that lost it):
    // the pull stops naming the file and the repository, leaves no partial download, and the files it did
    // fetch stay whole for the next try.
    const QString e = error_of([&] { forja::hub::pull(options("forja-test/listed-but-gone")); });
    QVERIFY2(e.contains("tokenizer.json was not found in forja-test/listed-but-gone"), qPrintable(e));
    const fs::path dir = repo_dir("forja-test/listed-but-gone");
    QVERIFY(!fs::exists(dir / "snapshots" / kDemoCommit / "tokenizer.json"));
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      QVERIFY2(entry.path().extension() != ".incomplete", entry.path().c_str());
    if (fs::exists(dir / "blobs"))
      for (const auto& blob : fs::directory_iterator(dir / "blobs")) {
        const std::string name = blob.path().filename().string();
        if (name.size() == 40) {
          const std::string bytes = read_all(blob.path());
          forja::Sha1 id = forja::git_blob_hasher(bytes.size());
          id.update(bytes.data(), bytes.size());
          QCOMPARE(id.hex_digest(), name);
        } else {
          QCOMPARE(forja::sha256_file(blob.path()), name);
        }
      }
  }

  void fileFromAnotherCommitIsRefused() {
    // A mirror that answers the listed commit's URLs from another revision (its X-Repo-Commit says which):
    // refused when the plan reads config.json, before anything is written to the cache...
    QString e = error_of([&] { forja::hub::pull(options("forja-test/stale-mirror")); });
    QVERIFY2(e.contains("served forja-test/stale-mirror/config.json from commit " +
                        QString::fromStdString(kLlamaCommit) + ", not from " +
                        QString::fromStdString(kDemoCommit)),
             qPrintable(e));
    QVERIFY2(e.contains("HF_ENDPOINT"), qPrintable(e));
    QVERIFY(!fs::exists(repo_dir("forja-test/stale-mirror")));
    // ...and, with no config.json to read first, at the download: its bytes are not kept, no ref is written.
    e = error_of([&] { forja::hub::pull(options("forja-test/stale-mirror-no-config")); });
    QVERIFY2(e.contains("served forja-test/stale-mirror-no-config/tokenizer.json from commit"),
             qPrintable(e));
    const fs::path dir = repo_dir("forja-test/stale-mirror-no-config");
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      QVERIFY2(!entry.is_regular_file(), entry.path().c_str());
    QVERIFY(!fs::exists(dir / "refs"));
  }

  void pullGoesThroughTheProxyTheEnvironmentNames() {
    ForwardProxy proxy;
    {
      ProxyEnvironment env(proxy.url());
      const fs::path snap = forja::hub::pull(options("forja-test/demo"));
      QCOMPARE(read_all(snap / "config.json"), read_all(kDemo / "config.json"));
      QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
    }
    // Every request went through it: the listing, the resolve URLs and the "CDN" they redirect to.
    const auto passed = proxy.passed();
    const auto through = [&](const std::string& part) {
      return std::any_of(passed.begin(), passed.end(), [&](const std::string& t) {
        return t.starts_with(hub_->endpoint()) && t.find(part) != std::string::npos;
      });
    };
    QVERIFY(through("/api/models/forja-test/demo/revision/main"));
    QVERIFY(through("/forja-test/demo/resolve/" + kDemoCommit + "/config.json"));
    QVERIFY(through("/cdn/" + demo_sha("model.safetensors")));
    QCOMPARE(size_t(hub_->count("/")), passed.size());
  }

  void proxyErrorsSayWhatToSet() {
    // A proxy that wants credentials: the error says so and where they go; given in the URL, the pull runs.
    ForwardProxy proxy("dXNlcjpzZWNyZXQ=");  // user:secret
    {
      ProxyEnvironment env(proxy.url());
      const QString e = error_of([&] { forja::hub::plan_pull(options("forja-test/demo")); });
      QVERIFY2(e.contains("407") && e.contains("http://user:password@host:port"), qPrintable(e));
    }
    {
      ProxyEnvironment env(proxy.url("user:secret@"));
      QVERIFY(fs::exists(forja::hub::pull(options("forja-test/demo")) / "config.json"));
    }
    // A proxy that is not there: the error names the proxy variables.
    RefusingPort nothing_there;
    ProxyEnvironment env("http://127.0.0.1:" + std::to_string(nothing_there.port()));
    const QString e = error_of([&] { forja::hub::plan_pull(options("forja-test/sharded")); });
    QVERIFY2(e.contains("cannot reach") && e.contains("proxy"), qPrintable(e));
  }

  void gatedModelNeedsItsToken() {
    QString e = error_of([&] { forja::hub::pull(options("forja-test/gated")); });
    QVERIFY2(e.contains("gated") &&
                 e.contains(QString::fromStdString(hub_->endpoint() + "/forja-test/gated")) &&
                 e.contains("HF_TOKEN"),
             qPrintable(e));
    auto o = options("forja-test/gated");
    o.settings.token = "hf_wrong";
    e = error_of([&] { forja::hub::pull(o); });
    QVERIFY2(e.contains("no access"), qPrintable(e));
    o.settings.token = HubStandIn::kToken;
    const fs::path snap = forja::hub::pull(o);
    QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
  }

  void offlineUsesTheCacheOnly() {
    auto o = options("forja-test/demo");
    o.settings.offline = true;
    QString e = error_of([&] { forja::hub::pull(o); });
    QVERIFY2(e.contains("HF_HUB_OFFLINE"), qPrintable(e));
    forja::hub::pull(options("forja-test/demo"));
    hub_->clear_requests();
    const fs::path snap = forja::hub::pull(o);
    QCOMPARE(snap, repo_dir("forja-test/demo") / "snapshots" / kDemoCommit);
    QCOMPARE(int(hub_->requests().size()), 0);
    const auto found = forja::hub::find_cached_snapshot(o.settings, o.ref);
    QVERIFY(found && *found == snap);
  }

  void notEnoughDiskSpaceIsRefusedWithNumbers() {
    qputenv("FORJA_TEST_FREE_BYTES", "1048576");
    const QString e = error_of([&] { forja::hub::pull(options("forja-test/demo")); });
    QVERIFY2(e.contains("not enough disk space") && e.contains("1.0 MiB free"), qPrintable(e));
    QCOMPARE(hub_->count("/cdn/"), 0);
  }

  // A disk that fills during the download, as when another program takes the space the check saw: the cache
  // on a 1 MiB tmpfs, the free-space check told there is room. The pull stops with the file and the problem
  // named, keeps what arrived, and resumes from it once the disk has room.
  void diskFullDuringTheDownloadKeepsThePartAndResumes() {
    const fs::path cache = options("forja-test/demo").settings.cache_dir;
    fs::create_directories(cache);
    if (::mount("tmpfs", cache.c_str(), "tmpfs", 0, "size=1m") != 0)
      QSKIP(qPrintable(QString("mounting a tmpfs needs CAP_SYS_ADMIN, which this process lacks: ") +
                       std::strerror(errno)));
    struct Unmount {
      fs::path at;
      ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{cache};
    qputenv("FORJA_TEST_FREE_BYTES", "1000000000000");
    const QString e = error_of([&] { forja::hub::pull(options("forja-test/demo")); });
    QVERIFY2(e.contains("model.safetensors from forja-test/demo") && e.contains("No space left on device") &&
                 e.contains("kept and resumed"),
             qPrintable(e));
    const fs::path part =
        repo_dir("forja-test/demo") / "blobs" / (demo_sha("model.safetensors") + ".incomplete");
    QVERIFY(fs::exists(part));
    const uint64_t kept = fs::file_size(part);
    QVERIFY2(kept > 0 && kept < fs::file_size(kDemo / "model.safetensors"),
             qPrintable(QString::number(kept)));
    QVERIFY(!fs::exists(repo_dir("forja-test/demo") / "snapshots" / kDemoCommit / "model.safetensors"));

    QVERIFY2(::mount("tmpfs", cache.c_str(), "tmpfs", MS_REMOUNT, "size=8m") == 0, std::strerror(errno));
    hub_->clear_requests();
    const fs::path snap = forja::hub::pull(options("forja-test/demo"));
    QCOMPARE(forja::sha256_file(snap / "model.safetensors"), demo_sha("model.safetensors"));
    bool resumed = false;
    for (const auto& r : hub_->requests()) resumed |= r.range == "bytes=" + std::to_string(kept) + "-";
    QVERIFY(resumed);
  }

  void listAndDeleteCachedModels() {
    forja::hub::pull(options("forja-test/demo"));
    forja::hub::pull(options("forja-test/sharded"));
    const auto settings = options("forja-test/demo").settings;
    const auto models = forja::hub::list_cached_models(settings);
    QCOMPARE(models.size(), size_t(2));
    QCOMPARE(models[0].repo_id, std::string("forja-test/demo"));
    QCOMPARE(models[0].revisions, std::vector<std::string>{"main"});
    QVERIFY(models[0].complete && models[1].complete);
    uint64_t blobs = 0;
    for (const auto& e : fs::recursive_directory_iterator(repo_dir("forja-test/demo")))
      if (e.is_regular_file() && !e.is_symlink()) blobs += e.file_size();
    QCOMPARE(models[0].disk_bytes, blobs);
    QCOMPARE(forja::hub::delete_cached_model(settings, "forja-test/demo"), blobs);
    QVERIFY(!fs::exists(repo_dir("forja-test/demo")));
    QCOMPARE(forja::hub::list_cached_models(settings).size(), size_t(1));
  }

  void pulledByRepoIdThenTrainsAndGenerates() {
    const fs::path cache = fs::path(tmp_->path().toStdString()) / "hub";
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HF_ENDPOINT", QString::fromStdString(hub_->endpoint()));
    env.insert("HF_HUB_CACHE", QString::fromStdString(cache.string()));
    const auto cli = [&](const QStringList& args) {
      QProcess p;
      p.setProcessEnvironment(env);
      p.start(FORJA_CLI_PATH, args);
      if (!p.waitForFinished(300000)) p.kill();
      return std::make_pair(p.exitCode(), QString(p.readAllStandardOutput()) + p.readAllStandardError());
    };
    auto [rc, out] = cli({"info", "forja-test/demo"});
    QVERIFY2(rc != 0 && out.contains("forja-cli pull forja-test/demo"), qPrintable(out));
    std::tie(rc, out) = cli({"pull", "forja-test/demo", "--dry-run"});
    QVERIFY2(rc == 0 && out.contains("loads as the llama family") && out.contains("model.safetensors"),
             qPrintable(out));
    QCOMPARE(int(hub_->count("/cdn/")), 0);
    std::tie(rc, out) = cli({"pull", "forja-test/demo", "--json-progress"});
    QVERIFY2(rc == 0, qPrintable(out));
    bool progressed = false, pulled = false;
    for (const auto& line : out.split('\n')) {
      if (!line.startsWith('{')) continue;
      const auto j = nlohmann::json::parse(line.toStdString());
      progressed |= j["event"] == "progress" || j["event"] == "done";
      pulled |= j["event"] == "pulled";
    }
    QVERIFY2(progressed && pulled, qPrintable(out));
    std::tie(rc, out) = cli({"info", "forja-test/demo"});
    QVERIFY2(rc == 0 && out.contains("LlamaForCausalLM"), qPrintable(out));

    const fs::path run = fs::path(tmp_->path().toStdString()) / "run";
    nlohmann::json config = {
        {"model_dir", "forja-test/demo"},
        {"train_file", (fs::path(FORJA_SOURCE_DIR) / "resources/demo/dataset.jsonl").string()},
        {"output_dir", run.string()},
        {"device", "cpu"},
        {"dtype", "fp32"},
        {"max_steps", 2},
        {"batch_size", 2},
        {"max_length", 64}};
    const fs::path config_path = fs::path(tmp_->path().toStdString()) / "train.json";
    forja::write_file_atomic(config_path, config.dump());
    std::tie(rc, out) = cli({"train", QString::fromStdString(config_path.string()), "--no-journal"});
    QVERIFY2(rc == 0, qPrintable(out));
    QVERIFY(fs::exists(run / "adapter" / "adapter_model.safetensors"));
    std::tie(rc, out) =
        cli({"generate", "forja-test/demo", "--adapter", QString::fromStdString((run / "adapter").string()),
             "--prompt", "What is CUDA?", "--max-new", "4"});
    QVERIFY2(rc == 0, qPrintable(out));
  }
};

QTEST_GUILESS_MAIN(TestHub)
#include "test_hub.moc"
