#include "causal_lm.h"

#include <cctype>
#include <cstdlib>

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/cuda.h>

#include "forja/architecture.h"
#include "forja/checkpoint.h"
#include "forja/error.h"
#include "gpt2.h"
#include "layers.h"
#include "llama.h"
#include "weights.h"

namespace forja {
namespace fs = std::filesystem;

namespace {

struct BlockHolder : torch::CustomClassHolder {
  std::function<at::Tensor(const at::Tensor&)> block;
  at::Tensor rng_state;  // the device generator's state at forward time: dropout draws the same masks again
};

at::Generator device_generator(const at::Tensor& x) {
  return at::globalContext().defaultGenerator(x.device().type() == at::kCUDA ? x.device()
                                                                             : at::Device(at::kCPU));
}

// Reentrant checkpointing, as torch.utils.checkpoint(use_reentrant=True): forward without a graph, backward
// recomputes the block with one and back-propagates through it.
struct Recompute : torch::autograd::Function<Recompute> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            c10::intrusive_ptr<BlockHolder> holder) {
    {
      auto gen = device_generator(x);
      std::lock_guard<std::mutex> lock(gen.mutex());
      holder->rng_state = gen.get_state();
    }
    ctx->save_for_backward({x});
    ctx->saved_data["block"] = at::IValue::make_capsule(holder);
    at::NoGradGuard no_grad;
    return holder->block(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto holder = c10::static_intrusive_pointer_cast<BlockHolder>(ctx->saved_data["block"].toCapsule());
    at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    auto gen = device_generator(x);
    at::Tensor now;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      now = gen.get_state();
      gen.set_state(holder->rng_state);
    }
    at::Tensor y;
    {
      at::AutoGradMode grad_on(true);
      y = holder->block(x);
    }
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(now);
    }
    torch::autograd::backward({y}, {grads[0]});
    return {x.grad(), at::Tensor()};
  }
};

}  // namespace

at::Tensor recompute_in_backward(std::function<at::Tensor(const at::Tensor&)> block, at::Tensor x) {
  if (!at::GradMode::is_enabled()) return block(x);
  if (!x.requires_grad()) x = x.detach().requires_grad_(true);
  auto holder = c10::make_intrusive<BlockHolder>();
  holder->block = std::move(block);
  return Recompute::apply(x, holder);
}

std::shared_ptr<CausalLM> make_causal_lm(const ModelConfig& config, WeightProvider& weights) {
  std::shared_ptr<CausalLM> m;
  if (architecture(config.family).block == Block::Gpt2)
    m = std::make_shared<Gpt2Model>(config, weights);
  else
    m = std::make_shared<LlamaModel>(config, weights);
  m->dtype_ = weights.dtype();
  m->device_ = weights.device();
  m->eval();
  return m;
}

namespace {

// What an NF4 cache must have been made from: every checkpoint file's name, size and modification time, and
// the quantization options. A different value means the cache is stale.
std::string nf4_cache_source(const io::Checkpoint& ckpt, const quant::Nf4Options& o) {
  std::string key = "block_size=" + std::to_string(o.block_size) +
                    ";double_quant=" + (o.double_quant ? "1" : "0") +
                    ";dq_block_size=" + std::to_string(o.dq_block_size);
  for (const auto& file : ckpt.files()) {
    std::error_code ec;
    const auto size = fs::file_size(file->path(), ec);
    const auto mtime = fs::last_write_time(file->path(), ec).time_since_epoch().count();
    key += ";" + file->path().filename().string() + ":" + std::to_string(size) + ":" + std::to_string(mtime);
  }
  return key;
}

}  // namespace

