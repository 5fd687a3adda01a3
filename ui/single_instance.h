// SingleInstance: one window per user. A second `forja` hands its model folder (if any) to the first, which
// comes to the front and opens it, and then leaves. Through a local socket named after the user, so that
// another user's Forja on the same machine is a separate instance.
#pragma once

#include <QObject>
#include <QString>

class QLocalServer;

namespace forja::ui {

class SingleInstance : public QObject {
  Q_OBJECT

 public:
  // `name`: the socket's name; empty gives the user's ("forja-<uid>").
  explicit SingleInstance(QString name = {}, QObject* parent = nullptr);
  ~SingleInstance() override;

  // True when another instance answered and took `model_dir` (empty: just come to the front): this one should
  // leave. Otherwise this one runs, and later instances hand over to it (unless a first one holds the name
  // without answering: then this one runs on its own).
  bool hand_over_or_listen(const QString& model_dir);
  QString name() const { return name_; }

 Q_SIGNALS:
  // A later instance asked this one to come to the front, and to open `model_dir` unless it is empty.
  void activated(const QString& model_dir);

 private:
  QString name_;
  QLocalServer* server_ = nullptr;
};

}  // namespace forja::ui
