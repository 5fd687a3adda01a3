#include "journal_service.h"

#include "forja/journal.h"
#include "train_worker.h"

namespace forja::ui {

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
      state.journal->mark_interrupted([](int64_t pid) { return TrainWorker::process_alive(pid); });
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
