// The doctor end to end through the real dlopen path: probe() loads the fake NVML and CUDA driver libraries
// built beside this test, which answer from a scenario file; each advice rule must fire in its scenario and
// in no other.
#include <QtTest>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "forja/env.h"

using namespace forja::env;

namespace {

const std::string kScenarios = FORJA_ENV_SCENARIO_DIR;

ProbeOptions fake_options(const std::string& kernel_file = "nvidia_version_550.txt") {
  ProbeOptions o;
  o.nvml_library = FORJA_FAKE_NVML;
  o.cuda_driver_library = FORJA_FAKE_CUDA;
  o.kernel_module_file = kScenarios + "/" + kernel_file;
  o.probe_nvcc = false;
  return o;
}

// The facts of this Forja build (its kernels) depend on the machine that built it; the rules about them have
// their own test, so scenarios start from "no kernels".
Report probe_scenario(const std::string& scenario,
                      const std::string& kernel_file = "nvidia_version_550.txt") {
  qputenv("FORJA_FAKE_GPU_SCENARIO", QByteArray::fromStdString(kScenarios + "/" + scenario));
  Report r = probe(fake_options(kernel_file));
  r.build = BuildInfo{};
  r.findings = advise(r);
  return r;
}

// As if this Forja linked a CUDA LibTorch (the CI machine has Debian's CPU one).
void use_cuda_torch(Report& r, int runtime, std::vector<std::string> archs) {
  r.torch.probed = true;
  r.torch.built_with_cuda = true;
  r.torch.cuda_available = true;
  r.torch.device_count = 1;
  r.torch.cuda_runtime_built = r.torch.cuda_runtime_loaded = runtime;
  r.torch.cuda_architectures = std::move(archs);
  r.findings = advise(r);
}

// The architectures of the PyTorch 2.8.0+cu128 wheel, from its torch.__config__.show() output.
const std::vector<std::string> kWheelArchs = {"sm_70", "sm_75",  "sm_80", "sm_86",
                                              "sm_90", "sm_100", "sm_120"};

QStringList ids(const Report& r) {
  QStringList out;
  for (const auto& f : r.findings) out << QString::fromStdString(f.id);
  out.sort();
  return out;
}

const Finding* find(const Report& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

}  // namespace

class TestEnvProbe : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { qunsetenv("CUDA_VISIBLE_DEVICES"); }

  void healthyMachineReadsEveryFact() {
    Report r = probe_scenario("healthy.json");
    QVERIFY(r.driver.nvml_ready);
    QVERIFY(r.driver.cuda_ready);
    QCOMPARE(r.driver.version, std::string("550.54.14"));
    QCOMPARE(r.driver.cuda_version, 12040);
    QCOMPARE(r.driver.kernel_module_version, std::string("550.54.14"));
    QVERIFY(r.driver.nvml.path.find("libnvidia-ml.so.550.54.14") != std::string::npos);
    QCOMPARE(r.gpus.size(), size_t(1));
    const GpuInfo& g = r.gpus[0];
    QCOMPARE(g.name, std::string("NVIDIA GeForce RTX 4090"));
    QCOMPARE(g.uuid, std::string("GPU-5a3f9c2e-1b7d-4e8a-9c01-2d3e4f5a6b7c"));
    QCOMPARE(g.cuda_index, 0);  // matched through cuDeviceGetUuid, the fake's only visible device
    QCOMPARE(g.memory_total, uint64_t(25757220864));
    QCOMPARE(g.memory_used, uint64_t(1073741824));
    QCOMPARE(g.cc_major, 8);
    QCOMPARE(g.cc_minor, 9);
    QCOMPARE(g.pci_bus_id, std::string("00000000:01:00.0"));
    QCOMPARE(g.pcie_gen, 4);
    QCOMPARE(g.pcie_width_max, 16);
    QCOMPARE(g.mig_enabled, std::optional<bool>(false));
    QCOMPARE(g.ecc_enabled, std::optional<bool>(false));
    QCOMPARE(g.persistence_mode, std::optional<bool>(true));
    QCOMPARE(g.power_limit_watts, std::optional<double>(450.0));  // 450000 mW in the scenario
    QCOMPARE(g.processes.size(), size_t(1));
    QVERIFY(g.processes[0].is_self);
    QCOMPARE(g.processes[0].used_bytes, uint64_t(536870912));
    QVERIFY(!g.processes[0].name.empty());  // our own /proc/<pid>/comm
  }

