// A conversation written out: as Markdown to read or share, and as one line of training data in the chat
// shape the Data pane and `forja-cli train` read ({"messages": [{"role", "content"}, ...]}), so that a good
// chat can become an example.
#pragma once

#include <QByteArray>
#include <QString>
#include <QVector>

namespace forja::ui {

struct ExportedTurn {
  QString role;  // "user" or "assistant"
  QString text;
  bool stopped = false;  // an answer cut short by Stop
};

QString chat_as_markdown(const QString& title, const QString& system, const QVector<ExportedTurn>& turns);
// One JSON line with its newline. An exchange whose answer was stopped is left out (a cut answer is not
// something to learn); empty when no whole exchange is left.
QByteArray chat_as_training_record(const QString& system, const QVector<ExportedTurn>& turns);

}  // namespace forja::ui
