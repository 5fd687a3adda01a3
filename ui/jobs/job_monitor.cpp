// JobMonitor: bookkeeping of the jobs in flight.
#include "jobs/job_monitor.h"

namespace forja::ui {

void JobMonitor::start(Job* job) {
  jobs_.append(job);
  fraction_ = -1;
  message_.clear();
  connect(job, &Job::progressed, this, [this, job](double fraction, const QString& message) {
    if (job != current()) return;
    fraction_ = fraction;
    message_ = message;
    Q_EMIT changed();
  });
  connect(job, &Job::ended, this, [this, job] {
    jobs_.removeAll(job);
    jobs_.removeAll(nullptr);
    fraction_ = -1;
    message_.clear();
    Q_EMIT changed();
  });
  job->start();
  Q_EMIT changed();
}

Job* JobMonitor::current() const {
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it)
    if (*it) return *it;
  return nullptr;
}

QString JobMonitor::summary() const {
  const Job* job = current();
  if (!job) return {};
  QString text = job->title();
  if (fraction_ >= 0) text += tr(" — %1%").arg(qRound(fraction_ * 100));
  if (jobs_.size() > 1) text += tr(" (+%1 more)").arg(jobs_.size() - 1);
  return text;
}

void JobMonitor::cancel_all() {
  for (const auto& job : jobs_)
    if (job) job->cancel();
}

}  // namespace forja::ui
