// DataPane: choose a dataset file and see it the way training will: how many examples of each shape, the
// token length histogram, the lines that could not be used (file:line and why), and any example rendered
// through the model's chat template with the tokens that carry loss highlighted, token by token.
#pragma once

#include <QJsonObject>

#include <QString>

#include <memory>

#include "pane.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QTreeWidget;

namespace forja::ui {

class ErrorBox;
struct DataPreview;

class DataPane : public Pane {
  Q_OBJECT

 public:
  explicit DataPane(AppContext& context, QWidget* parent = nullptr);

  QString title() const override { return tr("Data"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/data.svg")); }

  // The model whose tokenizer and chat template render the examples (the Model pane's folder).
  void set_model_dir(const QString& dir);
  // Reads `file` (and tokenizes it when the model has a tokenizer) in a job.
  void open(const QString& file);
  void open_dialog();
  // The share of the records held out for eval the next time a file is read (the demo trains on all of them).
  void set_eval_fraction(double fraction);
  // The max length of an example, in tokens; an open dataset is read again with it.
  void set_max_length(int tokens);
  bool loading() const { return loading_; }
  const std::shared_ptr<const DataPreview>& preview() const { return preview_; }
  QString dataset() const { return dataset_; }
  // Shows example `index` of the train split token by token.
  void show_example(int index);

 Q_SIGNALS:
  // The file and how to read it, as training config keys (data_format, max_length, eval_fraction,
  // on_bad_record, train_on_prompt): the Train pane runs with what the Data pane showed.
  void dataset_ready(const QString& file, const QJsonObject& settings);
  void dataset_failed(const QString& message, const QString& hint);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void reload();
  void show_preview(std::shared_ptr<const DataPreview> preview);
  void update_histogram();

  QString model_dir_;
  QString dataset_;
  bool loading_ = false;
  quint64 request_ = 0;
  std::shared_ptr<const DataPreview> preview_;
  QLabel* file_label_;
  QComboBox* format_;
  QSpinBox* max_length_;
  QDoubleSpinBox* eval_fraction_;
  QCheckBox* skip_bad_;
  QCheckBox* train_on_prompt_;
  ErrorBox* error_;
  QLabel* summary_;
  QCustomPlot* histogram_;
  QTreeWidget* problems_;
  QSpinBox* example_;
  QLabel* example_source_;
  QTextBrowser* tokens_;
};

}  // namespace forja::ui
