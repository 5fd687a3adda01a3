// Tests of forja::Journal: schema and migrations, the queries, two connections at once, and a writer process
// killed with SIGKILL mid-write.
#include <QTemporaryDir>
#include <QTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include <sqlite3.h>

#include "forja/error.h"
#include "forja/journal.h"

using forja::Journal;
using forja::MetricPoint;
using forja::RunStatus;

namespace {

std::filesystem::path temp_file(const QTemporaryDir& dir, const char* name) {
  return std::filesystem::path(dir.path().toStdString()) / name;
}

forja::NewRun sample_run(const std::string& name) {
  forja::NewRun r;
  r.name = name;
  r.model_dir = "/models/tiny";
  r.dataset_path = "/data/qa.jsonl";
  r.config_json = R"({"lr":0.0002})";
  r.total_steps = 100;
  return r;
}

// One step's point with only the fields a test names set (designated initializers would warn under -Wextra).
MetricPoint point(int64_t step, std::optional<double> loss) {
  MetricPoint p;
  p.step = step;
  p.loss = loss;
  return p;
}

// Runs one SQL statement through the raw C API, to set up files the journal has to cope with.
void raw_exec(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

// A disk that fills up on demand: SQLite's default VFS with every write answering SQLITE_FULL while `full` is
// set, as a real ENOSPC makes the unix VFS answer. Registered as the default VFS, so the journal's own open
// goes through it.
namespace full_disk {

std::atomic<bool> full{false};
sqlite3_vfs* real_vfs = nullptr;
sqlite3_vfs vfs;
sqlite3_io_methods methods;

struct File {
  sqlite3_file base;
  sqlite3_file* real;  // the real VFS's file, allocated right after this struct
};

sqlite3_file* real(sqlite3_file* f) {
  return reinterpret_cast<File*>(f)->real;
}

int write(sqlite3_file* f, const void* data, int n, sqlite3_int64 offset) {
  if (full) return SQLITE_FULL;
  return real(f)->pMethods->xWrite(real(f), data, n, offset);
}

int open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* file = reinterpret_cast<File*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  const int rc = real_vfs->xOpen(real_vfs, name, file->real, flags, out_flags);
  file->base.pMethods = file->real->pMethods ? &methods : nullptr;
  return rc;
}

// Every method but xWrite passes the call to the real file.
void install() {
  real_vfs = sqlite3_vfs_find(nullptr);
  vfs = *real_vfs;
  vfs.zName = "forja-full-disk";
  vfs.szOsFile = static_cast<int>(sizeof(File)) + real_vfs->szOsFile;
  vfs.xOpen = open;
  methods.iVersion = 3;
  methods.xClose = [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); };
  methods.xRead = [](sqlite3_file* f, void* d, int n, sqlite3_int64 o) {
    return real(f)->pMethods->xRead(real(f), d, n, o);
  };
  methods.xWrite = write;
  methods.xTruncate = [](sqlite3_file* f, sqlite3_int64 size) {
    return full ? SQLITE_FULL : real(f)->pMethods->xTruncate(real(f), size);
  };
  methods.xSync = [](sqlite3_file* f, int flags) { return real(f)->pMethods->xSync(real(f), flags); };
  methods.xFileSize = [](sqlite3_file* f, sqlite3_int64* size) {
    return real(f)->pMethods->xFileSize(real(f), size);
  };
  methods.xLock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); };
  methods.xUnlock = [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); };
  methods.xCheckReservedLock = [](sqlite3_file* f, int* out) {
    return real(f)->pMethods->xCheckReservedLock(real(f), out);
  };
  methods.xFileControl = [](sqlite3_file* f, int op, void* arg) {
    return real(f)->pMethods->xFileControl(real(f), op, arg);
  };
  methods.xSectorSize = [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); };
  methods.xDeviceCharacteristics = [](sqlite3_file* f) {
    return real(f)->pMethods->xDeviceCharacteristics(real(f));
  };
  methods.xShmMap = [](sqlite3_file* f, int region, int size, int extend, void volatile** out) {
    return real(f)->pMethods->xShmMap(real(f), region, size, extend, out);
  };
  methods.xShmLock = [](sqlite3_file* f, int offset, int n, int flags) {
    return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
  };
  methods.xShmBarrier = [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); };
  methods.xShmUnmap = [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); };
  methods.xFetch = [](sqlite3_file* f, sqlite3_int64 o, int n, void** out) {
    return real(f)->pMethods->xFetch(real(f), o, n, out);
  };
  methods.xUnfetch = [](sqlite3_file* f, sqlite3_int64 o, void* p) {
    return real(f)->pMethods->xUnfetch(real(f), o, p);
  };
  QCOMPARE(sqlite3_vfs_register(&vfs, 1), SQLITE_OK);
}

