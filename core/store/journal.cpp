// The run journal on SQLite: connection setup (WAL, busy timeout), versioned migrations, and the queries.
#include "forja/journal.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <utility>

#include "forja/error.h"
#include "forja/fault.h"

namespace forja {
namespace {

// Long enough to ride out a writer's commit of a large metrics batch or a WAL checkpoint, short enough that a
// stuck peer is reported instead of hanging the window.
constexpr int kBusyTimeoutMs = 5000;

// Migration i brings user_version i to i + 1. Never edit a shipped entry: add a new one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  model_dir TEXT NOT NULL,
  dataset_path TEXT NOT NULL DEFAULT '',
  config_json TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL,
  total_steps INTEGER NOT NULL DEFAULT 0,
  worker_pid INTEGER NOT NULL DEFAULT 0,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  final_loss REAL,
  final_eval_loss REAL,
  adapter_path TEXT NOT NULL DEFAULT '',
  error_message TEXT NOT NULL DEFAULT '',
  error_hint TEXT NOT NULL DEFAULT ''
);
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  loss REAL,
  eval_loss REAL,
  lr REAL,
  grad_norm REAL,
  tokens_per_s REAL,
  gpu_memory_bytes INTEGER,
  PRIMARY KEY(run_id, step)
) WITHOUT ROWID;
CREATE TABLE checkpoints(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  path TEXT NOT NULL,
  loss REAL,
  created_at INTEGER NOT NULL
);
CREATE INDEX checkpoints_by_run ON checkpoints(run_id, step);
CREATE TABLE chats(
  id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  model_dir TEXT NOT NULL,
  adapter_path TEXT NOT NULL DEFAULT '',
  run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE messages(
  id INTEGER PRIMARY KEY,
  chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK(role IN ('system', 'user', 'assistant')),
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX messages_by_chat ON messages(chat_id, id);
)sql",
    // A step's counts, so that tokens_per_s (real tokens from now on) is read beside the padding it left out;
    // rows of older runs keep them empty.
    R"sql(
ALTER TABLE metrics ADD COLUMN tokens INTEGER;
ALTER TABLE metrics ADD COLUMN trained_tokens INTEGER;
ALTER TABLE metrics ADD COLUMN positions INTEGER;
)sql",
    // Running time apart from the wall-clock span: a resumed run's gaps no longer count as its duration.
    // Runs recorded before it keep their span, the best that is known of them.
    R"sql(
ALTER TABLE runs ADD COLUMN active_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN resumed_at INTEGER;
UPDATE runs SET active_ms = ended_at - started_at WHERE ended_at IS NOT NULL;
UPDATE runs SET resumed_at = started_at WHERE ended_at IS NULL;
)sql",
    // The user's own words about a run, beside the name it can now be given.
    R"sql(
ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(kMigrations) == Journal::kSchemaVersion, "one migration per schema version");

std::string hint_for(int code) {
  switch (code & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return "The file is not a Forja journal or is damaged. Move it aside; Forja creates a new one.";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "Another Forja process holds the journal for too long. Wait for it or close it, then retry.";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return "Check that the folder exists and that you may write to it.";
    case SQLITE_FULL:
      return "The disk is full. Free some space and retry.";
    default:
      return {};
  }
}

[[noreturn]] void fail(sqlite3* db, const std::filesystem::path& path, const std::string& what) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_CANTOPEN;
  const std::string detail = db ? sqlite3_errmsg(db) : "out of memory";
  throw_file_error(path.string(), what + ": " + detail, hint_for(code));
}

// One prepared statement; the journal's queries bind by position.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::filesystem::path& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      fail(db_, path_, "cannot prepare a query");
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Stmt& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  template <typename T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : check(sqlite3_bind_null(stmt_, i));
  }

  // True while there is a row to read.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, "cannot read or write the journal");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  std::optional<double> opt_f64(int col) const { return null(col) ? std::nullopt : std::optional(f64(col)); }
  std::optional<int64_t> opt_i64(int col) const { return null(col) ? std::nullopt : std::optional(i64(col)); }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, "cannot bind a query parameter");
    return *this;
  }
  sqlite3* db_;
  const std::filesystem::path& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::filesystem::path& path, const char* sql, const char* what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, what);
}

