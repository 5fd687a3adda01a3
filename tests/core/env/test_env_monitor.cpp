// The live monitor against the fake NVML: samples carry the scripted values, history is a bounded ring,
// interval changes apply at once, and stop() returns promptly even in the middle of a long wait.
#include <QtTest>

#include <atomic>
#include <chrono>

#include "forja/env.h"

using namespace forja::env;
using namespace std::chrono_literals;

namespace {

MonitorOptions fake_monitor(std::chrono::milliseconds interval) {
  qputenv("FORJA_FAKE_GPU_SCENARIO", QByteArray(FORJA_ENV_SCENARIO_DIR) + "/healthy.json");
  MonitorOptions o;
  o.interval = interval;
  o.nvml_library = FORJA_FAKE_NVML;
  return o;
}

}  // namespace

class TestEnvMonitor : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void samplesCarryTheDriverValues() {
    Monitor m(fake_monitor(50ms));
    QVERIFY2(m.nvml_ready(), m.nvml_error().c_str());
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(m.history().size() >= 3, 5000);
    m.stop();
    const auto history = m.history();
    for (size_t i = 1; i < history.size(); ++i) QCOMPARE(history[i].sequence, history[i - 1].sequence + 1);
    const Sample& s = history.back();
    QCOMPARE(s.gpus.size(), size_t(1));
    const GpuSample& g = s.gpus[0];
    // The values scripted in scenarios/healthy.json.
    QCOMPARE(g.name, std::string("NVIDIA GeForce RTX 4090"));
    QCOMPARE(g.memory_total, uint64_t(25757220864));
    QCOMPARE(g.memory_used, uint64_t(1073741824));
    QCOMPARE(g.gpu_util_percent, std::optional<unsigned>(37));
    QCOMPARE(g.memory_util_percent, std::optional<unsigned>(12));
    QCOMPARE(g.temperature_c, std::optional<unsigned>(55));
    QCOMPARE(g.power_watts, std::optional<double>(123.0));
    QCOMPARE(g.sm_clock_mhz, std::optional<unsigned>(2520));
    QCOMPARE(g.processes.size(), size_t(1));
    QCOMPARE(g.processes[0].used_bytes, uint64_t(536870912));
    if (!FORJA_TORCH_CUDA) QVERIFY(s.allocator.empty());
  }

  void stopDoesNotWaitForTheInterval() {
    Monitor m(fake_monitor(std::chrono::hours(1)));
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(m.latest().has_value(), 5000);
    const auto t0 = std::chrono::steady_clock::now();
    m.stop();
    const auto took = std::chrono::steady_clock::now() - t0;
    QVERIFY(!m.running());
    // One hour of interval; a second is far more than the wake-up and join take.
    QVERIFY(took < 1s);
  }

  void shorterIntervalAppliesDuringAWait() {
    Monitor m(fake_monitor(std::chrono::hours(1)));
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(m.history().size() == 1, 5000);
    m.set_interval(50ms);
    QCOMPARE(m.interval(), 50ms);
    QTRY_VERIFY_WITH_TIMEOUT(m.history().size() >= 3, 5000);
  }

  void intervalIsClamped() {
    Monitor m(fake_monitor(1ms));
    QCOMPARE(m.interval(), 50ms);  // the documented floor
  }

  void historyIsBounded() {
    MonitorOptions o = fake_monitor(50ms);
    o.history = 4;
    std::atomic<int> seen{0};
    o.on_sample = [&](const Sample&) { ++seen; };
    Monitor m(o);
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(seen.load() >= 7, 5000);
    m.stop();
    const auto h = m.history();
    QCOMPARE(h.size(), size_t(4));
    QCOMPARE(h.back().sequence + 1, uint64_t(seen.load()));
    QCOMPARE(m.history_capacity(), size_t(4));
  }

  void stopFromTheCallback() {
    MonitorOptions o = fake_monitor(50ms);
    Monitor* self = nullptr;
    std::atomic<int> seen{0};
    o.on_sample = [&](const Sample&) {
      if (++seen == 2) self->stop();
    };
    Monitor m(o);
    self = &m;
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(seen.load() >= 2, 5000);
    QTest::qWait(300);  // six intervals: a monitor that kept going would have sampled again
    QCOMPARE(seen.load(), 2);
    m.stop();
    QVERIFY(!m.running());
  }

  void withoutDriverItStillRunsAndStops() {
    MonitorOptions o;
    o.interval = 50ms;
    o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    Monitor m(o);
    QVERIFY(!m.nvml_ready());
    QVERIFY(!m.nvml_error().empty());
    m.start();
    QTRY_VERIFY_WITH_TIMEOUT(m.history().size() >= 2, 5000);
    QVERIFY(m.latest()->gpus.empty());
    m.stop();
  }
};

QTEST_GUILESS_MAIN(TestEnvMonitor)
#include "test_env_monitor.moc"
