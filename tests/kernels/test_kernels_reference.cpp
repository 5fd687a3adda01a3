// The fused kernels' CPU references (kernels/fused/reference.cpp) against the formulas written out here in
// double, and every backward against central finite differences of those formulas. Sizes are odd on purpose
// (the GPU kernels take a different path when a row is not a whole number of 16-byte vectors; the references
// must not care).
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "forja_kernels/fused.h"

namespace {

using Vec = std::vector<double>;

Vec random_vec(size_t n, uint32_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// fp32 copies (the values the references read); `v` is replaced by the values actually stored.
std::vector<float> to_f32(Vec& v) {
  std::vector<float> f(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) v[i] = f[i];
  return f;
}

std::vector<uint16_t> to_bf16(Vec& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    b[i] = forja_float_to_bf16(static_cast<float>(v[i]));
    v[i] = forja_bf16_to_float(b[i]);
  }
  return b;
}

Vec from_f32(const std::vector<float>& f) {
  return Vec(f.begin(), f.end());
}
Vec from_bf16(const std::vector<uint16_t>& b) {
  Vec v(b.size());
  for (size_t i = 0; i < b.size(); ++i) v[i] = forja_bf16_to_float(b[i]);
  return v;
}

// ‖a − b‖ / ‖b‖ (the norm-wise relative error the GPU suites use too).
double rel_error(const Vec& a, const Vec& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of the scalar f at v: df/dv[i] ≈ (f(v + e_i) − f(v − e_i)) / 2 step. The formulas are
// smooth in double, so a step of 1e-5 leaves a truncation error near 1e-10 relative.
Vec finite_difference(const std::function<double(const Vec&)>& f, Vec v) {
  constexpr double kStep = 1e-5;
  Vec g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + kStep;
    const double up = f(v);
    v[i] = keep - kStep;
    const double down = f(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * kStep);
  }
  return g;
}

// ---- The formulas, straight from their definitions
// -------------------------------------------------------------

// y = h / sqrt(mean(h²) + eps) * w per row, h = x + r.
Vec rmsnorm_formula(const Vec& x, const Vec& r, const Vec& w, int64_t rows, int64_t cols, double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double h = x[i * cols + c] + (r.empty() ? 0.0 : r[i * cols + c]);
      ms += h * h / static_cast<double>(cols);
    }
    for (int64_t c = 0; c < cols; ++c) {
      const double h = x[i * cols + c] + (r.empty() ? 0.0 : r[i * cols + c]);
      y[i * cols + c] = h / std::sqrt(ms + eps) * w[c];
    }
  }
  return y;
}

// Hugging Face's formulation: emb = cat(freqs, freqs), out = x * cos(emb) + rotate_half(x) * sin(emb), with
// rotate_half(x) = cat(−x2, x1); freqs[t][i] = angle[t][i] (here the test's own table of angles).
Vec rope_formula(const Vec& x, int64_t tokens, int64_t heads, int64_t dim, const Vec& angle,
                 const std::vector<int64_t>& pos) {
  const int64_t half = dim / 2;
  Vec out(x.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t row = pos.empty() ? t : pos[t];
    for (int64_t h = 0; h < heads; ++h) {
      const double* xs = &x[(t * heads + h) * dim];
      for (int64_t d = 0; d < dim; ++d) {
        const double theta = angle[row * half + d % half];
        const double rotated = d < half ? -xs[d + half] : xs[d - half];
        out[(t * heads + h) * dim + d] = xs[d] * std::cos(theta) + rotated * std::sin(theta);
      }
    }
  }
  return out;
}

