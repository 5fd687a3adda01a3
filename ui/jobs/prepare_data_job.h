// PrepareDataJob: reads a dataset file and, when the model folder has a tokenizer, renders and tokenizes
// every record the way training will (forja::prepare_dataset), off the GUI thread. The result keeps the
// tokenizer so the Data pane can preview any example token by token without reading the files again.
#pragma once

#include <QString>

#include <filesystem>
#include <memory>
#include <optional>

#include "forja/dataset.h"
#include "forja/tokenizer.h"
#include "jobs/job.h"

namespace forja::ui {

struct DataPreview {
  std::filesystem::path dataset;
  std::filesystem::path model_dir;              // empty when no model was open
  std::shared_ptr<forja::Tokenizer> tokenizer;  // null when the model has none (records are then only read)
  std::optional<forja::PreparedDataset> prepared;  // set when tokenized
  forja::ReadResult read;                          // set when not tokenized: the records and problems
  QString tokenizer_note;                          // why there are no token counts, when there are none
};

class PrepareDataJob : public Job {
  Q_OBJECT

 public:
  PrepareDataJob(std::filesystem::path dataset, std::filesystem::path model_dir,
                 forja::DatasetOptions options);

 Q_SIGNALS:
  void prepared(std::shared_ptr<const forja::ui::DataPreview> preview);

 protected:
  void execute() override;

 private:
  std::filesystem::path dataset_;
  std::filesystem::path model_dir_;
  forja::DatasetOptions options_;
};

}  // namespace forja::ui
