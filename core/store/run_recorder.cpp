#include "forja/run_recorder.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "forja/file_util.h"
#include "util/json_number.h"

namespace forja {
namespace {
namespace fs = std::filesystem;

std::vector<CheckpointRecord> records(const std::vector<train::SavedCheckpoint>& on_disk,
                                      std::optional<double> loss, int64_t loss_step) {
  std::vector<CheckpointRecord> out;
  for (const auto& c : on_disk) {
    CheckpointRecord r;
    r.step = c.step;
    r.path = c.path;
    if (c.step == loss_step) r.loss = loss;
    out.push_back(r);
  }
  return out;
}

// The row that <output_dir>/journal.json names in `journal`; 0 when there is no marker or it names another
// journal or a row that is gone.
int64_t marker_run_id(Journal& journal, const fs::path& output_dir) {
  const fs::path marker = output_dir / "journal.json";
  if (!fs::exists(marker)) return 0;
  const auto j = nlohmann::json::parse(read_text_file(marker), nullptr, false);
  const int64_t id = j.is_object() && j.contains("run_id") ? json_int(j["run_id"], 1).value_or(0) : 0;
  if (id == 0 || !j.contains("journal") || !j["journal"].is_string())
    throw_file_error(marker.string(), "is not a run marker (a JSON object with \"journal\" and \"run_id\")",
                     "Restore it, or move it away to record this run as a new one.");
  const std::string here = fs::absolute(journal.path()).string();
  return j["journal"].get<std::string>() == here && journal.run(id) ? id : 0;
}

}  // namespace

std::optional<RunRecord> completed_run_in(Journal& journal, const fs::path& output_dir) {
  const int64_t id = marker_run_id(journal, output_dir);
  if (id == 0) return std::nullopt;
  auto r = journal.run(id);
  if (r && r->status == RunStatus::Completed) return r;
  return std::nullopt;
}

RunRecorder::RunRecorder(const fs::path& journal_path, const fs::path& output_dir, const NewRun& run, Say say)
    : say_(std::move(say)) {
  try {
    journal_ = std::make_unique<Journal>(journal_path.empty() ? default_journal_path() : journal_path);
  } catch (const Error& e) {
    say_("the run journal is not kept for this run: " + e.message());
    journal_.reset();
    return;
  }
  const fs::path marker = output_dir / "journal.json";
  const std::string here = fs::absolute(journal_->path()).string();
  run_id_ = marker_run_id(*journal_, output_dir);
  // A completed run's folder trained again resumes at its last step and trains nothing: its row is left as
  // it ended (no resume, no rewind, no new end), and the run is not recorded.
  if (run_id_ != 0) {
    const auto done = journal_->run(run_id_);
    if (done && done->status == RunStatus::Completed) {
      say_(output_dir.string() + " holds the run \"" + done->name + "\", which already completed (" +
           std::to_string(done->last_step) +
           " steps): nothing is trained and its history is kept as it is. To train again as a new run, leave "
           "output_dir out of the config (a new folder is chosen) or give it another folder.");
      completed_ = *done;
      journal_.reset();
      run_id_ = 0;
      return;
    }
  }
  try {
    if (run_id_ != 0) {
      journal_->resume_run(run_id_, getpid());
    } else {
      run_id_ = journal_->create_run(run);
      write_file_atomic(marker, nlohmann::json({{"journal", here}, {"run_id", run_id_}}).dump() + "\n");
    }
  } catch (const Error& e) {
    say_("the run journal is not kept for this run: " + e.message());
    journal_.reset();
    run_id_ = 0;
  }
}

RunRecorder::~RunRecorder() = default;

void RunRecorder::start(int64_t step, const std::vector<train::SavedCheckpoint>& on_disk) {
  pending_start_ = {step, records(on_disk, std::nullopt, 0)};
  flush();
}

void RunRecorder::step(const TrainProgress& p) {
  MetricPoint m;
  m.step = p.step;
  m.loss = p.loss;
  m.eval_loss = p.eval_loss;
  m.lr = p.learning_rate;
  m.grad_norm = p.grad_norm;
  m.tokens_per_s = p.tokens_per_second;
  m.tokens = p.tokens;
  m.trained_tokens = p.trained_tokens;
  m.positions = p.positions;
  m.time_ms = journal_now_ms();
  if (p.gpu_allocated_gib > 0) m.gpu_memory_bytes = static_cast<int64_t>(p.gpu_allocated_gib * (1 << 30));
  pending_metrics_.push_back(m);
  last_loss_ = p.loss;
  if (p.eval_loss) last_eval_ = p.eval_loss;
  flush();
}

void RunRecorder::checkpoint(const train::SavedCheckpoint& saved, double loss,
                             const std::vector<train::SavedCheckpoint>& on_disk) {
  pending_checkpoints_ = records(on_disk, loss, saved.step);
  flush();
}

void RunRecorder::done(const TrainResult& r) {
  final_ = [this, r] {
    switch (r.outcome) {
      case TrainOutcome::Finished:
      case TrainOutcome::EarlyStopped:
        journal_->finish_run(run_id_, RunStatus::Completed, last_loss_, last_eval_, r.adapter_dir);
        break;
      case TrainOutcome::Paused:
      case TrainOutcome::Cancelled:
        journal_->finish_run(run_id_, RunStatus::Stopped, last_loss_, last_eval_, "");
        break;
    }
  };
  finish();
}

void RunRecorder::failed(const Error& e) {
  final_ = [this, e] { journal_->fail_run(run_id_, e.message(), e.hint()); };
  finish();
}

// Writes what is pending, oldest first; what fails stays pending for the next call.
bool RunRecorder::flush() {
  if (!journal_ || run_id_ == 0) return false;
  try {
    if (pending_start_) {
      journal_->rewind_run(run_id_, pending_start_->first, pending_start_->second);
      pending_start_.reset();
    }
    if (!pending_metrics_.empty()) {
      journal_->append_metrics(run_id_, pending_metrics_);
      pending_metrics_.clear();
    }
    if (pending_checkpoints_) {
      journal_->set_checkpoints(run_id_, *pending_checkpoints_);
      pending_checkpoints_.reset();
    }
    if (failing_) say_("the run journal is written again; nothing was lost");
    failing_ = false;
    return true;
  } catch (const Error& e) {
    if (!failing_)
      say_("the run journal cannot be written (" + e.message() +
           "); the records are kept in memory and written when it can be");
    failing_ = true;
    return false;
  }
}

void RunRecorder::finish() {
  if (!flush()) {
    if (journal_ && run_id_ != 0)
      say_("the run journal lost this run's last records: it could not be written when the run ended");
    return;
  }
  try {
    final_();
  } catch (const Error& e) {
    say_("the run journal could not record how this run ended: " + e.message());
  }
}

}  // namespace forja
