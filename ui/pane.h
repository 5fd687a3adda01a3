// Pane: one page of the main window's sidebar, and AppContext: what every pane shares (the jobs in flight and
// the run journal).
#pragma once

#include <QIcon>
#include <QLabel>
#include <QString>
#include <QWidget>

namespace forja::ui {

class JobMonitor;
class GpuMonitorService;
class JournalService;

struct AppContext {
  JobMonitor* jobs = nullptr;
  GpuMonitorService* gpu = nullptr;   // the live GPU sampler; available() false without a driver
  JournalService* journal = nullptr;  // the run journal, reached off the GUI thread
};

class Pane : public QWidget {
  Q_OBJECT

 public:
  explicit Pane(AppContext& context, QWidget* parent = nullptr) : QWidget(parent), context_(context) {}
  // The sidebar's label and icon.
  virtual QString title() const = 0;
  virtual QIcon icon() const = 0;

  // A pane's title line: the window's font, 1.4 times as large, bold (one look for every pane).
  static QLabel* make_heading(const QString& text) {
    auto* heading = new QLabel(text);
    QFont big = heading->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setBold(true);
    heading->setFont(big);
    return heading;
  }

 protected:
  AppContext& context_;
};

}  // namespace forja::ui
