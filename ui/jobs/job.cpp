// Job: the thread hand-off, throttled progress and the exception-to-signal boundary.
#include "jobs/job.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QMutex>
#include <QThread>
#include <QWaitCondition>

#include <set>

#include "forja/error.h"

namespace forja::ui {
namespace {

// Running jobs and live job threads. A thread outlives its job's last signal by a moment; quitting the
// application while one still runs would abort, so the count covers threads, not jobs.
struct Registry {
  QMutex mutex;
  QWaitCondition idle;
  std::set<Job*> jobs;
  int threads = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Job::Job(QString title) : title_(std::move(title)) {}

Job::~Job() = default;

void Job::start() {
  Q_ASSERT(!thread_);
  thread_ = new QThread;
  thread_->setObjectName(title_);
  moveToThread(thread_);
  connect(thread_, &QThread::started, this, &Job::run_on_thread, Qt::DirectConnection);
  connect(thread_, &QThread::finished, thread_, &QObject::deleteLater);
  connect(
      thread_, &QThread::finished, thread_,
      [] {
        Registry& r = registry();
        QMutexLocker lock(&r.mutex);
        --r.threads;
        r.idle.wakeAll();
      },
      Qt::DirectConnection);
  {
    Registry& r = registry();
    QMutexLocker lock(&r.mutex);
    r.jobs.insert(this);
    ++r.threads;
  }
  thread_->start();
}

int Job::running_count() {
  Registry& r = registry();
  QMutexLocker lock(&r.mutex);
  return r.threads;
}

bool Job::cancel_all_and_wait(int timeout_ms) {
  Registry& r = registry();
  QMutexLocker lock(&r.mutex);
  for (Job* job : r.jobs) job->cancel();
  QDeadlineTimer deadline(timeout_ms);
  while (r.threads > 0) {
    if (!r.idle.wait(&r.mutex, deadline)) return r.threads == 0;
  }
  return true;
}

bool Job::report(double fraction, const std::string& message) {
  pending_ = true;
  pending_fraction_ = fraction;
  pending_message_ = QString::fromStdString(message);
  const auto now = std::chrono::steady_clock::now();
  if (fraction >= 1.0 || now - last_emit_ >= kProgressInterval) {
    last_emit_ = now;
    flush_progress();
  }
  return !cancel_requested_;
}

void Job::flush_progress() {
  if (!pending_) return;
  pending_ = false;
  Q_EMIT progressed(pending_fraction_, pending_message_);
}

void Job::run_on_thread() {
  enum class Outcome { Succeeded, Failed, Cancelled } outcome = Outcome::Succeeded;
  QString message, hint;
  try {
    execute();
  } catch (const forja::Error& e) {
    outcome = Outcome::Failed;
    message = QString::fromStdString(e.message());
    hint = QString::fromStdString(e.hint());
  } catch (const std::exception& e) {
    outcome = Outcome::Failed;
    message = QString::fromUtf8(e.what());
    hint = tr("This is an error Forja did not expect. Please report it with the steps that led to it.");
  } catch (...) {
    outcome = Outcome::Failed;
    message = tr("%1 stopped with an unknown error.").arg(title_);
    hint = tr("This is an error Forja did not expect. Please report it with the steps that led to it.");
  }
  // A job that saw the stop flag and gave up is cancelled even when the engine threw on its way out.
  if (cancel_requested_) outcome = Outcome::Cancelled;
  flush_progress();
  switch (outcome) {
    case Outcome::Succeeded:
      Q_EMIT succeeded();
      break;
    case Outcome::Failed:
      Q_EMIT failed(message, hint);
      break;
    case Outcome::Cancelled:
      Q_EMIT cancelled();
      break;
  }
  Q_EMIT ended();
  {
    Registry& r = registry();
    QMutexLocker lock(&r.mutex);
    r.jobs.erase(this);
  }
  // Back to the GUI thread so that deleteLater runs there, after the queued signals above were delivered.
  QThread* thread = thread_;
  moveToThread(QCoreApplication::instance()->thread());
  deleteLater();
  thread->quit();
}

}  // namespace forja::ui
