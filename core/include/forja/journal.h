// forja::Journal: the run journal, one SQLite file shared by the training worker (writes runs, metrics and
// checkpoints) and the window (reads them, keeps chats). Plain C++ so both the CLI and the UI use it without
// Qt or LibTorch. WAL mode lets one writer and many readers in different processes work at once; every write
// is one transaction, so a SIGKILL at any point leaves the rows committed before it intact.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace forja {

// $XDG_DATA_HOME/forja/journal.db ($HOME/.local/share/... when XDG_DATA_HOME is unset): where the window and
// the CLI keep the journal unless told otherwise.
std::filesystem::path default_journal_path();

// Milliseconds since the Unix epoch, the journal's only time unit.
int64_t journal_now_ms();

enum class RunStatus { Running, Completed, Failed, Stopped, Interrupted };
const char* to_string(RunStatus status);
// Throws forja::Error for a word the journal does not know.
RunStatus run_status_from_string(const std::string& word);

struct NewRun {
  std::string name;
  std::string model_dir;
  std::string dataset_path;
  std::string config_json;  // the training config as the worker received it
  int64_t total_steps = 0;
  int64_t worker_pid = 0;  // 0 when no separate worker process runs it
  std::string notes;
};

struct RunRecord {
  int64_t id = 0;
  std::string name;
  std::string model_dir;
  std::string dataset_path;
  std::string config_json;
  RunStatus status = RunStatus::Running;
  int64_t total_steps = 0;
  int64_t worker_pid = 0;
  int64_t started_at_ms = 0;
  std::optional<int64_t> ended_at_ms;
  std::optional<double> final_loss;
  std::optional<double> final_eval_loss;
  std::string adapter_path;
  std::string error_message;
  std::string error_hint;
  int64_t last_step = -1;  // the highest step with metrics; -1 when there are none
  // Time spent running: the ended stretches between a start or resume and the run's end (an interrupted one
  // ends at its last recorded step), so the gaps while it was paused, dead or waiting are not counted.
  int64_t active_ms = 0;
  std::optional<int64_t> resumed_at_ms;  // the start of the stretch still open; none when it is closed
  std::string notes;                     // the user's own words about the run
  int64_t running_ms(int64_t now_ms) const {
    if (!resumed_at_ms) return active_ms;
    const int64_t end = status == RunStatus::Running ? now_ms : ended_at_ms.value_or(*resumed_at_ms);
    return active_ms + (end > *resumed_at_ms ? end - *resumed_at_ms : 0);
  }
};

// One training step's measurements; a field the worker did not measure at that step stays empty.
struct MetricPoint {
  int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> eval_loss;
  std::optional<double> lr;
  std::optional<double> grad_norm;
  std::optional<double> tokens_per_s;  // real tokens (padding excluded); older runs' rows counted padding
  std::optional<int64_t> gpu_memory_bytes;
  std::optional<int64_t> tokens;          // the step's real tokens
  std::optional<int64_t> trained_tokens;  // those with a loss
  std::optional<int64_t> positions;       // rows x seq_len, padding included
  int64_t time_ms = 0;                    // when the step ended; 0 means "now" on append
};

// A run's metrics as CSV: a header (step,time_ms,loss,eval_loss,lr,grad_norm,tokens_per_s,gpu_memory_bytes),
// then a line per step; a value not measured at a step is an empty field, numbers keep every digit.
std::string metrics_csv(const std::vector<MetricPoint>& points);

struct CheckpointRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t step = 0;
  std::string path;
  std::optional<double> loss;
  int64_t created_at_ms = 0;
};

struct ChatRecord {
  int64_t id = 0;
  std::string title;
  std::string model_dir;
  std::string adapter_path;
  std::optional<int64_t> run_id;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
};

struct MessageRecord {
  int64_t id = 0;
  int64_t chat_id = 0;
  std::string role;  // "system", "user", "assistant"
  std::string content;
  int64_t created_at_ms = 0;
};

class Journal {
 public:
  // The schema version this build writes; a file with a newer one is refused, an older one is migrated.
  static constexpr int kSchemaVersion = 4;

