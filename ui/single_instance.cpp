// The single-instance handshake: the new instance connects, writes the folder as one UTF-8 line, and waits
// for "ok"; a socket left by a crashed instance answers nothing and is removed.
#include "single_instance.h"

#include <QLocalServer>
#include <QLocalSocket>

#include <unistd.h>

namespace forja::ui {

namespace {
constexpr int kConnectMs = 2000;
constexpr int kAnswerMs = 10000;
}  // namespace

SingleInstance::SingleInstance(QString name, QObject* parent)
    : QObject(parent), name_(name.isEmpty() ? QStringLiteral("forja-%1").arg(::getuid()) : std::move(name)) {}

SingleInstance::~SingleInstance() = default;

bool SingleInstance::hand_over_or_listen(const QString& model_dir) {
  {
    QLocalSocket peer;
    peer.connectToServer(name_);
    if (peer.waitForConnected(kConnectMs)) {
      peer.write(model_dir.toUtf8() + '\n');
      peer.flush();
      // The first instance may be busy for a moment (loading a model): give it time to answer.
      if (peer.waitForReadyRead(kAnswerMs) && peer.readAll().startsWith("ok")) return true;
      // Someone holds the name but does not answer: leave it alone, and run without the handover.
      return false;
    }
  }
  server_ = new QLocalServer(this);
  server_->setSocketOptions(QLocalServer::UserAccessOption);
  if (!server_->listen(name_)) {
    // A socket file with nobody behind it (the connection was refused: the last instance crashed): take its
    // place.
    QLocalServer::removeServer(name_);
    if (!server_->listen(name_)) return false;  // no handover possible; this instance still runs
  }
  connect(server_, &QLocalServer::newConnection, this, [this] {
    while (QLocalSocket* s = server_->nextPendingConnection()) {
      connect(s, &QLocalSocket::disconnected, s, &QObject::deleteLater);
      connect(s, &QLocalSocket::readyRead, this, [this, s] {
        if (!s->canReadLine()) return;
        const QString dir = QString::fromUtf8(s->readLine()).trimmed();
        s->write("ok\n");
        s->flush();
        Q_EMIT activated(dir);
      });
    }
  });
  return false;
}

}  // namespace forja::ui
