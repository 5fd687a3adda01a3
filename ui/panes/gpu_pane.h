// GpuPane: live memory and utilization of every GPU (one plot each, from the window's GpuMonitorService), the
// processes holding GPU memory, and Forja's own LibTorch allocator figures (allocated / reserved / peak), so
// the memory numbers a user sees are the driver's and the allocator's, side by side.
#pragma once

#include <QMap>

#include <vector>

#include "forja/env.h"
#include "pane.h"

class QCustomPlot;
class QLabel;
class QSpinBox;
class QTableWidget;
class QVBoxLayout;

namespace forja::ui {

class ErrorBox;

class GpuPane : public Pane {
  Q_OBJECT

 public:
  explicit GpuPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("GPU"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/gpu.svg")); }

  // Points plotted so far for GPU `index` (memory series); -1 when that GPU has no plot.
  int plotted_points(int index) const;
  // How many seconds of history the plots show.
  static constexpr double kWindowSeconds = 300;

 protected:
  void changeEvent(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  void add_sample(const forja::env::Sample& sample);
  QCustomPlot* plot_for(const forja::env::GpuSample& gpu);
  void update_processes(const forja::env::Sample& sample);

  ErrorBox* notice_;
  QSpinBox* interval_;
  QVBoxLayout* plots_layout_;
  QMap<int, QCustomPlot*> plots_;
  QTableWidget* processes_;
  QLabel* allocator_;
};

}  // namespace forja::ui
