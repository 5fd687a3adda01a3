// Number and time formatting for the window.
#include "format.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QLocale>
#include <QRegularExpression>

#include <cmath>

namespace forja::ui {

QString format_bytes(int64_t bytes) {
  if (bytes < 1024) return QCoreApplication::translate("forja::ui::Format", "%1 B", "bytes").arg(bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  return QStringLiteral("%1 %2").arg(QLocale().toString(value, 'f', 2), QString::fromLatin1(units[unit]));
}

QString format_count(int64_t count) {
  const double v = static_cast<double>(count);
  if (count >= 1'000'000'000)
    return QCoreApplication::translate("forja::ui::Format", "%1 B", "billions")
        .arg(QLocale().toString(v / 1e9, 'f', 2));
  if (count >= 1'000'000)
    return QCoreApplication::translate("forja::ui::Format", "%1 M", "millions")
        .arg(QLocale().toString(v / 1e6, 'f', 1));
  if (count >= 1'000)
    return QCoreApplication::translate("forja::ui::Format", "%1 K", "thousands")
        .arg(QLocale().toString(v / 1e3, 'f', 1));
  return QLocale().toString(static_cast<qlonglong>(count));
}

QString format_duration_ms(int64_t ms) {
  const int64_t s = std::max<int64_t>(0, ms / 1000);
  if (s < 60) return QCoreApplication::translate("forja::ui::Format", "%1 s", "seconds").arg(s);
  if (s < 3600)
    return QCoreApplication::translate("forja::ui::Format", "%1 min %2 s", "minutes and seconds")
        .arg(s / 60)
        .arg(s % 60, 2, 10, QLatin1Char('0'));
  return QCoreApplication::translate("forja::ui::Format", "%1 h %2 min", "hours and minutes")
      .arg(s / 3600)
      .arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString format_timestamp_ms(int64_t ms) {
  return QLocale().toString(QDateTime::fromMSecsSinceEpoch(ms), QLocale::ShortFormat);
}

QString format_loss(std::optional<double> loss) {
  if (!loss || std::isnan(*loss)) return QStringLiteral("—");
  return QLocale().toString(*loss, 'f', 4);
}

QStringList distinct_folder_names(const QStringList& dirs) {
  static const QRegularExpression snapshot(QStringLiteral("/models--([^/]+)--([^/]+)/snapshots/[^/]+/?$"));
  QList<QStringList> parts;
  for (const QString& d : dirs) parts << QDir::cleanPath(d).split(u'/', Qt::SkipEmptyParts);
  auto tail = [&](int i, int n) {
    const QStringList& p = parts[i];
    return p.mid(std::max<qsizetype>(0, p.size() - n)).join(u'/');
  };
  QStringList out;
  for (int i = 0; i < dirs.size(); ++i) {
    if (const auto m = snapshot.match(QDir::cleanPath(dirs[i])); m.hasMatch()) {
      out << m.captured(1) + u'/' + m.captured(2);
      continue;
    }
    int n = 1;
    auto clashes = [&] {
      for (int j = 0; j < dirs.size(); ++j)
        if (j != i && tail(j, n) == tail(i, n)) return true;
      return false;
    };
    while (n < parts[i].size() && clashes()) ++n;
    out << tail(i, n);
  }
  return out;
}

QString adapter_display_name(const QString& dir) {
  const QStringList p = QDir::cleanPath(dir).split(u'/', Qt::SkipEmptyParts);
  if (p.size() < 2 || p.last() != QLatin1String("adapter")) return p.isEmpty() ? dir : p.last();
  if (p.size() >= 4 && p[p.size() - 3] == QLatin1String("checkpoints"))
    return p[p.size() - 4] + QStringLiteral(" · ") + p[p.size() - 2];
  return p[p.size() - 2];
}

QString device_display_name(const QString& device) {
  if (device == QLatin1String("cpu")) return QStringLiteral("CPU");
  if (device.startsWith(QLatin1String("cuda"))) return QStringLiteral("GPU ") + device;
  return device;
}

QString dtype_display_name(const QString& dtype) {
  if (dtype == QLatin1String("Float")) return QStringLiteral("fp32");
  if (dtype == QLatin1String("BFloat16")) return QStringLiteral("bf16");
  if (dtype == QLatin1String("Half")) return QStringLiteral("fp16");
  return dtype;
}

}  // namespace forja::ui