void uninstall() {
  sqlite3_vfs_unregister(&vfs);
  sqlite3_vfs_register(real_vfs, 1);
}

}  // namespace full_disk

}  // namespace

class TestJournal : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void createsSchemaInWalMode();
  void refusesNewerSchema();
  void migratesVersionOneJournal();
  void runsCarryANameAndNotes();
  void refusesForeignDatabase();
  void refusesNonDatabaseFile();
  void runLifecycle();
  void metricsMergeAndPoll();
  void deleteRunCascades();
  void markInterrupted();
  void runningTimeLeavesOutTheGaps();
  void metricsAsCsv();
  void chatsAndMessages();
  void twoConnectionsSeeEachOther();
  void secondWriterWaitsForFirst();
  void survivesSigkillOfWriter();
  void checkpointRowsFollowTheDisk();
  void exchangeIsAllOrNothing();
  void fullDiskKeepsWhatWasCommitted();
};

void TestJournal::createsSchemaInWalMode() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "sub/journal.db");  // the folder does not exist yet
  {
    Journal j(path);
    QCOMPARE(j.schema_version(), Journal::kSchemaVersion);
    QCOMPARE(QString::fromStdString(j.integrity_check()), QStringLiteral("ok"));
  }
  // Reopening an up-to-date journal is a no-op, and WAL mode is a property of the file.
  Journal again(path);
  QCOMPARE(again.schema_version(), Journal::kSchemaVersion);
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  QCOMPARE(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  QCOMPARE(sqlite3_step(st), SQLITE_ROW);
  QCOMPARE(QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))),
           QStringLiteral("wal"));
  sqlite3_finalize(st);
  sqlite3_close(db);
}

void TestJournal::refusesNewerSchema() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  { Journal j(path); }
  // 999: any version above the one this build knows.
  raw_exec(path, "PRAGMA user_version=999");
  try {
    Journal j(path);
    QFAIL("a journal from a newer Forja was opened");
  } catch (const forja::Error& e) {
    QVERIFY2(e.message().find(path.string()) != std::string::npos, e.what());
    QVERIFY2(e.message().find("999") != std::string::npos, e.what());
    QVERIFY(!e.hint().empty());
  }
}

