// DoctorPane: the environment report — where the work will run (GPU or CPU, and why), the findings of the
// advice rules with their severity (what is wrong, what to do), and the full report to read or copy into a
// bug report. The probe runs in a DoctorJob the first time the pane is shown and again on "Check again".
#pragma once

#include <memory>

#include "forja/env.h"
#include "pane.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTreeWidget;

namespace forja::ui {

class DoctorPane : public Pane {
  Q_OBJECT

 public:
  explicit DoctorPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("Doctor"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/doctor.svg")); }

  // Starts a probe (ignored while one runs).
  void check();
  bool checking() const { return checking_; }
  const std::shared_ptr<const forja::env::Report>& report() const { return report_; }
  // "the GPU NVIDIA H200 (cuda:0)" or "the CPU", as the banner says it.
  static QString where_work_runs(const forja::env::Report& report);

 Q_SIGNALS:
  void report_ready(std::shared_ptr<const forja::env::Report> report);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void show_report(std::shared_ptr<const forja::env::Report> report);

  std::shared_ptr<const forja::env::Report> report_;
  bool checking_ = false;
  bool checked_once_ = false;
  QLabel* banner_;
  QTreeWidget* findings_;
  QPlainTextEdit* details_;
  QPushButton* check_button_;
  QPushButton* copy_button_;
};

}  // namespace forja::ui
