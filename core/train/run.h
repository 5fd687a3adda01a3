// The run driver over any source of batches (forja/train_run.h is the door that reads the data files).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forja/batch.h"
#include "forja/error.h"
#include "forja/train.h"
#include "forja/train_run.h"
#include "jsonl_source.h"

namespace forja::train {

TrainResult run_training(const TrainConfig& config, BatchSource& train_data,
                         const std::vector<Batch>& eval_data, const RunHooks& hooks = {});

}  // namespace forja::train
