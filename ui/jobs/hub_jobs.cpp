#include "jobs/hub_jobs.h"

#include "forja/error.h"
#include "format.h"

namespace forja::ui {

namespace {

forja::hub::PullOptions options_for(const forja::hub::RepoRef& ref) {
  forja::hub::PullOptions o;
  o.ref = ref;
  o.settings = forja::hub::settings_from_environment();
  return o;
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

HubCacheJob::HubCacheJob(std::string delete_repo)
    : Job(delete_repo.empty() ? tr("Reading the model cache")
                              : tr("Deleting %1").arg(QString::fromStdString(delete_repo))),
      delete_repo_(std::move(delete_repo)) {}

void HubCacheJob::execute() {
  const auto settings = forja::hub::settings_from_environment();
  quint64 freed = 0;
  if (!delete_repo_.empty()) freed = forja::hub::delete_cached_model(settings, delete_repo_);
  Q_EMIT listed(forja::hub::list_cached_models(settings), freed);
}

}  // namespace forja::ui
