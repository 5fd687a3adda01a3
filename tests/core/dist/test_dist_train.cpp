// Multi-process data-parallel training on the CPU (Gloo): `forja-cli train --nproc 2` on the tiny llama
// fixture against the single process at the same global batch, resumes across world sizes, and a worker
// killed mid-run (the run must stop, promptly, saying which rank died, with a valid checkpoint of a completed
// step).
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "forja/train.h"
#include "launcher.h"
#include "reference.h"
#include "run_checkpoint.h"
#include "train_data.h"

namespace fs = std::filesystem;
using forja_test::write_dataset;
using nlohmann::json;

namespace {

// fp32 on the CPU, no LoRA dropout (each rank's dropout masks would differ from the single process's).
// `grad_accum` × world × 2 rows is the global batch.
fs::path write_config(const fs::path& dir, const fs::path& data, int64_t grad_accum, int64_t steps,
                      int64_t checkpoint_every) {
  forja::TrainConfig c;
  c.model_dir = forja_test::fixture_dir("llama").string();
  c.output_dir = (dir / "run").string();
  c.device = "cpu";
  c.dtype = "fp32";
  c.train_file = data.string();
  c.batch_size = 2;
  c.max_length = 24;
  c.max_steps = steps;
  c.grad_accum = grad_accum;
  c.checkpoint_every = checkpoint_every;
  c.keep_checkpoints = 100;
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0;
  c.optimizer.learning_rate = 5e-3;
  c.optimizer.warmup_steps = 1;
  fs::create_directories(dir);
  const fs::path p = dir / "config.json";
  forja::write_file_atomic(p, forja::train_config_to_json(c));
  return p;
}

struct Result {
  int exit_code = -1;
  std::map<int64_t, double> loss;
  std::string outcome;
  int64_t resumed_from = -1;
  QByteArray err;
};

Result train(const fs::path& config, int nproc) {
  QStringList args = {"train", QString::fromStdString(config.string()), "--json-progress", "--no-journal"};
  if (nproc > 0) args << "--nproc" << QString::number(nproc);
  QProcess p;
  p.start(FORJA_CLI_PATH, args);
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished(5000);
    qFatal("forja-cli train did not finish within 120 s");
  }
  Result r;
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.err = p.readAllStandardError();
  for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
    if (line.trimmed().isEmpty()) continue;
    const json j = json::parse(line.toStdString());
    if (j["event"] == "step") r.loss[j["step"]] = j["loss"];
    if (j["event"] == "done") {
      r.outcome = j["outcome"];
      r.resumed_from = j["resumed_from_step"];
    }
  }
  return r;
}

std::map<std::string, std::vector<float>> read_f32(const fs::path& file) {
  const auto st = forja::io::SafetensorsFile::open(file);
  std::map<std::string, std::vector<float>> out;
  for (const auto& t : st.tensors()) {
    const auto bytes = st.bytes(t);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    out[t.name] = std::move(v);
  }
  return out;
}

// The largest |a - b| / max|b| over the adapter's tensors (each tensor against its own scale).
double adapter_rel_error(const fs::path& a, const fs::path& b) {
  const auto x = read_f32(a / "adapter_model.safetensors"), y = read_f32(b / "adapter_model.safetensors");
  if (x.size() != y.size() || x.empty()) return 1e30;
  double worst = 0;
  for (const auto& [name, va] : x) {
    const auto it = y.find(name);
    if (it == y.end() || it->second.size() != va.size()) return 1e30;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      diff = std::max(diff, double(std::abs(va[i] - it->second[i])));
      scale = std::max(scale, double(std::abs(it->second[i])));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-30));
  }
  return worst;
}

// The bound for fp32: the sums over ranks and over micro-batches run in another order, nothing else.
constexpr double kTolerance = 1e-5;
constexpr int64_t kSteps = 6;

}  // namespace

