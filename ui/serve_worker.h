// ServeWorker: the Chat pane's "Serve this model" switch. A forja::Server (its own copy of the model, and
// the OpenAI-compatible API on localhost) is loaded, started and stopped on a thread of its own, since a
// model load takes seconds and stopping waits for the answer in progress; the GUI thread only queues the
// requests and receives signals. The server's HTTP threads answer clients without touching the GUI.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "forja/serve.h"

class QThread;

namespace forja::ui {

class ServeWorker : public QObject {
  Q_OBJECT

 public:
  explicit ServeWorker(QObject* parent = nullptr);
  // Stops the server (if any) and waits for the thread.
  ~ServeWorker() override;

  // Loads the model (and adapter) and starts serving; started() or failed() follows. A server already
  // running is stopped first.
  void start(const forja::ServeOptions& options);
  // stopped() follows (also when nothing was serving).
  void stop();

 Q_SIGNALS:
  void started(const QString& url);
  void failed(const QString& message, const QString& hint);
  void stopped();

 private:
  QThread* thread_;
  QObject* on_thread_;  // lives on thread_: the context the queued requests run in
  // Touched only on the worker thread.
  std::unique_ptr<forja::Server> server_;
};

}  // namespace forja::ui