double silu(double g) {
  return g / (1 + std::exp(-g));
}
double gelu_tanh(double x) {
  // GELU's tanh approximation (Hendrycks & Gimpel 2016, eq. for "gelu_new"): sqrt(2/pi) and 0.044715.
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

struct RopeCase {
  int64_t tokens, q_heads, kv_heads, dim, table_rows;
  bool with_positions;
};
Q_DECLARE_METATYPE(RopeCase)

class TestKernelsReference : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void bf16Conversion() {
    QCOMPARE(forja_float_to_bf16(1.0f), uint16_t(0x3f80));
    QCOMPARE(forja_bf16_to_float(0x3f80), 1.0f);
    // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even mantissa (1).
    QCOMPARE(forja_float_to_bf16(1.0f + std::ldexp(1.0f, -8)), uint16_t(0x3f80));
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
    QCOMPARE(forja_float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), uint16_t(0x3f82));
    QVERIFY(std::isnan(forja_bf16_to_float(forja_float_to_bf16(std::nanf("")))));
    QCOMPARE(forja_bf16_to_float(forja_float_to_bf16(-INFINITY)), -INFINITY);
  }

  void rmsnormForward_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<bool>("residual");
    QTest::newRow("1x1") << 1 << 1 << true;
    QTest::newRow("3x7 residual") << 3 << 7 << true;
    QTest::newRow("3x7 plain") << 3 << 7 << false;
    QTest::newRow("5x1003 residual") << 5 << 1003 << true;
    QTest::newRow("2x2048 plain") << 2 << 2048 << false;
  }
  void rmsnormForward() {
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(bool, residual);
    const size_t n = size_t(rows) * cols;
    Vec x = random_vec(n, 1), r = residual ? random_vec(n, 2) : Vec{}, w = random_vec(cols, 3, 0.5, 1.5);
    const double eps = 1e-5;
    // fp32: the reference rounds x + r to fp32 before the statistics, as the kernel does; the formula does
    // not. That rounding is 2^-24 relative, so 1e-6 bounds the difference.
    auto xf = to_f32(x), rf = to_f32(r), wf = to_f32(w);
    std::vector<float> y(n), h(residual ? n : 0), rstd(rows);
    ForjaRmsNormForward p{FORJA_FUSED_F32,
                          rows,
                          cols,
                          float(eps),
                          xf.data(),
                          residual ? rf.data() : nullptr,
                          wf.data(),
                          residual ? h.data() : nullptr,
                          y.data(),
                          rstd.data()};
    QVERIFY(forja_fused_rmsnorm_forward_ref(&p) == nullptr);
    const Vec want = rmsnorm_formula(x, r, w, rows, cols, eps);
    QVERIFY2(rel_error(from_f32(y), want) < 1e-6, QByteArray::number(rel_error(from_f32(y), want)));
    if (residual)
      for (size_t i = 0; i < n; ++i) QCOMPARE(h[i], static_cast<float>(x[i] + r[i]));
    for (int i = 0; i < rows; ++i) {
      double ms = 0;
      for (int c = 0; c < cols; ++c) {
        const double hv = x[size_t(i) * cols + c] + (residual ? r[size_t(i) * cols + c] : 0.0);
        ms += hv * hv / cols;
      }
      QVERIFY(std::abs(rstd[i] - 1 / std::sqrt(ms + eps)) < 1e-6 / std::sqrt(ms + eps));
    }

    // bf16: h is rounded to bf16 first; y is the formula on that h, rounded once, so within half a bf16 ulp
    // (2^-9 relative) of the formula on the rounded h, element by element.
    Vec xb = x, rb = r, wb = w;
    auto xh = to_bf16(xb), rh = to_bf16(rb), wh = to_bf16(wb);
    std::vector<uint16_t> yb(n), hb(residual ? n : 0);
    ForjaRmsNormForward pb{FORJA_FUSED_BF16,
                           rows,
                           cols,
                           float(eps),
                           xh.data(),
                           residual ? rh.data() : nullptr,
                           wh.data(),
                           residual ? hb.data() : nullptr,
                           yb.data(),
                           nullptr};
    QVERIFY(forja_fused_rmsnorm_forward_ref(&pb) == nullptr);
    Vec hround = xb;
    if (residual) {
      for (size_t i = 0; i < n; ++i)
        hround[i] = forja_bf16_to_float(forja_float_to_bf16(float(xb[i] + rb[i])));
      QVERIFY(from_bf16(hb) == hround);
    }
    const Vec want16 = rmsnorm_formula(hround, {}, wb, rows, cols, eps);
    const Vec got16 = from_bf16(yb);
    for (size_t i = 0; i < n; ++i)
      QVERIFY2(std::abs(got16[i] - want16[i]) <= std::ldexp(std::abs(want16[i]), -8) * (1 + 1e-6) + 1e-30,
               QByteArray::number(got16[i]) + " vs " + QByteArray::number(want16[i]));
  }

  void rmsnormBackward_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<bool>("residual");
    QTest::newRow("1x1") << 1 << 1 << true;
    QTest::newRow("4x5 residual") << 4 << 5 << true;
    QTest::newRow("3x33 plain") << 3 << 33 << false;
    QTest::newRow("2x257 residual") << 2 << 257 << true;
  }
  void rmsnormBackward() {
    // L = Σ G·y + Σ K·h: G is the gradient arriving at y, K the one arriving at h through the residual
    // stream.
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(bool, residual);
    const size_t n = size_t(rows) * cols;
    const double eps = 1e-6;
    Vec x = random_vec(n, 11), r = residual ? random_vec(n, 12) : Vec{}, w = random_vec(cols, 13, 0.5, 1.5);
    Vec G = random_vec(n, 14), K = residual ? random_vec(n, 15) : Vec{};
    auto xf = to_f32(x), rf = to_f32(r), wf = to_f32(w), Gf = to_f32(G), Kf = to_f32(K);
    std::vector<float> y(n), h(n), rstd(rows);
    ForjaRmsNormForward fwd{FORJA_FUSED_F32,
                            rows,
                            cols,
                            float(eps),
                            xf.data(),
                            residual ? rf.data() : nullptr,
                            wf.data(),
                            residual ? h.data() : nullptr,
                            y.data(),
                            rstd.data()};
    QVERIFY(forja_fused_rmsnorm_forward_ref(&fwd) == nullptr);
    std::vector<float> dh(n), dw(cols);
    ForjaRmsNormBackward bwd{FORJA_FUSED_F32,
                             rows,
                             cols,
                             Gf.data(),
                             residual ? Kf.data() : nullptr,
                             residual ? h.data() : xf.data(),
                             wf.data(),
                             rstd.data(),
                             dh.data(),
                             dw.data(),
                             nullptr};
    QVERIFY(forja_fused_rmsnorm_backward_ref(&bwd) == nullptr);

    auto loss = [&](const Vec& xv, const Vec& rv, const Vec& wv) {
      double l = dot(G, rmsnorm_formula(xv, rv, wv, rows, cols, eps));
      for (size_t i = 0; i < K.size(); ++i) l += K[i] * (xv[i] + rv[i]);
      return l;
    };
    // The references compute from fp32-stored inputs and write fp32: 1e-5 relative covers that rounding
    // (2^-24 per operation over a few hundred terms) with room, and is the bar the GPU kernels meet in fp32.
    const Vec fd_x = finite_difference([&](const Vec& v) { return loss(v, r, w); }, x);
    QVERIFY2(rel_error(from_f32(dh), fd_x) < 1e-5, QByteArray::number(rel_error(from_f32(dh), fd_x)));
    if (residual) {
      const Vec fd_r = finite_difference([&](const Vec& v) { return loss(x, v, w); }, r);
      QVERIFY(rel_error(from_f32(dh), fd_r) < 1e-5);
    }
    const Vec fd_w = finite_difference([&](const Vec& v) { return loss(x, r, v); }, w);
    QVERIFY2(rel_error(from_f32(dw), fd_w) < 1e-5, QByteArray::number(rel_error(from_f32(dw), fd_w)));

    // dh may share its buffer with dh_in (the trainer accumulates the residual stream's gradient in place).
    if (residual) {
      std::vector<float> inplace = Kf;
      bwd.dh_in = inplace.data();
      bwd.dh = inplace.data();
      bwd.dweight = nullptr;
      QVERIFY(forja_fused_rmsnorm_backward_ref(&bwd) == nullptr);
      QVERIFY(inplace == dh);
    }
  }

  void rope_data() {
    QTest::addColumn<RopeCase>("c");
    QTest::newRow("GQA, half 3, positions") << RopeCase{5, 3, 1, 6, 9, true};
    QTest::newRow("MHA, dim 2") << RopeCase{4, 2, 2, 2, 4, false};
    QTest::newRow("GQA 4:2, dim 64") << RopeCase{3, 4, 2, 64, 3, false};
    QTest::newRow("q only") << RopeCase{2, 3, 0, 10, 2, false};
  }
  void rope() {
    QFETCH(RopeCase, c);
    const int64_t half = c.dim / 2;
    const Vec angle = random_vec(size_t(c.table_rows * half), 21, 0.0, 50.0);
    std::vector<float> cosf(angle.size()), sinf(angle.size());
    for (size_t i = 0; i < angle.size(); ++i)
      cosf[i] = float(std::cos(angle[i])), sinf[i] = float(std::sin(angle[i]));
    // The formula uses the tables' fp32 values, as the reference does, through angles that reproduce them.
    Vec angle32(angle.size());
    for (size_t i = 0; i < angle.size(); ++i) angle32[i] = std::atan2(double(sinf[i]), double(cosf[i]));
    std::vector<int64_t> pos;
    if (c.with_positions)
      for (int64_t t = 0; t < c.tokens; ++t) pos.push_back((t * 7 + 2) % c.table_rows);

    Vec q = random_vec(size_t(c.tokens * c.q_heads * c.dim), 22),
        k = random_vec(size_t(c.tokens * c.kv_heads * c.dim), 23);
    auto qf = to_f32(q), kf = to_f32(k);
    std::vector<float> qr = qf, kr = kf;  // rotated in place
    ForjaRope p{FORJA_FUSED_F32, c.tokens,    c.q_heads,   c.kv_heads,
                c.dim,           qr.data(),   kr.data(),   nullptr,
                nullptr,         cosf.data(), sinf.data(), c.with_positions ? pos.data() : nullptr};
    QVERIFY(forja_fused_rope_forward_ref(&p) == nullptr);
    // cos/sin of the fp32 tables differ from the recovered angles' by about 2^-24; 1e-6 bounds it.
    QVERIFY(rel_error(from_f32(qr), rope_formula(q, c.tokens, c.q_heads, c.dim, angle32, pos)) < 1e-6);
    if (c.kv_heads)
      QVERIFY(rel_error(from_f32(kr), rope_formula(k, c.tokens, c.kv_heads, c.dim, angle32, pos)) < 1e-6);

    // From a source buffer: the same result, the source untouched.
    std::vector<float> qo(qf.size()), ko(kf.size());
    ForjaRope src = p;
    src.q = qo.data(), src.k = ko.data(), src.q_src = qf.data(), src.k_src = kf.data();
    const std::vector<float> q_before = qf;
    QVERIFY(forja_fused_rope_forward_ref(&src) == nullptr);
    QVERIFY(qo == qr && ko == kr && qf == q_before);

    // Backward: L = Σ G·rope(q); dL/dq by finite differences of the formula. (k's rotation is the same code
    // path.)
    Vec G = random_vec(q.size(), 24);
    auto Gf = to_f32(G);
    ForjaRope back = p;
    back.q = Gf.data(), back.k = kr.data();
    QVERIFY(forja_fused_rope_backward_ref(&back) == nullptr);
    const Vec fd = finite_difference(
        [&](const Vec& v) { return dot(G, rope_formula(v, c.tokens, c.q_heads, c.dim, angle32, pos)); }, q);
    QVERIFY2(rel_error(from_f32(Gf), fd) < 1e-5, QByteArray::number(rel_error(from_f32(Gf), fd)));
    // ... and backward after forward is the identity on k (a rotation's transpose is its inverse).
    if (c.kv_heads) QVERIFY(rel_error(from_f32(kr), k) < 1e-6);

    // bf16: each output is the formula rounded once: within half an ulp (2^-9) plus the inputs' own rounding.
    Vec qb = q;
    auto qh = to_bf16(qb);
    ForjaRope pb = p;
    pb.dtype = FORJA_FUSED_BF16, pb.q = qh.data(), pb.k = nullptr, pb.kv_heads = 0;
    QVERIFY(forja_fused_rope_forward_ref(&pb) == nullptr);
    QVERIFY(rel_error(from_bf16(qh), rope_formula(qb, c.tokens, c.q_heads, c.dim, angle32, pos)) <
            std::ldexp(1.0, -8));
  }

  void swiglu_data() {
    QTest::addColumn<int>("n");
    QTest::newRow("1") << 1;
    QTest::newRow("7") << 7;
    QTest::newRow("1001") << 1001;
  }
  void swiglu() {
    QFETCH(int, n);
    Vec g = random_vec(n, 31, -8, 8), u = random_vec(n, 32), G = random_vec(n, 33);
    if (n > 2) g[0] = 40, g[1] = -40;  // saturated sigmoid: silu(g) -> g and -> 0, no inf/nan
    auto gf = to_f32(g), uf = to_f32(u), Gf = to_f32(G);
    std::vector<float> out(n);
    ForjaSwigluForward f{FORJA_FUSED_F32, n, gf.data(), uf.data(), out.data()};
    QVERIFY(forja_fused_swiglu_forward_ref(&f) == nullptr);
    Vec want(n);
    for (int i = 0; i < n; ++i) want[i] = silu(g[i]) * u[i];
    QVERIFY(rel_error(from_f32(out), want) < 1e-6);

    std::vector<float> dg(n), du(n);
    ForjaSwigluBackward b{FORJA_FUSED_F32, n, Gf.data(), gf.data(), uf.data(), dg.data(), du.data()};
    QVERIFY(forja_fused_swiglu_backward_ref(&b) == nullptr);
    auto loss = [&](const Vec& gv, const Vec& uv) {
      double l = 0;
      for (int i = 0; i < n; ++i) l += G[i] * silu(gv[i]) * uv[i];
      return l;
    };
    // fp32 outputs of double arithmetic: 1e-6 relative.
    const Vec fd_g = finite_difference([&](const Vec& v) { return loss(v, u); }, g);
    const Vec fd_u = finite_difference([&](const Vec& v) { return loss(g, v); }, u);
    QVERIFY2(rel_error(from_f32(dg), fd_g) < 1e-6, QByteArray::number(rel_error(from_f32(dg), fd_g)));
    QVERIFY2(rel_error(from_f32(du), fd_u) < 1e-6, QByteArray::number(rel_error(from_f32(du), fd_u)));
    for (int i = 0; i < n; ++i) QVERIFY(std::isfinite(dg[i]) && std::isfinite(du[i]));

    // In place: dgate over gate, dup over up.
    std::vector<float> g2 = gf, u2 = uf;
    ForjaSwigluBackward inplace{FORJA_FUSED_F32, n, Gf.data(), g2.data(), u2.data(), g2.data(), u2.data()};
    QVERIFY(forja_fused_swiglu_backward_ref(&inplace) == nullptr);
    QVERIFY(g2 == dg && u2 == du);

    // bf16 forward: the formula on the bf16 inputs rounded once, so within half a bf16 ulp (2^-8 relative).
    Vec gb = g, ub = u;
    auto gh = to_bf16(gb), uh = to_bf16(ub);
    std::vector<uint16_t> oh(n);
    ForjaSwigluForward fb{FORJA_FUSED_BF16, n, gh.data(), uh.data(), oh.data()};
    QVERIFY(forja_fused_swiglu_forward_ref(&fb) == nullptr);
    for (int i = 0; i < n; ++i) {
      const double want16 = silu(gb[i]) * ub[i];
      QVERIFY(std::abs(forja_bf16_to_float(oh[i]) - want16) <= std::ldexp(std::abs(want16), -8) * (1 + 1e-6));
    }
  }

  void geluTanh_data() { swiglu_data(); }
  void geluTanh() {
    QFETCH(int, n);
    Vec x = random_vec(n, 41, -6, 6), G = random_vec(n, 42);
    auto xf = to_f32(x), Gf = to_f32(G);
    std::vector<float> y(n), dx(n);
    ForjaGeluForward f{FORJA_FUSED_F32, n, xf.data(), y.data()};
    QVERIFY(forja_fused_gelu_tanh_forward_ref(&f) == nullptr);
    Vec want(n);
    for (int i = 0; i < n; ++i) want[i] = gelu_tanh(x[i]);
    QVERIFY(rel_error(from_f32(y), want) < 1e-6);
    ForjaGeluBackward b{FORJA_FUSED_F32, n, Gf.data(), xf.data(), dx.data()};
    QVERIFY(forja_fused_gelu_tanh_backward_ref(&b) == nullptr);
    const Vec fd = finite_difference(
        [&](const Vec& v) {
          double l = 0;
          for (int i = 0; i < n; ++i) l += G[i] * gelu_tanh(v[i]);
          return l;
        },
        x);
    QVERIFY2(rel_error(from_f32(dx), fd) < 1e-6, QByteArray::number(rel_error(from_f32(dx), fd)));
  }

  void argumentChecks() {
    float buf[8] = {};
    ForjaRope odd{FORJA_FUSED_F32, 1, 1, 0, 3, buf, nullptr, nullptr, nullptr, buf, buf, nullptr};
    QVERIFY(forja_fused_rope_forward_ref(&odd) != nullptr);  // head_dim 3 has no rotate_half pairing
    ForjaRope no_k{FORJA_FUSED_F32, 1, 1, 1, 2, buf, nullptr, nullptr, nullptr, buf, buf, nullptr};
    QVERIFY(forja_fused_rope_forward_ref(&no_k) != nullptr);
    ForjaRmsNormForward h_without_residual{FORJA_FUSED_F32, 1,   2,   1e-5f, buf,
                                           nullptr,         buf, buf, buf,   nullptr};
    QVERIFY(forja_fused_rmsnorm_forward_ref(&h_without_residual) != nullptr);
    ForjaSwigluForward bad_dtype{static_cast<ForjaFusedDType>(7), 1, buf, buf, buf};
    QVERIFY(forja_fused_swiglu_forward_ref(&bad_dtype) != nullptr);
    ForjaGeluBackward missing{FORJA_FUSED_BF16, 4, buf, nullptr, buf};
    QVERIFY(forja_fused_gelu_tanh_backward_ref(&missing) != nullptr);
    ForjaRmsNormBackward no_rstd{FORJA_FUSED_F32, 1,   2,       buf,    nullptr, buf, buf,
                                 nullptr,         buf, nullptr, nullptr};
    QVERIFY(forja_fused_rmsnorm_backward_ref(&no_rstd) != nullptr);
    // Empty inputs are fine and touch nothing.
    ForjaSwigluForward empty{FORJA_FUSED_F32, 0, nullptr, nullptr, nullptr};
    QVERIFY(forja_fused_swiglu_forward_ref(&empty) == nullptr);
    // The workspace: one fp32 row of partial weight gradients per backward block, at most 512 blocks.
    QCOMPARE(forja_fused_rmsnorm_backward_workspace_bytes(0, 10), size_t(0));
    QCOMPARE(forja_fused_rmsnorm_backward_workspace_bytes(3, 5), size_t(3 * 5 * 4));
    QCOMPARE(forja_fused_rmsnorm_backward_workspace_bytes(100000, 4096), size_t(512) * 4096 * 4);
  }
};

QTEST_GUILESS_MAIN(TestKernelsReference)
#include "test_kernels_reference.moc"
