#include "data_parallel.h"

#include <ATen/core/grad_mode.h>

#include "forja/error.h"
#include "trainer.h"

namespace forja::train {

std::vector<Batch> shard_for_rank(const std::vector<Batch>& step_batches, int rank, int world) {
  const auto n = static_cast<int64_t>(step_batches.size());
  if (world < 1 || rank < 0 || rank >= world || n % world != 0)
    throw Error("a step of " + std::to_string(n) + " micro-batches cannot be shared by rank " +
                std::to_string(rank) + " of " + std::to_string(world));
  const int64_t per = n / world;
  return {step_batches.begin() + rank * per, step_batches.begin() + (rank + 1) * per};
}

StepStats data_parallel_backward(Trainer& trainer, DataParallel& dp, const std::vector<Batch>& step_batches) {
  int64_t positions = 0, tokens = 0, loss_tokens = 0;
  for (const auto& b : step_batches) {
    positions += b.rows * b.seq_len;
    tokens += real_token_count(b);
    for (int32_t l : b.labels) loss_tokens += l != kIgnoreIndex;
  }
  StepStats s = trainer.backward(shard_for_rank(step_batches, dp.rank(), dp.world_size()),
                                 std::max<int64_t>(1, loss_tokens));
  sum_gradients(dp, trainer.optimizer().params(), &s.loss);
  s.positions = positions;
  s.tokens = tokens;
  s.loss_tokens = loss_tokens;
  return s;
}

void sum_gradients(DataParallel& dp, const std::vector<at::Tensor>& params, double* extra,
                   int64_t bucket_bytes) {
  at::NoGradGuard no_grad;
  const int64_t bucket_elems = std::max<int64_t>(1, bucket_bytes / 4);
  // A parameter without a gradient (no micro-batch reached it) contributes zeros, and gets the others' sum.
  std::vector<at::Tensor> grads;
  for (const auto& p : params) {
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  const at::Device device = params.empty() ? at::Device(at::kCPU) : params.front().device();
  size_t i = 0;
  bool extra_sent = extra == nullptr;
  while (i < grads.size() || !extra_sent) {
    // One bucket: the next tensors while they fit (a tensor larger than a bucket goes alone), and the extra
    // value in the last one.
    size_t j = i;
    int64_t elems = 0;
    while (j < grads.size() && (j == i || elems + grads[j].numel() <= bucket_elems))
      elems += grads[j++].numel();
    const bool with_extra = j == grads.size() && !extra_sent;
    at::Tensor flat =
        at::empty({elems + (with_extra ? 1 : 0)}, at::TensorOptions().dtype(at::kFloat).device(device));
    int64_t at_elem = 0;
    for (size_t k = i; k < j; ++k) {
      flat.narrow(0, at_elem, grads[k].numel()).copy_(grads[k].reshape({-1}));
      at_elem += grads[k].numel();
    }
    if (with_extra) flat[elems].fill_(*extra);
    dp.sum(flat);
    at_elem = 0;
    for (size_t k = i; k < j; ++k) {
      grads[k].copy_(flat.narrow(0, at_elem, grads[k].numel()).view_as(grads[k]));
      at_elem += grads[k].numel();
    }
    if (with_extra) {
      *extra = flat[elems].item<double>();
      extra_sent = true;
    }
    i = j;
  }
}

void copy_from_rank0(DataParallel& dp, const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    at::Tensor flat = dp.rank() == 0 ? t.detach().reshape({-1}).clone() : at::zeros({t.numel()}, t.options());
    dp.sum(flat);
    t.detach().copy_(flat.view_as(t));
  }
}

int agree_on_max(DataParallel& dp, int value, int max_value) {
  at::Tensor seen = at::zeros({max_value + 1}, at::kFloat);
  seen[std::clamp(value, 0, max_value)].fill_(1);
  dp.sum(seen);
  for (int v = max_value; v > 0; --v)
    if (seen[v].item<float>() > 0) return v;
  return 0;
}

}  // namespace forja::train
