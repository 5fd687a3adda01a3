#include "run_checkpoint.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <mutex>

#include "forja/error.h"
#include "forja/fault.h"
#include "forja/file_util.h"
#include "forja/safetensors.h"
#include "lora_peft.h"
#include "util/json_number.h"
#include "util/sha256.h"
#include "weights.h"

namespace forja::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kPrefix = "step-";
const std::vector<std::string> kFiles = {"adapter_model.safetensors", "adapter_config.json",
                                         "optimizer.safetensors",     "rng.safetensors",
                                         "trainer_state.json",        "run_config.json"};

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%08lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> step_of(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind(kPrefix, 0) != 0 || name.size() == std::char_traits<char>::length(kPrefix))
    return std::nullopt;
  const std::string digits = name.substr(std::char_traits<char>::length(kPrefix));
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  // A name too long for a step count is not one of ours (never a checkpoint to resume from).
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

// The device the run trains on: where its adapters are.
at::Device run_device(const LoraAdapters& adapters) {
  const auto params = adapters.parameters();
  return params.empty() ? at::Device(at::kCPU) : params.front().device();
}

// The CPU generator's state, and the run's GPU's when it trains on one: a run on the CPU never touches CUDA,
// which would cost it a CUDA context (time, GPU memory) on a machine that has a GPU.
std::vector<std::pair<std::string, at::Tensor>> generator_states(const at::Device& device) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  auto cpu = at::globalContext().defaultGenerator(at::kCPU);
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    out.emplace_back("cpu", cpu.get_state());
  }
  if (device.is_cuda()) {
    auto cuda = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(cuda.mutex());
    out.emplace_back("cuda", cuda.get_state());
  }
  return out;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

}  // namespace

std::vector<fs::path> list_checkpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (const auto& e : fs::directory_iterator(root, ec))
    if (auto s = step_of(e.path()); s && e.is_directory()) found.emplace_back(*s, e.path());
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [s, p] : found) out.push_back(p);
  return out;
}

fs::path save_run_checkpoint(const fs::path& root, const LoraAdapters& adapters, const AdamW& optimizer,
                             const RunState& state, const std::string& base_model, int64_t keep) {
  fault_point("checkpoint.begin");
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw_file_error(root.string(), "cannot create the checkpoint folder: " + ec.message());
  const fs::path final_dir = root / step_name(state.step);
  const fs::path tmp = root / (".tmp-" + step_name(state.step) + "-" + std::to_string(::getpid()));
  remove_quietly(tmp);
  fs::create_directories(tmp, ec);
  if (ec) throw_file_error(tmp.string(), "cannot create: " + ec.message());

  save_peft_adapter(adapters, tmp, base_model);
  {
    std::vector<std::pair<std::string, at::Tensor>> moments;
    const auto names = adapters.parameter_names();
    for (size_t i = 0; i < optimizer.exp_avg().size(); ++i) {
      moments.emplace_back("exp_avg." + names[i], optimizer.exp_avg()[i]);
      moments.emplace_back("exp_avg_sq." + names[i], optimizer.exp_avg_sq()[i]);
    }
    write_file_atomic(tmp / "optimizer.safetensors",
                      serialize_tensors(moments, {{"step", std::to_string(optimizer.steps())}}));
  }
  write_file_atomic(tmp / "rng.safetensors", serialize_tensors(generator_states(run_device(adapters))));
  json ts = {{"format", 1},
             {"step", state.step},
             {"total_steps", state.total_steps},
             {"optimizer_steps", optimizer.steps()},
             {"data_cursor", state.data_cursor},
             {"evals_without_improvement", state.evals_without_improvement}};
  ts["best_eval_loss"] = state.best_eval_loss ? json(*state.best_eval_loss) : json(nullptr);
  write_file_atomic(tmp / "trainer_state.json", ts.dump(1) + "\n");
  write_file_atomic(tmp / "run_config.json", state.config_json);

  json manifest = {{"step", state.step}, {"files", json::object()}};
  for (const auto& f : kFiles)
    manifest["files"][f] = {{"bytes", fs::file_size(tmp / f)}, {"sha256", sha256_file(tmp / f)}};
  write_file_atomic(tmp / "manifest.json", manifest.dump(1) + "\n");
  fault_point("checkpoint.files_written");
  fsync_directory(tmp);
  fault_point("checkpoint.synced");

  // Re-saving a step (a run paused right after resuming): the old copy moves aside until the new one is in
  // place.
  const fs::path old = root / (".old-" + step_name(state.step) + "-" + std::to_string(::getpid()));
  if (fs::exists(final_dir)) fs::rename(final_dir, old, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) throw_file_error(final_dir.string(), "cannot move the new checkpoint into place: " + ec.message());
  fault_point("checkpoint.renamed");
  fsync_directory(root);
  fault_point("checkpoint.dir_synced");
  remove_quietly(old);

  // The oldest checkpoints beyond `keep` leave by an atomic rename first: deleting a folder file by file is
  // not atomic, and a kill halfway must not leave a step-* folder with half its files.
  auto all = list_checkpoints(root);
  const size_t k = static_cast<size_t>(std::max<int64_t>(1, keep));
  for (size_t i = 0; i + k < all.size(); ++i) {
    if (all[i] == final_dir) continue;
    fs::rename(all[i], root / (".old-" + all[i].filename().string()), ec);
  }
  fsync_directory(root);
  fault_point("checkpoint.pruned");
  // Then the leftovers: retired checkpoints and the temporary folders of saves that crashed.
  std::vector<fs::path> leftovers;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(".tmp-", 0) == 0 || n.rfind(".old-", 0) == 0) leftovers.push_back(e.path());
  }
  for (const auto& p : leftovers) remove_quietly(p);
  fault_point("checkpoint.done");
  return final_dir;
}