void TestJournal::migratesVersionOneJournal() {
  // A journal written by a build of schema version 1 (its runs and metrics tables as that build made them,
  // with one recorded step) opens, keeps its row, and then stores a step's token counts.
  QTemporaryDir dir;
  const auto path = temp_file(dir, "v1.db");
  raw_exec(path, R"sql(
CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL, model_dir TEXT NOT NULL,
  dataset_path TEXT NOT NULL DEFAULT '', config_json TEXT NOT NULL DEFAULT '{}', status TEXT NOT NULL,
  total_steps INTEGER NOT NULL DEFAULT 0, worker_pid INTEGER NOT NULL DEFAULT 0, started_at INTEGER NOT NULL,
  ended_at INTEGER, final_loss REAL, final_eval_loss REAL, adapter_path TEXT NOT NULL DEFAULT '',
  error_message TEXT NOT NULL DEFAULT '', error_hint TEXT NOT NULL DEFAULT '');
CREATE TABLE metrics(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL,
  time_ms INTEGER NOT NULL, loss REAL, eval_loss REAL, lr REAL, grad_norm REAL, tokens_per_s REAL,
  gpu_memory_bytes INTEGER, PRIMARY KEY(run_id, step)) WITHOUT ROWID;
CREATE TABLE checkpoints(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, path TEXT NOT NULL, loss REAL, created_at INTEGER NOT NULL);
CREATE INDEX checkpoints_by_run ON checkpoints(run_id, step);
CREATE TABLE chats(id INTEGER PRIMARY KEY, title TEXT NOT NULL, model_dir TEXT NOT NULL,
  adapter_path TEXT NOT NULL DEFAULT '', run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK(role IN ('system', 'user', 'assistant')), content TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX messages_by_chat ON messages(chat_id, id);
INSERT INTO runs(id, name, model_dir, status, started_at) VALUES(1, 'old', '/m', 'completed', 1000);
INSERT INTO metrics(run_id, step, time_ms, loss, tokens_per_s) VALUES(1, 1, 1001, 2.5, 4096.0);
PRAGMA user_version=1;
)sql");
  Journal j(path);
  QCOMPARE(j.schema_version(), Journal::kSchemaVersion);
  QCOMPARE(QString::fromStdString(j.integrity_check()), QStringLiteral("ok"));
  auto m = j.metrics(1);
  QCOMPARE(m.size(), size_t{1});
  QCOMPARE(m[0].loss.value_or(0), 2.5);
  QCOMPARE(m[0].tokens_per_s.value_or(0), 4096.0);
  QVERIFY(!m[0].tokens && !m[0].trained_tokens && !m[0].positions);
  MetricPoint p = point(2, 2.0);
  p.tokens = 900;
  p.trained_tokens = 400;
  p.positions = 1024;
  j.append_metrics(1, {p});
  // A later partial update of the step (an eval loss alone) keeps the counts.
  MetricPoint eval;
  eval.step = 2;
  eval.eval_loss = 2.2;
  j.append_metrics(1, {eval});
  m = j.metrics(1);
  QCOMPARE(m.size(), size_t{2});
  QCOMPARE(m[1].tokens.value_or(0), int64_t{900});
  QCOMPARE(m[1].trained_tokens.value_or(0), int64_t{400});
  QCOMPARE(m[1].positions.value_or(0), int64_t{1024});
  QCOMPARE(m[1].eval_loss.value_or(0), 2.2);
  // The run from before notes existed has none, and can be given a name and notes.
  QCOMPARE(j.run(1)->notes, std::string());
  QVERIFY(j.label_run(1, "old", "kept"));
  QCOMPARE(j.run(1)->notes, std::string("kept"));
}

void TestJournal::runsCarryANameAndNotes() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "j.db"));
  forja::NewRun r;
  r.name = "folder";
  r.model_dir = "/m";
  r.notes = "lr 2e-4, the Portuguese set";
  const int64_t id = j.create_run(r);
  QCOMPARE(j.run(id)->notes, r.notes);
  QCOMPARE(j.runs().front().notes, r.notes);
  // Renamed with its words trimmed; notes kept as written (line breaks included).
  QVERIFY(j.label_run(id, "  Portuguese, second try \n", "line one\nline two"));
  QCOMPARE(j.run(id)->name, std::string("Portuguese, second try"));
  QCOMPARE(j.run(id)->notes, std::string("line one\nline two"));
  // An empty name is refused and changes nothing; an unknown run says so.
  QVERIFY_THROWS_EXCEPTION(forja::Error, j.label_run(id, " \t", "lost"));
  QCOMPARE(j.run(id)->notes, std::string("line one\nline two"));
  QVERIFY(!j.label_run(id + 1, "x", ""));
}

void TestJournal::refusesForeignDatabase() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "other.db");
  raw_exec(path, "CREATE TABLE photos(id INTEGER)");
  try {
    Journal j(path);
    QFAIL("another program's database was taken for a journal");
  } catch (const forja::Error& e) {
    QVERIFY2(e.message().find("not a Forja journal") != std::string::npos, e.what());
  }
  // And it was left alone.
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  QCOMPARE(sqlite3_exec(db, "SELECT id FROM photos", nullptr, nullptr, nullptr), SQLITE_OK);
  QCOMPARE(sqlite3_exec(db, "SELECT id FROM runs", nullptr, nullptr, nullptr), SQLITE_ERROR);
  sqlite3_close(db);
}

void TestJournal::refusesNonDatabaseFile() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "notes.db");
  std::ofstream(path) << std::string(4096, 'x');  // a page's worth of text: clearly not an SQLite header
  try {
    Journal j(path);
    QFAIL("a text file was taken for a journal");
  } catch (const forja::Error& e) {
    QVERIFY2(e.message().find(path.string()) != std::string::npos, e.what());
    QVERIFY2(e.hint().find("not a Forja journal") != std::string::npos, e.hint().c_str());
  }
}

