// Tests of forja::ui::Job: work runs off the GUI thread, progress is throttled, errors and cancellation
// become signals, the job cleans itself up, and the GUI event loop keeps turning meanwhile.
#include <QElapsedTimer>
#include <QPointer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <thread>

#include "forja/error.h"
#include "jobs/job.h"
#include "ui_test_support.h"

using forja::ui::Job;

namespace {

// A job whose work is a lambda, so each test states what the engine call does.
class LambdaJob : public Job {
 public:
  explicit LambdaJob(std::function<void(LambdaJob&)> body)
      : Job(QStringLiteral("test job")), body_(std::move(body)) {}
  using Job::report;
  QThread* ran_on = nullptr;

 protected:
  void execute() override {
    ran_on = QThread::currentThread();
    body_(*this);
  }

 private:
  std::function<void(LambdaJob&)> body_;
};

}  // namespace

class TestJob : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { forja::test::init_ui_test_environment("test_job"); }
  void cleanup() { QVERIFY(Job::cancel_all_and_wait(5000)); }
  void succeedsOffTheGuiThread();
  void errorBecomesFailedSignal();
  void unexpectedExceptionBecomesFailedSignal();
  void cancelStopsTheWork();
  void progressIsThrottled();
  void guiKeepsRunningWhileJobWorks();
};

void TestJob::succeedsOffTheGuiThread() {
  QThread* worker = nullptr;
  auto* job = new LambdaJob([&](LambdaJob& self) {
    worker = QThread::currentThread();
    self.report(0.5, "half");
  });
  QPointer<Job> guard(job);
  QSignalSpy progressed(job, &Job::progressed);
  QSignalSpy succeeded(job, &Job::succeeded);
  QSignalSpy failed(job, &Job::failed);
  QSignalSpy ended(job, &Job::ended);
  QStringList order;
  connect(job, &Job::succeeded, this, [&] { order << QStringLiteral("succeeded"); });
  connect(job, &Job::ended, this, [&] { order << QStringLiteral("ended"); });
  job->start();
  // The spies record on the job's thread as the signals are emitted; the lambdas run when the GUI thread
  // delivers them, later: wait for those.
  QTRY_COMPARE(order, (QStringList{QStringLiteral("succeeded"), QStringLiteral("ended")}));
  QCOMPARE(ended.count(), 1);
  QCOMPARE(succeeded.count(), 1);
  QCOMPARE(failed.count(), 0);
  QCOMPARE(progressed.count(), 1);
  QCOMPARE(progressed[0][0].toDouble(), 0.5);
  QCOMPARE(progressed[0][1].toString(), QStringLiteral("half"));
  QVERIFY(worker != nullptr);
  QVERIFY(worker != QThread::currentThread());
  QTRY_VERIFY(guard.isNull());  // it deleted itself once its signals were delivered
  QTRY_COMPARE(Job::running_count(), 0);
}

void TestJob::errorBecomesFailedSignal() {
  auto* job =
      new LambdaJob([](LambdaJob&) { throw forja::Error("/m/config.json: no vocab_size", "Add it."); });
  QSignalSpy failed(job, &Job::failed);
  QSignalSpy succeeded(job, &Job::succeeded);
  QSignalSpy ended(job, &Job::ended);
  job->start();
  QTRY_COMPARE(ended.count(), 1);
  QCOMPARE(succeeded.count(), 0);
  QCOMPARE(failed.count(), 1);
  QCOMPARE(failed[0][0].toString(), QStringLiteral("/m/config.json: no vocab_size"));
  QCOMPARE(failed[0][1].toString(), QStringLiteral("Add it."));
}

void TestJob::unexpectedExceptionBecomesFailedSignal() {
  auto* job = new LambdaJob([](LambdaJob&) { throw std::runtime_error("vector::at out of range"); });
  QSignalSpy failed(job, &Job::failed);
  job->start();
  QTRY_COMPARE(failed.count(), 1);
  QCOMPARE(failed[0][0].toString(), QStringLiteral("vector::at out of range"));
  QVERIFY(!failed[0][1].toString().isEmpty());
}

void TestJob::cancelStopsTheWork() {
  std::atomic_int iterations{0};
  auto* job = new LambdaJob([&](LambdaJob& self) {
    // An engine loop that checks the callback's answer each step, as the training loop will.
    while (self.report(-1, "working")) {
      ++iterations;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  QSignalSpy cancelled(job, &Job::cancelled);
  QSignalSpy succeeded(job, &Job::succeeded);
  job->start();
  QTRY_VERIFY(iterations.load() > 5);
  job->cancel();
  QTRY_COMPARE(cancelled.count(), 1);
  QCOMPARE(succeeded.count(), 0);
}

void TestJob::progressIsThrottled() {
  // 400 reports over ~400 ms: unthrottled that is 400 signals; at one per 50 ms it is about 8.
  constexpr int kReports = 400;
  auto* job = new LambdaJob([](LambdaJob& self) {
    for (int i = 1; i <= kReports; ++i) {
      self.report(double(i) / kReports, "step " + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  QSignalSpy progressed(job, &Job::progressed);
  QSignalSpy ended(job, &Job::ended);
  QElapsedTimer clock;
  clock.start();
  job->start();
  QTRY_COMPARE(ended.count(), 1);
  const qint64 elapsed = clock.elapsed();
  // At most one signal per interval, plus the first and the final one.
  const qint64 allowed = elapsed / Job::kProgressInterval.count() + 2;
  QVERIFY2(progressed.count() <= allowed,
           qPrintable(QStringLiteral("%1 signals in %2 ms").arg(progressed.count()).arg(elapsed)));
  QVERIFY(progressed.count() >= 2);
  // The last report always arrives, so a bar ends at 100%.
  QCOMPARE(progressed.last()[0].toDouble(), 1.0);
  QCOMPARE(progressed.last()[1].toString(), QStringLiteral("step 400"));
}

void TestJob::guiKeepsRunningWhileJobWorks() {
  auto* job = new LambdaJob([](LambdaJob&) { std::this_thread::sleep_for(std::chrono::milliseconds(400)); });
  QSignalSpy ended(job, &Job::ended);
  int ticks = 0;
  qint64 worst_gap = 0;
  QElapsedTimer gap;
  QTimer timer;
  timer.setInterval(10);
  connect(&timer, &QTimer::timeout, this, [&] {
    if (ticks++ > 0) worst_gap = std::max(worst_gap, gap.elapsed());
    gap.restart();
  });
  gap.start();
  timer.start();
  job->start();
  QTRY_COMPARE(ended.count(), 1);
  timer.stop();
  // 400 ms of work and a 10 ms timer: a blocked loop would tick once; a free one ~40 times.
  QVERIFY2(ticks >= 20, qPrintable(QString::number(ticks)));
  // A GUI thread that waited on the job would stall for the whole 400 ms. The bound is looser than the
  // issue's 50 ms target because this suite runs on a shared 2-core machine next to compilers; the measured
  // gap prints.
  qInfo("worst gap between 10 ms ticks: %lld ms", static_cast<long long>(worst_gap));
  QVERIFY2(worst_gap < 200, qPrintable(QStringLiteral("worst gap %1 ms").arg(worst_gap)));
}

QTEST_MAIN(TestJob)
#include "test_job.moc"