void tidy_checkpoint_root(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) entries.push_back(e.path());
  for (const fs::path& p : entries) {
    const std::string n = p.filename().string();
    // ".old-step-XXXXXXXX-<pid>": a step being re-saved; when the kill came between its two renames, the old
    // copy is the only one and goes back. ".old-step-XXXXXXXX" (pruned) and ".tmp-" (unfinished) just go.
    if (n.rfind(".old-", 0) == 0) {
      const std::string rest = n.substr(5);
      const auto dash = rest.find('-', std::char_traits<char>::length(kPrefix));
      if (dash != std::string::npos) {
        const fs::path original = root / rest.substr(0, dash);
        if (step_of(original) && !fs::exists(original, ec)) {
          fs::rename(p, original, ec);
          if (!ec) continue;
        }
      }
      remove_quietly(p);
    } else if (n.rfind(".tmp-", 0) == 0) {
      remove_quietly(p);
    }
  }
  fsync_directory(root);
}

std::string checkpoint_problem(const fs::path& dir) {
  const fs::path mpath = dir / "manifest.json";
  std::error_code ec;
  if (!fs::exists(mpath, ec)) return "no manifest.json (the save did not finish)";
  json m;
  try {
    m = json::parse(read_text_file(mpath));
    for (const auto& f : kFiles) {
      if (!m.at("files").contains(f)) return "manifest.json does not list " + f;
      const fs::path p = dir / f;
      if (!fs::exists(p, ec)) return f + " is missing";
      const auto bytes = json_uint(m["files"][f].at("bytes"));
      if (!bytes) return "manifest.json gives " + f + " a size that is not a whole number of bytes";
      const uint64_t want = *bytes;
      if (fs::file_size(p, ec) != want)
        return f + " has " + std::to_string(fs::file_size(p, ec)) + " bytes, the manifest says " +
               std::to_string(want);
      if (sha256_file(p) != m["files"][f].at("sha256").get<std::string>())
        return f + " does not match its SHA-256";
    }
  } catch (const json::exception& e) {
    return std::string("manifest.json is unreadable: ") + e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

std::optional<fs::path> latest_valid_checkpoint(const fs::path& root, std::vector<std::string>& warnings) {
  auto all = list_checkpoints(root);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const std::string problem = checkpoint_problem(*it);
    if (problem.empty()) return *it;
    warnings.push_back(it->string() + ": skipped, the checkpoint is damaged (" + problem +
                       "); falling back to the one before it");
  }
  return std::nullopt;
}

namespace {

// trainer_state.json, checked field by field: the manifest proves the bytes are the ones written, not that
// whoever wrote them (a hand edit with a new manifest) wrote sense.
RunState read_trainer_state(const fs::path& dir) {
  const fs::path file = dir / "trainer_state.json";
  auto bad = [&](const std::string& problem) -> RunState {
    throw_file_error(file.string(), problem,
                     "Remove " + dir.string() + " to resume from the checkpoint before it.");
  };
  json ts;
  try {
    ts = json::parse(read_text_file(file));
  } catch (const json::exception& e) {
    bad(std::string("is not valid JSON: ") + e.what());
  }
  if (!ts.is_object()) return bad("is not a JSON object");
  auto count = [&](const char* key) {
    if (!ts.contains(key) || !ts[key].is_number_integer() || ts[key].get<int64_t>() < 0)
      bad(std::string("\"") + key + "\" must be a whole number of at least 0");
    return ts[key].get<int64_t>();
  };
  RunState s;
  s.step = count("step");
  s.total_steps = count("total_steps");
  s.evals_without_improvement = count("evals_without_improvement");
  if (s.step > s.total_steps)
    bad("step " + std::to_string(s.step) + " is beyond total_steps " + std::to_string(s.total_steps));
  if (const auto named = step_of(dir); named && *named != s.step)
    bad("says step " + std::to_string(s.step) + " but the folder is " + dir.filename().string());
  if (!ts.contains("data_cursor") || !ts["data_cursor"].is_string()) bad("\"data_cursor\" must be a string");
  s.data_cursor = ts["data_cursor"].get<std::string>();
  if (ts.contains("best_eval_loss") && !ts["best_eval_loss"].is_null()) {
    if (!ts["best_eval_loss"].is_number()) bad("\"best_eval_loss\" must be a number or null");
    s.best_eval_loss = ts["best_eval_loss"].get<double>();
  }
  return s;
}

}  // namespace

RunState load_run_checkpoint(const fs::path& dir, LoraAdapters& adapters, AdamW& optimizer) {
  if (const std::string problem = checkpoint_problem(dir); !problem.empty())
    throw_file_error(dir.string(), "is not a usable checkpoint: " + problem);
  RunState s = read_trainer_state(dir);
  try {
    load_state_tensors(dir, adapters, optimizer);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw_file_error(dir.string(),
                     "holds tensors that do not fit this run: " + what.substr(0, what.find('\n')),
                     "Remove " + dir.string() + " to resume from the checkpoint before it.");
  }
  s.config_json = read_text_file(dir / "run_config.json");
  return s;
}

void load_state_tensors(const fs::path& dir, LoraAdapters& adapters, AdamW& optimizer) {
  load_peft_weights(adapters, dir);

  auto opt = io::SafetensorsFile::open(dir / "optimizer.safetensors");
  const auto names = adapters.parameter_names();
  const auto params = adapters.parameters();
  std::vector<at::Tensor> m, v;
  if (!opt.tensors().empty()) {
    for (size_t i = 0; i < names.size(); ++i) {
      m.push_back(tensor_from_checkpoint(opt, opt.at("exp_avg." + names[i])).to(params[i].device()).clone());
      v.push_back(
          tensor_from_checkpoint(opt, opt.at("exp_avg_sq." + names[i])).to(params[i].device()).clone());
    }
  }
  for (size_t i = 0; i < m.size(); ++i)
    if (!m[i].sizes().equals(params[i].sizes()) || !v[i].sizes().equals(params[i].sizes()))
      throw_file_error((dir / "optimizer.safetensors").string(),
                       "holds moments of another shape than " + names[i]);
  const auto& meta = opt.metadata();
  auto it = meta.find("step");
  int64_t opt_step = -1;
  if (it != meta.end()) {
    const auto [end, ec] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), opt_step);
    if (ec != std::errc() || end != it->second.data() + it->second.size()) opt_step = -1;
  }
  if (opt_step < 0)
    throw_file_error((dir / "optimizer.safetensors").string(), "has no step count in its metadata");
  optimizer.restore(opt_step, std::move(m), std::move(v));

  auto rng = io::SafetensorsFile::open(dir / "rng.safetensors");
  {
    auto cpu = at::globalContext().defaultGenerator(at::kCPU);
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(tensor_from_checkpoint(rng, rng.at("cpu")).clone());
  }
  if (const at::Device device = run_device(adapters); rng.find("cuda") && device.is_cuda()) {
    auto cuda = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(cuda.mutex());
    cuda.set_state(tensor_from_checkpoint(rng, rng.at("cuda")).clone());
  }
}

}  // namespace forja::train
