// JobStatusWidget: the status bar's view of JobMonitor — what runs, how far along, and a button to cancel it.
#pragma once

#include <QWidget>

class QLabel;
class QProgressBar;
class QToolButton;

namespace forja::ui {

class JobMonitor;

class JobStatusWidget : public QWidget {
  Q_OBJECT

 public:
  JobStatusWidget(JobMonitor* monitor, QWidget* parent = nullptr);

 private:
  void update_view();

  JobMonitor* monitor_;
  QLabel* label_;
  QProgressBar* bar_;
  QToolButton* cancel_;
};

}  // namespace forja::ui