void TestJournal::runLifecycle() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  const int64_t first = j.create_run(sample_run("first"));
  const int64_t second = j.create_run(sample_run("second"));
  QVERIFY(first != second);

  auto r = j.run(first);
  QVERIFY(r);
  QCOMPARE(r->name, std::string("first"));
  QCOMPARE(r->config_json, std::string(R"({"lr":0.0002})"));
  QCOMPARE(r->status, RunStatus::Running);
  QVERIFY(!r->ended_at_ms);
  QCOMPARE(r->last_step, int64_t(-1));

  j.append_metrics(first, {point(0, 3.5), point(1, 3.25)});
  j.finish_run(first, RunStatus::Completed, 3.25, std::nullopt, "/adapters/first");
  r = j.run(first);
  QCOMPARE(r->status, RunStatus::Completed);
  QCOMPARE(*r->final_loss, 3.25);
  QVERIFY(!r->final_eval_loss);
  QCOMPARE(r->adapter_path, std::string("/adapters/first"));
  QVERIFY(r->ended_at_ms && *r->ended_at_ms >= r->started_at_ms);
  QCOMPARE(r->last_step, int64_t(1));

  j.fail_run(second, "data.jsonl:3: not JSON", "Fix line 3.");
  r = j.run(second);
  QCOMPARE(r->status, RunStatus::Failed);
  QCOMPARE(r->error_message, std::string("data.jsonl:3: not JSON"));
  QCOMPARE(r->error_hint, std::string("Fix line 3."));

  const auto all = j.runs();
  QCOMPARE(all.size(), size_t(2));
  QVERIFY(!j.run(second + 100));
  QVERIFY_THROWS_EXCEPTION(forja::Error, forja::run_status_from_string("sleeping"));
}

void TestJournal::metricsMergeAndPoll() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  const int64_t run = j.create_run(sample_run("m"));
  std::vector<MetricPoint> batch;
  for (int step = 0; step < 10; ++step) {
    MetricPoint p = point(step, 4.0 - 0.1 * step);
    p.lr = 1e-4;
    p.tokens_per_s = 1000.0 + step;
    p.gpu_memory_bytes = int64_t(1) << 30;
    batch.push_back(p);
  }
  j.append_metrics(run, batch);
  // The eval loss of step 4 arrives later and must not erase the step's training loss.
  MetricPoint eval = point(4, std::nullopt);
  eval.eval_loss = 3.75;
  j.append_metrics(run, {eval});

  auto all = j.metrics(run);
  QCOMPARE(all.size(), size_t(10));
  QCOMPARE(all[4].step, int64_t(4));
  QCOMPARE(*all[4].loss, 4.0 - 0.1 * 4);
  QCOMPARE(*all[4].eval_loss, 3.75);
  QCOMPARE(*all[4].tokens_per_s, 1004.0);
  QCOMPARE(*all[4].gpu_memory_bytes, int64_t(1) << 30);
  QVERIFY(!all[3].eval_loss);
  QVERIFY(!all[3].grad_norm);
  QVERIFY(all[3].time_ms > 0);

  const auto tail = j.metrics(run, 6);  // a reader that already has steps 0..6
  QCOMPARE(tail.size(), size_t(3));
  QCOMPARE(tail.front().step, int64_t(7));
  QCOMPARE(tail.back().step, int64_t(9));
}

void TestJournal::deleteRunCascades() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  const int64_t keep = j.create_run(sample_run("keep"));
  const int64_t drop = j.create_run(sample_run("drop"));
  for (int64_t id : {keep, drop}) {
    j.append_metrics(id, {point(0, 1.0)});
    j.add_checkpoint(id, 0, "/ckpt/" + std::to_string(id), 1.0);
  }
  const int64_t chat = j.create_chat("about drop", "/models/tiny", "/adapters/drop", drop);
  QVERIFY(j.delete_run(drop));
  QVERIFY(!j.delete_run(drop));
  QVERIFY(!j.run(drop));
  QVERIFY(j.metrics(drop).empty());
  QVERIFY(j.checkpoints(drop).empty());
  QCOMPARE(j.metrics(keep).size(), size_t(1));
  QCOMPARE(j.checkpoints(keep).size(), size_t(1));
  // A chat outlives the run it came from; it only forgets the link.
  const auto chats = j.chats();
  QCOMPARE(chats.size(), size_t(1));
  QCOMPARE(chats[0].id, chat);
  QVERIFY(!chats[0].run_id);
}

