// `forja-cli bench <name>`: benchmarks register themselves here, one file each (app/cli/bench_<name>.cpp), the same
// way commands do. A benchmark prints Forja's own figures (and --json); the scripts in bench/ run the peer in the
// same run and print the side-by-side table.
#pragma once

#include <map>
#include <string>

#include "command.h"

namespace forja::cli {

struct Benchmark {
  std::string name;
  std::string summary;
  std::string usage;
  int (*run)(Args&);
};

std::map<std::string, Benchmark>& bench_registry();

struct BenchRegistrar {
  explicit BenchRegistrar(Benchmark b) { bench_registry().emplace(b.name, std::move(b)); }
};

}  // namespace forja::cli

#define FORJA_BENCH(name, summary, usage, fn) \
  static const ::forja::cli::BenchRegistrar forja_bench_registrar_##name{::forja::cli::Benchmark{#name, summary, usage, fn}}
