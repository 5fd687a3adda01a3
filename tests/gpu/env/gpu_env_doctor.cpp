// On a GPU machine, `forja-cli doctor --json` and `forja-cli monitor --json` must agree with nvidia-smi on
// each GPU's name, total memory, driver version and utilization. Both read NVML, so names, memory and driver
// must match exactly; utilization is a moving one-second average read at two different moments.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_harness.h"

namespace {

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& cmd) {
  Output o;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return o;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) o.text.append(buf, n);
  const int s = ::pclose(p);
  o.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return o;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

struct SmiGpu {
  std::string name;
  long long memory_mib = 0;
  std::string driver;
  long long utilization = -1;  // -1: "[N/A]"
};

std::vector<SmiGpu> parse_smi(const std::string& csv) {
  std::vector<SmiGpu> out;
  std::istringstream lines(csv);
  std::string line;
  while (std::getline(lines, line)) {
    if (trim(line).empty()) continue;
    std::vector<std::string> f;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) f.push_back(trim(cell));
    if (f.size() != 4) continue;
    SmiGpu g;
    g.name = f[0];
    g.memory_mib = std::atoll(f[1].c_str());
    g.driver = f[2];
    g.utilization = f[3].find("N/A") != std::string::npos ? -1 : std::atoll(f[3].c_str());
    out.push_back(g);
  }
  return out;
}

}  // namespace

int main() {
  const Output smi =
      run("nvidia-smi --query-gpu=name,memory.total,driver_version,utilization.gpu "
          "--format=csv,noheader,nounits 2>/dev/null");
  if (smi.status != 0) forja_test::skip("nvidia-smi is not available or sees no GPU");
  const std::vector<SmiGpu> want = parse_smi(smi.text);
  if (want.empty()) forja_test::skip("nvidia-smi lists no GPU");

  const Output doctor = run(std::string("'") + FORJA_CLI + "' doctor --json");
  FORJA_CHECK(doctor.status == 0, "forja-cli doctor --json exited %d", doctor.status);
  const auto report = nlohmann::json::parse(doctor.text, nullptr, false);
  if (report.is_discarded()) {
    std::printf("  doctor printed no JSON:\n%s\n", doctor.text.c_str());
    return forja_test::finish("gpu_env_doctor");
  }
  FORJA_CHECK(report["driver"]["present"].get<bool>(), "the doctor found no driver but nvidia-smi works");
  const auto& gpus = report["gpus"];
  FORJA_CHECK(gpus.size() == want.size(), "doctor lists %zu GPUs, nvidia-smi %zu", gpus.size(), want.size());
  FORJA_CHECK(report["driver"]["version"].get<std::string>() == want[0].driver,
              "driver: doctor %s, nvidia-smi %s", report["driver"]["version"].get<std::string>().c_str(),
              want[0].driver.c_str());

  for (size_t i = 0; i < want.size() && i < gpus.size(); ++i) {
    const std::string name = gpus[i]["name"].get<std::string>();
    FORJA_CHECK(name == want[i].name, "GPU %zu name: doctor '%s', nvidia-smi '%s'", i, name.c_str(),
                want[i].name.c_str());
    // nvidia-smi prints NVML's total in whole MiB, rounded down.
    const long long mib =
        static_cast<long long>(gpus[i]["memory_total_bytes"].get<uint64_t>() / (1024 * 1024));
    FORJA_CHECK(mib == want[i].memory_mib, "GPU %zu memory: doctor %lld MiB, nvidia-smi %lld MiB", i, mib,
                want[i].memory_mib);
    std::printf("  GPU %zu: %s, %lld MiB, driver %s\n", i, name.c_str(), mib, want[i].driver.c_str());
  }

  // Utilization comes from the monitor; the two tools sample a second-long average at different moments, and
  // 25 points absorbs a load that moves between the two reads while still catching a wrong field or GPU.
  const Output monitor = run(std::string("'") + FORJA_CLI + "' monitor --json --count 1 --interval 100");
  const Output smi_again =
      run("nvidia-smi --query-gpu=name,memory.total,driver_version,utilization.gpu "
          "--format=csv,noheader,nounits 2>/dev/null");
  FORJA_CHECK(monitor.status == 0, "forja-cli monitor exited %d", monitor.status);
  const auto sample = nlohmann::json::parse(monitor.text, nullptr, false);
  const auto again = parse_smi(smi_again.text);
  if (!sample.is_discarded()) {
    for (size_t i = 0; i < again.size() && i < sample["gpus"].size(); ++i) {
      const auto& u = sample["gpus"][i]["gpu_util_percent"];
      if (again[i].utilization < 0 || u.is_null()) continue;  // the GPU does not report it
      const long long ours = u.get<long long>();
      FORJA_CHECK(std::llabs(ours - again[i].utilization) <= 25,
                  "GPU %zu utilization: monitor %lld%%, nvidia-smi %lld%%", i, ours, again[i].utilization);
      std::printf("  GPU %zu utilization: monitor %lld%%, nvidia-smi %lld%%\n", i, ours,
                  again[i].utilization);
    }
  } else {
    FORJA_CHECK(false, "monitor printed no JSON: %s", monitor.text.c_str());
  }
  return forja_test::finish("gpu_env_doctor");
}
