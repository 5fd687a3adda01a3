// The engine and sampling options that generate, chat and serve take (generation_args.h).
#include "generation_args.h"

#include <cmath>
#include <exception>
#include <string>

#include "forja/error.h"

namespace forja::cli {

namespace {
double number(const Args& args, const char* name, double fallback) {
  auto v = args.option(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    double d = std::stod(*v, &used);
    if (used == v->size()) return d;
  } catch (const std::exception&) {
  }
  throw Error("--" + std::string(name) + " needs a number, got '" + *v + "'");
}
}  // namespace

EngineOptions engine_options_from(const Args& args) {
  EngineOptions o;
  o.device = args.option_or("device", "auto");
  o.dtype = args.option_or("dtype", "auto");
  // Checked as a double: 1e11 must reach the engine's bound as 1e11, and -1 or 2.5 are not a context.
  const double context = number(args, "max-context", 0);
  if (!(context >= 0 && context <= 1e15 && std::floor(context) == context))
    throw Error("--max-context needs a whole number of tokens, 0 or more (0: the model's default)");
  o.max_context = static_cast<int64_t>(context);
  o.cuda_graphs = !args.flag("no-graphs");
  o.base_quant = args.option_or("base-quant", "none");
  return o;
}

GenerationConfig generation_config_from(const Args& args) {
  GenerationConfig c;
  c.max_new_tokens = static_cast<int64_t>(number(args, "max-new", 256));
  c.min_new_tokens = static_cast<int64_t>(number(args, "min-new", 0));
  c.temperature = number(args, "temperature", 0.0);
  c.top_k = static_cast<int64_t>(number(args, "top-k", 0));
  c.top_p = number(args, "top-p", 1.0);
  c.min_p = number(args, "min-p", 0.0);
  c.repetition_penalty = number(args, "repetition-penalty", 1.0);
  c.presence_penalty = number(args, "presence-penalty", 0.0);
  c.frequency_penalty = number(args, "frequency-penalty", 0.0);
  c.seed = static_cast<uint64_t>(number(args, "seed", 0));
  if (auto s = args.option("stop")) c.stop_strings.push_back(*s);
  return c;
}

}  // namespace forja::cli
