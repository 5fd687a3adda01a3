// Checkpoints that a crash cannot corrupt, and resumes that continue exactly (plus forja-cli export, at the
// end). `forja-cli train` runs a small fine-tune of the tiny llama fixture on the CPU in fp32 (LoRA dropout
// on, so the generator states matter); a second run is SIGKILLed at several points and restarted each time.
// After every kill no checkpoint folder may be damaged, and the resumed losses must equal, bit for bit, those
// of the uninterrupted run at the same steps.
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <random>

#include <ATen/core/grad_mode.h>

#include "causal_lm.h"
#include "forja/error.h"
#include "forja/file_util.h"
#if FORJA_TEST_JOURNAL
#include "forja/journal.h"
#endif
#include "forja/train.h"
#include "reference.h"
#include "run_checkpoint.h"
#include "train_data.h"
#include "train_run_config.h"
#include "util/sha256.h"

namespace fs = std::filesystem;
using forja_test::write_dataset;
using nlohmann::json;

namespace {

// 12 steps, a checkpoint every 2, the last 2 kept: kills land before, on and between checkpoints.
constexpr int64_t kSteps = 12;

// grad_accum 2: a step of two micro-batches, so the data cursor moves within a step.
fs::path write_config(const fs::path& dir, const fs::path& data_dir) {
  return forja_test::write_run_config(dir, data_dir, kSteps, [](forja::TrainConfig& c) { c.grad_accum = 2; });
}

struct Run {
  std::map<int64_t, double> loss;  // step -> loss, as printed (JSON keeps doubles exactly)
  std::map<int64_t, double> eval_loss;
  std::string outcome;
  int64_t resumed_from = -1;
  bool killed_while_running = false;  // run_and_kill: the process was still going when SIGKILL came
};

void parse_lines(const QByteArray& out, Run& run) {
  for (const QByteArray& line : out.split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    json j = json::parse(line.toStdString());
    if (j["event"] == "step") {
      run.loss[j["step"]] = j["loss"];
      if (j.contains("eval_loss")) run.eval_loss[j["step"]] = j["eval_loss"];
    } else if (j["event"] == "done") {
      run.outcome = j["outcome"];
      run.resumed_from = j["resumed_from_step"];
    }
  }
}

// The run journal the runs write (never the user's default one).
fs::path g_journal;

QStringList train_args(const fs::path& config) {
  return {"train", QString::fromStdString(config.string()), "--json-progress", "--journal",
          QString::fromStdString(g_journal.string())};
}

// Runs forja-cli train to completion.
Run run_to_end(const fs::path& config) {
  QProcess p;
  p.start(FORJA_CLI_PATH, train_args(config));
  if (!p.waitForFinished(240000)) qFatal("forja-cli train did not finish");
  if (p.exitCode() != 0) qFatal("forja-cli train failed: %s", p.readAllStandardError().constData());
  Run r;
  parse_lines(p.readAllStandardOutput(), r);
  return r;
}

// Starts forja-cli train and SIGKILLs it once it has printed `kill_after_step` (or after `delay_ms` when that
// is
// >= 0, wherever it is then: inside a step, or halfway through writing a checkpoint).
Run run_and_kill(const fs::path& config, int64_t kill_after_step, int delay_ms) {
  QProcess p;
  p.start(FORJA_CLI_PATH, train_args(config));
  if (!p.waitForStarted()) qFatal("cannot start forja-cli");
  QByteArray out;
  Run r;
  if (delay_ms >= 0) {
    QThread::msleep(static_cast<unsigned long>(delay_ms));
  } else {
    while (p.state() == QProcess::Running) {
      p.waitForReadyRead(100);
      out += p.readAllStandardOutput();
      Run seen;
      parse_lines(out.left(out.lastIndexOf('\n') + 1), seen);
      if (!seen.loss.empty() && seen.loss.rbegin()->first >= kill_after_step) break;
    }
  }
  r.killed_while_running = p.state() == QProcess::Running;
  p.kill();  // SIGKILL: no handler runs, nothing is flushed
  p.waitForFinished();
  out += p.readAllStandardOutput();
  parse_lines(out.left(out.lastIndexOf('\n') + 1), r);
  return r;
}

void verify_checkpoints(const fs::path& root) {
  for (const auto& dir : forja::train::list_checkpoints(root)) {
    const std::string problem = forja::train::checkpoint_problem(dir);
    QVERIFY2(problem.empty(), (dir.string() + ": " + problem).c_str());
  }
}

}  // namespace

class TestTrainResume : public QObject {
  Q_OBJECT
  QTemporaryDir journal_dir_;

