// JournalService: the window's one connection to the run journal, on a thread of its own. SQLite waits on the
// disk (fsync, a busy lock, a slow or full disk) and the window must never wait with it, so the panes hand
// their reads and writes here and get the answer back on the GUI thread.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "forja/error.h"

namespace forja {
class Journal;
}

namespace forja::ui {

struct JournalFailure {
  QString message;
  QString hint;
};

class JournalService : public QObject {
  Q_OBJECT

 public:
  // Opens (and migrates) the journal at `path` on the journal thread; requests made meanwhile wait behind it.
  // Runs whose worker process is gone are marked interrupted as it opens.
  explicit JournalService(const QString& path, QObject* parent = nullptr);
  ~JournalService() override;

  const QString& path() const { return path_; }
  // Set once the journal failed to open (on the GUI thread, before unavailable() is emitted).
  const std::optional<JournalFailure>& open_failure() const { return open_failure_; }

  // Runs work(journal) on the journal thread, requests in the order they were made, then done(result) on the
  // GUI thread, or failed(why) when work threw or the journal is not open. Neither runs once `receiver` is
  // gone, so a pane may close with requests in flight.
  template <class Work, class Done>
  void request(QObject* receiver, Work work, Done done,
               std::function<void(const JournalFailure&)> failed = {});

  // A write whose outcome only matters when it fails.
  template <class Work>
  void write(QObject* receiver, Work work, std::function<void(const JournalFailure&)> failed = {}) {
    request(
        receiver,
        [work = std::move(work)](forja::Journal& j) {
          work(j);
          return true;
        },
        [](bool) {}, std::move(failed));
  }

  // Blocks until every request made so far has run on the journal thread (their answers are then queued for
  // the GUI thread). For tests and for shutdown only: the window itself never waits.
  void wait_for_requests();
  // How many requests were made so far: lets a test wait until answers stop asking for more.
  quint64 requests_made() const { return requests_made_; }

 Q_SIGNALS:
  void opened();
  void unavailable(const QString& message, const QString& hint);

 private:
  struct State;
  void submit(std::function<void(State&)> task);
  static forja::Journal* journal_of(State& state, JournalFailure& failure);

  QString path_;
  std::optional<JournalFailure> open_failure_;
  std::shared_ptr<State> state_;
  quint64 requests_made_ = 0;
  // One thread, first in first out: the journal's writes keep their order, and SQLite sees one connection.
  QThreadPool pool_;
};

template <class Work, class Done>
void JournalService::request(QObject* receiver, Work work, Done done,
                             std::function<void(const JournalFailure&)> failed) {
  using Result = std::invoke_result_t<Work&, forja::Journal&>;
  static_assert(!std::is_void_v<Result>, "use write() for work without a result");
  // Made on the GUI thread, where the receiver lives; only copied and tested elsewhere.
  QPointer<QObject> guard(receiver);
  auto shared_work = std::make_shared<Work>(std::move(work));
  auto shared_done = std::make_shared<Done>(std::move(done));
  submit([this, guard, shared_work, shared_done, failed](State& state) {
    auto result = std::make_shared<std::optional<Result>>();
    JournalFailure why;
    if (forja::Journal* journal = journal_of(state, why)) {
      try {
        result->emplace((*shared_work)(*journal));
      } catch (const forja::Error& e) {
        why = {QString::fromStdString(e.message()), QString::fromStdString(e.hint())};
      } catch (const std::exception& e) {
        why = {QString::fromUtf8(e.what()), {}};
      }
    }
    QMetaObject::invokeMethod(
        this,
        [guard, result, why, shared_done, failed] {
          if (!guard) return;
          if (result->has_value())
            (*shared_done)(std::move(**result));
          else if (failed)
            failed(why);
        },
        Qt::QueuedConnection);
  });
}

}  // namespace forja::ui
