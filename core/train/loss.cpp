#include "loss.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

namespace forja::train {
namespace {

struct LinearCrossEntropy : torch::autograd::Function<LinearCrossEntropy> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& head, const at::Tensor& labels, int64_t chunk_rows) {
    at::NoGradGuard no_grad;
    const bool want_grad = hidden.requires_grad();
    const int64_t n = hidden.size(0);
    at::Tensor total = at::zeros({}, hidden.options().dtype(at::kFloat));
    at::Tensor grad_hidden = want_grad ? at::empty_like(hidden) : at::Tensor();
    for (int64_t begin = 0; begin < n; begin += chunk_rows) {
      const int64_t len = std::min(chunk_rows, n - begin);
      at::Tensor h = hidden.narrow(0, begin, len);
      at::Tensor y = labels.narrow(0, begin, len);
      at::Tensor logits = at::matmul(h, head.t()).to(at::kFloat);
      at::Tensor lse = at::logsumexp(logits, -1);
      at::Tensor valid = y.ne(-100);
      at::Tensor target = at::where(valid, y, at::zeros_like(y)).unsqueeze(1);
      at::Tensor picked = logits.gather(1, target).squeeze(1);
      total.add_(((lse - picked) * valid.to(at::kFloat)).sum());
      if (want_grad) {
        // d(loss)/d(logits) = softmax - onehot(target), zero on ignored rows; reuse the logits' memory.
        at::Tensor g = logits.sub_(lse.unsqueeze(1)).exp_();
        g.scatter_add_(1, target, at::full({len, 1}, -1.0, g.options()));
        g.mul_(valid.to(at::kFloat).unsqueeze(1));
        grad_hidden.narrow(0, begin, len).copy_(at::matmul(g.to(head.scalar_type()), head));
      }
    }
    if (want_grad) ctx->save_for_backward({grad_hidden});
    return total;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    at::Tensor grad_hidden = ctx->get_saved_variables()[0];
    return {grad_hidden * grads[0].to(grad_hidden.scalar_type()), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor linear_cross_entropy_sum(const at::Tensor& hidden, const at::Tensor& head,
                                    const at::Tensor& labels, int64_t chunk_rows) {
  TORCH_CHECK(hidden.dim() == 2 && head.dim() == 2 && labels.dim() == 1 && hidden.size(0) == labels.size(0) &&
                  hidden.size(1) == head.size(1),
              "linear_cross_entropy_sum: hidden [N, H], head [V, H], labels [N]");
  return LinearCrossEntropy::apply(hidden, head, labels, std::max<int64_t>(1, chunk_rows));
}

int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes) {
  return std::max<int64_t>(1, budget_bytes / (vocab * static_cast<int64_t>(sizeof(float))));
}

}  // namespace forja::train
