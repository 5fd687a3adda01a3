// The small CPU fine-tune the crash suites run through `forja-cli train`: the tiny llama fixture in fp32,
// LoRA rank 4 with dropout (so the generator states must survive a resume too), a checkpoint every 2 steps,
// an eval every 4. Needs LibTorch (the fixture path helper) and Qt-free engine headers only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "forja/file_util.h"
#include "forja/train.h"
#include "reference.h"

namespace forja_test {

// Writes <dir>/config.json for a run in <dir>/run on <data_dir>/train.jsonl and eval.jsonl; `edit` adjusts
// the config before it is written.
inline std::filesystem::path write_run_config(const std::filesystem::path& dir,
                                              const std::filesystem::path& data_dir, int64_t steps,
                                              const std::function<void(forja::TrainConfig&)>& edit = {}) {
  forja::TrainConfig c;
  c.model_dir = fixture_dir("llama").string();
  c.output_dir = (dir / "run").string();
  c.device = "cpu";
  c.dtype = "fp32";
  c.train_file = (data_dir / "train.jsonl").string();
  c.eval_file = (data_dir / "eval.jsonl").string();
  c.batch_size = 2;
  c.max_length = 24;
  c.max_steps = steps;
  c.eval_every = 4;
  c.checkpoint_every = 2;
  c.keep_checkpoints = 2;
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;
  c.optimizer.learning_rate = 5e-3;
  c.optimizer.warmup_steps = 2;
  if (edit) edit(c);
  std::filesystem::create_directories(dir);
  const std::filesystem::path p = dir / "config.json";
  forja::write_file_atomic(p, forja::train_config_to_json(c));
  return p;
}

}  // namespace forja_test