std::shared_ptr<CausalLM> load_causal_lm(const fs::path& model_dir, const LoadOptions& options) {
  const fs::path config_path = model_dir / "config.json";
  if (!fs::exists(config_path))
    throw_file_error(model_dir.string(), "has no config.json",
                     "Open the folder that holds config.json and the weights.");
  ModelConfig config = parse_model_config(config_path);
  io::Checkpoint ckpt = io::Checkpoint::open(model_dir);
  const at::ScalarType dtype = options.dtype.value_or(dominant_dtype(ckpt));
  const Architecture& arch = architecture(config.family);
  CheckpointWeights weights(ckpt, dtype, options.device, std::string(arch.optional_prefix));

  // QLoRA: quantize the projections as they are read, or take them from the cache.
  std::optional<quant::Nf4Cache> cache, record;
  if (options.nf4) {
    if (!arch.nf4_base)
      throw_file_error(model_dir.string(),
                       "a 4-bit (NF4) base is not supported for " + std::string(arch.models) + " models yet",
                       "Train it with base_quant = none, or use a Llama-family model for QLoRA.");
    weights.set_nf4(options.nf4);
    const std::string source = nf4_cache_source(ckpt, *options.nf4);
    auto note = [&](const std::string& text) {
      if (options.notes) options.notes(text);
    };
    if (!options.nf4_cache.empty()) {
      if (fs::exists(options.nf4_cache)) {
        try {
          quant::Nf4Cache c = quant::load_nf4_cache(options.nf4_cache);
          auto it = c.extra.find("source");
          if (it == c.extra.end() || it->second != source ||
              c.options.block_size != options.nf4->block_size ||
              c.options.double_quant != options.nf4->double_quant ||
              (c.options.double_quant && c.options.dq_block_size != options.nf4->dq_block_size))
            note(options.nf4_cache.string() +
                 ": the NF4 cache was made from other checkpoint files or options; quantizing again and "
                 "rewriting it");
          else
            cache = std::move(c);
        } catch (const Error& e) {
          note(std::string(e.what()) + "; quantizing again and rewriting the NF4 cache");
        }
      }
      if (cache) {
        weights.use_nf4_cache(&*cache);
      } else {
        record.emplace();
        record->options = *options.nf4;
        record->extra["source"] = source;
        weights.record_nf4(&*record);
      }
    }
  }
  auto model = make_causal_lm(config, weights);
  if (record) {
    try {
      std::error_code ec;  // a folder that cannot be made shows as the write's own error below
      fs::create_directories(options.nf4_cache.parent_path(), ec);
      quant::save_nf4_cache(options.nf4_cache, *record);
    } catch (const Error& e) {
      // A cache that cannot be written costs the next load some time, nothing else.
      if (options.notes)
        options.notes(std::string(e.what()) + " (the model loaded; the NF4 cache was not written)");
    }
  }
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

std::filesystem::path default_nf4_cache_path(const std::filesystem::path& model_dir,
                                             const quant::Nf4Options& o) {
  fs::path root;
  if (const char* v = std::getenv("FORJA_CACHE_DIR"); v != nullptr && *v != 0)
    root = v;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != 0)
    root = fs::path(x) / "forja";
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h != 0)
    root = fs::path(h) / ".cache" / "forja";
  else
    return {};
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(model_dir, ec), ec);
  if (ec) abs = model_dir;
  std::string name;
  for (char ch : abs.string()) name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
  while (!name.empty() && name.front() == '_') name.erase(0, 1);
  if (name.size() > 120) name = name.substr(name.size() - 120);  // the end of a path tells models apart
  name += "-b" + std::to_string(o.block_size);
  if (o.double_quant) name += "-dq" + std::to_string(o.dq_block_size);
  return root / "nf4" / (name + ".safetensors");
}

void dequantize_nf4_base(CausalLM& model) {
  for (const auto& module : model.modules(/*include_self=*/false))
    if (auto* linear = module->as<LinearImpl>()) linear->dequantize_weight(model.dtype());
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
    if (text.size() > 5 && text[4] == ':')
      index = std::stoi(text.substr(5));
    else if (text != "cuda")
      throw Error("unknown device '" + text + "'", "Use cpu, cuda or cuda:N.");
    if (index < 0 || index >= static_cast<int>(torch::cuda::device_count()))
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
