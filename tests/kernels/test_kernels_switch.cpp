// The model's switch to the fused kernels (core/model/fused_ops.h) where they cannot run: CPU tensors never
// take them, a build without them says so when they are asked for, and the call sites' fallback is the stock
// formula.
#include <QtTest>

#include "fused_ops.h"
#include "layers.h"
#include "qtest_util.h"
#include "weights.h"

using namespace forja;

namespace {

// A norm weight of 0.5, 1.0, 1.5, ... (the provider of the one parameter RMSNorm asks for).
class RampWeights final : public WeightProvider {
 public:
  RampWeights() : WeightProvider(at::kFloat, at::kCPU) {}
  at::Tensor get(const std::string&, const std::vector<int64_t>& shape) override {
    return at::arange(1, shape[0] + 1, at::kFloat) * 0.5;
  }
  bool has(const std::string&) const override { return true; }
};

}  // namespace

class TestKernelsSwitch : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cpuTensorsNeverApply() {
    const at::Tensor x = at::ones({3, 8});
    QVERIFY(!fused::applies({x}));
    QVERIFY(!fused::applies({x, x}));
  }

  void compiledOutSaysSo() {
    if (fused::compiled_in()) QSKIP("this build has the kernels");
    QVERIFY(!fused::active());
    QVERIFY(fused::describe().find("not compiled in") != std::string::npos);
    const at::Tensor x = at::ones({2, 4});
    forja_test::expect_error([] { fused::set_enabled(true); }, {"not in this build"});
    forja_test::expect_error([&] { fused::rms_norm(x, x[0], 1e-5); }, {"not in this build"});
    forja_test::expect_error([&] { fused::swiglu(x, x); }, {"not in this build"});
    fused::set_enabled(false);  // switching off what is not there is fine
    QVERIFY(!fused::active());
  }

  void switchOffAndOn() {
    if (!fused::compiled_in()) QSKIP("this build has no kernels to switch");
    fused::set_enabled(false);
    QVERIFY(!fused::active());
    QVERIFY(fused::describe().find("off") != std::string::npos);
    fused::set_enabled(true);
    QVERIFY(fused::active());
  }

  void residualFallbackIsTheStockFormula() {
    // forward_with_residual without the kernels: h = x + residual exactly, and forward(h) exactly.
    RampWeights w;
    RMSNorm norm(w, "norm", 7, 1e-6);
    at::manual_seed(3);
    const at::Tensor x = at::randn({2, 5, 7}), r = at::randn({2, 5, 7});
    auto [h, y] = norm->forward_with_residual(x, r);
    QVERIFY(at::equal(h, x + r));
    QVERIFY(at::equal(y, norm->forward(x + r)));
    QVERIFY(at::equal(gelu_tanh(x), at::gelu(x, "tanh")));
  }
};

QTEST_GUILESS_MAIN(TestKernelsSwitch)
#include "test_kernels_switch.moc"
