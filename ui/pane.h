// Pane: one page of the main window's sidebar, and AppContext: what every pane shares (the jobs in flight and
// the run journal).
#pragma once

#include <QIcon>
#include <QString>
#include <QWidget>

#include <memory>

namespace forja {
class Journal;
}

namespace forja::ui {

class JobMonitor;
class GpuMonitorService;

struct AppContext {
  JobMonitor* jobs = nullptr;
  GpuMonitorService* gpu = nullptr;         // the live GPU sampler; available() false without a driver
  std::shared_ptr<forja::Journal> journal;  // null when it could not be opened; the error says why
  QString journal_error;
  QString journal_hint;
};

class Pane : public QWidget {
  Q_OBJECT

 public:
  explicit Pane(AppContext& context, QWidget* parent = nullptr) : QWidget(parent), context_(context) {}
  // The sidebar's label and icon.
  virtual QString title() const = 0;
  virtual QIcon icon() const = 0;

 protected:
  AppContext& context_;
};

}  // namespace forja::ui
