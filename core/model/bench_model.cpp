// forja::bench::write_random_model (forja/bench.h): a benchmark shape as a checkpoint on disk, for the tools
// that read a model folder (export, quantization, the peers' loaders) rather than a model in memory.
#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "causal_lm.h"
#include "forja/bench.h"
#include "forja/error.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "weights.h"

namespace forja::bench {
namespace {
namespace fs = std::filesystem;

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

// Lists the parameters the model asks for, in its order. The tensors it hands out are never written, so their
// pages are never touched: a 7B list costs no memory.
class ParamRecorder final : public WeightProvider {
 public:
  ParamRecorder() : WeightProvider(at::kBFloat16, at::kCPU) {}
  at::Tensor get(const std::string& name, const std::vector<int64_t>& shape) override {
    at::Tensor t = at::empty(shape, at::kBFloat16);
    params.push_back({name, shape, static_cast<int64_t>(t.nbytes())});
    return t;
  }
  bool has(const std::string&) const override { return true; }
  std::vector<Param> params;
};

std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

}  // namespace

int64_t write_random_model(const std::string& config_json, const fs::path& dir, uint64_t seed,
                           int64_t shard_bytes) {
  if (fs::exists(dir) && !fs::is_empty(dir))
    throw Error(dir.string() + " is not empty", "Give a new folder for the random-weight model.");
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(config_json);
  config["torch_dtype"] = "bfloat16";
  const ModelConfig c = parse_model_config_text(config.dump(), dir.string() + "/config.json");

  std::vector<Param> params;
  {
    ParamRecorder recorder;
    make_causal_lm(c, recorder);
    params = std::move(recorder.params);
  }
  // Shards in the model's order, each closed once it holds shard_bytes.
  std::vector<std::vector<const Param*>> shards(1);
  int64_t in_shard = 0, total = 0;
  for (const Param& p : params) {
    if (in_shard > 0 && in_shard + p.bytes > shard_bytes) shards.emplace_back(), in_shard = 0;
    shards.back().push_back(&p);
    in_shard += p.bytes;
    total += p.bytes;
  }

  fs::create_directories(dir);
  RandomWeights random(seed, at::kBFloat16, at::kCPU);
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shards.size() == 1 ? "model.safetensors" : shard_name(s, shards.size());
    std::vector<at::Tensor> held;
    std::vector<io::TensorToWrite> tensors;
    for (const Param* p : shards[s]) {
      held.push_back(random.get(p->name, p->shape).contiguous());
      const at::Tensor& t = held.back();
      tensors.push_back({p->name,
                         io::DType::BF16,
                         p->shape,
                         {static_cast<const uint8_t*>(t.data_ptr()), static_cast<size_t>(t.nbytes())}});
      weight_map[p->name] = file;
    }
    io::write_safetensors(dir / file, tensors, {{"format", "pt"}});
  }
  if (shards.size() > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomic(dir / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  write_file_atomic(dir / "config.json", config.dump(2) + "\n");
  return total;
}

}  // namespace forja::bench
