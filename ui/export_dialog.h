// The Runs pane's Export dialog: what to write (a merged GGUF file, an Ollama folder, a GGUF LoRA adapter, a
// merged Hugging Face folder), in which type (the GGUF quantizations with the size each file will have), and
// where. The export itself runs in the pane, as a job with progress and cancel.
#pragma once

#include <QDialog>
#include <QString>

#include <cstdint>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace forja::ui {

class ExportDialog : public QDialog {
  Q_OBJECT

 public:
  // `run_name` names the files it proposes; `folder` is where they go unless the user picks another.
  ExportDialog(const QString& run_name, const QString& folder, QWidget* parent = nullptr);

  // The base model's weight count, once known: each type then shows the size of its file.
  void set_parameters(int64_t parameters);

  QString format() const;  // "gguf", "ollama", "gguf-lora" or "hf"
  QString dtype() const;   // "fp16", "q4_k_m", ...; empty: the format's own default
  QString destination() const;
  void set_format(const QString& format);
  void set_dtype(const QString& dtype);
  void set_destination(const QString& path);

 private:
  void format_changed();
  void update_ok();

  QString run_name_;
  QString folder_;
  QString proposed_;  // the destination the dialog proposed last
  int64_t parameters_ = 0;
  QComboBox* format_;
  QComboBox* dtype_;
  QLabel* note_;
  QLineEdit* destination_;
  QPushButton* ok_;
};

}  // namespace forja::ui
