// TrainWorker: one `forja-cli train <config> --json-progress` process, supervised by the window. The process
// is started detached, with its JSON lines going to <output_dir>/progress.jsonl and its errors to worker.log,
// so that closing the window (or a crash of either side) never takes the run down; the worker reads that file
// from the start, so a window that opens later re-attaches to a run still going and replays its curve.
#pragma once

#include <QFile>
#include <QJsonObject>
#include <QObject>
#include <QString>

class QTimer;

namespace forja::ui {

class TrainWorker : public QObject {
  Q_OBJECT

 public:
  explicit TrainWorker(QObject* parent = nullptr);
  ~TrainWorker() override;

  // Where forja-cli is: FORJA_CLI, else beside this executable, else one folder up (the build tree's app/).
  static QString cli_path();
  // Whether a worker's pid still names a live process (kill(pid, 0)). A reused pid makes a dead run look
  // alive until that process ends too: the safe side of the mistake.
  static bool process_alive(qint64 pid);

  // Starts the worker on `config_path` (a TrainConfig JSON) writing into `output_dir`. False with error() set
  // when the process could not start.
  // The run goes into the journal at `journal_path` (the window's), or forja-cli's default one when empty.
  // `extra_args` go after the config (e.g. --nproc 2 / --gpus 2 for a data-parallel run).
  bool start(const QString& config_path, const QString& output_dir, const QString& journal_path = {},
             const QStringList& extra_args = {});
  // Follows a worker that is already running (pid) or has run, by reading output_dir/progress.jsonl.
  void attach(const QString& output_dir, qint64 pid);
  // Asks the worker to pause: it writes a checkpoint and exits (SIGTERM). Resuming is start() with the same
  // config.
  void request_pause();
  // Kills the worker at once (SIGKILL); the last checkpoint stays.
  void kill();

  bool running() const;
  qint64 pid() const { return pid_; }
  QString output_dir() const { return output_dir_; }
  QString error() const { return error_; }
  static constexpr int kPollMs = 100;

 Q_SIGNALS:
  void step(const QJsonObject& progress);     // {"event":"step", step, total_steps, loss, lr, grad_norm, ...}
  void message(const QString& text);          // the engine's messages and the worker's stderr lines
  void checkpoint(const QJsonObject& saved);  // {"event":"checkpoint", step, path}: written after its step
  void finished(const QJsonObject& result);   // {"event":"done", outcome, steps, adapter, checkpoint}
  // The process is gone without a "done" line: killed, crashed, out of memory. `log` is worker.log's tail.
  void died(const QString& log);

 private:
  void poll();
  QString log_tail() const;

  QString output_dir_;
  qint64 pid_ = 0;
  qint64 read_pos_ = 0;
  QByteArray partial_;
  bool done_ = false;
  QString error_;
  QTimer* timer_;
};

}  // namespace forja::ui
