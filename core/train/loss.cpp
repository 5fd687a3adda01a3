#include "loss.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "fused_ops.h"

namespace forja::train {
namespace {

constexpr int64_t kIgnoreIndex = -100;  // Hugging Face's label for positions that are not trained

// One chunk of the LibTorch formulation (the reference, and the path off CUDA): the per-row losses from the
// logits upcast to fp32; with want_grad, d(loss)/d(logits) = softmax - onehot (zero on ignored rows) in the
// head's dtype, built in the fp32 logits' own memory.
// With `softcap`, the loss is of cap·tanh(z / cap) and the gradient carries tanh's derivative, 1 − tanh².
std::pair<at::Tensor, at::Tensor> chunk_stock(const at::Tensor& logits_in, const at::Tensor& y,
                                              bool want_grad, at::ScalarType grad_dtype, double softcap) {
  at::Tensor logits = logits_in.to(at::kFloat);
  at::Tensor tanh_z;
  if (softcap > 0) {
    tanh_z = at::tanh(logits / softcap);
    logits = tanh_z * softcap;
  }
  at::Tensor lse = at::logsumexp(logits, -1);
  at::Tensor valid = y.ne(kIgnoreIndex);
  at::Tensor target = at::where(valid, y, at::zeros_like(y)).unsqueeze(1);
  at::Tensor picked = logits.gather(1, target).squeeze(1);
  at::Tensor rows = (lse - picked) * valid.to(at::kFloat);
  if (!want_grad) return {rows, at::Tensor()};
  at::Tensor g = logits.sub_(lse.unsqueeze(1)).exp_();
  g.scatter_add_(1, target, at::full({y.size(0), 1}, -1.0, g.options()));
  g.mul_(valid.to(at::kFloat).unsqueeze(1));
  if (tanh_z.defined()) g.mul_(1 - tanh_z.square());
  return {rows, g.to(grad_dtype)};
}

struct LinearCrossEntropy : torch::autograd::Function<LinearCrossEntropy> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& head, const at::Tensor& labels, int64_t chunk_rows,
                            double softcap) {
    at::NoGradGuard no_grad;
    const bool want_hidden = hidden.requires_grad(), want_head = head.requires_grad();
    const bool want_grad = want_hidden || want_head;
    // The fused kernel takes the head-dtype logits as the GEMM wrote them and turns them into their gradient
    // in place: no fp32 [chunk, vocab] copy, and one pass less over the chunk.
    const bool kernel = fused::applies({hidden, head}) && labels.is_cuda() && softcap <= 0;
    const at::Tensor labels_c = labels.contiguous();
    const int64_t n = hidden.size(0);
    at::Tensor total = at::zeros({}, hidden.options().dtype(at::kFloat));
    at::Tensor grad_hidden = want_hidden ? at::empty_like(hidden) : at::Tensor();
    at::Tensor grad_head =
        want_head ? at::zeros(head.sizes(), head.options().dtype(at::kFloat)) : at::Tensor();
    for (int64_t begin = 0; begin < n; begin += chunk_rows) {
      const int64_t len = std::min(chunk_rows, n - begin);
      at::Tensor h = hidden.narrow(0, begin, len);
      at::Tensor y = labels_c.narrow(0, begin, len);
      at::Tensor logits = at::matmul(h, head.t());
      at::Tensor rows, g;
      if (kernel) {
        rows = fused::cross_entropy_rows(logits, y, kIgnoreIndex, 1.0, want_grad);
        g = want_grad ? logits : at::Tensor();
      } else {
        std::tie(rows, g) = chunk_stock(logits, y, want_grad, head.scalar_type(), softcap);
      }
      total.add_(rows.sum());
      if (want_hidden) {
        at::Tensor out = grad_hidden.narrow(0, begin, len);
        if (out.is_contiguous())
          at::mm_out(out, g, head);
        else
          out.copy_(at::matmul(g, head));
      }
      if (want_head) grad_head.add_(at::matmul(g.t(), h).to(at::kFloat));
    }
    if (want_grad) ctx->save_for_backward({grad_hidden, grad_head});
    ctx->saved_data["head_dtype"] = head.scalar_type();
    return total;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor& grad_hidden = saved[0];
    const at::Tensor& grad_head = saved[1];
    at::Tensor dh, dw;
    if (grad_hidden.defined()) dh = grad_hidden * grads[0].to(grad_hidden.scalar_type());
    if (grad_head.defined()) dw = (grad_head * grads[0]).to(ctx->saved_data["head_dtype"].toScalarType());
    return {dh, dw, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor linear_cross_entropy_sum(const at::Tensor& hidden, const at::Tensor& head,
                                    const at::Tensor& labels, int64_t chunk_rows, double softcap) {
  TORCH_CHECK(hidden.dim() == 2 && head.dim() == 2 && labels.dim() == 1 && hidden.size(0) == labels.size(0) &&
                  hidden.size(1) == head.size(1),
              "linear_cross_entropy_sum: hidden [N, H], head [V, H], labels [N]");
  return LinearCrossEntropy::apply(hidden, head, labels, std::max<int64_t>(1, chunk_rows), softcap);
}

int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes) {
  return std::max<int64_t>(1, budget_bytes / (vocab * static_cast<int64_t>(sizeof(float))));
}

}  // namespace forja::train
