// forja-cli bench decode --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b
//                        [--prompt 128] [--new 256] [--runs 3] [--graphs on|off] [--base-quant none|nf4]
//                        [--json]
// Batch-1 greedy decode at a real model shape (forja::bench::decode): decode tokens/s, time to the first
// token, and the roofline from the copy bandwidth measured in the same run. bench/decode_bench.py runs
// transformers' generate in the same run and prints the side-by-side table.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "forja/bench.h"
#include "forja/error.h"

namespace forja::cli {
namespace {

int run_decode_bench(Args& args) {
  args.reject_unknown({"shape", "prompt", "new", "runs", "device", "dtype", "graphs", "base-quant"});
  bench::DecodeOptions o;
  o.shape = args.option_or("shape", "tinyllama");
  o.prompt_tokens = std::stoll(args.option_or("prompt", "128"));
  o.new_tokens = std::stoll(args.option_or("new", "256"));
  o.runs = std::stoi(args.option_or("runs", "3"));
  o.device = args.option_or("device", "auto");
  o.dtype = args.option_or("dtype", "bf16");
  const std::string graphs =
      args.option_or("graphs", "on");  // an option: `bench` declares only --json as a flag
  if (graphs != "on" && graphs != "off") throw Error("--graphs takes on or off, got '" + graphs + "'");
  o.cuda_graphs = graphs == "on";
  const std::string base_quant = args.option_or("base-quant", "none");
  if (base_quant != "none" && base_quant != "nf4")
    throw Error("--base-quant takes none or nf4, got '" + base_quant + "'");
  o.nf4_base = base_quant == "nf4";

  const bench::DecodeResult r = bench::decode(o);
  const double roofline_fraction = r.roofline_tok_s > 0 ? r.decode_tok_s / r.roofline_tok_s : 0.0;
  const double prefill_tok_s = static_cast<double>(o.prompt_tokens) / r.first_token_s;
  if (args.flag("json")) {
    nlohmann::ordered_json out = {{"engine", "forja"},
                                  {"base_quant", base_quant},
                                  {"shape", o.shape},
                                  {"prompt_tokens", o.prompt_tokens},
                                  {"new_tokens", o.new_tokens},
                                  {"runs", r.decode_tok_s_runs.size()},
                                  {"device", r.device},
                                  {"dtype", r.dtype},
                                  {"cuda_graphs", r.cuda_graphs},
                                  {"parameters", r.parameters},
                                  {"weight_bytes", r.weight_bytes},
                                  {"kv_cache_bytes", r.kv_cache_bytes},
                                  {"copy_bandwidth_gb_s", r.copy_bandwidth / 1e9},
                                  {"roofline_tok_s", r.roofline_tok_s},
                                  {"decode_tok_s", r.decode_tok_s},
                                  {"roofline_fraction", roofline_fraction},
                                  {"first_token_ms", r.first_token_s * 1e3},
                                  {"prefill_tok_s", prefill_tok_s},
                                  {"decode_tok_s_runs", r.decode_tok_s_runs},
                                  {"first_token_ms_runs", nlohmann::json::array()}};
    for (double s : r.first_token_s_runs) out["first_token_ms_runs"].push_back(s * 1e3);
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("decode %s, prompt %lld, %lld new tokens, %s %s%s\n", o.shape.c_str(),
                static_cast<long long>(o.prompt_tokens), static_cast<long long>(o.new_tokens),
                r.device.c_str(), r.dtype.c_str(), r.cuda_graphs ? ", CUDA graphs" : "");
    std::printf("  weights %.2f GB, copy bandwidth %.0f GB/s -> roofline %.0f tok/s\n", r.weight_bytes / 1e9,
                r.copy_bandwidth / 1e9, r.roofline_tok_s);
    std::printf("  decode %.1f tok/s (%.0f%% of roofline), first token %.1f ms (prefill %.0f tok/s)\n",
                r.decode_tok_s, 100 * roofline_fraction, r.first_token_s * 1e3, prefill_tok_s);
  }
  return 0;
}

}  // namespace
}  // namespace forja::cli

FORJA_BENCH(decode, "Batch-1 decode tok/s, time to first token and roofline at a real model shape",
            "bench decode --shape tinyllama|mistral7b|qwen3_1_7b|gemma3_1b|gemma2_2b [--prompt N] [--new N] "
            "[--runs R] [--graphs on|off] [--base-quant none|nf4] [--json]",
            forja::cli::run_decode_bench);
