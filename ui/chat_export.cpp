#include "chat_export.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace forja::ui {

QString chat_as_markdown(const QString& title, const QString& system, const QVector<ExportedTurn>& turns) {
  QString md = QStringLiteral("# %1\n").arg(title);
  if (!system.trimmed().isEmpty()) md += QStringLiteral("\n**System:** %1\n").arg(system.trimmed());
  for (const ExportedTurn& t : turns) {
    md += t.role == QLatin1String("user") ? QStringLiteral("\n## User\n\n")
                                          : QStringLiteral("\n## Assistant\n\n");
    md += t.text.trimmed() + QLatin1Char('\n');
    if (t.stopped) md += QStringLiteral("\n*(stopped)*\n");
  }
  return md;
}

QByteArray chat_as_training_record(const QString& system, const QVector<ExportedTurn>& turns) {
  QJsonArray messages;
  if (!system.trimmed().isEmpty())
    messages.append(QJsonObject{{QStringLiteral("role"), QStringLiteral("system")},
                                {QStringLiteral("content"), system.trimmed()}});
  bool any = false;
  for (qsizetype i = 0; i + 1 < turns.size(); ++i) {
    const ExportedTurn& user = turns[i];
    const ExportedTurn& answer = turns[i + 1];
    if (user.role != QLatin1String("user") || answer.role != QLatin1String("assistant")) continue;
    ++i;
    if (answer.stopped) continue;
    messages.append(QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                {QStringLiteral("content"), user.text}});
    messages.append(QJsonObject{{QStringLiteral("role"), QStringLiteral("assistant")},
                                {QStringLiteral("content"), answer.text}});
    any = true;
  }
  if (!any) return {};
  return QJsonDocument(QJsonObject{{QStringLiteral("messages"), messages}}).toJson(QJsonDocument::Compact) +
         '\n';
}

}  // namespace forja::ui
