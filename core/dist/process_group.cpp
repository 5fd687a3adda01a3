#include <cstdlib>
#include <string>

#include "c10d_compat.h"
#include "dist.h"
#include "forja/error.h"

#if FORJA_DIST_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace forja::dist {
namespace {

std::string first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
  return what.substr(0, what.find('\n'));
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1'000'000)
    throw Error(std::string(name) + "=" + v + " is not a count", "torchrun's variables hold plain integers.");
  return static_cast<int>(x);
}

class C10dDataParallel final : public train::DataParallel {
 public:
  C10dDataParallel(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<compat::Collectives> collectives,
                   const DistEnv& env, at::Device device)
      : store_(std::move(store)), collectives_(std::move(collectives)), env_(env), device_(device) {}

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }

  void sum(at::Tensor& t) override {
    at::Tensor here = t.device() == device_ && t.is_contiguous() ? t : t.contiguous().to(device_);
    std::vector<at::Tensor> tensors{here};
    try {
      collectives_->allreduce(tensors)->wait();
    } catch (const std::exception& e) {
      throw Error(
          "summing over the " + std::to_string(env_.world_size) + " ranks failed (" + first_line(e) + ")",
          "Another worker has stopped or hangs (the collectives give up after " +
              std::to_string(env_.timeout.count()) + " s, FORJA_DIST_TIMEOUT_S).");
    }
    if (!here.is_same(t)) t.copy_(here);
  }

  // The store's server runs inside rank 0's process: it answers exactly while that process lives.
  bool rank0_alive() override {
    if (env_.rank == 0) return true;
    try {
      store_->add("forja/alive", 0);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;  // the process group's rendezvous lives as long as it does
  c10::intrusive_ptr<compat::Collectives> collectives_;
  DistEnv env_;
  at::Device device_;
};

}  // namespace

std::optional<DistEnv> dist_env_from_environment() {
  if (!std::getenv("WORLD_SIZE")) return std::nullopt;
  DistEnv e;
  e.world_size = env_int("WORLD_SIZE", 1);
  e.rank = env_int("RANK", 0);
  e.local_rank = env_int("LOCAL_RANK", e.rank);
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  e.master_port = env_int("MASTER_PORT", e.master_port);
  e.timeout = std::chrono::seconds(env_int("FORJA_DIST_TIMEOUT_S", static_cast<int>(e.timeout.count())));
  if (e.world_size < 1 || e.rank >= e.world_size || e.master_port < 1 || e.master_port > 65535 ||
      e.timeout.count() < 1)
    throw Error("RANK=" + std::to_string(e.rank) + " WORLD_SIZE=" + std::to_string(e.world_size) +
                    " MASTER_PORT=" + std::to_string(e.master_port) + " FORJA_DIST_TIMEOUT_S=" +
                    std::to_string(e.timeout.count()) + " do not describe a worker of a run",
                "RANK counts from 0 below WORLD_SIZE; the port is 1..65535; the timeout at least 1 s.");
  return e;
}

bool has_nccl() {
  return compat::kHasNccl;
}

bool has_gloo() {
  return compat::kHasGloo;
}

std::optional<DataParallelWorker> join_data_parallel_run(TrainConfig& config) {
  const auto env = dist_env_from_environment();
  if (!env) return std::nullopt;
  const char* backend = std::getenv("FORJA_DIST_BACKEND");
  const bool nccl = backend ? std::string(backend) == "nccl" : config.device.rfind("cuda", 0) == 0;
  if (nccl)
    config.device = "cuda:" + std::to_string(env->local_rank);
  else if (config.device == "auto")
    config.device = "cpu";
  DataParallelWorker w;
  w.group = connect(*env, nccl ? Backend::Nccl : Backend::Gloo);
  w.rank = w.group->rank();
  w.world_size = w.group->world_size();
  return w;
}

std::unique_ptr<train::DataParallel> connect(const DistEnv& env, Backend backend) {
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = static_cast<size_t>(env.world_size);
    so.waitWorkers = true;
    so.timeout = env.timeout;
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(env.rank) + ": the rendezvous at " + env.master_addr + ":" +
                    std::to_string(env.master_port) + " did not complete (" + first_line(e) + ")",
                "Every rank must start within " + std::to_string(env.timeout.count()) +
                    " s and reach MASTER_ADDR:MASTER_PORT, where rank 0 listens.");
  }
  try {
    if (backend == Backend::Nccl) {
#if FORJA_DIST_NCCL
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = env.timeout;
      auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, options);
      return std::make_unique<C10dDataParallel>(
          store, pg, env, at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank)));
#else
      throw Error(
          "this build of Forja has no NCCL process group",
          "Build with a LibTorch that has CUDA and NCCL's headers (nccl.h), or train on the CPU (--nproc).");
#endif
    }
#if FORJA_DIST_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(env.timeout);
    // Loopback when the run is on this machine; across machines the interface GLOO_SOCKET_IFNAME names (as
    // torch.distributed reads it), else the address this machine's hostname resolves to.
    const bool loopback = env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0;
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                               : ifname && *ifname ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                                                   : c10d::ProcessGroupGloo::createDefaultDevice());
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, options);
    return std::make_unique<C10dDataParallel>(store, pg, env, at::Device(at::kCPU));
#else
    // The PyTorch wheel's LibTorch ships no Gloo headers: there the ranks of a run are GPUs only.
    throw Error("this build of Forja has no Gloo process group, so ranks on CPUs cannot run",
                "Train on GPUs (--gpus N), or build with a LibTorch that has Gloo (Debian: libgloo-dev).");
#endif
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(
        "rank " + std::to_string(env.rank) + ": creating the process group failed (" + first_line(e) + ")",
        "Check that every rank reaches the others (firewall, MASTER_ADDR) and uses the same WORLD_SIZE.");
  }
}

}  // namespace forja::dist
