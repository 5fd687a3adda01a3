// The small parsers behind the doctor, fed the real texts they read: /proc/driver/nvidia/version, nvcc
// --version, LibTorch's show_config(), CMake architecture lists; plus the ring buffer of the monitor.
#include <QtTest>

#include "env/probe_detail.h"
#include "env/ring_buffer.h"
#include "env/torch_facts.h"
#include "forja/env.h"

using namespace forja::env;

namespace {

// The CUDA lines of torch.__config__.show() for the PyTorch 2.8.0+cu128 wheel, as pasted in an lmdeploy
// check_env report (cuDNN 9.10.2 loaded, 9.8.0 built: show_config prints cuDNN 9 in the cuDNN 8 style).
const char* kWheel280 =
    "PyTorch built with:\n"
    "  - GCC 13.3\n"
    "  - CUDA Runtime 12.8\n"
    "  - NVCC architecture flags: -gencode;arch=compute_70,code=sm_70;-gencode;arch=compute_75,code=sm_75;"
    "-gencode;arch=compute_80,code=sm_80;-gencode;arch=compute_86,code=sm_86;-gencode;arch=compute_90,code="
    "sm_90;"
    "-gencode;arch=compute_100,code=sm_100;-gencode;arch=compute_120,code=sm_120\n"
    "  - CuDNN 91.0.2  (built against CUDA 12.9)\n"
    "    - Built with CuDNN 90.8\n"
    "  - Magma 2.6.1\n"
    "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.8, CUDNN_VERSION=9.8.0, "
    "USE_CUDA=ON\n";

// The same lines for a PyTorch 1.9 build with CUDA 11.3 and cuDNN 8.2.1 (an mmpose env_info dump), which
// also embeds PTX for compute_86.
const char* kBuild19 =
    "  - CUDA Runtime 11.3\n"
    "  - NVCC architecture flags: -gencode;arch=compute_52,code=sm_52;-gencode;arch=compute_86,code=sm_86;"
    "-gencode;arch=compute_86,code=compute_86\n"
    "  - CuDNN 8.2.1\n"
    "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=11.3, CUDNN_VERSION=8.2.1\n";

}  // namespace