void TestJournal::markInterrupted() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  auto alive = sample_run("alive");
  alive.worker_pid = 1111;  // pids chosen by the test; is_alive below decides which one lives
  auto dead = sample_run("dead");
  dead.worker_pid = 2222;
  const int64_t a = j.create_run(alive);
  const int64_t d = j.create_run(dead);
  const int64_t done = j.create_run(dead);
  j.finish_run(done, RunStatus::Completed, 1.0, 1.0, "");
  QCOMPARE(j.mark_interrupted([](int64_t pid) { return pid == 1111; }), 1);
  QCOMPARE(j.run(a)->status, RunStatus::Running);
  QCOMPARE(j.run(d)->status, RunStatus::Interrupted);
  QVERIFY(j.run(d)->ended_at_ms);
  QCOMPARE(j.run(done)->status, RunStatus::Completed);
}

void TestJournal::runningTimeLeavesOutTheGaps() {
  // A worker that dies, is noticed later and resumed later still: its running time is what it spent up to
  // each stretch's last recorded step. The step times are the test's own, offsets from when each stretch
  // began, so the real gaps (however long the machine takes) count for nothing.
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  auto run = sample_run("resumed");
  run.worker_pid = 3333;
  const int64_t id = j.create_run(run);
  const int64_t first = *j.run(id)->resumed_at_ms;
  MetricPoint a = point(1, 2.0);
  a.time_ms = first + 1500;
  j.append_metrics(id, {a});
  QCOMPARE(j.mark_interrupted([](int64_t) { return false; }), 1);
  QCOMPARE(j.run(id)->active_ms, int64_t(1500));
  QVERIFY(!j.run(id)->resumed_at_ms);
  j.resume_run(id, 4444);
  const int64_t second = *j.run(id)->resumed_at_ms;
  QVERIFY(second >= first);
  MetricPoint b = point(2, 1.5);
  // After the first stretch's step, which the test dated ahead of the clock.
  b.time_ms = std::max(second, a.time_ms) + 700;
  j.append_metrics(id, {b});
  // Dead again, and resumed before anyone marked it: the open stretch still ends at its last step.
  j.resume_run(id, 5555);
  QCOMPARE(j.run(id)->active_ms, 1500 + (b.time_ms - second));
  const int64_t third = *j.run(id)->resumed_at_ms;
  j.finish_run(id, RunStatus::Completed, 1.5, std::nullopt, "");
  const auto done = *j.run(id);
  QVERIFY(!done.resumed_at_ms);
  // The last stretch ran from its resume to the finish, and nothing in between the stretches counted.
  QCOMPARE(done.active_ms, 1500 + (b.time_ms - second) + (*done.ended_at_ms - third));
  QCOMPARE(done.running_ms(*done.ended_at_ms + 100000), done.active_ms);
}

void TestJournal::metricsAsCsv() {
  MetricPoint a = point(1, 2.5);
  a.time_ms = 1000;
  a.lr = 0.0002;
  a.grad_norm = 1.0 / 3.0;
  a.tokens_per_s = 800;
  a.gpu_memory_bytes = 1 << 20;
  MetricPoint b = point(2, std::nullopt);
  b.time_ms = 2000;
  b.eval_loss = 1.25;
  QCOMPARE(forja::metrics_csv({a, b}),
           std::string("step,time_ms,loss,eval_loss,lr,grad_norm,tokens_per_s,gpu_memory_bytes\n"
                       "1,1000,2.5,,0.00020000000000000001,0.33333333333333331,800,1048576\n"
                       "2,2000,,1.25,,,,\n"));
}

