#include "serve_worker.h"

#include <QThread>

#include "forja/error.h"

namespace forja::ui {

ServeWorker::ServeWorker(QObject* parent) : QObject(parent) {
  thread_ = new QThread;
  thread_->setObjectName(QStringLiteral("serve"));
  on_thread_ = new QObject;
  on_thread_->moveToThread(thread_);
  thread_->start();
}

ServeWorker::~ServeWorker() {
  QMetaObject::invokeMethod(
      on_thread_,
      [this] {
        server_.reset();  // stops serving: the answer in progress is cancelled, the waiting ones refused
        QThread::currentThread()->quit();
      },
      Qt::QueuedConnection);
  thread_->wait();
  delete on_thread_;
  delete thread_;
}

void ServeWorker::start(const forja::ServeOptions& options) {
  QMetaObject::invokeMethod(
      on_thread_,
      [this, options] {
        try {
          server_.reset();
          server_ = std::make_unique<forja::Server>(options);
          server_->start();
          Q_EMIT started(QString::fromStdString(server_->url()));
        } catch (const forja::Error& e) {
          server_.reset();
          Q_EMIT failed(QString::fromStdString(e.message()), QString::fromStdString(e.hint()));
        } catch (const std::exception& e) {
          server_.reset();
          Q_EMIT failed(
              QString::fromUtf8(e.what()),
              tr("This is an error Forja did not expect. Please report it with the steps that led to it."));
        }
      },
      Qt::QueuedConnection);
}

void ServeWorker::stop() {
  QMetaObject::invokeMethod(
      on_thread_,
      [this] {
        server_.reset();
        Q_EMIT stopped();
      },
      Qt::QueuedConnection);
}

}  // namespace forja::ui
