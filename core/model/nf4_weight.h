// A frozen projection weight held in NF4 (QLoRA), as at::Tensors on the model's device, and the operations
// the model and the inference engine run on it. The format is core/quant's (forja/nf4.h) unchanged, so the
// codes and absmax here are byte for byte those quant::quantize_nf4 makes from the same weights, and the
// kernels of kernels/nf4 read them as they are.
//
//  - quantize_nf4_weight(): on the weight's own device with LibTorch ops (so a CUDA model quantizes on the
//  GPU,
//    one layer at a time); the double quantization of the few absmax values runs on the CPU through
//    core/quant, so that both devices give core/quant's values exactly.
//  - dequantize_nf4_weight(): the kernels/nf4 dequantize kernel for bf16 on CUDA where it is built; LibTorch
//    ops elsewhere (the fp32 CPU path that CI trains with).
//  - nf4_linear(): y = x·W'ᵀ (+ b) under autograd. It keeps only the 4-bit weight for backward, dequantizes
//  it
//    again there, and returns a gradient for x only (the base is frozen).
//  - nf4_matmul(): the same product without autograd for the inference engine; batch-1 bf16 decode on CUDA
//    uses the fused dequantize-GEMV kernel.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "forja/nf4.h"

namespace forja {

struct Nf4Weight {
  std::vector<int64_t> shape;  // the original shape ([out, in] for a projection)
  io::DType source_dtype = io::DType::F32;
  int64_t block_size = 64;
  at::Tensor codes;   // uint8 [ceil(n / 2)], element 2k in the high nibble of byte k
  at::Tensor absmax;  // fp32 [blocks]; undefined when double-quantized
  bool double_quant = false;
  int64_t dq_block_size = 256;
  at::Tensor absmax_q;      // int8 [blocks]
  at::Tensor absmax_scale;  // fp32 [ceil(blocks / dq_block_size)]
  float absmax_offset = 0.0f;
  // Shared by the copies of one weight (the model's and the autograd holder's).
  struct DecodedCache {
    std::mutex mutex;
    at::Tensor absmax;
    const void* made_from = nullptr;  // absmax_q's storage: a copy given other codes decodes again
  };
  std::shared_ptr<DecodedCache> decoded_cache = std::make_shared<DecodedCache>();

  bool defined() const { return codes.defined(); }
  int64_t numel() const;
  int64_t blocks() const;
  at::Device device() const { return codes.device(); }
  // The absmax of every block as fp32 on the weight's device (decoded with core/quant's fused multiply-add
  // when double-quantized). On CUDA the decoded values are kept after the first call (4 bytes per block), so
  // that the stock dequantize path copies nothing from the host inside a captured CUDA graph.
  at::Tensor decoded_absmax() const;
  // Bytes held on the device: codes plus the absmax (or its 8-bit form and scales).
  int64_t bytes() const;
};

// Quantizes `w` (any floating dtype, any device) exactly as quant::quantize_nf4 does its fp32 values. Throws
// forja::Error naming `what` for a non-finite weight or bad options.
Nf4Weight quantize_nf4_weight(const at::Tensor& w, const quant::Nf4Options& options, const std::string& what);

// Between core/quant's host form (the cache file) and tensors on `device`.
Nf4Weight nf4_weight_from(const quant::Nf4Tensor& t, at::Device device);
quant::Nf4Tensor nf4_tensor_from(const Nf4Weight& w);

// W' in `dtype` (fp32, bf16 or fp16) on the weight's device, shaped as the original.
at::Tensor dequantize_nf4_weight(const Nf4Weight& w, at::ScalarType dtype);

// x·W'ᵀ + bias for a [out, in] NF4 weight, W' dequantized in x's dtype. Differentiable in x (and in `bias` if
// it requires grad); the weight gets no gradient.
at::Tensor nf4_linear(const at::Tensor& x, const Nf4Weight& w, const at::Tensor& bias = {});

// x [T, in] · W'ᵀ without autograd (inference). On CUDA in bf16 with T == 1 and the kernels built, the fused
// dequantize-GEMV; otherwise dequantize + GEMM.
at::Tensor nf4_matmul(const at::Tensor& x, const Nf4Weight& w);

// Whether this build can run the kernels/nf4 CUDA kernels (nvcc built them and LibTorch has CUDA), and
// whether they are used now (FORJA_KERNELS=off switches them off, as it does the fused kernels).
bool nf4_kernels_compiled_in();
bool nf4_kernels_active();

}  // namespace forja
