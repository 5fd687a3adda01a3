// A kill at every instant that matters: `forja-cli train` runs with FORJA_FAULT naming one fault point (a
// step of a checkpoint save, a torn file write, the journal's commits, the final adapter) and SIGKILLs itself
// there; the same command then resumes the run to its end. After each, the run must look as if it had never
// been killed: one journal row per step with the uninterrupted run's loss bit for bit, no duplicate, no gap,
// checkpoint rows that are exactly the valid checkpoints on disk, and the same final adapter, byte for byte.
// The merged export gets the same treatment. Then runs that must end with a clear error and touch nothing:
// a diverging loss, a second run on the same folder, a file-size limit, tampered or foreign files.
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>

#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/journal.h"
#include "forja/safetensors.h"
#include "forja/train.h"
#include "reference.h"
#include "run.h"
#include "run_checkpoint.h"
#include "train_data.h"
#include "train_run_config.h"
#include "util/sha256.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// 8 steps, a checkpoint every 2 (saves at 2, 4, 6, 8), the last 2 kept (pruning from the third save on),
// an eval every 4.
constexpr int64_t kSteps = 8;
constexpr size_t kKeep = 2;

fs::path write_config(const fs::path& dir, const fs::path& data_dir,
                      const std::function<void(forja::TrainConfig&)>& edit = {}) {
  return forja_test::write_run_config(dir, data_dir, kSteps, edit);
}

struct Lines {
  std::map<int64_t, double> loss, eval_loss;
  std::vector<int64_t> checkpoints;  // "checkpoint" events, in order
  std::string outcome;               // empty: no "done" line
  int64_t resumed_from = -1;
};

void parse(const QByteArray& out, Lines& l) {
  for (const QByteArray& line : out.split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    const json j = json::parse(line.toStdString(), nullptr, false);
    if (!j.is_object()) continue;  // export's plain summary line
    if (j["event"] == "step") {
      l.loss[j["step"]] = j["loss"];
      if (j.contains("eval_loss")) l.eval_loss[j["step"]] = j["eval_loss"];
    } else if (j["event"] == "checkpoint") {
      l.checkpoints.push_back(j["step"]);
    } else if (j["event"] == "done") {
      l.outcome = j["outcome"];
      l.resumed_from = j["resumed_from_step"];
    }
  }
}

struct Outcome {
  bool killed = false;  // died of a signal (the fault point fired)
  int exit_code = 0;
  QByteArray err;
  Lines lines;
};

Outcome run_cli(const QStringList& args, const QString& fault) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove(QStringLiteral("FORJA_FAULT"));
  if (!fault.isEmpty()) env.insert(QStringLiteral("FORJA_FAULT"), fault);
  p.setProcessEnvironment(env);
  p.start(FORJA_CLI_PATH, args);
  if (!p.waitForFinished(300000)) qFatal("forja-cli did not finish");
  Outcome o;
  o.killed = p.exitStatus() == QProcess::CrashExit;
  o.exit_code = p.exitCode();
  o.err = p.readAllStandardError();
  parse(p.readAllStandardOutput(), o.lines);
  return o;
}

QStringList train_args(const fs::path& config, const fs::path& journal) {
  return {"train", QString::fromStdString(config.string()), "--json-progress", "--journal",
          QString::fromStdString(journal.string())};
}

QString steps_of(const std::vector<int64_t>& steps) {
  QStringList s;
  for (int64_t v : steps) s << QString::number(v);
  return s.join(',');
}

}  // namespace