void TestJournal::chatsAndMessages() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  const int64_t older = j.create_chat("older", "/m", "", std::nullopt);
  const int64_t newer = j.create_chat("newer", "/m", "/a", std::nullopt);
  j.add_message(newer, "user", "Olá");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // so updated_at differs at ms resolution
  j.add_message(older, "system", "Be brief.");
  j.add_message(older, "user", "What is LoRA?");
  j.add_message(older, "assistant", "A low-rank adapter.");
  QVERIFY_THROWS_EXCEPTION(forja::Error, j.add_message(older, "robot", "beep"));

  const auto chats = j.chats();
  QCOMPARE(chats.size(), size_t(2));
  QCOMPARE(chats[0].id, older);  // it got the last message
  const auto msgs = j.messages(older);
  QCOMPARE(msgs.size(), size_t(3));
  QCOMPARE(msgs[0].role, std::string("system"));
  QCOMPARE(msgs[2].content, std::string("A low-rank adapter."));
  QCOMPARE(j.messages(newer)[0].content, std::string("Olá"));
  // Search: titles and every message, ASCII in either case, most recent first, wildcards taken literally.
  QCOMPARE(j.find_chats("lora"), std::vector<int64_t>{older});
  QCOMPARE(j.find_chats("NEWER"), std::vector<int64_t>{newer});
  QCOMPARE(j.find_chats("Olá"), std::vector<int64_t>{newer});
  QCOMPARE(j.find_chats("er"), (std::vector<int64_t>{older, newer}));
  QVERIFY(j.find_chats("%").empty());
  QVERIFY(j.find_chats("What_is").empty());
  j.add_message(newer, "user", "100% sure_ok");
  QCOMPARE(j.find_chats("0% sure_"), std::vector<int64_t>{newer});
  // Taking back the last exchange removes its two messages, and only an exchange.
  QVERIFY(j.drop_last_exchange(older));
  QCOMPARE(j.messages(older).size(), size_t(1));
  QCOMPARE(j.messages(older)[0].role, std::string("system"));
  QVERIFY(!j.drop_last_exchange(older));
  QCOMPARE(j.messages(older).size(), size_t(1));
  QVERIFY(!j.drop_last_exchange(newer));  // it ends with a user message
  QVERIFY(j.delete_chat(older));
  QVERIFY(j.messages(older).empty());
  QCOMPARE(j.chats().size(), size_t(1));
}

void TestJournal::twoConnectionsSeeEachOther() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  Journal writer(path);
  Journal reader(path);
  const int64_t run = writer.create_run(sample_run("shared"));
  QCOMPARE(reader.run(run)->name, std::string("shared"));
  int64_t seen = -1;
  for (int step = 0; step < 50; ++step) {
    writer.append_metrics(run, {point(step, 1.0 / (step + 1))});
    for (const auto& p : reader.metrics(run, seen)) {
      QCOMPARE(p.step, seen + 1);  // the reader polls and never misses or repeats a step
      seen = p.step;
    }
  }
  QCOMPARE(seen, int64_t(49));
  reader.finish_run(run, RunStatus::Stopped, 0.5, std::nullopt, "");
  QCOMPARE(writer.run(run)->status, RunStatus::Stopped);
}

void TestJournal::secondWriterWaitsForFirst() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  Journal first(path);
  const int64_t run = first.create_run(sample_run("busy"));

  // Hold the write lock from a raw connection for a while; the journal's busy timeout must wait it out.
  sqlite3* holder = nullptr;
  QCOMPARE(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  QCOMPARE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::atomic_bool released{false};
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well under the 5 s busy timeout
    released = true;
    sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  });
  bool waited = false;
  try {
    first.append_metrics(run, {point(0, 2.0)});
    waited = released.load();
  } catch (const forja::Error& e) {
    qWarning("%s", e.what());
  }
  release.join();
  sqlite3_close(holder);
  QVERIFY2(waited, "the write went through while another connection held the lock");
  QCOMPARE(first.metrics(run).size(), size_t(1));
}

