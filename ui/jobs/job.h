// forja::ui::Job: one piece of engine work run off the GUI thread. A job is a QObject moved to its own
// QThread; execute() calls the engine with report() as the progress callback and cancel_token() as the stop
// flag, and the job turns both into queued signals (progress throttled to ~20 per second) and a forja::Error
// into failed(message, hint). The GUI thread never waits on a job; it only connects to its signals.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <chrono>
#include <string>

class QThread;

namespace forja::ui {

class Job : public QObject {
  Q_OBJECT

 public:
  explicit Job(QString title);
  ~Job() override;

  const QString& title() const { return title_; }
  // Starts execute() on a new thread. Call once, from the GUI thread. The job deletes itself (deleteLater, in
  // the GUI thread) after ended(); hold it in a QPointer.
  void start();
  // Asks execute() to stop at its next check; thread-safe, returns at once.
  void cancel() { cancel_requested_ = true; }
  bool cancel_requested() const { return cancel_requested_; }

  // Jobs still running in this process; the application waits for them before it quits.
  static int running_count();
  // Cancels every running job and waits up to `timeout_ms` for them to end; false when some did not.
  static bool cancel_all_and_wait(int timeout_ms);

  // The shortest interval between two progressed() signals: ~20 per second keeps a plot smooth without
  // flooding the GUI thread's event queue.
  static constexpr std::chrono::milliseconds kProgressInterval{50};

 Q_SIGNALS:
  // fraction in [0, 1], or a negative value when the work has no known length.
  void progressed(double fraction, const QString& message);
  void succeeded();
  void failed(const QString& message, const QString& hint);
  void cancelled();
  // Always the last signal, after exactly one of succeeded / failed / cancelled.
  void ended();

 protected:
  // Runs on the job's thread. Throw forja::Error for anything the user can fix; return normally when done or
  // when cancel_requested() was seen (the job then reports cancelled()).
  virtual void execute() = 0;

  // The engine's progress callback: records the progress, emits it when the interval has passed, and returns
  // false once cancellation was requested (the llama.cpp convention).
  bool report(double fraction, const std::string& message);
  const std::atomic_bool& cancel_token() const { return cancel_requested_; }

 private:
  void run_on_thread();
  void flush_progress();

  QString title_;
  QThread* thread_ = nullptr;
  std::atomic_bool cancel_requested_{false};
  std::chrono::steady_clock::time_point last_emit_{};
  bool pending_ = false;
  double pending_fraction_ = 0;
  QString pending_message_;
};

}  // namespace forja::ui