// A write transaction. IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
// instead of one failing with SQLITE_BUSY when it upgrades a read lock.
// `op` names the transaction for the crash tests' fault point "journal.commit:<op>", which dies with the
// transaction's rows written but not committed.
class WriteTransaction {
 public:
  WriteTransaction(sqlite3* db, const std::filesystem::path& path, const char* op)
      : db_(db), path_(path), op_(op) {
    exec(db_, path_, "BEGIN IMMEDIATE", "cannot start writing to the journal");
  }
  ~WriteTransaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    if (fault_points_armed()) fault_point(std::string("journal.commit:") + op_);
    exec(db_, path_, "COMMIT", "cannot commit to the journal");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::filesystem::path& path_;
  const char* op_;
  bool done_ = false;
};

int user_version(sqlite3* db, const std::filesystem::path& path) {
  Stmt s(db, path, "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.i64(0)) : 0;
}

constexpr const char* kRunColumns =
    "id, name, model_dir, dataset_path, config_json, status, total_steps, worker_pid, started_at, ended_at, "
    "final_loss, final_eval_loss, adapter_path, error_message, error_hint, "
    "(SELECT max(step) FROM metrics WHERE metrics.run_id = runs.id), active_ms, resumed_at, notes";

// Closes the open stretch of running time at ?1 (ms): SET clauses for the runs row.
constexpr const char* kCloseStretch =
    "active_ms = active_ms + CASE WHEN resumed_at IS NULL OR ?1 < resumed_at THEN 0 ELSE ?1 - resumed_at "
    "END, "
    "resumed_at = NULL";

// When a dead worker's open stretch ended: at its last recorded step (when it died after that is unknown,
// and the time until someone noticed is not running time), or where it began when it recorded none.
int64_t last_step_time(sqlite3* db, const std::filesystem::path& path, int64_t run_id) {
  Stmt s(db, path,
         "SELECT coalesce(max(m.time_ms), r.resumed_at, r.started_at) FROM runs r LEFT JOIN metrics m ON "
         "m.run_id = r.id AND m.time_ms >= r.resumed_at WHERE r.id = ?");
  s.bind(1, run_id);
  return s.step() ? s.i64(0) : 0;
}

RunRecord read_run(const Stmt& s) {
  RunRecord r;
  r.id = s.i64(0);
  r.name = s.text(1);
  r.model_dir = s.text(2);
  r.dataset_path = s.text(3);
  r.config_json = s.text(4);
  r.status = run_status_from_string(s.text(5));
  r.total_steps = s.i64(6);
  r.worker_pid = s.i64(7);
  r.started_at_ms = s.i64(8);
  r.ended_at_ms = s.opt_i64(9);
  r.final_loss = s.opt_f64(10);
  r.final_eval_loss = s.opt_f64(11);
  r.adapter_path = s.text(12);
  r.error_message = s.text(13);
  r.error_hint = s.text(14);
  r.last_step = s.null(15) ? -1 : s.i64(15);
  r.active_ms = s.i64(16);
  r.resumed_at_ms = s.opt_i64(17);
  r.notes = s.text(18);
  return r;
}

}  // namespace

std::filesystem::path default_journal_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::filesystem::path base;
  // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (xdg && *xdg && std::filesystem::path(xdg).is_absolute()) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home)
      throw Error("journal: neither XDG_DATA_HOME nor HOME is set, so there is no place for the run journal",
                  "Set HOME, or pass the journal's path explicitly.");
    base = std::filesystem::path(home) / ".local" / "share";
  }
  return base / "forja" / "journal.db";
}

int64_t journal_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Completed:
      return "completed";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Stopped:
      return "stopped";
    case RunStatus::Interrupted:
      return "interrupted";
  }
  return "unknown";
}

RunStatus run_status_from_string(const std::string& word) {
  for (auto s : {RunStatus::Running, RunStatus::Completed, RunStatus::Failed, RunStatus::Stopped,
                 RunStatus::Interrupted}) {
    if (word == to_string(s)) return s;
  }
  throw Error("journal: unknown run status '" + word + "'",
              "The journal was written by another version of Forja; update Forja.");
}

