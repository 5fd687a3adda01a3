// PrepareDataJob: the engine calls and the result signal.
#include "jobs/prepare_data_job.h"

#include "forja/chat_template.h"
#include "forja/error.h"

namespace forja::ui {
namespace fs = std::filesystem;

PrepareDataJob::PrepareDataJob(fs::path dataset, fs::path model_dir, forja::DatasetOptions options)
    : Job(tr("Reading dataset")),
      dataset_(std::move(dataset)),
      model_dir_(std::move(model_dir)),
      options_(std::move(options)) {}

void PrepareDataJob::execute() {
  auto preview = std::make_shared<DataPreview>();
  preview->dataset = dataset_;
  preview->model_dir = model_dir_;
  options_.train_files = {dataset_};
  const bool has_tokenizer = !model_dir_.empty() && (fs::exists(model_dir_ / "tokenizer.json") ||
                                                     fs::exists(model_dir_ / "tokenizer.model"));
  if (!has_tokenizer) {
    report(-1, dataset_.string());
    preview->read = forja::read_dataset_file(dataset_, options_.read);
    preview->tokenizer_note = model_dir_.empty()
                                  ? tr("Open a model to see the examples as it will be trained on them.")
                                  : tr("The model folder has no tokenizer.json or tokenizer.model, so the "
                                       "examples cannot be tokenized.");
  } else {
    report(-1, "loading the tokenizer of " + model_dir_.string());
    preview->tokenizer = std::make_shared<forja::Tokenizer>(forja::Tokenizer::load(model_dir_.string()));
    const auto encoder = forja::make_tokenizer_encoder(*preview->tokenizer);
    preview->prepared = forja::prepare_dataset(options_, encoder, [this](size_t done, size_t total) {
      return report(total ? static_cast<double>(done) / static_cast<double>(total) : -1.0,
                    std::to_string(done) + " of " + std::to_string(total) + " examples");
    });
  }
  if (cancel_requested()) return;
  Q_EMIT prepared(std::move(preview));
}

}  // namespace forja::ui
