// JobMonitor: starts jobs for the panes and keeps the list of the ones in flight, so the status bar can show
// what is running and offer to cancel it. Lives in the GUI thread.
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include "jobs/job.h"

namespace forja::ui {

class JobMonitor : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;

  // Starts `job` (which deletes itself when it ends) and tracks it until ended().
  void start(Job* job);
  bool busy() const { return !jobs_.isEmpty(); }
  // The newest job still running, or null.
  Job* current() const;
  // "Reading model folder — 40%", or empty when idle.
  QString summary() const;
  double current_fraction() const { return fraction_; }
  void cancel_all();

 Q_SIGNALS:
  void changed();

 private:
  QList<QPointer<Job>> jobs_;
  double fraction_ = -1;
  QString message_;
};

}  // namespace forja::ui
