// forja::ui::initialize(): what the window needs before the first widget exists — the compiled-in icons and
// translations, and the application's identity (used by QSettings and the XDG paths).
#pragma once

#include <QList>
#include <QLocale>
#include <QString>

class QApplication;

namespace forja::ui {

// Registers resources, sets organization/application names (unless already set, as tests do) and installs the
// translators for the language of the Settings dialog (the system's when none is chosen).
void initialize(QApplication& app);

// The languages the window speaks: a code for QSettings ("en", "pt_BR") and the language's own name.
struct Language {
  QString code;
  QString name;
};
QList<Language> available_languages();
// The language chosen in Settings; empty means the system's. It takes effect at the next start.
QString language_setting();
void set_language_setting(const QString& code);
// The locale the window speaks: the Settings choice, else the system's.
QLocale ui_locale();
// Replaces the application's translators (Forja's own, and Qt's for its standard dialogs) with those of
// `locale`, and makes it the default locale for numbers and dates. False when Forja has no translation for
// it (the window then speaks English).
bool install_translations(const QLocale& locale);

}  // namespace forja::ui