void TestJournal::survivesSigkillOfWriter() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  int64_t run = 0;
  {
    Journal setup(path);
    run = setup.create_run(sample_run("victim"));
  }
  int ack[2];
  QCOMPARE(pipe(ack), 0);
  const pid_t child = fork();
  QVERIFY(child >= 0);
  if (child == 0) {
    // The child opens its own connection (SQLite connections must not cross a fork) and writes one step per
    // transaction, reporting each step on the pipe only after its commit returned.
    close(ack[0]);
    try {
      Journal j(path);
      for (int64_t step = 0;; ++step) {
        MetricPoint p = point(step, 1.0);
        p.tokens_per_s = double(step);
        j.append_metrics(run, {p});
        if (step % 7 == 0) j.add_checkpoint(run, step, "/ckpt/" + std::to_string(step), 1.0);
        if (write(ack[1], &step, sizeof step) != sizeof step) _exit(2);
      }
    } catch (...) {
      _exit(3);
    }
  }
  close(ack[1]);
  // Read while the child writes: the window's side of the bargain must not fail with "database is locked".
  Journal reader(path);
  int64_t last_acked = -1;
  int64_t step = 0;
  // 300 commits: enough to be mid-stream with checkpoints among them, quick on a slow disk.
  while (last_acked < 300 && read(ack[0], &step, sizeof step) == sizeof step) {
    last_acked = step;
    if (step % 50 == 0) QVERIFY(reader.metrics(run).size() >= size_t(step + 1));
  }
  QCOMPARE(kill(child, SIGKILL), 0);
  int status = 0;
  QCOMPARE(waitpid(child, &status, 0), child);
  QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer ended before it was killed");
  while (read(ack[0], &step, sizeof step) == sizeof step) last_acked = step;  // acks still in the pipe
  close(ack[0]);

  Journal after(path);
  QCOMPARE(QString::fromStdString(after.integrity_check()), QStringLiteral("ok"));
  const auto points = after.metrics(run);
  // Every acknowledged commit is there; at most one more (committed, killed before its ack).
  QVERIFY2(points.size() == size_t(last_acked + 1) || points.size() == size_t(last_acked + 2),
           qPrintable(QStringLiteral("%1 rows, last ack %2").arg(points.size()).arg(last_acked)));
  for (size_t i = 0; i < points.size(); ++i) {
    QCOMPARE(points[i].step, int64_t(i));
    QCOMPARE(*points[i].tokens_per_s, double(i));
  }
  const auto ckpts = after.checkpoints(run);
  QVERIFY(ckpts.size() >= size_t(last_acked / 7 + 1));
  // The journal is still writable after the crash.
  after.set_run_status(run, RunStatus::Interrupted);
  QCOMPARE(after.run(run)->status, RunStatus::Interrupted);
}

void TestJournal::checkpointRowsFollowTheDisk() {
  QTemporaryDir dir;
  Journal j(temp_file(dir, "journal.db"));
  const int64_t run = j.create_run(sample_run("r"));
  for (int64_t s = 1; s <= 6; ++s) j.append_metrics(run, {point(s, double(s))});
  auto rec = [](int64_t step, std::optional<double> loss = std::nullopt) {
    forja::CheckpointRecord c;
    c.step = step;
    c.path = "/ckpt/step-" + std::to_string(step);
    c.loss = loss;
    return c;
  };
  j.set_checkpoints(run, {rec(2, 2.0), rec(4, 4.0)});
  // Step 6 saved, step 2 pruned: 2's row goes, 4 keeps its loss, 6 comes with its own.
  j.set_checkpoints(run, {rec(4), rec(6, 6.0)});
  auto rows = j.checkpoints(run);
  QCOMPARE(rows.size(), size_t(2));
  QCOMPARE(rows[0].step, int64_t(4));
  QCOMPARE(*rows[0].loss, 4.0);
  QCOMPARE(rows[1].step, int64_t(6));
  QCOMPARE(*rows[1].loss, 6.0);
  // Re-saving a step replaces its row instead of adding a second one.
  j.add_checkpoint(run, 6, "/ckpt/step-6", 6.5);
  QCOMPARE(j.checkpoints(run).size(), size_t(2));
  // A resume from step 4 (the run died after recording 5 and 6, before checkpoint 6 was whole): the later
  // metrics and the row of 6 leave together.
  j.rewind_run(run, 4, {rec(4)});
  const auto points = j.metrics(run);
  QCOMPARE(points.size(), size_t(4));
  QCOMPARE(points.back().step, int64_t(4));
  rows = j.checkpoints(run);
  QCOMPARE(rows.size(), size_t(1));
  QCOMPARE(rows[0].step, int64_t(4));
  QCOMPARE(*rows[0].loss, 4.0);
}