Journal::Journal(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string detail = db_ ? sqlite3_errmsg(db_) : "out of memory";
    close();
    throw_file_error(path_.string(), "cannot open the journal: " + detail,
                     "Check that the folder exists and that you may write to it.");
  }
  try {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    {
      Stmt mode(db_, path_, "PRAGMA journal_mode=WAL");
      if (!mode.step() || mode.text(0) != "wal")
        throw_file_error(path_.string(), "cannot switch the journal to WAL mode",
                         "Put the journal on a local disk (WAL does not work on network file systems).");
    }
    // NORMAL in WAL mode loses nothing on a process crash (kill -9); only a power cut can drop the last
    // commits.
    exec(db_, path_, "PRAGMA synchronous=NORMAL", "cannot configure the journal");
    exec(db_, path_, "PRAGMA foreign_keys=ON", "cannot configure the journal");
    migrate();
  } catch (...) {
    close();
    throw;
  }
}

Journal::~Journal() {
  close();
}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)) {}

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

void Journal::close() noexcept {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

void Journal::migrate() {
  // The common case, an up-to-date journal, takes no write lock: a window opening while the worker writes.
  if (user_version(db_, path_) == kSchemaVersion) return;
  WriteTransaction tx(db_, path_, "migrate");
  // Re-read under the lock: another process may have migrated between the check and BEGIN IMMEDIATE.
  const int version = user_version(db_, path_);
  if (version > kSchemaVersion)
    throw_file_error(path_.string(),
                     "the journal has schema version " + std::to_string(version) +
                         ", this Forja knows up to " + std::to_string(kSchemaVersion),
                     "It was written by a newer Forja: update Forja, or point it at another journal.");
  if (version == 0) {
    Stmt tables(db_, path_, "SELECT count(*) FROM sqlite_master");
    if (tables.step() && tables.i64(0) > 0)
      throw_file_error(path_.string(), "is an SQLite database but not a Forja journal",
                       "Point Forja at another file; it will not change this one.");
  }
  for (int v = version; v < kSchemaVersion; ++v)
    exec(db_, path_, kMigrations[v], "cannot migrate the journal");
  exec(db_, path_, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str(),
       "cannot migrate the journal");
  tx.commit();
}

int Journal::schema_version() {
  return user_version(db_, path_);
}

std::string Journal::integrity_check() {
  Stmt s(db_, path_, "PRAGMA integrity_check");
  std::string out;
  while (s.step()) out += (out.empty() ? "" : "\n") + s.text(0);
  return out;
}

int64_t Journal::create_run(const NewRun& run) {
  WriteTransaction tx(db_, path_, "create_run");
  Stmt s(db_, path_,
         "INSERT INTO runs(name, model_dir, dataset_path, config_json, status, total_steps, worker_pid, "
         "started_at, resumed_at, notes) "
         "VALUES(?, ?, ?, ?, ?, ?, ?, ?8, ?8, ?9)");
  s.bind(1, run.name).bind(2, run.model_dir).bind(3, run.dataset_path).bind(4, run.config_json);
  s.bind(9, run.notes);
  s.bind(5, std::string(to_string(RunStatus::Running))).bind(6, run.total_steps).bind(7, run.worker_pid);
  s.bind(8, journal_now_ms());
  s.run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

void Journal::set_run_status(int64_t run_id, RunStatus status) {
  WriteTransaction tx(db_, path_, "set_run_status");
  Stmt s(db_, path_, "UPDATE runs SET status = ? WHERE id = ?");
  s.bind(1, std::string(to_string(status))).bind(2, run_id).run();
  tx.commit();
}

void Journal::resume_run(int64_t run_id, int64_t worker_pid) {
  WriteTransaction tx(db_, path_, "resume_run");
  Stmt s(
      db_, path_,
      (std::string("UPDATE runs SET ") + kCloseStretch +
       ", status = ?2, worker_pid = ?3, ended_at = NULL, error_message = '', error_hint = '' WHERE id = ?4")
          .c_str());
  // A stretch still open belongs to a worker that died unnoticed: it ends at its last recorded step.
  s.bind(1, last_step_time(db_, path_, run_id)).bind(2, std::string(to_string(RunStatus::Running)));
  s.bind(3, worker_pid).bind(4, run_id).run();
  Stmt open(db_, path_, "UPDATE runs SET resumed_at = ? WHERE id = ?");
  open.bind(1, journal_now_ms()).bind(2, run_id).run();
  tx.commit();
}

void Journal::finish_run(int64_t run_id, RunStatus status, std::optional<double> final_loss,
                         std::optional<double> final_eval_loss, const std::string& adapter_path) {
  WriteTransaction tx(db_, path_, "finish_run");
  Stmt s(
      db_, path_,
      (std::string("UPDATE runs SET ") + kCloseStretch +
       ", status = ?2, ended_at = ?1, final_loss = ?3, final_eval_loss = ?4, adapter_path = ?5 WHERE id = ?6")
          .c_str());
  s.bind(1, journal_now_ms()).bind(2, std::string(to_string(status))).bind(3, final_loss);
  s.bind(4, final_eval_loss).bind(5, adapter_path).bind(6, run_id).run();
  tx.commit();
}

void Journal::fail_run(int64_t run_id, const std::string& message, const std::string& hint) {
  WriteTransaction tx(db_, path_, "fail_run");
  Stmt s(db_, path_,
         (std::string("UPDATE runs SET ") + kCloseStretch +
          ", status = ?2, ended_at = ?1, error_message = ?3, error_hint = ?4 WHERE id = ?5")
             .c_str());
  s.bind(1, journal_now_ms()).bind(2, std::string(to_string(RunStatus::Failed))).bind(3, message);
  s.bind(4, hint).bind(5, run_id).run();
  tx.commit();
}

std::optional<RunRecord> Journal::run(int64_t run_id) {
  Stmt s(db_, path_, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?").c_str());
  s.bind(1, run_id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<RunRecord> Journal::runs() {
  Stmt s(db_, path_,
         (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY started_at DESC, id DESC").c_str());
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(read_run(s));
  return out;
}

bool Journal::delete_by_id(const char* sql, int64_t id) {
  WriteTransaction tx(db_, path_, "delete_by_id");
  Stmt s(db_, path_, sql);
  s.bind(1, id).run();
  const bool deleted = sqlite3_changes(db_) > 0;
  tx.commit();
  return deleted;
}

bool Journal::label_run(int64_t run_id, const std::string& name, const std::string& notes) {
  const size_t b = name.find_first_not_of(" \t\r\n"), e = name.find_last_not_of(" \t\r\n");
  if (b == std::string::npos)
    throw Error("a run's name cannot be empty", "give the run a name, or keep the one it has");
  WriteTransaction tx(db_, path_, "label_run");
  Stmt s(db_, path_, "UPDATE runs SET name = ?, notes = ? WHERE id = ?");
  s.bind(1, name.substr(b, e - b + 1)).bind(2, notes).bind(3, run_id).run();
  const bool changed = sqlite3_changes(db_) > 0;
  tx.commit();
  return changed;
}

bool Journal::delete_run(int64_t run_id) {
  return delete_by_id("DELETE FROM runs WHERE id = ?", run_id);
}

int Journal::mark_interrupted(const std::function<bool(int64_t pid)>& is_alive) {
  WriteTransaction tx(db_, path_, "mark_interrupted");
  std::vector<int64_t> gone;
  {
    Stmt s(db_, path_, "SELECT id, worker_pid FROM runs WHERE status = ?");
    s.bind(1, std::string(to_string(RunStatus::Running)));
    while (s.step())
      if (!is_alive(s.i64(1))) gone.push_back(s.i64(0));
  }
  Stmt u(db_, path_,
         (std::string("UPDATE runs SET ") + kCloseStretch + ", status = ?2, ended_at = ?3 WHERE id = ?4")
             .c_str());
  for (int64_t id : gone) {
    u.bind(1, last_step_time(db_, path_, id))
        .bind(2, std::string(to_string(RunStatus::Interrupted)))
        .bind(3, journal_now_ms())
        .bind(4, id);
    u.run();
    u.reset();
  }
  tx.commit();
  return static_cast<int>(gone.size());
}

void Journal::append_metrics(int64_t run_id, const std::vector<MetricPoint>& points) {
  if (points.empty()) return;
  WriteTransaction tx(db_, path_, "append_metrics");
  Stmt s(db_, path_,
         "INSERT INTO metrics(run_id, step, time_ms, loss, eval_loss, lr, grad_norm, tokens_per_s, "
         "gpu_memory_bytes, tokens, trained_tokens, positions) "
         "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, step) DO UPDATE SET "
         "time_ms = excluded.time_ms, loss = coalesce(excluded.loss, loss), "
         "eval_loss = coalesce(excluded.eval_loss, eval_loss), lr = coalesce(excluded.lr, lr), "
         "grad_norm = coalesce(excluded.grad_norm, grad_norm), "
         "tokens_per_s = coalesce(excluded.tokens_per_s, tokens_per_s), "
         "gpu_memory_bytes = coalesce(excluded.gpu_memory_bytes, gpu_memory_bytes), "
         "tokens = coalesce(excluded.tokens, tokens), "
         "trained_tokens = coalesce(excluded.trained_tokens, trained_tokens), "
         "positions = coalesce(excluded.positions, positions)");
  const int64_t now = journal_now_ms();
  for (const MetricPoint& p : points) {
    s.bind(1, run_id)
        .bind(2, p.step)
        .bind(3, p.time_ms ? p.time_ms : now)
        .bind(4, p.loss)
        .bind(5, p.eval_loss);
    s.bind(6, p.lr).bind(7, p.grad_norm).bind(8, p.tokens_per_s).bind(9, p.gpu_memory_bytes);
    s.bind(10, p.tokens).bind(11, p.trained_tokens).bind(12, p.positions).run();
    s.reset();
  }
  tx.commit();
}

std::vector<MetricPoint> Journal::metrics(int64_t run_id, int64_t after_step) {
  Stmt s(db_, path_,
         "SELECT step, time_ms, loss, eval_loss, lr, grad_norm, tokens_per_s, gpu_memory_bytes, tokens, "
         "trained_tokens, positions FROM metrics "
         "WHERE run_id = ? AND step > ? ORDER BY step");
  s.bind(1, run_id).bind(2, after_step);
  std::vector<MetricPoint> out;
  while (s.step()) {
    MetricPoint p;
    p.step = s.i64(0);
    p.time_ms = s.i64(1);
    p.loss = s.opt_f64(2);
    p.eval_loss = s.opt_f64(3);
    p.lr = s.opt_f64(4);
    p.grad_norm = s.opt_f64(5);
    p.tokens_per_s = s.opt_f64(6);
    p.gpu_memory_bytes = s.opt_i64(7);
    p.tokens = s.opt_i64(8);
    p.trained_tokens = s.opt_i64(9);
    p.positions = s.opt_i64(10);
    out.push_back(p);
  }
  return out;
}

int64_t Journal::add_checkpoint(int64_t run_id, int64_t step, const std::string& path,
                                std::optional<double> loss) {
  WriteTransaction tx(db_, path_, "add_checkpoint");
  Stmt d(db_, path_, "DELETE FROM checkpoints WHERE run_id = ? AND step = ?");
  d.bind(1, run_id).bind(2, step).run();
  Stmt s(db_, path_, "INSERT INTO checkpoints(run_id, step, path, loss, created_at) VALUES(?, ?, ?, ?, ?)");
  s.bind(1, run_id).bind(2, step).bind(3, path).bind(4, loss).bind(5, journal_now_ms()).run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

void Journal::sync_checkpoints(int64_t run_id, const std::vector<CheckpointRecord>& on_disk) {
  std::vector<std::pair<int64_t, const CheckpointRecord*>> keep;  // row id (0: new) and what it becomes
  std::vector<int64_t> gone;
  {
    Stmt s(db_, path_, "SELECT id, step, path FROM checkpoints WHERE run_id = ? ORDER BY id DESC");
    s.bind(1, run_id);
    std::vector<bool> matched(on_disk.size(), false);
    while (s.step()) {
      bool found = false;
      for (size_t i = 0; i < on_disk.size() && !found; ++i)
        if (!matched[i] && on_disk[i].step == s.i64(1) && on_disk[i].path == s.text(2)) {
          matched[i] = found = true;
          keep.emplace_back(s.i64(0), &on_disk[i]);
        }
      if (!found) gone.push_back(s.i64(0));
    }
    for (size_t i = 0; i < on_disk.size(); ++i)
      if (!matched[i]) keep.emplace_back(0, &on_disk[i]);
  }
  Stmt del(db_, path_, "DELETE FROM checkpoints WHERE id = ?");
  for (int64_t id : gone) {
    del.bind(1, id).run();
    del.reset();
  }
  Stmt upd(db_, path_, "UPDATE checkpoints SET loss = ? WHERE id = ?");
  Stmt ins(db_, path_, "INSERT INTO checkpoints(run_id, step, path, loss, created_at) VALUES(?, ?, ?, ?, ?)");
  for (const auto& [id, c] : keep) {
    if (id == 0) {
      ins.bind(1, run_id).bind(2, c->step).bind(3, c->path).bind(4, c->loss);
      ins.bind(5, c->created_at_ms ? c->created_at_ms : journal_now_ms()).run();
      ins.reset();
    } else if (c->loss) {
      upd.bind(1, c->loss).bind(2, id).run();
      upd.reset();
    }
  }
}

void Journal::set_checkpoints(int64_t run_id, const std::vector<CheckpointRecord>& on_disk) {
  WriteTransaction tx(db_, path_, "set_checkpoints");
  sync_checkpoints(run_id, on_disk);
  tx.commit();
}

void Journal::rewind_run(int64_t run_id, int64_t step, const std::vector<CheckpointRecord>& on_disk) {
  WriteTransaction tx(db_, path_, "rewind_run");
  Stmt s(db_, path_, "DELETE FROM metrics WHERE run_id = ? AND step > ?");
  s.bind(1, run_id).bind(2, step).run();
  sync_checkpoints(run_id, on_disk);
  tx.commit();
}

std::vector<CheckpointRecord> Journal::checkpoints(int64_t run_id) {
  Stmt s(
      db_, path_,
      "SELECT id, run_id, step, path, loss, created_at FROM checkpoints WHERE run_id = ? ORDER BY step, id");
  s.bind(1, run_id);
  std::vector<CheckpointRecord> out;
  while (s.step()) out.push_back({s.i64(0), s.i64(1), s.i64(2), s.text(3), s.opt_f64(4), s.i64(5)});
  return out;
}

int64_t Journal::create_chat(const std::string& title, const std::string& model_dir,
                             const std::string& adapter_path, std::optional<int64_t> run_id) {
  WriteTransaction tx(db_, path_, "create_chat");
  Stmt s(db_, path_,
         "INSERT INTO chats(title, model_dir, adapter_path, run_id, created_at, updated_at) VALUES(?, ?, ?, "
         "?, ?, ?)");
  const int64_t now = journal_now_ms();
  s.bind(1, title).bind(2, model_dir).bind(3, adapter_path).bind(4, run_id).bind(5, now).bind(6, now).run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

int64_t Journal::add_message(int64_t chat_id, const std::string& role, const std::string& content) {
  WriteTransaction tx(db_, path_, "add_message");
  const int64_t now = journal_now_ms();
  Stmt s(db_, path_, "INSERT INTO messages(chat_id, role, content, created_at) VALUES(?, ?, ?, ?)");
  s.bind(1, chat_id).bind(2, role).bind(3, content).bind(4, now).run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  Stmt u(db_, path_, "UPDATE chats SET updated_at = ? WHERE id = ?");
  u.bind(1, now).bind(2, chat_id).run();
  tx.commit();
  return id;
}

int64_t Journal::add_exchange(int64_t chat_id, const ChatRecord& new_chat,
                              const std::vector<std::pair<std::string, std::string>>& messages) {
  WriteTransaction tx(db_, path_, "add_exchange");
  const int64_t now = journal_now_ms();
  if (chat_id == 0) {
    Stmt s(db_, path_,
           "INSERT INTO chats(title, model_dir, adapter_path, run_id, created_at, updated_at) "
           "VALUES(?, ?, ?, ?, ?, ?)");
    s.bind(1, new_chat.title).bind(2, new_chat.model_dir).bind(3, new_chat.adapter_path);
    s.bind(4, new_chat.run_id).bind(5, now).bind(6, now).run();
    chat_id = sqlite3_last_insert_rowid(db_);
  }
  Stmt m(db_, path_, "INSERT INTO messages(chat_id, role, content, created_at) VALUES(?, ?, ?, ?)");
  for (const auto& [role, content] : messages) {
    m.bind(1, chat_id).bind(2, role).bind(3, content).bind(4, now).run();
    m.reset();
  }
  Stmt u(db_, path_, "UPDATE chats SET updated_at = ? WHERE id = ?");
  u.bind(1, now).bind(2, chat_id).run();
  if (sqlite3_changes(db_) == 0) throw_file_error(path_.string(), "has no chat " + std::to_string(chat_id));
  tx.commit();
  return chat_id;
}

std::vector<ChatRecord> Journal::chats() {
  Stmt s(db_, path_,
         "SELECT id, title, model_dir, adapter_path, run_id, created_at, updated_at FROM chats "
         "ORDER BY updated_at DESC, id DESC");
  std::vector<ChatRecord> out;
  while (s.step())
    out.push_back({s.i64(0), s.text(1), s.text(2), s.text(3), s.opt_i64(4), s.i64(5), s.i64(6)});
  return out;
}

std::vector<int64_t> Journal::find_chats(const std::string& text) {
  // LIKE with the wildcards of the text escaped: what the user typed is matched literally, ASCII letters in
  // either case.
  std::string pattern = "%";
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') pattern += '\\';
    pattern += ch;
  }
  pattern += '%';
  Stmt s(db_, path_,
         "SELECT id FROM chats c WHERE c.title LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE "
         "m.chat_id = c.id AND m.content LIKE ?1 ESCAPE '\\') ORDER BY updated_at DESC, id DESC");
  s.bind(1, pattern);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

std::vector<MessageRecord> Journal::messages(int64_t chat_id) {
  Stmt s(db_, path_,
         "SELECT id, chat_id, role, content, created_at FROM messages WHERE chat_id = ? ORDER BY id");
  s.bind(1, chat_id);
  std::vector<MessageRecord> out;
  while (s.step()) out.push_back({s.i64(0), s.i64(1), s.text(2), s.text(3), s.i64(4)});
  return out;
}

bool Journal::drop_last_exchange(int64_t chat_id) {
  WriteTransaction tx(db_, path_, "drop_last_exchange");
  std::vector<std::pair<int64_t, std::string>> last;  // newest first
  {
    Stmt s(db_, path_, "SELECT id, role FROM messages WHERE chat_id = ? ORDER BY id DESC LIMIT 2");
    s.bind(1, chat_id);
    while (s.step()) last.emplace_back(s.i64(0), s.text(1));
  }
  if (last.size() < 2 || last[0].second != "assistant" || last[1].second != "user") return false;
  Stmt del(db_, path_, "DELETE FROM messages WHERE id IN (?, ?)");
  del.bind(1, last[0].first).bind(2, last[1].first).run();
  tx.commit();
  return true;
}

bool Journal::delete_chat(int64_t chat_id) {
  return delete_by_id("DELETE FROM chats WHERE id = ?", chat_id);
}

std::string metrics_csv(const std::vector<MetricPoint>& points) {
  std::string out = "step,time_ms,loss,eval_loss,lr,grad_norm,tokens_per_s,gpu_memory_bytes\n";
  const auto real = [&](const std::optional<double>& v) {
    out += ',';
    if (!v) return;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *v);
    out += buf;
  };
  for (const MetricPoint& m : points) {
    out += std::to_string(m.step) + ',' + std::to_string(m.time_ms);
    real(m.loss);
    real(m.eval_loss);
    real(m.lr);
    real(m.grad_norm);
    real(m.tokens_per_s);
    out += ',';
    if (m.gpu_memory_bytes) out += std::to_string(*m.gpu_memory_bytes);
    out += '\n';
  }
  return out;
}

}  // namespace forja