  void healthyWithCudaTorchHasNoFindings() {
    Report r = probe_scenario("healthy.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    QCOMPARE(ids(r), QStringList());
  }

  void cpuTorchWithGpuSaysSoLoudly() {
    // The real LibTorch of this build: on the CI machine, Debian's CPU one.
    Report r = probe_scenario("healthy.json");
    QVERIFY(r.torch.probed);
    QVERIFY(!r.torch.version.empty());
    if (r.torch.built_with_cuda) QSKIP("this build's LibTorch has CUDA; the CPU-only rule cannot fire here");
    QCOMPARE(ids(r), QStringList{"torch-no-cuda"});
    const Finding* f = find(r, "torch-no-cuda");
    QCOMPARE(f->severity, Severity::error);
    QVERIFY(f->problem.find("CPU") != std::string::npos);
    QVERIFY(f->problem.find("NVIDIA GeForce RTX 4090") != std::string::npos);
  }

  void cudaTorchThatCannotUseTheGpu() {
    Report r = probe_scenario("healthy.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    r.torch.cuda_available = false;
    r.findings = advise(r);
    QCOMPARE(ids(r), QStringList{"torch-cuda-unavailable"});
  }

  void noDriverAtAll() {
    ProbeOptions o = fake_options();
    o.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    o.cuda_driver_library = "/nonexistent/libcuda.so.1";
    o.kernel_module_file = "/nonexistent/version";
    Report r = probe(o);
    r.build = BuildInfo{};
    r.findings = advise(r);
    QVERIFY(!r.driver.present());
    QVERIFY(!r.driver.nvml.error.empty());
    QVERIFY(r.gpus.empty());
    QCOMPARE(ids(r), QStringList{"no-driver"});
    QCOMPARE(r.findings[0].severity, Severity::info);
  }

  void driverWithoutGpu() {
    Report r = probe_scenario("no_gpu.json");
    QCOMPARE(ids(r), QStringList{"no-gpu"});
  }

  // The window translates a finding from its template and arguments: the two must say what problem and fix
  // say, for every rule (the scenarios below between them fire each one).
  void everyFindingIsItsTemplateFilled() {
    QCOMPARE(fill_template("%1 holds %2 of %3", {"a", "%1", "c"}), std::string("a holds %1 of c"));
    QCOMPARE(fill_template("100% of %1, %9 stays", {"x"}), std::string("100% of x, %9 stays"));
    std::vector<Report> reports;
    for (const char* s : {"healthy.json", "no_gpu.json", "memory_hog.json", "mig_no_instance.json",
                          "mismatch.json", "old_driver.json", "hidden.json"})
      reports.push_back(probe_scenario(s));
    reports.push_back(probe_scenario("old_driver.json", "nvidia_version_470.txt"));
    use_cuda_torch(reports.back(), 12010, {"sm_50"});
    reports.push_back(probe_scenario("healthy.json"));
    reports.back().torch.cudnn_built = 90100;
    reports.back().torch.cudnn_loaded = 80900;
    use_cuda_torch(reports.back(), 12040, {"sm_50"});
    QSet<QString> seen;
    for (const Report& r : reports)
      for (const Finding& f : r.findings) {
        seen << QString::fromStdString(f.id);
        QVERIFY2(!f.problem_template.empty() && !f.fix_template.empty(), f.id.c_str());
        QCOMPARE(fill_template(f.problem_template, f.problem_args), f.problem);
        QCOMPARE(fill_template(f.fix_template, f.fix_args), f.fix);
      }
    for (const char* id : {"torch-no-cuda", "no-gpu", "memory-held", "mig-no-instance", "driver-too-old",
                           "arch-missing", "cudnn-mismatch"})
      QVERIFY2(seen.contains(QString::fromLatin1(id)), id);
  }

  void oldDriverForTheRuntime() {
    Report r = probe_scenario("old_driver.json", "nvidia_version_470.txt");
    QCOMPARE(r.driver.cuda_version, 11040);
    // A CUDA 12.1 LibTorch on a CUDA 11.4 driver: another major version, CUDA will not start.
    use_cuda_torch(r, 12010, kWheelArchs);
    QCOMPARE(ids(r), QStringList{"driver-too-old"});
    const Finding* f = find(r, "driver-too-old");
    QCOMPARE(f->severity, Severity::error);
    // 530.30.02: the CUDA 12.1 GA driver in the CUDA toolkit release notes.
    QVERIFY2(f->fix.find("530.30.02") != std::string::npos, f->fix.c_str());
    QVERIFY(f->problem.find("470.57.02") != std::string::npos);

    // CUDA 11.8 on the same driver: same major, runs through minor-version compatibility, so a warning.
    use_cuda_torch(r, 11080, kWheelArchs);
    QCOMPARE(ids(r), QStringList{"driver-too-old"});
    QCOMPARE(find(r, "driver-too-old")->severity, Severity::warning);

    // CUDA 11.4 is exactly what the driver supports.
    use_cuda_torch(r, 11040, kWheelArchs);
    QCOMPARE(ids(r), QStringList());
  }

  void gpuNotInTheBuildArchitectures() {
    Report r = probe_scenario("old_gpu.json");
    // Only Ampere and newer kernels: nothing runs on a 7.5 card.
    use_cuda_torch(r, 12040, {"sm_80", "sm_86", "sm_90"});
    QCOMPARE(ids(r), (QStringList{"arch-missing", "no-bf16"}));
    QVERIFY(find(r, "arch-missing")->fix.find("sm_75") != std::string::npos);
    // PTX for 7.0 is JIT-compiled for 7.5, so that build does run.
    use_cuda_torch(r, 12040, {"sm_80", "compute_70"});
    QCOMPARE(ids(r), QStringList{"no-bf16"});
    QCOMPARE(find(r, "no-bf16")->severity, Severity::warning);
  }

  void ampereHasBf16() {
    Report r = probe_scenario("old_driver.json", "nvidia_version_470.txt");
    use_cuda_torch(r, 11040, {"sm_80"});  // an sm_80 cubin runs on 8.6
    QVERIFY(!find(r, "no-bf16"));
    QVERIFY(!find(r, "arch-missing"));
  }

  void forjaKernelArchitectures() {
    Report r = probe_scenario("old_gpu.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    r.build.kernels = true;
    r.build.kernels_cuda_version = 12040;
    r.build.kernel_architectures = {"sm_80", "compute_80"};
    r.findings = advise(r);
    QCOMPARE(ids(r), (QStringList{"kernel-arch-missing", "no-bf16"}));
    r.build.kernel_architectures = {"sm_75"};
    r.findings = advise(r);
    QCOMPARE(ids(r), QStringList{"no-bf16"});
    // Kernels compiled with CUDA 13.0 need a newer driver than this CUDA 12.4 one.
    r.build.kernels_cuda_version = 13000;
    r.findings = advise(r);
    QCOMPARE(ids(r), (QStringList{"driver-too-old", "no-bf16"}));
  }

  void kernelModuleNewerThanUserSpace() {
    // NVML works and says 550.54.14; the loaded module is 535.104.05.
    Report r = probe_scenario("healthy.json", "nvidia_version_535_open.txt");
    QCOMPARE(r.driver.kernel_module_version, std::string("535.104.05"));
    use_cuda_torch(r, 12040, kWheelArchs);
    QCOMPARE(ids(r), QStringList{"driver-mismatch"});
    const Finding* f = find(r, "driver-mismatch");
    QVERIFY(f->problem.find("535.104.05") != std::string::npos);
    QVERIFY(f->problem.find("550.54.14") != std::string::npos);
    QVERIFY(f->fix.find("Reboot") != std::string::npos);
  }

  void libraryRefusesWithVersionMismatch() {
    // nvmlInit fails with 18 and cuInit with 803: the user-space version comes from the library's file name.
    Report r = probe_scenario("mismatch.json", "nvidia_version_535_open.txt");
    QVERIFY(!r.driver.nvml_ready);
    QCOMPARE(r.driver.nvml_init_code, 18);
    QCOMPARE(r.driver.cuda_init_code, 803);
    QCOMPARE(r.driver.version, std::string("550.54.14"));  // the fakes are built as lib….so.550.54.14
    QCOMPARE(ids(r), QStringList{"driver-mismatch"});
  }

  void anotherProcessHoldsMostMemory() {
    Report r = probe_scenario("memory_hog.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    QCOMPARE(ids(r), QStringList{"memory-held"});
    const Finding* f = find(r, "memory-held");
    QVERIFY(f->problem.find("4242") != std::string::npos);
    QVERIFY(f->problem.find("20.0 GiB") != std::string::npos);  // 21474836480 bytes in the scenario
  }

  void ourOwnMemoryIsNotAHog() {
    Report r = probe_scenario("self_hog.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    QCOMPARE(ids(r), QStringList());
    QCOMPARE(r.gpus[0].processes.size(), size_t(2));  // compute and graphics lists merged
  }

  void migOnWithoutInstance() {
    Report r = probe_scenario("mig_no_instance.json");
    QCOMPARE(r.gpus[0].mig_enabled, std::optional<bool>(true));
    QCOMPARE(r.gpus[0].mig_instances, 0);
    QCOMPARE(r.gpus[0].cuda_index, -1);
    use_cuda_torch(r, 12040, kWheelArchs);
    r.torch.cuda_available = false;  // what LibTorch says when CUDA lists no device
    r.findings = advise(r);
    QVERIFY(find(r, "mig-no-instance"));
    QCOMPARE(find(r, "mig-no-instance")->severity, Severity::error);
    QVERIFY(!find(r, "gpus-hidden"));
  }

  void migWithInstances() {
    Report r = probe_scenario("mig_with_instances.json");
    QCOMPARE(r.gpus[0].mig_instances, 2);
    use_cuda_torch(r, 12040, kWheelArchs);
    QCOMPARE(ids(r), QStringList());
  }

  void cudaVisibleDevicesHidesEverything() {
    qputenv("CUDA_VISIBLE_DEVICES", "7");
    Report r = probe_scenario("hidden.json");
    QCOMPARE(r.cuda_visible_devices, std::optional<std::string>("7"));
    use_cuda_torch(r, 12040, kWheelArchs);
    r.torch.cuda_available = false;
    r.findings = advise(r);
    QVERIFY(find(r, "gpus-hidden"));
    QVERIFY(find(r, "gpus-hidden")->problem.find("\"7\"") != std::string::npos);
    // Without the variable the same GPUs are not "hidden": that rule stays quiet.
    qunsetenv("CUDA_VISIBLE_DEVICES");
    r = probe_scenario("hidden.json");
    use_cuda_torch(r, 12040, kWheelArchs);
    QVERIFY(!find(r, "gpus-hidden"));
  }

  // Peer access for every ordered pair of CUDA devices, as the (fake) driver answers it, in the text and
  // JSON.
  void peerAccessBetweenGpus() {
    QVERIFY(probe_scenario("healthy.json").peer_access.empty());  // one GPU: no pairs
    const Report r = probe_scenario("two_gpus_p2p.json");
    QCOMPARE(int(r.peer_access.size()), 2);
    for (const auto& p : r.peer_access) {
      QVERIFY(p.can.has_value());
      QCOMPARE(*p.can, p.from == 0 && p.to == 1);  // the scenario's only direct link
    }
    const std::string text = report_text(r);
    QVERIFY2(text.find("peer access (CUDA indices):  0->1 yes  1->0 NO") != std::string::npos, text.c_str());
    const auto j = nlohmann::json::parse(report_json(r));
    QCOMPARE(j["peer_access"].size(), size_t(2));
    QCOMPARE(j["peer_access"][0]["can"].get<bool>(), true);
  }

  void environmentVariablesChooseTheLibraries() {
    qputenv("FORJA_FAKE_GPU_SCENARIO", QByteArray::fromStdString(kScenarios + "/healthy.json"));
    qputenv("FORJA_NVML_LIBRARY", FORJA_FAKE_NVML);
    qputenv("FORJA_CUDA_DRIVER_LIBRARY", FORJA_FAKE_CUDA);
    qputenv("FORJA_NVIDIA_VERSION_FILE", QByteArray::fromStdString(kScenarios + "/nvidia_version_550.txt"));
    ProbeOptions o;
    o.probe_nvcc = false;
    Report r = probe(o);
    qunsetenv("FORJA_NVML_LIBRARY");
    qunsetenv("FORJA_CUDA_DRIVER_LIBRARY");
    qunsetenv("FORJA_NVIDIA_VERSION_FILE");
    QVERIFY(r.driver.nvml_ready);
    QCOMPARE(r.gpus.size(), size_t(1));
    QCOMPARE(r.driver.kernel_module_version, std::string("550.54.14"));
  }

  void jsonCarriesTheFacts() {
    Report r = probe_scenario("memory_hog.json");
    const auto j = nlohmann::json::parse(report_json(r));
    QCOMPARE(j["driver"]["version"].get<std::string>(), std::string("550.54.14"));
    QCOMPARE(j["driver"]["cuda_version"].get<std::string>(), std::string("12.4"));
    QCOMPARE(j["gpus"][0]["name"].get<std::string>(), std::string("NVIDIA GeForce RTX 3090"));
    QCOMPARE(j["gpus"][0]["memory_total_bytes"].get<uint64_t>(), uint64_t(25769803776));
    QCOMPARE(j["gpus"][0]["compute_capability"].get<std::string>(), std::string("8.6"));
    bool held = false;
    for (const auto& f : j["findings"]) held = held || f["id"] == "memory-held";
    QVERIFY(held);
    const std::string text = report_text(r);
    QVERIFY(text.find("NVIDIA GeForce RTX 3090") != std::string::npos);
    QVERIFY(text.find("what to do:") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestEnvProbe)
#include "test_env_probe.moc"
