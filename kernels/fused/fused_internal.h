// What the fused kernels' launchers and the CPU reference must agree on (not part of the C API).
#pragma once

#include <cstdint>

namespace forja_fused {

// Blocks of the RMSNorm backward when it also computes the weight gradient: each sums its rows' dy * n into
// one fp32 partial row, and the partial rows are summed column-wise in block order. The count depends on
// `rows` alone, so the summation order (and the result, bit for bit) is the same on every run and every
// device; 512 blocks keep an H100/H200 busy while the partials stay a few MiB.
inline int64_t rmsnorm_backward_blocks(int64_t rows) {
  return rows < 512 ? rows : 512;
}

}  // namespace forja_fused
