// JobStatusWidget: follows JobMonitor::changed.
#include "job_status_widget.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

#include "jobs/job_monitor.h"

namespace forja::ui {

JobStatusWidget::JobStatusWidget(JobMonitor* monitor, QWidget* parent) : QWidget(parent), monitor_(monitor) {
  label_ = new QLabel(this);
  label_->setObjectName(QStringLiteral("jobStatus"));
  bar_ = new QProgressBar(this);
  bar_->setMaximumWidth(160);
  bar_->setMaximumHeight(14);
  bar_->setTextVisible(false);
  cancel_ = new QToolButton(this);
  cancel_->setObjectName(QStringLiteral("jobCancel"));
  cancel_->setText(tr("Cancel"));
  cancel_->setToolTip(tr("Stop the running job"));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(4, 0, 4, 0);
  row->addWidget(label_);
  row->addWidget(bar_);
  row->addWidget(cancel_);
  connect(cancel_, &QToolButton::clicked, monitor_, &JobMonitor::cancel_all);
  connect(monitor_, &JobMonitor::changed, this, &JobStatusWidget::update_view);
  update_view();
}

void JobStatusWidget::update_view() {
  const bool busy = monitor_->busy();
  label_->setText(busy ? monitor_->summary() : tr("Ready"));
  bar_->setVisible(busy);
  cancel_->setVisible(busy);
  const double f = monitor_->current_fraction();
  if (f < 0) {
    bar_->setRange(0, 0);  // a busy indicator for work of unknown length
  } else {
    bar_->setRange(0, 1000);
    bar_->setValue(qRound(f * 1000));
  }
}

}  // namespace forja::ui
