#include "causal_lm.h"

#include <torch/cuda.h>

#include "forja/checkpoint.h"
#include "forja/error.h"
#include "gpt2.h"
#include "llama.h"
#include "weights.h"

namespace forja {
namespace fs = std::filesystem;

std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig& config, WeightProvider& weights) {
  std::shared_ptr<CausalLM> m;
  if (config.family == Family::Gpt2) m = std::make_shared<Gpt2Model>(config, weights);
  else m = std::make_shared<LlamaModel>(config, weights);
  m->dtype_ = weights.dtype();
  m->device_ = weights.device();
  m->eval();
  return m;
}

std::shared_ptr<CausalLM> load_causal_lm(const fs::path& model_dir, const LoadOptions& options) {
  const fs::path config_path = model_dir / "config.json";
  if (!fs::exists(config_path))
    throw_file_error(model_dir.string(), "has no config.json", "Open the folder that holds config.json and the weights.");
  ModelConfig config = parse_model_config(config_path);
  io::Checkpoint ckpt = io::Checkpoint::open(model_dir);
  const at::ScalarType dtype = options.dtype.value_or(dominant_dtype(ckpt));
  CheckpointWeights weights(ckpt, dtype, options.device, config.family == Family::Gpt2 ? "transformer." : "");
  auto model = make_causal_lm(config, weights);
  auto unused = weights.unused();
  if (!unused.empty()) {
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", " : "") + unused[i];
    throw_file_error(model_dir.string(),
                     std::to_string(unused.size()) + " checkpoint tensor(s) do not belong to a " +
                         family_name(config.family) + " model as config.json describes it: " + list,
                     "The weights and config.json do not match.");
  }
  return model;
}

at::Device parse_device(const std::string& text) {
  if (text == "cpu") return at::kCPU;
  if (text.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available()) {
#if FORJA_TORCH_CUDA
      throw Error("--device " + text + ": no CUDA GPU is visible to this process",
                  "Check the driver with forja-cli doctor, and CUDA_VISIBLE_DEVICES.");
#else
      throw Error("--device " + text + ": this Forja build uses a LibTorch without CUDA",
                  "Build Forja against a CUDA LibTorch (the `cuda` CMake preset) to use the GPU.");
#endif
    }
    int index = 0;
    if (text.size() > 5 && text[4] == ':') index = std::stoi(text.substr(5));
    else if (text != "cuda") throw Error("unknown device '" + text + "'", "Use cpu, cuda or cuda:N.");
    if (index < 0 || static_cast<size_t>(index) >= torch::cuda::device_count())
      throw Error("--device " + text + ": there is no GPU " + std::to_string(index));
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw Error("unknown device '" + text + "'", "Use cpu, cuda or cuda:N.");
}

at::ScalarType parse_dtype_name(const std::string& text) {
  if (text == "fp32" || text == "float32") return at::kFloat;
  if (text == "bf16" || text == "bfloat16") return at::kBFloat16;
  if (text == "fp16" || text == "float16") return at::kHalf;
  throw Error("unknown dtype '" + text + "'", "Use fp32, bf16 or fp16.");
}

}  // namespace forja
