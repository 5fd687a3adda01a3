#include "journal_service.h"

#include <cerrno>
#include <csignal>

#include "forja/journal.h"

namespace forja::ui {
namespace {

// A worker process that is gone leaves its run marked Running; kill(pid, 0) asks whether the pid still
// exists. (A reused pid makes a dead run look alive until that process ends too: the safe side of the
// mistake.)
bool process_alive(int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

// Touched only by tasks on the pool's one thread.
struct JournalService::State {
  std::unique_ptr<forja::Journal> journal;
  JournalFailure open_failure;
};

JournalService::JournalService(const QString& path, QObject* parent)
    : QObject(parent), path_(path), state_(std::make_shared<State>()) {
  pool_.setMaxThreadCount(1);
  pool_.setExpiryTimeout(-1);
  submit([this, file = path.toStdString()](State& state) {
    std::optional<JournalFailure> failure;
    try {
      state.journal = std::make_unique<forja::Journal>(file);
      state.journal->mark_interrupted(process_alive);
    } catch (const forja::Error& e) {
      state.journal.reset();
      failure = JournalFailure{QString::fromStdString(e.message()), QString::fromStdString(e.hint())};
      state.open_failure = *failure;
    }
    QMetaObject::invokeMethod(
        this,
        [this, failure] {
          open_failure_ = failure;
          if (failure)
            Q_EMIT unavailable(failure->message, failure->hint);
          else
            Q_EMIT opened();
        },
        Qt::QueuedConnection);
  });
}

JournalService::~JournalService() {
  // Closed on its own thread too: closing checkpoints the write-ahead log, which writes to the disk.
  submit([](State& state) { state.journal.reset(); });
  pool_.waitForDone();
}

void JournalService::submit(std::function<void(State&)> task) {
  ++requests_made_;
  pool_.start([state = state_, task = std::move(task)] { task(*state); });
}

forja::Journal* JournalService::journal_of(State& state, JournalFailure& failure) {
  if (!state.journal) failure = state.open_failure;
  return state.journal.get();
}

void JournalService::wait_for_requests() {
  pool_.waitForDone();
}

}  // namespace forja::ui
