// RunRecorder: a training run's history in the run journal (forja/journal.h), fed by the run's hooks
// (forja/train_run.h). <output_dir>/journal.json remembers which journal row is this folder's run, so a
// resumed run continues its row. A journal that cannot be written costs the history, never the run: what
// could not be written is kept in memory and written with the next record that succeeds (a disk full for a
// while), and the problem is said once through `say`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forja/error.h"
#include "forja/journal.h"
#include "forja/train.h"
#include "forja/train_run.h"

namespace forja {

// The run that <output_dir>/journal.json names in `journal` when it completed: training that folder again
// would rewrite its history, so it must become a new run. Nothing when there is no marker, it names another
// journal, or its run can still go on. Throws forja::Error naming a marker that is not one.
std::optional<RunRecord> completed_run_in(Journal& journal, const std::filesystem::path& output_dir);

class RunRecorder {
 public:
  using Say = std::function<void(const std::string&)>;
  // Opens the journal at `journal_path` (empty: default_journal_path()) and finds the run that
  // <output_dir>/journal.json names there, or creates one from `run` and writes the marker. A journal that
  // cannot be opened is said and the recorder records nothing. A marker that is not one is a forja::Error
  // naming it (it is never overwritten: it may be the only link to a run's history). A folder whose run
  // completed (completed_run_in) is said and recorded no further: training it again only rewrites the same
  // adapter, and its row keeps how it ended.
  RunRecorder(const std::filesystem::path& journal_path, const std::filesystem::path& output_dir,
              const NewRun& run, Say say);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  int64_t id() const { return run_id_; }  // 0 when nothing is recorded
  // The folder's run when it had already completed (then nothing is recorded).
  const std::optional<RunRecord>& already_completed() const { return completed_; }
  // The hooks, in the order the run calls them.
  void start(int64_t step, const std::vector<train::SavedCheckpoint>& on_disk);
  void step(const TrainProgress& p);
  void checkpoint(const train::SavedCheckpoint& saved, double loss,
                  const std::vector<train::SavedCheckpoint>& on_disk);
  void done(const TrainResult& r);
  void failed(const Error& e);

 private:
  bool flush();
  void finish();

  Say say_;
  std::unique_ptr<Journal> journal_;
  int64_t run_id_ = 0;
  std::optional<double> last_loss_, last_eval_;
  std::optional<std::pair<int64_t, std::vector<CheckpointRecord>>> pending_start_;
  std::vector<MetricPoint> pending_metrics_;
  std::optional<std::vector<CheckpointRecord>> pending_checkpoints_;
  std::function<void()> final_;
  bool failing_ = false;
  std::optional<RunRecord> completed_;
};

}  // namespace forja
