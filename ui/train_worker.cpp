// TrainWorker: starting, following and stopping the training process.
#include "train_worker.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>
#include <QTimer>

#include <signal.h>
#include <sys/types.h>

#include <cerrno>

namespace forja::ui {

bool TrainWorker::process_alive(qint64 pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

TrainWorker::TrainWorker(QObject* parent) : QObject(parent), timer_(new QTimer(this)) {
  timer_->setInterval(kPollMs);
  connect(timer_, &QTimer::timeout, this, &TrainWorker::poll);
}

TrainWorker::~TrainWorker() = default;

QString TrainWorker::cli_path() {
  const QByteArray env = qgetenv("FORJA_CLI");
  if (!env.isEmpty()) return QString::fromLocal8Bit(env);
  const QDir dir(QCoreApplication::applicationDirPath());
  for (const QString& candidate :
       {dir.filePath(QStringLiteral("forja-cli")), dir.filePath(QStringLiteral("../forja-cli")),
        dir.filePath(QStringLiteral("../../app/forja-cli"))})
    if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).absoluteFilePath();
  return QStringLiteral("forja-cli");  // on PATH
}

bool TrainWorker::start(const QString& config_path, const QString& output_dir, const QString& journal_path,
                        const QStringList& extra_args) {
  if (running()) {
    error_ = tr("A training run is already going in this window.");
    return false;
  }
  if (!QDir().mkpath(output_dir)) {
    error_ = tr("%1: the folder cannot be created").arg(output_dir);
    return false;
  }
  output_dir_ = output_dir;
  const QString progress = QDir(output_dir).filePath(QStringLiteral("progress.jsonl"));
  // A resumed run appends to the same file: its curve continues where the paused one stopped.
  QFile f(progress);
  read_pos_ = f.exists() ? f.size() : 0;
  partial_.clear();
  done_ = false;
  QProcess p;
  p.setProgram(cli_path());
  QStringList args = {QStringLiteral("train"), config_path, QStringLiteral("--json-progress")};
  if (!journal_path.isEmpty()) args << QStringLiteral("--journal") << journal_path;
  args << extra_args;
  p.setArguments(args);
  p.setStandardOutputFile(progress, QIODevice::Append);
  p.setStandardErrorFile(QDir(output_dir).filePath(QStringLiteral("worker.log")), QIODevice::Append);
  p.setStandardInputFile(QProcess::nullDevice());
  // Detached: the run belongs to no window. It ends when it is done, paused or killed, never with the window.
  if (!p.startDetached(&pid_)) {
    error_ = tr("%1 could not be started: %2").arg(cli_path(), p.errorString());
    pid_ = 0;
    return false;
  }
  timer_->start();
  return true;
}

void TrainWorker::attach(const QString& output_dir, qint64 pid) {
  output_dir_ = output_dir;
  pid_ = pid;
  read_pos_ = 0;
  partial_.clear();
  done_ = false;
  timer_->start();
  poll();
}

void TrainWorker::request_pause() {
  if (running()) ::kill(static_cast<pid_t>(pid_), SIGTERM);
}

void TrainWorker::kill() {
  if (running()) ::kill(static_cast<pid_t>(pid_), SIGKILL);
}

bool TrainWorker::running() const {
  return !done_ && process_alive(pid_);
}

void TrainWorker::poll() {
  // Read before checking liveness, so the lines a worker wrote just before it exited are never lost.
  const bool was_alive = process_alive(pid_);
  QFile f(QDir(output_dir_).filePath(QStringLiteral("progress.jsonl")));
  if (f.open(QIODevice::ReadOnly) && f.size() > read_pos_) {
    f.seek(read_pos_);
    partial_ += f.readAll();
    read_pos_ = f.pos();
    qsizetype nl;
    while ((nl = partial_.indexOf('\n')) >= 0) {
      const QByteArray line = partial_.left(nl).trimmed();
      partial_.remove(0, nl + 1);
      if (line.isEmpty()) continue;
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      const QString event = o.value(QStringLiteral("event")).toString();
      if (event == QLatin1String("step")) {
        Q_EMIT step(o);
      } else if (event == QLatin1String("checkpoint")) {
        Q_EMIT checkpoint(o);
      } else if (event == QLatin1String("message")) {
        Q_EMIT message(o.value(QStringLiteral("text")).toString());
      } else if (event == QLatin1String("done")) {
        done_ = true;
        timer_->stop();
        Q_EMIT finished(o);
        return;
      }
    }
  }
  if (!was_alive && !done_) {
    // Reaped only by the system (detached): a zombie never lingers. No "done" line: it died.
    done_ = true;
    timer_->stop();
    Q_EMIT died(log_tail());
  }
}

QString TrainWorker::log_tail() const {
  QFile f(QDir(output_dir_).filePath(QStringLiteral("worker.log")));
  if (!f.open(QIODevice::ReadOnly)) return {};
  if (f.size() > 4000) f.seek(f.size() - 4000);
  return QString::fromUtf8(f.readAll()).trimmed();
}

}  // namespace forja::ui
