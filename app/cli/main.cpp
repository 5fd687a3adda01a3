// forja-cli: everything the window does, headless. Commands register themselves (command.h); this file only
// dispatches and turns errors into readable messages and exit codes.
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "forja/error.h"

namespace {

void print_help() {
  std::printf(
      "forja-cli %s — fine-tune and chat with LLMs on a local GPU\n\nUsage: forja-cli <command> [args]\n\n"
      "Commands:\n",
      FORJA_VERSION);
  for (const auto& [name, cmd] : forja::cli::registry()) {
    std::printf("  %-12s%s\n", name.c_str(), cmd.summary.c_str());
  }
  std::printf("\nRun forja-cli <command> --help for a command's arguments.\n");
}

void print_command_help(const forja::cli::Command& cmd) {
  std::printf("Usage: forja-cli %s\n\n%s\n", cmd.usage.c_str(), cmd.summary.c_str());
  if (cmd.more_help) std::printf("\n%s", cmd.more_help().c_str());
}

// `forja-cli help --all`: the overview, then every command's own help. The man page is made from it
// (help2man), so it says exactly what the program says.
void print_all_help() {
  print_help();
  std::printf("\nCommands in detail:\n");
  for (const auto& [name, cmd] : forja::cli::registry()) {
    std::printf("\n");
    print_command_help(cmd);
  }
  std::printf(
      "\nEnvironment:\n"
      "  HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN, HF_TOKEN_PATH, HF_HUB_OFFLINE\n"
      "             where models are cached and how the Hub is reached, as the Hugging Face tools read them\n"
      "  FORJA_CACHE_DIR\n"
      "             where quantized bases are cached (else $XDG_CACHE_HOME/forja)\n"
      "  FORJA_KERNELS=off\n"
      "             run LibTorch's stock operations instead of Forja's CUDA kernels\n"
      "  FORJA_NVML_LIBRARY\n"
      "             the NVML library to load for GPU readings (else libnvidia-ml.so.1)\n");
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must make a write fail with EFBIG, which is reported with the file's name,
  // instead of killing the process without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.size() == 2 && words[0] == "help") {
    if (words[1] == "--all") {
      print_all_help();
      return 0;
    }
    if (auto it = forja::cli::registry().find(words[1]); it != forja::cli::registry().end()) {
      print_command_help(it->second);
      return 0;
    }
  }
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    print_help();
    return words.empty() ? 2 : 0;
  }
  if (words[0] == "--version") {
    std::printf("forja-cli %s\n", FORJA_VERSION);
    return 0;
  }
  auto& reg = forja::cli::registry();
  auto it = reg.find(words[0]);
  if (it == reg.end()) {
    std::fprintf(stderr, "error: unknown command '%s'\nhint: run forja-cli help for the list\n",
                 words[0].c_str());
    return 2;
  }
  const forja::cli::Command& cmd = it->second;
  try {
    forja::cli::Args args(std::vector<std::string>(words.begin() + 1, words.end()), cmd.flags);
    if (args.flag("help")) {
      print_command_help(cmd);
      return 0;
    }
    return cmd.run(args);
  } catch (const forja::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.message().c_str());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    return 3;
  }
}