  // Opens (creating when missing, with its folder) and migrates the journal at `path`. Throws forja::Error
  // naming the file when it is not a journal, is from a newer Forja, or cannot be opened.
  explicit Journal(const std::filesystem::path& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;

  const std::filesystem::path& path() const { return path_; }
  int schema_version();
  // "ok" for a healthy file, else SQLite's list of problems.
  std::string integrity_check();

  // Runs.
  int64_t create_run(const NewRun& run);
  void set_run_status(int64_t run_id, RunStatus status);
  // A stopped or interrupted run continues in worker `worker_pid`: Running again, end time and error cleared.
  void resume_run(int64_t run_id, int64_t worker_pid);
  // Ends a run: status, end time, final losses and the adapter it produced (empty when none).
  void finish_run(int64_t run_id, RunStatus status, std::optional<double> final_loss,
                  std::optional<double> final_eval_loss, const std::string& adapter_path);
  void fail_run(int64_t run_id, const std::string& message, const std::string& hint);
  std::optional<RunRecord> run(int64_t run_id);
  std::vector<RunRecord> runs();  // newest first
  // Names the run (trimmed; an empty name throws) and replaces its notes; false when there is no such run.
  bool label_run(int64_t run_id, const std::string& name, const std::string& notes);
  // Deletes the run with its metrics and checkpoint rows (not the files on disk); false when there was none.
  bool delete_run(int64_t run_id);
  // Marks every Running run whose worker is gone as Interrupted and returns how many; `is_alive(pid)` decides
  // (pid 0, a run inside a process that is gone now, should answer false). Called when the window starts.
  int mark_interrupted(const std::function<bool(int64_t pid)>& is_alive);

  // Metrics: a batch goes in one transaction. A step written before is merged: the fields given here replace
  // the stored ones, the empty ones keep them (eval loss arrives after the step's loss; a resumed run repeats
  // steps).
  void append_metrics(int64_t run_id, const std::vector<MetricPoint>& points);
  // Points with step > after_step, in step order; a reader polls with the last step it has.
  std::vector<MetricPoint> metrics(int64_t run_id, int64_t after_step = -1);

  // Checkpoints. Adding a step the run already has replaces that row (a paused run re-saves its last step).
  int64_t add_checkpoint(int64_t run_id, int64_t step, const std::string& path, std::optional<double> loss);
  std::vector<CheckpointRecord> checkpoints(int64_t run_id);  // in step order
  // The run's checkpoint rows become `on_disk` (step, path and, where known, loss), in one transaction: rows
  // of checkpoints pruned from the disk leave, rows already there keep their loss unless a new one is given.
  void set_checkpoints(int64_t run_id, const std::vector<CheckpointRecord>& on_disk);
  // A run (re)starts at `step`: metrics after it are dropped, since those steps run again, and the checkpoint
  // rows become `on_disk`; one transaction, so the journal never shows a mix of the two.
  void rewind_run(int64_t run_id, int64_t step, const std::vector<CheckpointRecord>& on_disk);

  // Chats.
  int64_t create_chat(const std::string& title, const std::string& model_dir, const std::string& adapter_path,
                      std::optional<int64_t> run_id);
  int64_t add_message(int64_t chat_id, const std::string& role, const std::string& content);
  // One exchange of a chat in one transaction: the chat itself when `chat_id` is 0 (made from `new_chat`'s
  // title, model, adapter and run), then `messages` (role, content) in order. Returns the chat's id. A crash
  // leaves all of it or none.
  int64_t add_exchange(int64_t chat_id, const ChatRecord& new_chat,
                       const std::vector<std::pair<std::string, std::string>>& messages);
  std::vector<ChatRecord> chats();  // most recently updated first
  std::vector<MessageRecord> messages(int64_t chat_id);
  // The chats whose title or any message contains `text` (ASCII letters in either case), most recent first.
  std::vector<int64_t> find_chats(const std::string& text);
  // Deletes the chat's last user message and the answer after it, in one transaction (regenerate, edit and
  // resend); false, changing nothing, when the chat does not end with such an exchange.
  bool drop_last_exchange(int64_t chat_id);
  bool delete_chat(int64_t chat_id);

 private:
  // Runs a one-row "DELETE ... WHERE id = ?" in a write transaction; true when a row went.
  bool delete_by_id(const char* sql, int64_t id);
  // set_checkpoints' work, inside the caller's transaction.
  void sync_checkpoints(int64_t run_id, const std::vector<CheckpointRecord>& on_disk);
  void migrate();
  void close() noexcept;

  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

}  // namespace forja
