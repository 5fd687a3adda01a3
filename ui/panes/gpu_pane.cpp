// GpuPane: one plot per GPU (memory in GiB on the left axis, utilization in % on the right), the process
// table and the allocator line, all fed by GpuMonitorService::sampled.
#include "panes/gpu_pane.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "error_box.h"
#include "format.h"
#include "gpu_monitor_service.h"
#include "plot.h"
#include "theme.h"

namespace forja::ui {
namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

GpuPane::GpuPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("GpuPane"));
  auto* heading = make_heading(tr("GPU memory and utilization, live"));
  interval_ = new QSpinBox;
  interval_->setObjectName(QStringLiteral("gpuInterval"));
  interval_->setRange(100, 10000);
  interval_->setSingleStep(100);
  interval_->setSuffix(tr(" ms"));
  interval_->setToolTip(tr("How often the GPUs are sampled"));
  auto* top = new QHBoxLayout;
  top->addWidget(heading, 1);
  auto* interval_label = new QLabel(tr("Sample every"));
  top->addWidget(interval_label);
  top->addWidget(interval_);

  notice_ = new ErrorBox;
  notice_->setObjectName(QStringLiteral("gpuNotice"));
  plots_layout_ = new QVBoxLayout;

  processes_ = new QTableWidget(0, 3);
  processes_->setObjectName(QStringLiteral("gpuProcesses"));
  processes_->setHorizontalHeaderLabels({tr("GPU"), tr("Process"), tr("GPU memory")});
  processes_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  processes_->verticalHeader()->hide();
  processes_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  processes_->setMaximumHeight(160);
  allocator_ = new QLabel;
  allocator_->setObjectName(QStringLiteral("gpuAllocator"));
  allocator_->setWordWrap(true);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(notice_);
  layout->addLayout(plots_layout_, 1);
  layout->addWidget(processes_);
  layout->addWidget(allocator_);

  GpuMonitorService* gpu = context_.gpu;
  if (!gpu || !gpu->available()) {
    notice_->show_error(tr("No NVIDIA driver could be read, so there is nothing to plot: %1")
                            .arg(gpu ? gpu->reason() : tr("the monitor is off")),
                        tr("On a machine with an NVIDIA GPU, install the NVIDIA driver; the Doctor pane says "
                           "what is missing."),
                        ErrorBox::Severity::Info);
    interval_label->hide();
    interval_->hide();
    processes_->hide();
    layout->addStretch(1);
    return;
  }
  interval_->setValue(static_cast<int>(gpu->interval().count()));
  connect(interval_, qOverload<int>(&QSpinBox::valueChanged), this,
          [gpu](int ms) { gpu->set_interval(std::chrono::milliseconds(ms)); });
  for (const auto& s : gpu->history()) add_sample(s);
  connect(gpu, &GpuMonitorService::sampled, this, &GpuPane::add_sample);
}

QCustomPlot* GpuPane::plot_for(const forja::env::GpuSample& gpu) {
  const int index = gpu.index;
  if (auto it = plots_.find(index); it != plots_.end()) return *it;
  auto* plot = new QCustomPlot;
  plot->setObjectName(QStringLiteral("gpuPlot%1").arg(index));
  plot->setMinimumHeight(180);
  plot->plotLayout()->insertRow(0);
  // The index is nvidia-smi's; the name tells the cards of a mixed machine apart.
  const QString title = gpu.name.empty() ? tr("GPU %1").arg(index)
                                         : tr("GPU %1 · %2").arg(index).arg(QString::fromStdString(gpu.name));
  plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title));
  QCPGraph* memory = plot->addGraph(plot->xAxis, plot->yAxis);
  memory->setName(tr("memory used (GiB)"));
  memory->setPen(QPen(series_color(0, palette()), 2));
  QCPGraph* util = plot->addGraph(plot->xAxis, plot->yAxis2);
  util->setName(tr("utilization (%)"));
  util->setPen(QPen(series_color(1, palette()), 1.5));
  plot->xAxis->setLabel(tr("seconds"));
  plot->yAxis->setLabel(tr("GiB"));
  plot->yAxis2->setVisible(true);
  plot->yAxis2->setLabel(tr("%"));
  plot->yAxis2->setRange(0, 100);
  plot->legend->setVisible(true);
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  style_plot(plot, palette());
  plots_layout_->addWidget(plot);
  plots_.insert(index, plot);
  return plot;
}

void GpuPane::add_sample(const forja::env::Sample& sample) {
  const double t = static_cast<double>(sample.since_start.count()) / 1000.0;
  for (const auto& g : sample.gpus) {
    QCustomPlot* plot = plot_for(g);
    plot->graph(0)->addData(t, static_cast<double>(g.memory_used) / kGiB);
    if (g.gpu_util_percent) plot->graph(1)->addData(t, *g.gpu_util_percent);
    // Old points beyond the window are dropped so a day-long run does not grow the plot without bound.
    plot->graph(0)->data()->removeBefore(t - kWindowSeconds);
    plot->graph(1)->data()->removeBefore(t - kWindowSeconds);
    plot->xAxis->setRange(std::max(0.0, t - kWindowSeconds), std::max(t, 10.0));
    plot->yAxis->setRange(0, std::max(1.0, static_cast<double>(g.memory_total) / kGiB));
    if (isVisible()) plot->replot(QCustomPlot::rpQueuedReplot);
  }
  update_processes(sample);
  QStringList alloc;
  for (const auto& a : sample.allocator)
    alloc << tr("cuda:%1 allocated %2, reserved %3, peak %4")
                 .arg(a.cuda_index)
                 .arg(format_bytes(static_cast<int64_t>(a.allocated)),
                      format_bytes(static_cast<int64_t>(a.reserved)),
                      format_bytes(static_cast<int64_t>(a.peak_allocated)));
  allocator_->setText(alloc.isEmpty()
                          ? tr("Forja's own allocator: no CUDA memory in use by this window.")
                          : tr("Forja's own allocator: %1").arg(alloc.join(QStringLiteral("; "))));
}

void GpuPane::update_processes(const forja::env::Sample& sample) {
  int rows = 0;
  for (const auto& g : sample.gpus) rows += static_cast<int>(g.processes.size());
  processes_->setRowCount(rows);
  int row = 0;
  for (const auto& g : sample.gpus)
    for (const auto& p : g.processes) {
      const QString name = p.name.empty() ? tr("(not visible)") : QString::fromStdString(p.name);
      processes_->setItem(row, 0, new QTableWidgetItem(QString::number(g.index)));
      processes_->setItem(row, 1, new QTableWidgetItem(QStringLiteral("%1 — %2").arg(p.pid).arg(name)));
      processes_->setItem(row, 2,
                          new QTableWidgetItem(p.used_bytes ? format_bytes(static_cast<int64_t>(p.used_bytes))
                                                            : tr("not reported")));
      ++row;
    }
}

int GpuPane::plotted_points(int index) const {
  auto it = plots_.find(index);
  return it == plots_.end() ? -1 : (*it)->graph(0)->dataCount();
}

// Hidden, the plots take samples without drawing them: shown again, they draw what came meanwhile at once,
// not at the next sample (up to the sampling interval later).
void GpuPane::showEvent(QShowEvent* event) {
  Pane::showEvent(event);
  for (QCustomPlot* plot : plots_) plot->replot(QCustomPlot::rpQueuedReplot);
}

void GpuPane::changeEvent(QEvent* event) {
  Pane::changeEvent(event);
  if (event->type() == QEvent::PaletteChange)
    for (QCustomPlot* plot : plots_) style_plot(plot, palette());
}

}  // namespace forja::ui
