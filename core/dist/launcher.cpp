#include "launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <optional>
#include <thread>

#include "forja/error.h"

extern char** environ;

namespace forja::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? " (" + std::string(name) + ")" : "");
  }
  return "stopped (wait status " + std::to_string(status) + ")";
}

// The parent's environment with torchrun's variables for one worker.
std::vector<std::string> worker_environment(const LaunchOptions& o, int local_rank, int port) {
  const std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(o.node_rank * o.nproc + local_rank)},
      {"WORLD_SIZE", std::to_string(o.nnodes * o.nproc)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(port)},
      {"FORJA_DIST_BACKEND", o.gpus ? "nccl" : "gloo"},
      // NVLink SHARP (multicast) objects are not available on every machine a GPU is lent on; NCCL then
      // fails.
      {"NCCL_NVLS_ENABLE", "0"},
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& [k, v] : set) replaced |= k == key;
    if (!replaced) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  if (!ok)
    throw Error(std::string("cannot find a free TCP port: ") + std::strerror(errno), "Pass --master-port.");
  return ntohs(a.sin_port);
}

std::string LaunchResult::report() const {
  std::string out;
  auto line = [&](const WorkerExit& w) {
    out += "rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + ") " + w.description +
           (w.stopped_by_us ? " after the launcher stopped it" : "") + "\n";
  };
  if (first_failed >= 0) line(workers[static_cast<size_t>(first_failed)]);
  for (size_t i = 0; i < workers.size(); ++i)
    if (!workers[i].ok && static_cast<int>(i) != first_failed) line(workers[i]);
  return out;
}

LaunchResult launch_workers(const LaunchOptions& o) {
  if (o.nproc < 1 || o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw Error("--nproc " + std::to_string(o.nproc) + " --nnodes " + std::to_string(o.nnodes) +
                    " --node-rank " + std::to_string(o.node_rank) + " is not a run",
                "At least one worker and one node; node ranks count from 0.");
  if (o.master_port == 0 && o.nnodes > 1)
    throw Error("a run over several machines needs --master-port",
                "Every node passes the same port and address.");
  const int port = o.master_port ? o.master_port : free_local_port();
  auto say = [&](const std::string& m) {
    if (o.on_message) o.on_message(m);
  };

  LaunchResult r;
  const pid_t launcher = getpid();
  for (int local = 0; local < o.nproc; ++local) {
    std::vector<std::string> argv_s{o.program};
    argv_s.insert(argv_s.end(), o.args.begin(), o.args.end());
    std::vector<std::string> env_s = worker_environment(o, local, port);
    std::vector<char*> argv = c_strings(argv_s), envp = c_strings(env_s);
    const pid_t pid = fork();
    if (pid < 0) {
      for (const auto& w : r.workers) kill(w.pid, SIGKILL);
      throw Error(std::string("cannot start a worker: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // A worker never outlives its launcher (a launcher killed outright must not leave a run behind).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(125);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    WorkerExit w;
    w.rank = o.node_rank * o.nproc + local;
    w.pid = pid;
    r.workers.push_back(w);
    say("rank " + std::to_string(w.rank) + " is pid " + std::to_string(pid));
  }

  std::vector<bool> running(r.workers.size(), true);
  size_t alive = r.workers.size();
  bool forwarded_stop = false;
  std::optional<Clock::time_point> kill_at;
  while (alive > 0) {
    // The failures seen in this round; a worker killed by a signal is named before one that exited with an
    // error, which is most likely the other ranks noticing that it is gone.
    std::vector<size_t> failed_now;
    for (size_t i = 0; i < r.workers.size(); ++i) {
      if (!running[i]) continue;
      int status = 0;
      const pid_t got = waitpid(r.workers[i].pid, &status, WNOHANG);
      if (got == 0) continue;
      running[i] = false;
      --alive;
      WorkerExit& w = r.workers[i];
      w.wait_status = got < 0 ? -1 : status;
      w.ok = got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      w.description =
          got < 0 ? std::string("could not be waited for: ") + std::strerror(errno) : describe(status);
      if (!w.ok) failed_now.push_back(i);
    }
    std::stable_partition(failed_now.begin(), failed_now.end(),
                          [&](size_t i) { return WIFSIGNALED(r.workers[i].wait_status); });
    if (!failed_now.empty() && r.first_failed < 0) {
      r.first_failed = static_cast<int>(failed_now.front());
      const WorkerExit& w = r.workers[failed_now.front()];
      // Rank 0 ending by itself (after an error) has written its checkpoint: the others have nothing left to
      // save and are likely stuck in a collective, so they go at once. Otherwise they get the grace period
      // (rank 0 writing, or rank 1 when rank 0 is gone).
      const bool saved = w.rank == 0 && WIFEXITED(w.wait_status);
      const std::chrono::seconds wait = saved ? std::chrono::seconds(1) : o.grace;
      kill_at = Clock::now() + wait;
      if (alive > 0)
        say("rank " + std::to_string(w.rank) + " " + w.description + "; the other ranks get " +
            std::to_string(wait.count()) + " s to stop");
    }
    if (o.stop && o.stop->load() && !forwarded_stop) {
      forwarded_stop = true;
      for (size_t i = 0; i < r.workers.size(); ++i)
        if (running[i]) kill(r.workers[i].pid, SIGTERM);
    }
    if (kill_at && Clock::now() >= *kill_at) {
      for (size_t i = 0; i < r.workers.size(); ++i)
        if (running[i]) {
          r.workers[i].stopped_by_us = true;
          kill(r.workers[i].pid, SIGKILL);
        }
      kill_at.reset();
    }
    if (alive > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return r;
}

}  // namespace forja::dist