class TestTrainFaults : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path root_, data_;
  Lines ref_;
  std::string ref_adapter_sha_;

 private Q_SLOTS:
  void initTestCase() {
    root_ = tmp_.path().toStdString();
    data_ = root_ / "data";
    fs::create_directories(data_);
    forja_test::write_dataset(data_ / "train.jsonl", 31, 24);
    forja_test::write_dataset(data_ / "eval.jsonl", 32, 4);
    const fs::path ref_dir = root_ / "reference";
    const Outcome r = run_cli(train_args(write_config(ref_dir, data_), ref_dir / "journal.db"), {});
    QVERIFY2(!r.killed && r.exit_code == 0, r.err.constData());
    ref_ = r.lines;
    QCOMPARE(ref_.outcome, std::string("finished"));
    QCOMPARE(int64_t(ref_.loss.size()), kSteps);
    QCOMPARE(ref_.checkpoints, (std::vector<int64_t>{2, 4, 6, 8}));
    ref_adapter_sha_ = forja::sha256_file(ref_dir / "run" / "adapter" / "adapter_model.safetensors");
  }

  void killAtEveryPointThenResume_data() {
    // One or more kills in a row (comma-separated, one per process), then a clean run to the end.
    QTest::addColumn<QString>("faults");
    const char* points[] = {
        // the step loop, in the write-ahead order
        "step.updated@3", "step.recorded@2", "step.recorded@3", "step.checkpointed@1",
        "step.checkpoint_recorded@2",
        // each step of a checkpoint save
        "checkpoint.begin@2", "write:adapter_model.safetensors@2", "write:adapter_config.json@1",
        "write:optimizer.safetensors@1", "write:rng.safetensors@3", "write:trainer_state.json@1",
        "write:manifest.json@2", "checkpoint.files_written@1", "checkpoint.synced@2", "checkpoint.renamed@2",
        "checkpoint.dir_synced@1", "checkpoint.pruned@3", "checkpoint.done@3",
        // inside the journal's transactions
        "journal.commit:create_run@1", "journal.commit:rewind_run@1", "journal.commit:append_metrics@3",
        "journal.commit:append_metrics@4", "journal.commit:set_checkpoints@2", "journal.commit:finish_run@1",
        // the final adapter (the fifth adapter file written: four checkpoints, then it)
        "adapter.begin@1", "write:adapter_model.safetensors@5", "adapter.written@1", "adapter.renamed@1",
        // killed again while resuming
        "step.recorded@2,journal.commit:rewind_run@1", "checkpoint.renamed@2,step.recorded@1",
        "step.checkpointed@3,write:adapter_model.safetensors@2"};
    for (const char* p : points) QTest::newRow(p) << QString::fromLatin1(p);
  }

  void killAtEveryPointThenResume() {
    QFETCH(QString, faults);
    static int n = 0;
    const fs::path dir = root_ / ("case-" + std::to_string(++n));
    const fs::path config = write_config(dir, data_);
    const fs::path journal_path = dir / "journal.db";
    const fs::path out = dir / "run";
    std::map<int64_t, double> printed;
    auto check_lines = [&](const Lines& l) {
      for (auto [step, loss] : l.loss) {
        QVERIFY2(ref_.loss.count(step) && loss == ref_.loss.at(step),
                 qPrintable(QString("step %1 printed loss %2, the uninterrupted run %3")
                                .arg(step)
                                .arg(loss, 0, 'g', 17)
                                .arg(ref_.loss.count(step) ? ref_.loss.at(step) : -1, 0, 'g', 17)));
        printed[step] = loss;
      }
      for (auto [step, e] : l.eval_loss) QVERIFY(e == ref_.eval_loss.at(step));
    };
    QStringList survived;
    for (const QString& fault : faults.split(',')) {
      const Outcome o = run_cli(train_args(config, journal_path), fault);
      QVERIFY2(o.killed, qPrintable(QString("%1 never fired (exit %2): %3")
                                        .arg(fault)
                                        .arg(o.exit_code)
                                        .arg(QString::fromUtf8(o.err))));
      check_lines(o.lines);
      if (QTest::currentTestFailed()) return;
      // Whatever the kill left, every checkpoint folder is whole.
      for (const auto& d : forja::train::list_checkpoints(out / "checkpoints")) {
        const std::string problem = forja::train::checkpoint_problem(d);
        QVERIFY2(problem.empty(), (d.string() + ": " + problem).c_str());
      }
      std::vector<int64_t> rows, ckpt_rows;
      {
        forja::Journal j(journal_path);
        QCOMPARE(j.integrity_check(), std::string("ok"));
        for (const auto& r : j.runs()) {
          for (const auto& m : j.metrics(r.id)) rows.push_back(m.step);
          for (const auto& c : j.checkpoints(r.id)) ckpt_rows.push_back(c.step);
        }
      }
      std::vector<int64_t> on_disk;
      for (const auto& d : forja::train::list_checkpoints(out / "checkpoints"))
        on_disk.push_back(std::stoll(d.filename().string().substr(5)));
      // Write-ahead: the journal holds every step a checkpoint on disk covers.
      if (!on_disk.empty()) {
        const int64_t newest = on_disk.back();
        QVERIFY2(int64_t(rows.size()) >= newest && (rows.empty() || rows.back() >= newest),
                 qPrintable(QString("%1: checkpoint %2 on disk, journal steps %3")
                                .arg(fault)
                                .arg(newest)
                                .arg(steps_of(rows))));
      }
      survived << QString("%1 -> printed steps %2, journal steps %3, checkpoint rows %4, on disk %5")
                      .arg(fault)
                      .arg(o.lines.loss.empty() ? QString("none")
                                                : QString::number(o.lines.loss.rbegin()->first))
                      .arg(rows.empty() ? QString("none") : steps_of(rows))
                      .arg(steps_of(ckpt_rows))
                      .arg(steps_of(on_disk));
    }
    const Outcome last = run_cli(train_args(config, journal_path), {});
    QVERIFY2(!last.killed && last.exit_code == 0, last.err.constData());
    QCOMPARE(last.lines.outcome, std::string("finished"));
    check_lines(last.lines);
    if (QTest::currentTestFailed()) return;

    // Every step was printed by some process, with the uninterrupted run's loss.
    QCOMPARE(int64_t(printed.size()), kSteps);
    // The journal: one run, completed with the adapter; one row per step, no gap, no duplicate (the metrics
    // table's key), each loss bitwise the uninterrupted run's.
    forja::Journal j(journal_path);
    QCOMPARE(j.integrity_check(), std::string("ok"));
    const auto runs = j.runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs[0].status, forja::RunStatus::Completed);
    QCOMPARE(runs[0].adapter_path, (out / "adapter").string());
    const auto points = j.metrics(runs[0].id);
    QCOMPARE(int64_t(points.size()), kSteps);
    for (size_t i = 0; i < points.size(); ++i) {
      QCOMPARE(points[i].step, int64_t(i + 1));
      QVERIFY(points[i].loss && *points[i].loss == ref_.loss.at(points[i].step));
      if (ref_.eval_loss.count(points[i].step))
        QVERIFY(points[i].eval_loss && *points[i].eval_loss == ref_.eval_loss.at(points[i].step));
    }
    // Checkpoint rows are exactly the checkpoints on disk, each valid, the newest the last step.
    const auto ckpts = j.checkpoints(runs[0].id);
    const auto dirs = forja::train::list_checkpoints(out / "checkpoints");
    QCOMPARE(dirs.size(), kKeep);
    QCOMPARE(ckpts.size(), dirs.size());
    for (size_t i = 0; i < ckpts.size(); ++i) {
      QCOMPARE(fs::path(ckpts[i].path), dirs[i]);
      QVERIFY(forja::train::checkpoint_problem(dirs[i]).empty());
    }
    QCOMPARE(ckpts.back().step, kSteps);
    QVERIFY(ckpts.back().loss && *ckpts.back().loss == ref_.loss.at(kSteps));
    // Nothing left behind by the killed saves, and the same adapter as the uninterrupted run.
    for (const auto& e : fs::directory_iterator(out))
      QVERIFY2(e.path().filename().string().rfind(".adapter-", 0) != 0, e.path().c_str());
    for (const auto& e : fs::directory_iterator(out / "checkpoints"))
      QVERIFY2(e.path().filename().string()[0] != '.', e.path().c_str());
    QCOMPARE(forja::sha256_file(out / "adapter" / "adapter_model.safetensors"), ref_adapter_sha_);
    survived << QString("resumed from step %1 to the end: %2 journal rows, checkpoint rows %3")
                    .arg(last.lines.resumed_from)
                    .arg(points.size())
                    .arg(steps_of({ckpts.front().step, ckpts.back().step}));
    for (const QString& s : survived) qInfo("%s", qPrintable(s));
  }

  void fileSizeLimitIsAnErrorNotASignal() {
    // `ulimit -f 1`: every file the run writes beyond 1 KiB fails. The worker must not die of SIGXFSZ: it
    // says which file could not be written, keeps the run's state in memory and retries, and a stop ends it
    // with that error.
    const fs::path dir = root_ / "fsize";
    const fs::path config = write_config(dir, data_);
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral("/bin/sh"),
            {QStringLiteral("-c"), QStringLiteral("ulimit -f 1 && exec \"$0\" \"$@\""),
             QStringLiteral(FORJA_CLI_PATH), QStringLiteral("train"), QString::fromStdString(config.string()),
             QStringLiteral("--json-progress"), QStringLiteral("--no-journal")});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    while (!out.contains("cannot save the run") && p.state() == QProcess::Running) {
      p.waitForReadyRead(1000);
      out += p.readAll();
    }
    QVERIFY2(out.contains("cannot save the run"), out.constData());
    QVERIFY2(out.contains("adapter_model.safetensors") && out.contains("File too large"), out.constData());
    p.terminate();
    QVERIFY(p.waitForFinished(60000));
    out += p.readAll();
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() != 0, out.constData());
    QVERIFY2(out.contains("error:"), out.constData());
  }

  void divergingRunStopsAtTheFirstNonFiniteLoss() {
    // A learning rate of 1e30: step 1 leaves huge (finite) weights, step 2's loss is not finite. The run must
    // stop there, keep the last finite checkpoint as the newest, write no adapter and be journalled failed.
    const fs::path dir = root_ / "diverge";
    const fs::path config = write_config(dir, data_, [](forja::TrainConfig& c) {
      c.optimizer.learning_rate = 1e30;
      c.optimizer.warmup_steps = 0;
      c.checkpoint_every = 1;
    });
    const Outcome o = run_cli(train_args(config, dir / "journal.db"), {});
    QVERIFY(!o.killed);
    QCOMPARE(o.exit_code, 1);
    QVERIFY2(o.err.contains("diverged at step") || o.err.contains("no longer finite"), o.err.constData());
    QVERIFY(o.lines.outcome.empty());
    QVERIFY(!fs::exists(dir / "run" / "adapter"));
    const auto dirs = forja::train::list_checkpoints(dir / "run" / "checkpoints");
    QVERIFY(!dirs.empty());
    auto f = forja::io::SafetensorsFile::open(dirs.back() / "adapter_model.safetensors");
    for (const auto& t : f.tensors())
      QVERIFY2(at::isfinite(forja::tensor_from_checkpoint(f, t)).all().item<bool>(), t.name.c_str());
    forja::Journal j(dir / "journal.db");
    const auto run = j.runs().at(0);
    QCOMPARE(run.status, forja::RunStatus::Failed);
    QVERIFY2(run.error_message.find("step") != std::string::npos, run.error_message.c_str());
    QVERIFY(run.last_step < kSteps);
  }

  void secondRunOnOneFolderIsRefused() {
    // The test holds the folder's lock as a running worker would: the CLI refuses, names the folder and the
    // process, and writes nothing there (no journal row, no marker).
    const fs::path dir = root_ / "locked";
    const fs::path config = write_config(dir, data_);
    {
      const auto lock = forja::train::lock_output_dir((dir / "run").string());
      const Outcome o = run_cli(train_args(config, dir / "journal.db"), {});
      QCOMPARE(o.exit_code, 1);
      QVERIFY2(o.err.contains("another training run") && o.err.contains(QByteArray::number(getpid())),
               o.err.constData());
      QVERIFY(!fs::exists(dir / "run" / "journal.json"));
      QVERIFY(!fs::exists(dir / "run" / "checkpoints"));
    }
    const Outcome o = run_cli(train_args(config, dir / "journal.db"), {});
    QVERIFY2(o.exit_code == 0 && o.lines.outcome == "finished", o.err.constData());
  }

  void foreignOrTamperedFilesGiveClearErrors() {
    const auto expect_error = [&](const fs::path& config, const fs::path& journal, const char* names) {
      const Outcome o = run_cli(train_args(config, journal), {});
      QVERIFY2(!o.killed && o.exit_code == 1, o.err.constData());
      QVERIFY2(o.err.contains(names), o.err.constData());
      QVERIFY2(!o.err.contains("internal error"), o.err.constData());
    };
    // An output_dir below a file.
    const fs::path below = root_ / "a-file";
    forja::write_file_atomic(below, "x");
    expect_error(write_config(root_ / "under-file", data_,
                              [&](forja::TrainConfig& c) { c.output_dir = (below / "run").string(); }),
                 root_ / "under-file" / "journal.db", "a-file");
    // A journal marker that is not one: refused, and left as it was.
    const fs::path marked = root_ / "marker";
    fs::create_directories(marked / "run");
    forja::write_file_atomic(marked / "run" / "journal.json", "{\"run_id\": \"seven\"}");
    expect_error(write_config(marked, data_), marked / "journal.db", "journal.json");
    QCOMPARE(forja::read_text_file(marked / "run" / "journal.json"), std::string("{\"run_id\": \"seven\"}"));
    // An adapter from an earlier run, with no checkpoint to continue: refused, not overwritten.
    const fs::path old = root_ / "old-adapter";
    fs::create_directories(old / "run" / "adapter");
    forja::write_file_atomic(old / "run" / "adapter" / "adapter_config.json", "{}");
    expect_error(write_config(old, data_), old / "journal.db", "adapter");
    QCOMPARE(forja::read_text_file(old / "run" / "adapter" / "adapter_config.json"), std::string("{}"));

    // A finished run's newest checkpoint edited by hand, manifest and all: a step of 10^15, then -1000.
    const fs::path t = root_ / "tampered";
    const fs::path config = write_config(t, data_);
    QCOMPARE(run_cli(train_args(config, t / "journal.db"), {}).lines.outcome, std::string("finished"));
    const fs::path newest = forja::train::list_checkpoints(t / "run" / "checkpoints").back();
    // A folder name no step count fits is not a checkpoint (and not a crash).
    fs::create_directories(t / "run" / "checkpoints" / "step-99999999999999999999999");
    QCOMPARE(run_cli(train_args(config, t / "journal.db"), {}).lines.outcome, std::string("finished"));
    const auto tamper = [&](const json& step) {
      json ts = json::parse(forja::read_text_file(newest / "trainer_state.json"));
      ts["step"] = step;
      forja::write_file_atomic(newest / "trainer_state.json", ts.dump());
      json m = json::parse(forja::read_text_file(newest / "manifest.json"));
      m["files"]["trainer_state.json"] = {{"bytes", fs::file_size(newest / "trainer_state.json")},
                                          {"sha256", forja::sha256_file(newest / "trainer_state.json")}};
      forja::write_file_atomic(newest / "manifest.json", m.dump());
    };
    tamper(1e15);
    expect_error(config, t / "journal.db", "trainer_state.json");
    tamper(-1000);
    expect_error(config, t / "journal.db", "trainer_state.json");
    tamper(3);  // a whole number, but not this folder's step
    expect_error(config, t / "journal.db", "trainer_state.json");
  }

  void killedExportLeavesNoHalfModel() {
    // The merged export of the reference run's adapter: killed in the middle of writing the weights, then
    // again; --out never holds anything until the export is whole, and a later export gives the same bytes.
    const QString base = QString::fromStdString(forja_test::fixture_dir("llama").string());
    const QString adapter = QString::fromStdString((root_ / "reference" / "run" / "adapter").string());
    const fs::path clean = root_ / "export-clean", out = root_ / "export";
    const auto args = [&](const fs::path& to) {
      return QStringList{
          "export", base, "--adapter", adapter, "--merge", "--out", QString::fromStdString(to.string())};
    };
    const Outcome ok = run_cli(args(clean), {});
    QVERIFY2(!ok.killed && ok.exit_code == 0, ok.err.constData());
    for (const char* fault : {"write:model.safetensors@1", "write:config.json@1"}) {
      const Outcome o = run_cli(args(out), QString::fromLatin1(fault));
      QVERIFY2(o.killed, fault);
      QVERIFY2(!fs::exists(out), fault);
    }
    const Outcome again = run_cli(args(out), {});
    QVERIFY2(!again.killed && again.exit_code == 0, again.err.constData());
    QCOMPARE(forja::sha256_file(out / "model.safetensors"), forja::sha256_file(clean / "model.safetensors"));
    for (const auto& e : fs::directory_iterator(root_))
      QVERIFY2(e.path().filename().string().find(".partial-") == std::string::npos, e.path().c_str());
  }
};

QTEST_GUILESS_MAIN(TestTrainFaults)
#include "test_train_faults.moc"
