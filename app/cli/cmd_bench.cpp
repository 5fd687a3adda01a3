// `forja-cli bench <name> [args]`: dispatches to the benchmarks registered with FORJA_BENCH (bench.h).
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "forja/error.h"

namespace forja::cli {

std::map<std::string, Benchmark>& bench_registry() {
  static std::map<std::string, Benchmark> r;
  return r;
}

namespace {

std::string bench_names() {
  std::string names;
  for (const auto& [name, b] : bench_registry()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

int run_bench(Args& args) {
  if (args.positionals().empty()) {
    std::printf("Usage: forja-cli bench <name> [args]\n\n");
    for (const auto& [name, b] : bench_registry()) std::printf("  %-10s %s\n", name.c_str(), b.summary.c_str());
    return 2;
  }
  const std::string name = args.positionals().front();
  auto it = bench_registry().find(name);
  if (it == bench_registry().end())
    throw Error("unknown benchmark '" + name + "'", "the benchmarks are: " + bench_names());
  args.drop_first_positional();
  return it->second.run(args);
}

}  // namespace
}  // namespace forja::cli

FORJA_CLI_COMMAND(bench, "Run a benchmark (forja-cli bench with no name lists them)", "bench <name> [args]",
                  forja::cli::run_bench, {"json"});