class TestDistTrain : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  fs::path root_, data_;

  // Sends `sig` to rank `victim` once rank 0 has reported 3 steps; the run must stop within 30 s with one
  // valid checkpoint of at least the last reported step, and the launcher's error must start with
  // `first_failure`.
  void stop_mid_run(int victim, int sig, const QString& first_failure) {
    // Far more steps than the test waits for; checkpoints only when the run stops.
    const fs::path dir = root_ / ("rank" + std::to_string(victim) + "-signal" + std::to_string(sig));
    const fs::path config = write_config(dir, data_, 1, 100000, 0);
    QProcess p;
    // A stopped worker never closes its connections: the others' collectives give up after this timeout.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("FORJA_DIST_TIMEOUT_S", "3");
    p.setProcessEnvironment(env);
    p.start(FORJA_CLI_PATH, {"train", QString::fromStdString(config.string()), "--json-progress",
                             "--no-journal", "--nproc", "2"});
    QVERIFY(p.waitForStarted(10000));
    QElapsedTimer clock;
    clock.start();
    QByteArray out, err;
    int64_t last_step = 0;
    qint64 pid = 0;
    const QRegularExpression pid_line(QString("rank %1 is pid (\\d+)").arg(victim));
    while ((last_step < 3 || pid == 0) && clock.elapsed() < 60000) {
      p.waitForReadyRead(200);
      out += p.readAllStandardOutput();
      err += p.readAllStandardError();
      if (const auto m = pid_line.match(QString::fromUtf8(err)); m.hasMatch())
        pid = m.captured(1).toLongLong();
      for (const QByteArray& line : out.split('\n'))
        if (line.startsWith('{') && line.endsWith('}')) {
          const json j = json::parse(line.toStdString());
          if (j["event"] == "step") last_step = std::max<int64_t>(last_step, j["step"]);
        }
      QVERIFY2(p.state() == QProcess::Running, err.constData());
    }
    QVERIFY2(last_step >= 3 && pid > 0, err.constData());
    QCOMPARE(::kill(static_cast<pid_t>(pid), sig), 0);
    clock.restart();
    // Gloo sees a closed connection at once and a silent one after the 3 s timeout; 30 s leaves room for a
    // loaded machine.
    if (!p.waitForFinished(30000)) {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      p.kill();
      QFAIL("the launcher did not stop within 30 s");
    }
    err += p.readAllStandardError();
    qInfo("stopped %lld ms after the kill:\n%s", static_cast<long long>(clock.elapsed()), err.constData());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    const QString message = QString::fromUtf8(err);
    QVERIFY2(message.contains("the run stopped: " +
                              (first_failure.contains("%1") ? first_failure.arg(pid) : first_failure)),
             err.constData());
    if (sig == SIGSTOP)
      QVERIFY2(message.contains(
                   QString("rank %1 (pid %2) was killed by signal 9 (Killed) after the launcher stopped it")
                       .arg(victim)
                       .arg(pid)),
               err.constData());
    const auto ckpts = forja::train::list_checkpoints(dir / "run/checkpoints");
    QCOMPARE(int(ckpts.size()), 1);
    QCOMPARE(forja::train::checkpoint_problem(ckpts.back()), std::string());
    // The survivors had completed at least the steps rank 0 reported (rank 0 reports a step before the ranks
    // agree to go on).
    const json state = json::parse(forja::read_text_file(ckpts.back() / "trainer_state.json"));
    QVERIFY2(state["step"].get<int64_t>() >= last_step, state.dump().c_str());
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    root_ = tmp_.path().toStdString();
    data_ = root_ / "train.jsonl";
    write_dataset(data_, 20261203, 40);
  }

  // 2 ranks × grad_accum 2 against 1 process × grad_accum 4: the same 8 rows per step, in the same order (the
  // gradient sums then differ in order: ((g0 + g1) + g2) + g3 against (g0 + g1) + (g2 + g3)).
  void two_ranks_match_one_process() {
    const fs::path one = write_config(root_ / "one", data_, 4, kSteps, 2);
    const fs::path two = write_config(root_ / "two", data_, 2, kSteps, 2);
    const Result a = train(one, 0);
    QVERIFY2(a.exit_code == 0, a.err.constData());
    const Result b = train(two, 2);
    QVERIFY2(b.exit_code == 0, b.err.constData());
    QCOMPARE(a.outcome, std::string("finished"));
    QCOMPARE(b.outcome, std::string("finished"));
    QCOMPARE(int64_t(b.loss.size()), kSteps);  // rank 0 alone reports: one line per step
    for (const auto& [step, loss] : a.loss) {
      QVERIFY(b.loss.count(step));
      QVERIFY2(std::abs(b.loss.at(step) - loss) <= kTolerance * std::abs(loss),
               qPrintable(QString("step %1: %2 vs %3").arg(step).arg(b.loss.at(step)).arg(loss)));
    }
    // The world size goes into the checkpoints (a resume compares global batches).
    const json saved =
        json::parse(forja::read_text_file(root_ / "two/run/checkpoints/step-00000002/run_config.json"));
    QCOMPARE(saved.value("world_size", 0), 2);
    const double err = adapter_rel_error(root_ / "two/run/adapter", root_ / "one/run/adapter");
    qInfo("2 ranks vs 1 process after %lld steps: adapter relative error %.3g",
          static_cast<long long>(kSteps), err);
    QVERIFY2(err <= kTolerance, qPrintable(QString("adapter relative error %1").arg(err)));
  }

  // A checkpoint of one world size resumes in the other: the global batch (and so the data cursor) is the
  // same.
  void resume_across_world_sizes() {
    const auto ckpts = forja::train::list_checkpoints(root_ / "one/run/checkpoints");
    QVERIFY(ckpts.size() >= 2);
    for (const auto& [from, to, nproc] :
         {std::tuple{"one", "one_to_two", 2}, std::tuple{"two", "two_to_one", 0}}) {
      const fs::path config = write_config(root_ / to, data_, nproc ? 2 : 4, kSteps, 2);
      const fs::path step2 = root_ / from / "run/checkpoints/step-00000002";
      QVERIFY2(fs::exists(step2), step2.c_str());
      fs::create_directories(root_ / to / "run/checkpoints");
      fs::copy(step2, root_ / to / "run/checkpoints/step-00000002", fs::copy_options::recursive);
      const Result r = train(config, nproc);
      QVERIFY2(r.exit_code == 0, r.err.constData());
      QCOMPARE(r.resumed_from, int64_t(2));
      const double err = adapter_rel_error(root_ / to / "run/adapter", root_ / "one/run/adapter");
      qInfo("%s: adapter relative error %.3g", to, err);
      QVERIFY2(err <= kTolerance, qPrintable(QString("%1: adapter relative error %2").arg(to).arg(err)));
    }
  }

  // SIGKILL to rank 1 mid-run: the launcher stops, says that rank 1 was killed, and rank 0 has written a
  // valid checkpoint of the last step it completed.
  void killed_rank1_stops_the_run() { stop_mid_run(1, SIGKILL, "rank 1 (pid %1) was killed by signal 9"); }
  // The same for rank 0 (which serves the rendezvous store and normally writes checkpoints): rank 1 writes
  // it.
  void killed_rank0_stops_the_run() { stop_mid_run(0, SIGKILL, "rank 0 (pid %1) was killed by signal 9"); }
  // A hung rank 1 (SIGSTOP): rank 0's collective times out, it writes the checkpoint and fails, and the
  // launcher kills the stopped rank.
  void hung_rank1_stops_the_run() { stop_mid_run(1, SIGSTOP, "rank 0 (pid "); }

  // The launcher's own report, without torch: a worker that exits with a status names its rank and status.
  void launcher_reports_the_failed_rank() {
    forja::dist::LaunchOptions o;
    o.program = "/bin/sh";
    o.args = {"-c",
              "[ \"$RANK\" = 1 ] && exit 7; [ \"$WORLD_SIZE\" = 3 ] && [ -n \"$MASTER_PORT\" ] || exit 9; "
              "sleep 30"};
    o.nproc = 3;
    o.grace = std::chrono::seconds(1);
    QElapsedTimer clock;
    clock.start();
    const auto r = forja::dist::launch_workers(o);
    QVERIFY(clock.elapsed() < 20000);  // the sleeping ranks were killed after the 1 s grace, not after 30 s
    QVERIFY(!r.ok());
    QCOMPARE(r.workers.at(size_t(r.first_failed)).rank, 1);
    QCOMPARE(r.workers[1].description, std::string("exited with status 7"));
    QVERIFY(r.workers[0].stopped_by_us && r.workers[2].stopped_by_us);
    QVERIFY2(r.report().rfind("rank 1 (pid ", 0) == 0, r.report().c_str());
  }
};

QTEST_GUILESS_MAIN(TestDistTrain)
#include "test_dist_train.moc"
