#include "export_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "forja/export.h"
#include "format.h"

namespace forja::ui {
namespace {

struct Format {
  const char* code;
  const char* label;
  const char* name_suffix;  // added to the run's name in the proposed destination
  const char* extension;    // the proposed file's ending; empty: a folder
  bool types;               // offers the GGUF types
  const char* note;         // what the export writes
};

const Format kFormats[] = {
    {"gguf", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "GGUF file (llama.cpp, LM Studio)"), "", ".gguf",
     true,
     QT_TRANSLATE_NOOP(
         "forja::ui::ExportDialog",
         "The adapter merged into the base model, one file for llama.cpp, LM Studio and Ollama.")},
    {"ollama", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Ollama folder (GGUF and Modelfile)"), "-ollama",
     "", true,
     QT_TRANSLATE_NOOP(
         "forja::ui::ExportDialog",
         "model.gguf and a Modelfile with the chat template: ollama create NAME -f Modelfile.")},
    {"gguf-lora", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "GGUF LoRA adapter (llama.cpp --lora)"),
     "-adapter", ".gguf", false,
     QT_TRANSLATE_NOOP("forja::ui::ExportDialog",
                       "The adapter alone, beside the base model's own GGUF file: llama.cpp --lora, Ollama's "
                       "ADAPTER.")},
    {"hf", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Hugging Face folder (transformers)"), "-merged", "",
     false,
     QT_TRANSLATE_NOOP(
         "forja::ui::ExportDialog",
         "The adapter merged into the base model, in the checkpoint's own dtype, as transformers "
         "loads it.")},
};

struct Type {
  const char* code;
  const char* label;
};

// Largest first; Q4_K_M is what most people load.
const Type kTypes[] = {
    {"fp32", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "F32 (full precision)")},
    {"fp16", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "F16")},
    {"bf16", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "BF16")},
    {"q8_0", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Q8_0 (near lossless)")},
    {"q6_k", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Q6_K")},
    {"q5_k_m", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Q5_K_M")},
    {"q4_k_m", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Q4_K_M (the usual choice)")},
    {"q4_0", QT_TRANSLATE_NOOP("forja::ui::ExportDialog", "Q4_0 (smallest)")},
};

const Format& format_of(const QString& code) {
  for (const Format& f : kFormats)
    if (code == QLatin1String(f.code)) return f;
  return kFormats[0];
}

}  // namespace

ExportDialog::ExportDialog(const QString& run_name, const QString& folder, QWidget* parent)
    : QDialog(parent), run_name_(run_name.isEmpty() ? QStringLiteral("model") : run_name), folder_(folder) {
  setWindowTitle(tr("Export “%1”").arg(run_name_));
  format_ = new QComboBox;
  format_->setObjectName(QStringLiteral("exportFormat"));
  for (const Format& f : kFormats) format_->addItem(tr(f.label), QString::fromLatin1(f.code));
  dtype_ = new QComboBox;
  dtype_->setObjectName(QStringLiteral("exportType"));
  for (const Type& t : kTypes) dtype_->addItem(tr(t.label), QString::fromLatin1(t.code));
  note_ = new QLabel;
  note_->setObjectName(QStringLiteral("exportNote"));
  note_->setWordWrap(true);
  destination_ = new QLineEdit;
  destination_->setObjectName(QStringLiteral("exportDestination"));
  auto* browse = new QPushButton(tr("Browse…"));
  connect(browse, &QPushButton::clicked, this, [this] {
    // Named: GCC 13 takes a table reference looked up from a temporary for a dangling one.
    const QString code = format();
    const Format& f = format_of(code);
    const QString path =
        *f.extension
            ? QFileDialog::getSaveFileName(this, tr("Export to"), destination(), tr("GGUF files (*.gguf)"))
            : QFileDialog::getSaveFileName(this, tr("Export to a new folder"), destination());
    if (!path.isEmpty()) destination_->setText(path);
  });
  auto* where = new QHBoxLayout;
  where->addWidget(destination_, 1);
  where->addWidget(browse);
  auto* form = new QFormLayout;
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  form->addRow(tr("Format:"), format_);
  form->addRow(tr("Type:"), dtype_);
  form->addRow(tr("Destination:"), where);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  ok_ = buttons->button(QDialogButtonBox::Ok);
  ok_->setText(tr("Export"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(note_);
  layout->addWidget(buttons);

  connect(format_, &QComboBox::currentIndexChanged, this, &ExportDialog::format_changed);
  connect(destination_, &QLineEdit::textChanged, this, &ExportDialog::update_ok);
  set_dtype(QStringLiteral("q4_k_m"));
  format_changed();
}

void ExportDialog::set_parameters(int64_t parameters) {
  parameters_ = parameters;
  for (int i = 0; i < dtype_->count(); ++i) {
    const QString code = dtype_->itemData(i).toString();
    QString label = tr(kTypes[i].label);
    if (parameters_ > 0)
      label += QStringLiteral(" — ") + tr("about %1")
                                           .arg(format_bytes(static_cast<int64_t>(forja::estimated_gguf_bytes(
                                               parameters_, code.toStdString()))));
    dtype_->setItemText(i, label);
  }
}

QString ExportDialog::format() const {
  return format_->currentData().toString();
}

QString ExportDialog::dtype() const {
  return dtype_->isEnabled() ? dtype_->currentData().toString() : QString();
}

QString ExportDialog::destination() const {
  return destination_->text().trimmed();
}

void ExportDialog::set_format(const QString& format) {
  const int i = format_->findData(format);
  if (i >= 0) format_->setCurrentIndex(i);
}

void ExportDialog::set_dtype(const QString& dtype) {
  const int i = dtype_->findData(dtype);
  if (i >= 0) dtype_->setCurrentIndex(i);
}

void ExportDialog::set_destination(const QString& path) {
  destination_->setText(path);
}

void ExportDialog::format_changed() {
  const QString code = format();
  const Format& f = format_of(code);
  dtype_->setEnabled(f.types);
  note_->setText(tr(f.note));
  // The proposed destination follows the format, unless the user chose one of their own.
  if (destination().isEmpty() || destination() == proposed_) {
    proposed_ = QDir(folder_).filePath(run_name_ + QString::fromLatin1(f.name_suffix) +
                                       QString::fromLatin1(f.extension));
    destination_->setText(proposed_);
  }
  update_ok();
}

void ExportDialog::update_ok() {
  ok_->setEnabled(!destination().isEmpty());
}

}  // namespace forja::ui
