// "Download from Hugging Face…": a repo id and revision, the plan (files, size, free space, whether Forja loads
// the model) before anything large moves, then the pull with progress and Cancel. The download is a job: closing
// the dialog hides it and the pull goes on; a cancelled or interrupted pull resumes from its partial file.
#pragma once

#include <QDialog>
#include <QPointer>

#include "forja/hub.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace forja::ui {

class ErrorBox;
class HubPullJob;

class HubDownloadDialog : public QDialog {
  Q_OBJECT

 public:
  explicit HubDownloadDialog(QWidget* parent = nullptr);
  bool downloading() const { return !pull_.isNull(); }
  // The repository of a download that did not finish (kept across restarts), or empty.
  static QString unfinished_download();

 Q_SIGNALS:
  void downloaded(const QString& dir);

 private:
  void check();
  void download();
  void show_plan(const forja::hub::PullPlan& plan);
  void fail(const QString& message, const QString& hint);
  std::optional<forja::hub::RepoRef> ref_from_fields();

  QLineEdit* repo_;
  QLineEdit* revision_;
  QPushButton* check_;
  QPushButton* download_;
  QPushButton* cancel_;
  QLabel* plan_;
  QLabel* status_;
  QProgressBar* progress_;
  ErrorBox* error_;
  QPointer<HubPullJob> pull_;
};

}  // namespace forja::ui
