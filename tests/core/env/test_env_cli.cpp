// forja-cli doctor and monitor as a user runs them, pointed at the fake driver libraries by environment.
#include <QtTest>

#include <signal.h>

#include <nlohmann/json.hpp>

namespace {

QProcessEnvironment fake_env(const QString& scenario) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("FORJA_NVML_LIBRARY", FORJA_FAKE_NVML);
  env.insert("FORJA_CUDA_DRIVER_LIBRARY", FORJA_FAKE_CUDA);
  env.insert("FORJA_NVIDIA_VERSION_FILE", QString(FORJA_ENV_SCENARIO_DIR) + "/nvidia_version_550.txt");
  env.insert("FORJA_FAKE_GPU_SCENARIO", QString(FORJA_ENV_SCENARIO_DIR) + "/" + scenario);
  return env;
}

QProcessEnvironment no_driver_env() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("FORJA_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
  env.insert("FORJA_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
  env.insert("FORJA_NVIDIA_VERSION_FILE", "/nonexistent/version");
  return env;
}

struct Run {
  int code;
  QString out;
  QString err;
};

Run run(const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(FORJA_CLI, args);
  if (!p.waitForFinished(30000)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestEnvCli : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void doctorText() {
    const Run r = run({"doctor"}, fake_env("memory_hog.json"));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("NVIDIA GeForce RTX 3090"));
    QVERIFY(r.out.contains("550.54.14"));
    QVERIFY(r.out.contains("[memory-held]"));
  }

  void doctorJson() {
    const Run r = run({"doctor", "--json"}, fake_env("healthy.json"));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["gpus"].size(), size_t(1));
    QCOMPARE(j["gpus"][0]["uuid"].get<std::string>(),
             std::string("GPU-5a3f9c2e-1b7d-4e8a-9c01-2d3e4f5a6b7c"));
    QCOMPARE(j["driver"]["kernel_module_version"].get<std::string>(), std::string("550.54.14"));
  }

  void doctorWithoutAnyDriverExitsZero() {
    const Run r = run({"doctor"}, no_driver_env());
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("not found"));
    QVERIFY(r.out.contains("[no-driver]"));
    const Run j = run({"doctor", "--json"}, no_driver_env());
    QCOMPARE(j.code, 0);
    QCOMPARE(nlohmann::json::parse(j.out.toStdString())["driver"]["present"].get<bool>(), false);
  }

  void monitorCountsSamples() {
    const Run r = run({"monitor", "--interval", "50", "--count", "3"}, fake_env("healthy.json"));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QVERIFY(lines[0].contains("GPU0 1.0/24.0 GiB util 37%"));  // healthy.json: 1 GiB of 24564 MiB, 37 %
  }

  void monitorJsonLines() {
    const Run r = run({"monitor", "--interval", "50", "--count", "2", "--json"}, fake_env("healthy.json"));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2);
    const auto j = nlohmann::json::parse(lines[1].toStdString());
    QCOMPARE(j["sequence"].get<int>(), 1);
    QCOMPARE(j["gpus"][0]["sm_clock_mhz"].get<int>(), 2520);
  }

  void monitorStopsOnCtrlC() {
    QProcess p;
    p.setProcessEnvironment(fake_env("healthy.json"));
    p.start(FORJA_CLI, {"monitor", "--interval", "100"});
    QVERIFY(p.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(p.canReadLine() || p.waitForReadyRead(100), 10000);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(3000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
  }

  void monitorRejectsBadInput() {
    Run r = run({"monitor", "--interval", "fast"}, fake_env("healthy.json"));
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("--interval"));
    r = run({"monitor", "--count", "1"}, no_driver_env());
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("NVML"));
  }
};

QTEST_GUILESS_MAIN(TestEnvCli)
#include "test_env_cli.moc"
