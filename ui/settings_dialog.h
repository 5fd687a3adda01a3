// SettingsDialog: language, theme, the folders for runs and downloaded models, and the GPU to use. OK saves
// the choices (settings.h, ui_init.h) and applies what can change at once (theme, folders); language and GPU
// are read at start, as the dialog says.
#pragma once

#include <QDialog>

#include <memory>

#include "forja/env.h"

class QComboBox;
class QLabel;
class QLineEdit;

namespace forja::ui {

struct AppContext;

class SettingsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit SettingsDialog(AppContext& context, QWidget* parent = nullptr);

  // Saves and applies the form's choices (what OK does).
  void save();

 private:
  void list_gpus(std::shared_ptr<const forja::env::Report> report);
  QWidget* folder_row(QLineEdit* edit, const QString& title);

  QComboBox* language_;
  QComboBox* theme_;
  QLineEdit* runs_dir_;
  QLineEdit* hub_cache_;
  QComboBox* gpu_;
  QLabel* restart_note_;
};

}  // namespace forja::ui
