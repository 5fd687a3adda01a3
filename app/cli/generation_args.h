// The options generate, chat and serve share: --device, --dtype, --max-context, --no-graphs and --base-quant
// for the engine; --max-new, --temperature, --top-k and the other sampling settings for each answer. A value
// that is not a number of the right kind is a forja::Error naming the option.
#pragma once

#include "command.h"
#include "forja/generate.h"

namespace forja::cli {

EngineOptions engine_options_from(const Args& args);
GenerationConfig generation_config_from(const Args& args);

}  // namespace forja::cli
