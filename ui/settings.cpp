// QSettings keys of the Settings dialog's choices, and how they reach the engine.
#include "settings.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

#include <optional>

namespace forja::ui {

namespace {
constexpr auto kThemeKey = "ui/theme";
constexpr auto kRunsDirKey = "paths/runs";
constexpr auto kHubCacheKey = "paths/hub_cache";
constexpr auto kGpuKey = "engine/gpu";

void set_or_remove(const char* key, const QVariant& value, bool remove) {
  QSettings s;
  if (remove)
    s.remove(QLatin1String(key));
  else
    s.setValue(QLatin1String(key), value);
}

// A dark palette for the Fusion style: Qt 6.4 has no dark mode of its own to switch to on every desktop.
QPalette dark_palette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
  const QColor disabled(0x7f, 0x7f, 0x7f), highlight(0x35, 0x84, 0xe4);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Light, window.lighter(150));
  p.setColor(QPalette::Midlight, window.lighter(125));
  p.setColor(QPalette::Mid, window.darker(120));
  p.setColor(QPalette::Dark, window.darker(150));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, highlight.lighter(130));
  p.setColor(QPalette::LinkVisited, highlight.lighter(110));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

struct Original {
  QString style;
  QPalette palette;
};
// The desktop's own style and palette, taken before the first change.
const Original& original() {
  static const Original o{QApplication::style()->name(), QApplication::palette()};
  return o;
}
}  // namespace

Theme theme_setting() {
  const QString v = QSettings().value(QLatin1String(kThemeKey)).toString();
  if (v == QLatin1String("light")) return Theme::Light;
  if (v == QLatin1String("dark")) return Theme::Dark;
  return Theme::System;
}

void set_theme_setting(Theme theme) {
  set_or_remove(kThemeKey, theme == Theme::Light ? QStringLiteral("light") : QStringLiteral("dark"),
                theme == Theme::System);
}

void apply_theme(Theme theme) {
  const Original& o = original();
  if (theme == Theme::System) {
    QApplication::setStyle(QStyleFactory::create(o.style));
    QApplication::setPalette(o.palette);
    return;
  }
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QApplication::setPalette(theme == Theme::Dark ? dark_palette() : QApplication::style()->standardPalette());
}

QString runs_dir_setting() {
  return QSettings().value(QLatin1String(kRunsDirKey)).toString();
}

void set_runs_dir_setting(const QString& dir) {
  set_or_remove(kRunsDirKey, dir, dir.isEmpty());
}

QString hub_cache_setting() {
  return QSettings().value(QLatin1String(kHubCacheKey)).toString();
}

void set_hub_cache_setting(const QString& dir) {
  set_or_remove(kHubCacheKey, dir, dir.isEmpty());
}

int gpu_setting() {
  bool ok = false;
  const int v = QSettings().value(QLatin1String(kGpuKey), -1).toInt(&ok);
  return ok && v >= 0 ? v : -1;
}

void set_gpu_setting(int index) {
  set_or_remove(kGpuKey, index, index < 0);
}

void apply_hub_cache_setting() {
  // HF_HUB_CACHE as the process started, given back when the chosen folder is cleared.
  static const std::optional<QByteArray> started_with =
      qEnvironmentVariableIsSet("HF_HUB_CACHE") ? std::optional(qgetenv("HF_HUB_CACHE")) : std::nullopt;
  if (const QString cache = hub_cache_setting(); !cache.isEmpty())
    qputenv("HF_HUB_CACHE", cache.toUtf8());
  else if (started_with)
    qputenv("HF_HUB_CACHE", *started_with);
  else
    qunsetenv("HF_HUB_CACHE");
}

void apply_environment_settings() {
  apply_hub_cache_setting();
  if (const int gpu = gpu_setting(); gpu >= 0) {
    qputenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    qputenv("CUDA_VISIBLE_DEVICES", QByteArray::number(gpu));
  }
}

}  // namespace forja::ui