class TestEnvParsers : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void kernelModuleVersion() {
    QCOMPARE(parse_kernel_module_version(
                 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"),
             std::string("550.54.14"));
    QCOMPARE(
        parse_kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  "
                                    "Release Build  (dvs-builder@U16-I3-B03-4-3)  Sat Aug 19 2023\n"),
        std::string("535.104.05"));
    QCOMPARE(parse_kernel_module_version(""), std::string());
    QCOMPARE(parse_kernel_module_version("GCC version:  gcc version 12.2.0\n"), std::string());
  }

  void nvccVersion() {
    // /usr/local/cuda/bin/nvcc --version on the Forja build machine.
    const std::string out =
        "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
        "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n"
        "Build cuda_13.0.r13.0/compiler.36424714_0\n";
    QCOMPARE(parse_nvcc_version(out), std::string("13.0.88"));
    QCOMPARE(parse_cuda_version(parse_nvcc_version(out)), 13000);
    QCOMPARE(parse_nvcc_version("Cuda compilation tools, release 11.5"), std::string("11.5"));
    QCOMPARE(parse_nvcc_version("bash: nvcc: command not found"), std::string());
  }

  void torchConfigOfAWheel() {
    TorchInfo t;
    parse_torch_config(kWheel280, t);
    QCOMPARE(t.cuda_runtime_loaded, 12080);
    QCOMPARE(t.cuda_runtime_built, 12080);
    QCOMPARE(t.cudnn_loaded, 91002);  // "91.0.2" is raw 91002: cuDNN 9.10.2
    QCOMPARE(cudnn_version_string(t.cudnn_loaded), std::string("9.10.2"));
    QCOMPARE(t.cudnn_built, 90800);  // CUDNN_VERSION=9.8.0
    QCOMPARE(t.cuda_architectures,
             (std::vector<std::string>{"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"}));
  }

  void torchConfigOfAnOlderBuild() {
    TorchInfo t;
    parse_torch_config(kBuild19, t);
    QCOMPARE(t.cuda_runtime_loaded, 11030);
    QCOMPARE(t.cudnn_loaded, 80201);  // "8.2.1" from raw 8201 in cuDNN 8's 1000*major encoding
    QCOMPARE(t.cudnn_built, 80201);
    QCOMPARE(t.cuda_architectures, (std::vector<std::string>{"sm_52", "sm_86", "compute_86"}));
  }

  void torchConfigOfThisBuild() {
    const TorchInfo t = probe_torch();
    QVERIFY(t.probed);
    QVERIFY(t.version.size() >= 5);  // "1.13.0" / "2.11.0"
    QCOMPARE(t.built_with_cuda, bool(FORJA_TORCH_CUDA));
    if (!t.built_with_cuda) {
      QCOMPARE(t.cuda_runtime_built, 0);
      QVERIFY(t.cuda_architectures.empty());
      QVERIFY(!t.cuda_available);
    }
  }

  void cudnnNormalization() {
    QCOMPARE(normalize_cudnn_version(8902), 80902);   // cudnnGetVersion() of cuDNN 8.9.2
    QCOMPARE(normalize_cudnn_version(90800), 90800);  // cuDNN 9.8.0
    QCOMPARE(normalize_cudnn_version(0), 0);
  }

  void cmakeArchitectures() {
    QCOMPARE(parse_cmake_architectures("80-real,86,90a-virtual"),
             (std::vector<std::string>{"sm_80", "sm_86", "compute_86", "compute_90a"}));
    QCOMPARE(parse_cmake_architectures("75;89"),
             (std::vector<std::string>{"sm_75", "compute_75", "sm_89", "compute_89"}));
    QVERIFY(parse_cmake_architectures("native").empty());
    QVERIFY(parse_cmake_architectures("").empty());
  }

  void architectureCoverage() {
    // Cubins run on the same major at an equal or higher minor (CUDA C++ Programming Guide, binary
    // compatibility); PTX is JIT-compiled for any equal or newer GPU; "a" targets only their own GPU.
    QVERIFY(architectures_cover({"sm_80"}, 8, 6));
    QVERIFY(!architectures_cover({"sm_86"}, 8, 0));
    QVERIFY(!architectures_cover({"sm_80"}, 9, 0));
    QVERIFY(architectures_cover({"compute_80"}, 9, 0));
    QVERIFY(!architectures_cover({"compute_90"}, 8, 9));
    QVERIFY(architectures_cover({"sm_90a"}, 9, 0));
    QVERIFY(!architectures_cover({"sm_90a"}, 10, 0));
    QVERIFY(!architectures_cover({}, 8, 0));
  }

  void versionStrings() {
    QCOMPARE(cuda_version_string(12040), std::string("12.4"));
    QCOMPARE(cuda_version_string(11080), std::string("11.8"));
    QCOMPARE(cuda_version_string(0), std::string());
    // From the CUDA toolkit release notes' driver table (GA releases, Linux x86_64).
    QCOMPARE(minimum_driver_for_cuda(12040), std::string("550.54.14"));
    QCOMPARE(minimum_driver_for_cuda(11080), std::string("520.61.05"));
    QCOMPARE(minimum_driver_for_cuda(12070), std::string());  // there was no CUDA 12.7
  }

  void ringBufferDropsTheOldest() {
    RingBuffer<int> ring(3);
    QVERIFY(ring.empty());
    for (int i = 1; i <= 5; ++i) ring.push(i);
    QCOMPARE(ring.size(), size_t(3));
    QCOMPARE(ring.to_vector(), (std::vector<int>{3, 4, 5}));
    QCOMPARE(ring.back(), 5);
    QCOMPARE(ring.at(0), 3);
  }
};

QTEST_GUILESS_MAIN(TestEnvParsers)
#include "test_env_parsers.moc"