 private Q_SLOTS:
  void initTestCase() { g_journal = fs::path(journal_dir_.path().toStdString()) / "journal.db"; }
  void sha256KnownAnswers() {
    // FIPS 180-4 examples ("abc", the 448-bit message) and the empty string.
    QCOMPARE(forja::sha256_hex("abc"),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(forja::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    QCOMPARE(forja::sha256_hex(""),
             std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  }

  void killedRunsResumeExactly() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    fs::create_directories(root / "data");
    write_dataset(root / "data" / "train.jsonl", 11, 40);
    write_dataset(root / "data" / "eval.jsonl", 12, 6);
    fs::create_directories(root / "a");
    fs::create_directories(root / "b");
    const fs::path config_a = write_config(root / "a", root / "data");
    const fs::path config_b = write_config(root / "b", root / "data");

    QElapsedTimer clock;
    clock.start();
    Run ref = run_to_end(config_a);
    const qint64 full_run_ms = clock.elapsed();
    QCOMPARE(ref.outcome, std::string("finished"));
    QCOMPARE(int64_t(ref.loss.size()), kSteps);
    QCOMPARE(int64_t(ref.eval_loss.size()), kSteps / 4);

    // Kill after steps 1 (before the first checkpoint), 2 and 5 (a checkpoint just written or not), then at
    // fixed delays that land anywhere, including inside a checkpoint write; then let it finish.
    std::map<int64_t, double> seen;
    int64_t last_resume = 0;
    auto check = [&](const Run& r) {
      for (auto [step, loss] : r.loss) {
        QVERIFY2(ref.loss.count(step), "a step the reference run did not have");
        // Bitwise: the same doubles, not merely close ones.
        QVERIFY2(loss == ref.loss.at(step), qPrintable(QString("step %1: %2 vs uninterrupted %3")
                                                           .arg(step)
                                                           .arg(loss, 0, 'g', 17)
                                                           .arg(ref.loss.at(step), 0, 'g', 17)));
        seen[step] = loss;
      }
      for (auto [step, e] : r.eval_loss) QVERIFY(e == ref.eval_loss.at(step));
      verify_checkpoints(root / "b" / "run" / "checkpoints");
    };
    for (int64_t k : {1, 2, 5}) {
      check(run_and_kill(config_b, k, -1));
      if (QTest::currentTestFailed()) return;
    }
    // Random instants (seeded, printed): wherever they land (loading, a step, a checkpoint write, or after
    // the run ended) the checks above must hold; how many land inside a run is reported, never required.
    const unsigned seed = std::random_device{}();
    std::mt19937 pick(seed);
    int live_kills = 0;
    for (int i = 0; i < 4; ++i) {
      const int delay = static_cast<int>(pick() % static_cast<unsigned>(std::max<qint64>(1, full_run_ms)));
      const Run r = run_and_kill(config_b, 0, delay);
      live_kills += r.killed_while_running ? 1 : 0;
      check(r);
      if (QTest::currentTestFailed()) return;
    }
    qInfo("random kills (seed %u): %d of 4 landed while the run was going", seed, live_kills);
    Run last = run_to_end(config_b);
    check(last);
    QCOMPARE(last.outcome, std::string("finished"));
    QVERIFY(last.resumed_from > 0);
    last_resume = last.resumed_from;
    QCOMPARE(int64_t(seen.size()), kSteps);
    qInfo("up to 7 kills over %lld steps (a full run takes %lld ms here); the last resume was at step %lld",
          (long long)kSteps, (long long)full_run_ms, (long long)last_resume);

    // Same final adapter, byte for byte.
    QCOMPARE(forja::sha256_file(root / "b" / "run" / "adapter" / "adapter_model.safetensors"),
             forja::sha256_file(root / "a" / "run" / "adapter" / "adapter_model.safetensors"));
    // keep_checkpoints = 2
    QCOMPARE(forja::train::list_checkpoints(root / "b" / "run" / "checkpoints").size(), size_t(2));

#if FORJA_TEST_JOURNAL
    // The journal went through the same 8 kills: intact, one row per run (b's resumes continued its row),
    // every step's loss as the uninterrupted run printed it, both runs completed with their adapters.
    forja::Journal journal(g_journal);
    QCOMPARE(journal.integrity_check(), std::string("ok"));
    const auto runs = journal.runs();
    QCOMPARE(runs.size(), size_t(2));
    for (const auto& r : runs) {
      QCOMPARE(r.status, forja::RunStatus::Completed);
      QVERIFY(r.adapter_path.ends_with("adapter"));
      const auto points = journal.metrics(r.id);
      QCOMPARE(int64_t(points.size()), kSteps);
      for (const auto& m : points) QVERIFY(m.loss && *m.loss == ref.loss.at(m.step));
      QVERIFY(!journal.checkpoints(r.id).empty());
    }
#endif
  }

  void damagedCheckpointsAreSkipped() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    fs::create_directories(root / "data");
    write_dataset(root / "data" / "train.jsonl", 21, 16);
    write_dataset(root / "data" / "eval.jsonl", 22, 2);
    const fs::path config = write_config(root, root / "data");
    {
      // Keep all 6 checkpoints of this run.
      json c = json::parse(forja::read_text_file(config));
      c["keep_checkpoints"] = 10;
      forja::write_file_atomic(config, c.dump());
    }
    QCOMPARE(run_to_end(config).outcome, std::string("finished"));
    const fs::path ckpts = root / "run" / "checkpoints";
    auto all = forja::train::list_checkpoints(ckpts);
    QCOMPARE(all.size(), size_t(kSteps / 2));

    // Newest: a torn write (truncated optimizer state). Next: no manifest (the save never finished). Next:
    // one flipped bit in the adapter. The one before those is what a resume must use.
    fs::resize_file(all[5] / "optimizer.safetensors", fs::file_size(all[5] / "optimizer.safetensors") / 2);
    fs::remove(all[4] / "manifest.json");
    {
      std::fstream f(all[3] / "adapter_model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-5, std::ios::end);
      char c = 0;
      f.read(&c, 1);
      c ^= 0x10;
      f.seekp(-5, std::ios::end);
      f.write(&c, 1);
    }
    std::vector<std::string> warnings;
    auto latest = forja::train::latest_valid_checkpoint(ckpts, warnings);
    QVERIFY(latest.has_value());
    QCOMPARE(latest->filename().string(), all[2].filename().string());
    QCOMPARE(warnings.size(), size_t(3));
    QVERIFY2(warnings[0].find("optimizer.safetensors") != std::string::npos, warnings[0].c_str());
    QVERIFY2(warnings[1].find("manifest") != std::string::npos, warnings[1].c_str());
    QVERIFY2(warnings[2].find("SHA-256") != std::string::npos, warnings[2].c_str());
  }

  void exportMergesIntoAHuggingFaceFolder() {
    // forja-cli export --merge with PEFT's trained llama adapter: the merged folder loads as a plain model
    // and gives the logits PEFT computed with the adapter (the base-model parity bar, max abs error <= 1e-4).
    QTemporaryDir tmp;
    const fs::path out = fs::path(tmp.path().toStdString()) / "merged";
    const fs::path train = fs::path(FORJA_FIXTURES_DIR) / "train" / "llama";
    QProcess p;
    p.start(FORJA_CLI_PATH, {"export", QString::fromStdString(forja_test::fixture_dir("llama").string()),
                             "--adapter", QString::fromStdString((train / "final").string()), "--merge",
                             "--out", QString::fromStdString(out.string())});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(fs::exists(out / "config.json"));
    QVERIFY(fs::exists(out / "model.safetensors"));
    auto merged = forja::load_causal_lm(out, {at::kFloat, at::kCPU});
    auto f = forja::io::SafetensorsFile::open(train / "trace.safetensors");
    at::Tensor ids = forja::tensor_from_checkpoint(f, f.at("eval_ids")).clone();
    at::Tensor want = forja::tensor_from_checkpoint(f, f.at("eval_logits")).clone();
    at::NoGradGuard no_grad;
    const double err = forja_test::max_abs_error(merged->forward(ids), want);
    QVERIFY2(err <= 1e-4, qPrintable(QString("max abs error %1").arg(err)));
  }

  void configErrorsNameTheKey() {
    try {
      forja::train_config_from_json(
          R"({"model_dir": "m", "output_dir": "o", "optimizer": {"learning_rat": 1}})", "cfg.json");
      QFAIL("expected an error");
    } catch (const forja::Error& e) {
      QVERIFY2(e.message().find("learning_rat") != std::string::npos, e.message().c_str());
      QVERIFY(e.message().find("cfg.json") != std::string::npos);
    }
    forja::TrainConfig c;
    c.model_dir = "m";
    c.output_dir = "o";
    c.optimizer.schedule = forja::LrSchedule::Linear;
    c.lora.target_modules = {"c_attn"};
    forja::TrainConfig back = forja::train_config_from_json(forja::train_config_to_json(c), "x");
    QCOMPARE(forja::train_config_to_json(back), forja::train_config_to_json(c));
  }
};

QTEST_GUILESS_MAIN(TestTrainResume)
#include "test_train_resume.moc"
