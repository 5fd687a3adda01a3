// ModelPane: open a Hugging Face model folder (file dialog, drag and drop, recent list) and show what it is —
// architecture, size, dtype, shape, context, tokenizer, and the GPU memory its weights take in bf16.
// The folder is read by an InspectModelJob; an error shows its message and hint in the pane. The model
// library below lists the Hugging Face cache and the recent folders with what each is, read by a HubCacheJob.
#pragma once

#include <QMap>
#include <QPointer>
#include <QStringList>

#include <optional>

#include "forja/model_info.h"
#include "jobs/hub_jobs.h"
#include "pane.h"

class QLabel;
class QListWidget;
class QListWidgetItem;
class QFormLayout;
class QGroupBox;
class QPushButton;
class QTreeWidget;

namespace forja::ui {

class ErrorBox;
class HubDownloadDialog;

class ModelPane : public Pane {
  Q_OBJECT

 public:
  explicit ModelPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("Model"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/model.svg")); }

  // Reads `dir` in a job; a file inside a model folder (config.json dropped on the pane) opens its folder.
  void open(const QString& path);
  void open_dialog();
  // "Download from Hugging Face…": the dialog stays alive (hidden) while its download runs.
  HubDownloadDialog* download_dialog();
  // Re-reads the model library (the Hugging Face cache and the recent folders) in a job: after a download, a
  // delete or an open. One job at a time; a request while one runs makes it run again once it ends.
  void refresh_cache();
  const std::vector<LibraryEntry>& library() const { return library_entries_; }
  // Deletes a repository from the cache in a job (the button asks first), then lists the library again.
  void delete_cached(const QString& repo);
  const std::optional<forja::ModelInfo>& model() const { return model_; }
  bool loading() const { return pending_request_ != 0; }
  QStringList recent() const;
  // The most recent folders kept in QSettings.
  static constexpr int kMaxRecent = 10;

 Q_SIGNALS:
  void model_opened(const forja::ModelInfo& info);
  void open_failed(const QString& message, const QString& hint);
  void recent_changed();
  void demo_requested();  // "Try the Demo"

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void show_model(const forja::ModelInfo& info);
  void show_failure(const QString& dir, const QString& message, const QString& hint);
  void remember(const QString& dir);
  void reload_recent_list();
  QLabel* add_fact(QFormLayout* form, const QString& key, const QString& label);

  std::optional<forja::ModelInfo> model_;
  quint64 pending_request_ = 0;
  quint64 last_request_ = 0;
  QLabel* heading_;
  QLabel* status_;
  QLabel* demo_note_;
  ErrorBox* error_;
  QGroupBox* facts_box_;
  QMap<QString, QLabel*> facts_;
  QListWidget* recent_list_;
  QTreeWidget* library_;
  QLabel* cache_status_;
  QPushButton* delete_button_;
  HubDownloadDialog* download_dialog_ = nullptr;
  std::vector<LibraryEntry> library_entries_;
  QPointer<HubCacheJob> library_job_;
  bool library_again_ = false;
  QStringList pending_deletes_;
  void start_library_job(const QString& delete_repo);
  void show_library(const std::vector<LibraryEntry>& entries, quint64 freed);
  void delete_selected_cached();
};

}  // namespace forja::ui
