// RunRecorder (forja/run_recorder.h): a run's history as the trainer's hooks feed it. A fresh folder gets a
// run and a marker; the same folder resumes that run, and a resume at an earlier step drops the later rows;
// checkpoint rows follow the folders on disk; the end is recorded; a marker that is not one is refused and
// kept; a journal that cannot be opened costs the history and says so, never the run.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "forja/file_util.h"
#include "forja/journal.h"
#include "forja/run_recorder.h"
#include "qtest_util.h"

namespace fs = std::filesystem;

namespace {

forja::NewRun new_run(const std::string& name) {
  forja::NewRun r;
  r.name = name;
  r.model_dir = "model";
  r.dataset_path = "data.jsonl";
  r.config_json = "{}";
  r.total_steps = 4;
  return r;
}

forja::TrainProgress progress(int64_t step, double loss) {
  forja::TrainProgress p;
  p.step = step;
  p.total_steps = 4;
  p.loss = loss;
  // Counts that differ from each other and from step to step, so a swapped column shows.
  p.tokens = 100 * step + 7;
  p.trained_tokens = 50 * step + 3;
  p.positions = 128 * step;
  p.tokens_per_second = 10.0 * static_cast<double>(step);
  return p;
}

}  // namespace

class TestRunRecorder : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void recordsResumesAndEnds() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString(), db = root / "journal.db", out = root / "run";
    fs::create_directories(out);
    std::vector<std::string> said;
    auto say = [&](const std::string& m) { said.push_back(m); };
    int64_t id = 0;
    {
      forja::RunRecorder rec(db, out, new_run("run"), say);
      id = rec.id();
      QVERIFY(id > 0);
      QVERIFY(fs::exists(out / "journal.json"));
      rec.start(0, {});
      rec.step(progress(1, 2.0));
      rec.step(progress(2, 1.5));
      rec.checkpoint({2, (out / "checkpoints/step-2").string()}, 1.5,
                     {{2, (out / "checkpoints/step-2").string()}});
      rec.step(progress(3, 1.2));  // then the process dies before its checkpoint
    }
    {
      forja::RunRecorder rec(db, out, new_run("ignored: the marker names the run"), say);
      QCOMPARE(rec.id(), id);
      rec.start(2, {{2, (out / "checkpoints/step-2").string()}});
      forja::Journal j(db);
      auto m = j.metrics(id);
      QCOMPARE(m.size(), size_t{2});  // step 3 is done again
      QCOMPARE(j.run(id)->status, forja::RunStatus::Running);
      rec.step(progress(3, 1.1));
      rec.step(progress(4, 1.0));
      rec.checkpoint({4, (out / "checkpoints/step-4").string()}, 1.0,
                     {{4, (out / "checkpoints/step-4").string()}});
      forja::TrainResult r;
      r.outcome = forja::TrainOutcome::Finished;
      r.adapter_dir = (out / "adapter").string();
      rec.done(r);
    }
    forja::Journal j(db);
    QCOMPARE(j.runs().size(), size_t{1});
    const auto run = j.run(id);
    QCOMPARE(run->status, forja::RunStatus::Completed);
    QCOMPARE(run->adapter_path, (out / "adapter").string());
    QCOMPARE(run->final_loss.value_or(0), 1.0);
    const auto m = j.metrics(id);
    QCOMPARE(m.size(), size_t{4});
    QCOMPARE(m[2].loss, 1.1);
    for (const auto& point : m) {
      QCOMPARE(point.tokens.value_or(0), 100 * point.step + 7);
      QCOMPARE(point.trained_tokens.value_or(0), 50 * point.step + 3);
      QCOMPARE(point.positions.value_or(0), 128 * point.step);
      QCOMPARE(point.tokens_per_s.value_or(0), 10.0 * static_cast<double>(point.step));
    }
    const auto c = j.checkpoints(id);
    QCOMPARE(c.size(), size_t{1});  // step 2's folder was pruned
    QCOMPARE(c[0].step, int64_t{4});
    QCOMPARE(c[0].loss.value_or(0), 1.0);
    QVERIFY(said.empty());
  }

  void failureIsRecordedWithItsHint() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString(), db = root / "journal.db";
    forja::RunRecorder rec(db, root, new_run("run"), [](const std::string&) {});
    rec.start(0, {});
    rec.failed(forja::Error("the loss is NaN at step 1", "Lower the learning rate."));
    forja::Journal j(db);
    const auto run = j.run(rec.id());
    QCOMPARE(run->status, forja::RunStatus::Failed);
    QVERIFY(run->error_message.find("NaN") != std::string::npos);
  }

  void aCompletedRunIsNeverRewritten() {
    // Training a finished run's folder again is said and writes nothing: its metrics, final loss, end and
    // running time stay as they were.
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString(), db = root / "journal.db", out = root / "run";
    fs::create_directories(out);
    auto say = [](const std::string&) {};
    int64_t id = 0;
    {
      forja::RunRecorder rec(db, out, new_run("run"), say);
      id = rec.id();
      rec.start(0, {});
      rec.step(progress(1, 2.0));
      rec.step(progress(2, 1.5));
      forja::TrainResult r;
      r.steps_done = 2;
      r.adapter_dir = (out / "adapter").string();
      rec.done(r);
    }
    forja::Journal j(db);
    const forja::RunRecord before = *j.run(id);
    QCOMPARE(before.status, forja::RunStatus::Completed);
    QVERIFY(forja::completed_run_in(j, out).has_value());
    QCOMPARE(forja::completed_run_in(j, out)->id, id);
    std::vector<std::string> said;
    {
      forja::RunRecorder again(db, out, new_run("run"), [&](const std::string& m) { said.push_back(m); });
      QCOMPARE(again.id(), int64_t(0));
      QVERIFY(again.already_completed() && again.already_completed()->id == id);
      // The hooks of a run that resumes at its end: none of them reaches the row.
      again.start(2, {});
      forja::TrainResult r;
      r.steps_done = 2;
      again.done(r);
    }
    QCOMPARE(said.size(), size_t(1));
    QVERIFY2(said[0].find("already completed (2 steps)") != std::string::npos &&
                 said[0].find("new run") != std::string::npos,
             said[0].c_str());
    const forja::RunRecord after = *j.run(id);
    QCOMPARE(after.status, forja::RunStatus::Completed);
    QCOMPARE(after.final_loss, before.final_loss);
    QCOMPARE(after.ended_at_ms, before.ended_at_ms);
    QCOMPARE(after.active_ms, before.active_ms);
    QCOMPARE(j.metrics(id).size(), size_t(2));
    QCOMPARE(j.runs().size(), size_t(1));
    // A folder of a run that can go on (stopped) is not "completed".
    const fs::path other = root / "other";
    fs::create_directories(other);
    {
      forja::RunRecorder rec(db, other, new_run("other"), say);
      forja::TrainResult r;
      r.outcome = forja::TrainOutcome::Paused;
      rec.done(r);
    }
    QVERIFY(!forja::completed_run_in(j, other));
    QVERIFY(!forja::completed_run_in(j, root / "nothing-here"));
  }

  void markerThatIsNotOneIsKept() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    for (const std::string bad : {"[1]", R"({"journal": "x"})", R"({"journal": "x", "run_id": 1.5})",
                                  R"({"journal": 3, "run_id": 1})", "not json"}) {
      forja::write_file_atomic(root / "journal.json", bad);
      forja_test::expect_error(
          [&] { forja::RunRecorder(root / "journal.db", root, new_run("run"), [](const std::string&) {}); },
          {"journal.json", "not a run marker"});
      QCOMPARE(forja::read_text_file(root / "journal.json"), bad);
    }
  }

  void journalThatCannotOpenCostsOnlyTheHistory() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    fs::create_directories(root / "a-folder.db");
    std::vector<std::string> said;
    forja::RunRecorder rec(root / "a-folder.db", root, new_run("run"),
                           [&](const std::string& m) { said.push_back(m); });
    QCOMPARE(rec.id(), int64_t{0});
    rec.start(0, {});
    rec.step(progress(1, 1.0));
    rec.done({});
    QCOMPARE(said.size(), size_t{1});
    QVERIFY(said[0].find("not kept") != std::string::npos);
    QVERIFY(!fs::exists(root / "journal.json"));
  }
};

QTEST_GUILESS_MAIN(TestRunRecorder)
#include "test_run_recorder.moc"
