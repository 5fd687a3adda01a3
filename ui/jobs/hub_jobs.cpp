#include "jobs/hub_jobs.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

#include <filesystem>

#include "forja/error.h"
#include "forja/model_info.h"
#include "format.h"

namespace forja::ui {

namespace {
namespace fs = std::filesystem;

forja::hub::PullOptions options_for(const forja::hub::RepoRef& ref) {
  forja::hub::PullOptions o;
  o.ref = ref;
  o.settings = forja::hub::settings_from_environment();
  return o;
}

// The bytes of a folder outside the cache, links followed: a local model may link its weights from elsewhere.
uint64_t folder_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += it->file_size(e2);
  }
  return total;
}

// The architecture config.json names, for a model inspect_model refused: the user still sees what it is.
QString named_architecture(const fs::path& dir) {
  QFile file(QString::fromStdString((dir / "config.json").string()));
  if (!file.open(QIODevice::ReadOnly)) return {};
  const QJsonObject config = QJsonDocument::fromJson(file.read(1 << 20)).object();
  const QJsonArray names = config.value(QLatin1String("architectures")).toArray();
  return names.isEmpty() ? config.value(QLatin1String("model_type")).toString() : names.first().toString();
}

// Supported means inspect_model read the folder: it throws for a model_type Forja does not load, naming it
// and the types it does; that text is the row's reason.
void inspect_into(LibraryEntry& entry, const fs::path& dir) {
  try {
    const forja::ModelInfo info = forja::inspect_model(dir);
    entry.supported = true;
    entry.architecture = QString::fromStdString(info.architecture);
    entry.parameters = info.parameters;
    entry.checkpoint_dtype = QString::fromStdString(info.checkpoint_dtype);
  } catch (const forja::Error& e) {
    entry.problem = QString::fromStdString(e.message());
    if (!e.hint().empty()) entry.problem += QLatin1Char('\n') + QString::fromStdString(e.hint());
  } catch (const std::exception& e) {  // a file system error while reading it
    entry.problem = QString::fromStdString(e.what());
  }
  if (!entry.supported) entry.architecture = named_architecture(dir);
}

}  // namespace

HubPlanJob::HubPlanJob(forja::hub::RepoRef ref)
    : Job(tr("Asking the Hub about %1").arg(QString::fromStdString(ref.repo_id))), ref_(std::move(ref)) {}

void HubPlanJob::execute() {
  report(-1, tr("reading the file list").toStdString());
  const auto plan = forja::hub::plan_pull(options_for(ref_));
  Q_EMIT planned(plan);
}

HubPullJob::HubPullJob(forja::hub::RepoRef ref)
    : Job(tr("Downloading %1").arg(QString::fromStdString(ref.repo_id))), ref_(std::move(ref)) {}

void HubPullJob::execute() {
  const auto progress = [this](const forja::hub::PullProgress& p) {
    const double fraction = p.total ? double(p.done) / double(p.total) : 1.0;
    report(fraction,
           tr("%1 — %2/s")
               .arg(QString::fromStdString(p.file), format_bytes(static_cast<int64_t>(p.bytes_per_second)))
               .toStdString());
  };
  try {
    const auto dir = forja::hub::pull(options_for(ref_), progress, [this] { return cancel_requested(); });
    Q_EMIT pulled(QString::fromStdString(dir.string()));
  } catch (const forja::Error&) {
    if (cancel_requested()) return;  // a cancelled pull ends as cancelled, its partial file kept for a resume
    throw;
  }
}

HubCacheJob::HubCacheJob(std::string delete_repo, QStringList recent, QMap<QString, QDateTime> last_used)
    : Job(delete_repo.empty() ? tr("Reading the model cache")
                              : tr("Deleting %1").arg(QString::fromStdString(delete_repo))),
      delete_repo_(std::move(delete_repo)),
      recent_(std::move(recent)),
      last_used_(std::move(last_used)) {}

void HubCacheJob::execute() {
  const auto settings = forja::hub::settings_from_environment();
  quint64 freed = 0;
  if (!delete_repo_.empty()) freed = forja::hub::delete_cached_model(settings, delete_repo_);
  std::vector<LibraryEntry> entries;
  QSet<QString> snapshots;
  for (const auto& m : forja::hub::list_cached_models(settings)) {
    if (!report(-1, m.repo_id)) return;
    LibraryEntry e;
    e.path = QDir::cleanPath(QString::fromStdString(m.snapshot.string()));
    e.repo_id = QString::fromStdString(m.repo_id);
    e.commit = QString::fromStdString(m.commit);
    for (const auto& r : m.revisions) e.revisions << QString::fromStdString(r);
    e.disk_bytes = m.disk_bytes;
    e.complete = m.complete;
    if (m.complete) inspect_into(e, m.snapshot);
    e.last_used = last_used_.value(e.path);
    snapshots.insert(e.path);
    entries.push_back(std::move(e));
  }
  for (const QString& folder : recent_) {
    LibraryEntry e;
    e.path = QDir::cleanPath(folder);
    if (snapshots.contains(e.path)) continue;  // a downloaded model opened before: its cache row says so
    if (!report(-1, e.path.toStdString())) return;
    const fs::path dir(e.path.toStdString());
    std::error_code ec;
    e.found = fs::is_directory(dir, ec);
    if (e.found) {
      e.disk_bytes = folder_bytes(dir);
      inspect_into(e, dir);
    }
    e.last_used = last_used_.value(e.path);
    entries.push_back(std::move(e));
  }
  Q_EMIT listed(entries, freed);
}

}  // namespace forja::ui
