// Data-parallel training seen from the trainer: every process (rank) holds the same model and adapters and
// draws the same step batches from the same data; rank r forwards its share of the step's micro-batches, and
// the adapters' gradients are summed over the ranks before the update, so every rank applies the same update.
// This header knows no torch.distributed: core/dist implements DataParallel with c10d (Gloo or NCCL), and
// tests may implement it in one process.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "forja/batch.h"

namespace forja::train {

class Trainer;
struct StepStats;

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Replaces `t` (contiguous) by its sum over all ranks, on every rank. Throws forja::Error naming this rank
  // when a peer is gone or the collective times out.
  virtual void sum(at::Tensor& t) = 0;
  // Whether rank 0's process still runs (after a failed collective: rank 1 then keeps the checkpoint that
  // rank 0 would have written).
  virtual bool rank0_alive() = 0;
};

// The micro-batches of `step_batches` (grad_accum × world of them, the same list on every rank) that `rank`
// forwards: the contiguous share [rank × n / world, (rank + 1) × n / world).
std::vector<Batch> shard_for_rank(const std::vector<Batch>& step_batches, int rank, int world);

// Forward and backward over this rank's share of the step, normalised by the loss tokens of the WHOLE step,
// then the gradients (and the loss) summed over the ranks: the adapters' .grad() then hold exactly what one
// process computes for the whole step, up to the order of the floating-point sums. Stats count the whole
// step.
StepStats data_parallel_backward(Trainer& trainer, DataParallel& dp, const std::vector<Batch>& step_batches);

// Sums the gradients of `params` (and `*extra` when given) over the ranks in buckets of at most
// `bucket_bytes` of fp32: one collective per bucket instead of one per tensor.
void sum_gradients(DataParallel& dp, const std::vector<at::Tensor>& params, double* extra,
                   int64_t bucket_bytes = int64_t{64} << 20);

// Rank 0's values of `tensors` on every rank (a sum where the other ranks contribute zeros, which is exact).
void copy_from_rank0(DataParallel& dp, const std::vector<at::Tensor>& tensors);

// One value per rank in, the largest of them out (as a sum of one-hot flags: values must be small, >= 0).
int agree_on_max(DataParallel& dp, int value, int max_value);

}  // namespace forja::train
