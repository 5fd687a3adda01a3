// Number and time formatting for the window.
#include "format.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QLocale>

#include <cmath>

namespace forja::ui {
namespace {
QString tr(const char* text) {
  return QCoreApplication::translate("forja::ui::Format", text);
}
}  // namespace

QString format_bytes(int64_t bytes) {
  if (bytes < 1024) return tr("%1 B").arg(bytes);
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
  if (count >= 1'000'000'000) return tr("%1 B").arg(QLocale().toString(v / 1e9, 'f', 2));
  if (count >= 1'000'000) return tr("%1 M").arg(QLocale().toString(v / 1e6, 'f', 1));
  if (count >= 1'000) return tr("%1 K").arg(QLocale().toString(v / 1e3, 'f', 1));
  return QLocale().toString(static_cast<qlonglong>(count));
}

QString format_duration_ms(int64_t ms) {
  const int64_t s = std::max<int64_t>(0, ms / 1000);
  if (s < 60) return tr("%1 s").arg(s);
  if (s < 3600) return tr("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
  return tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString format_timestamp_ms(int64_t ms) {
  return QLocale().toString(QDateTime::fromMSecsSinceEpoch(ms), QLocale::ShortFormat);
}

QString format_loss(std::optional<double> loss) {
  if (!loss || std::isnan(*loss)) return QStringLiteral("—");
  return QLocale().toString(*loss, 'f', 4);
}

}  // namespace forja::ui