void TestJournal::exchangeIsAllOrNothing() {
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  const std::vector<std::pair<std::string, std::string>> exchange = {
      {"system", "Be brief."}, {"user", "Olá, você está bem?"}, {"assistant", "Estou bem."}};
  forja::ChatRecord c;
  c.title = "first";
  c.model_dir = "/m";
  // Killed inside the transaction (FORJA_FAULT in a forked child): neither the chat nor any message stays.
  auto killed_exchange = [&](int64_t chat_id) {
    const pid_t child = fork();
    if (child == 0) {
      setenv("FORJA_FAULT", "journal.commit:add_exchange", 1);
      try {
        Journal j(path);
        j.add_exchange(chat_id, c, exchange);
      } catch (...) {
      }
      _exit(0);  // reached only when the fault point did not fire
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  };
  { Journal(path).integrity_check(); }
  QVERIFY(killed_exchange(0));
  {
    Journal j(path);
    QCOMPARE(QString::fromStdString(j.integrity_check()), QStringLiteral("ok"));
    QVERIFY(j.chats().empty());
  }
  int64_t chat = 0;
  {
    Journal j(path);
    chat = j.add_exchange(0, c, exchange);
    QCOMPARE(j.messages(chat).size(), size_t(3));
    QCOMPARE(j.messages(chat)[1].content, std::string("Olá, você está bem?"));
  }
  QVERIFY(killed_exchange(chat));
  Journal j(path);
  QCOMPARE(j.chats().size(), size_t(1));
  QCOMPARE(j.messages(chat).size(), size_t(3));
  // A chat that is not there is an error, not messages without a chat.
  QVERIFY_THROWS_EXCEPTION(forja::Error, j.add_exchange(chat + 100, c, exchange));
}

void TestJournal::fullDiskKeepsWhatWasCommitted() {
  // The disk fills up in the middle of a run and a chat: each write that cannot land fails with an error that
  // names the journal and says the disk is full, nothing half-written stays, the rows committed before are
  // intact, and once there is room again the same connection carries on.
  full_disk::install();
  QTemporaryDir dir;
  const auto path = temp_file(dir, "journal.db");
  {
    Journal j(path);
    const int64_t run = j.create_run(sample_run("filling"));
    for (int64_t step = 1; step <= 10; ++step) j.append_metrics(run, {point(step, 2.0 - 0.1 * double(step))});
    j.add_checkpoint(run, 10, "/runs/filling/checkpoints/step-10", 1.0);
    forja::ChatRecord c;
    c.title = "chat";
    const int64_t chat = j.add_exchange(0, c, {{"user", "Olá"}, {"assistant", "Oi!"}});

    full_disk::full = true;
    auto expect_full = [&](const std::function<void()>& write) {
      try {
        write();
        QFAIL("a write on a full disk did not fail");
      } catch (const forja::Error& e) {
        QVERIFY2(QString::fromStdString(e.message()).contains(QString::fromStdString(path.string())),
                 e.message().c_str());
        QVERIFY2(QString::fromStdString(e.hint()).contains(QStringLiteral("disk is full")), e.hint().c_str());
      }
    };
    expect_full([&] { j.append_metrics(run, {point(11, 0.9)}); });
    expect_full([&] { j.add_checkpoint(run, 11, "/runs/filling/checkpoints/step-11", 0.9); });
    expect_full([&] { j.add_exchange(chat, c, {{"user", "E agora?"}, {"assistant", "Nada."}}); });
    expect_full([&] { j.finish_run(run, RunStatus::Completed, 0.9, std::nullopt, "/runs/filling/adapter"); });
    // Reads go on while the disk is full.
    QCOMPARE(j.metrics(run).size(), size_t(10));
    QCOMPARE(j.messages(chat).size(), size_t(2));
    QCOMPARE(j.run(run)->status, RunStatus::Running);

    full_disk::full = false;
    j.append_metrics(run, {point(11, 0.9)});
    j.finish_run(run, RunStatus::Completed, 0.9, std::nullopt, "/runs/filling/adapter");
  }
  full_disk::uninstall();
  Journal j(path);
  QCOMPARE(QString::fromStdString(j.integrity_check()), QStringLiteral("ok"));
  const auto runs = j.runs();
  QCOMPARE(runs.size(), size_t(1));
  QCOMPARE(runs[0].status, RunStatus::Completed);
  const auto metrics = j.metrics(runs[0].id);
  QCOMPARE(metrics.size(), size_t(11));
  for (size_t i = 0; i < metrics.size(); ++i) QCOMPARE(metrics[i].step, int64_t(i + 1));
  QCOMPARE(j.checkpoints(runs[0].id).size(), size_t(1));
  QCOMPARE(j.chats().size(), size_t(1));
  QCOMPARE(j.messages(j.chats()[0].id).size(), size_t(2));
}

QTEST_GUILESS_MAIN(TestJournal)
#include "test_journal.moc"
