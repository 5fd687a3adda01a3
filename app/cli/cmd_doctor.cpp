// forja-cli doctor: what this machine has for Forja (driver, GPUs, CUDA, LibTorch, nvcc) and what to fix.
#include <cstdio>

#include "command.h"
#include "forja/env.h"

namespace {

int run_doctor(forja::cli::Args& args) {
  args.reject_unknown({"nvml-library", "cuda-driver-library", "nvidia-version-file", "nvcc"});
  forja::env::ProbeOptions options;
  options.nvml_library = args.option_or("nvml-library", "");
  options.cuda_driver_library = args.option_or("cuda-driver-library", "");
  options.kernel_module_file = args.option_or("nvidia-version-file", "");
  options.nvcc = args.option_or("nvcc", "");
  const forja::env::Report report = forja::env::probe(options);
  const std::string out =
      args.flag("json") ? forja::env::report_json(report) + "\n" : forja::env::report_text(report);
  std::fputs(out.c_str(), stdout);
  // Findings are the doctor's answer, not its failure: it exits 0 whenever it could look.
  return 0;
}

}  // namespace

FORJA_CLI_COMMAND(
    doctor, "Check the NVIDIA driver, GPUs, CUDA and LibTorch, and say what to fix",
    "doctor [--json] [--nvml-library path] [--cuda-driver-library path] [--nvidia-version-file path] "
    "[--nvcc path]",
    run_doctor, {"json"});
