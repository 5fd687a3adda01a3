// LoRA's epilogue (fused::lora_add, core/model/fused_ops.h): B's product accumulated into the projection's
// output by the GEMM must give what PEFT's expression base(x) + B(A(x)) * scale gives, in fp32 on the CPU,
// outputs and gradients (of x, A and B), with and without a bias, for a 2-D and a 3-D input; and an adapter
// whose input is remade in backward (fused::RecomputableInput, selective checkpointing) must give the same
// gradients as one that kept it. Bar: relative error <= 1e-6 (fp32 sums of a few terms: a few ulps).
#include <QtTest>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <vector>

#include "fused_ops.h"
#include "reference.h"

namespace {

constexpr double kTol = 1e-6;

struct Case {
  at::Tensor x0, w, bias, a, b, probe;
  double scale;
};

Case make_case(std::vector<int64_t> x_shape, bool with_bias) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(21);
  const int64_t in = x_shape.back(), out = 9, rank = 3;
  Case c;
  c.x0 = at::randn(x_shape, gen, at::kFloat).requires_grad_(true);
  c.w = at::randn({out, in}, gen, at::kFloat);  // frozen, as the base is
  c.bias = with_bias ? at::randn({out}, gen, at::kFloat) : at::Tensor();
  c.a = at::randn({rank, in}, gen, at::kFloat).requires_grad_(true);
  c.b = at::randn({out, rank}, gen, at::kFloat).requires_grad_(true);  // nonzero, so A gets a gradient
  std::vector<int64_t> out_shape = x_shape;
  out_shape.back() = out;
  c.probe = at::randn(out_shape, gen, at::kFloat);  // a random cotangent for the output
  c.scale = 2.5;                                    // alpha 40 / r 16, PEFT's default-style ratio
  return c;
}

// The adapter's input is a cheap function of x0 (as a norm's output is of the residual stream).
at::Tensor input_of(const at::Tensor& x0) {
  return at::tanh(x0);
}

// {output, d/dx0, d/dA, d/dB} of <output, probe>.
std::vector<at::Tensor> run(const Case& c, bool fused, bool remade) {
  at::Tensor x = input_of(c.x0);
  at::Tensor base = at::linear(x, c.w, c.bias);
  at::Tensor y;
  if (!fused) {
    y = base + at::linear(at::linear(x, c.a), c.b) * c.scale;  // PEFT's expression, term for term
  } else if (remade) {
    const forja::fused::RecomputableInput keep(x, [x0 = c.x0] { return input_of(x0); });
    y = forja::fused::lora_add(base, x, c.a, c.b, c.scale, 0.0);
  } else {
    y = forja::fused::lora_add(base, x, c.a, c.b, c.scale, 0.0);
  }
  auto g = torch::autograd::grad({(y * c.probe).sum()}, {c.x0, c.a, c.b});
  return {y.detach(), g[0], g[1], g[2]};
}

}  // namespace

class TestLoraEpilogue : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matchesPeftExpression_data() {
    QTest::addColumn<bool>("threeD");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("remade");
    for (bool three : {false, true})
      for (bool bias : {false, true})
        for (bool remade : {false, true})
          QTest::newRow(QString("%1%2%3")
                            .arg(three ? "3-D" : "2-D")
                            .arg(bias ? " bias" : "")
                            .arg(remade ? " remade" : "")
                            .toUtf8())
              << three << bias << remade;
  }

  void matchesPeftExpression() {
    QFETCH(bool, threeD);
    QFETCH(bool, bias);
    QFETCH(bool, remade);
    const Case c = make_case(threeD ? std::vector<int64_t>{2, 5, 7} : std::vector<int64_t>{6, 7}, bias);
    auto want = run(c, false, false), got = run(c, true, remade);
    const char* names[] = {"output", "grad x", "grad A", "grad B"};
    for (size_t i = 0; i < want.size(); ++i)
      QVERIFY2(forja_test::relative_error(got[i], want[i]) <= kTol, names[i]);
  }

  void writesIntoTheBaseOutput() {
    // The point of the epilogue: no new [tokens, out] tensor; the projection's output is updated in place.
    const Case c = make_case({4, 7}, false);
    at::NoGradGuard no_grad;
    at::Tensor base = at::linear(c.x0, c.w);
    at::Tensor y = forja::fused::lora_add(base, c.x0, c.a, c.b, c.scale, 0.0);
    QVERIFY(y.is_same(base));
  }

  void nonContiguousBaseFallsBack() {
    // A base output that cannot be viewed as [tokens, out] gets the out-of-place sum, with the same values.
    const Case c = make_case({7, 6}, false);
    at::NoGradGuard no_grad;
    at::Tensor x = c.x0.detach();
    at::Tensor base = at::linear(x, c.w).t().contiguous().t();  // same values, column-major
    at::Tensor want = at::linear(x, c.w) + at::linear(at::linear(x, c.a), c.b) * c.scale;
    at::Tensor y = forja::fused::lora_add(base, x, c.a, c.b, c.scale, 0.0);
    QVERIFY(forja_test::relative_error(y, want) <= kTol);
  }

  void dropoutOnlyOnTheBranch() {
    // With dropout the base projection still sees x unchanged: at p -> the branch is all that varies.
    const Case c = make_case({64, 7}, false);
    at::NoGradGuard no_grad;
    at::Tensor x = c.x0.detach();
    at::Tensor base_only = at::linear(x, c.w);
    at::Tensor zero_b = at::zeros_like(c.b);
    at::Tensor y = forja::fused::lora_add(at::linear(x, c.w), x, c.a, zero_b, c.scale, 0.5);
    QVERIFY(at::equal(y, base_only));  // B = 0: whatever the mask, exactly the base
    at::Tensor y1 = forja::fused::lora_add(at::linear(x, c.w), x, c.a, c.b, c.scale, 0.5);
    at::Tensor y0 = forja::fused::lora_add(at::linear(x, c.w), x, c.a, c.b, c.scale, 0.0);
    QVERIFY(!at::allclose(y1, y0));  // a mask was drawn on the branch
  }
};

QTEST_GUILESS_MAIN(TestLoraEpilogue)
#include "test_lora_epilogue.moc"
