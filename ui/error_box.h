// ErrorBox: how a pane shows a forja::Error: the message (what went wrong, naming the file) in bold and the
// hint (what to do) under it, with a severity icon. Hidden until set.
#pragma once

#include <QFrame>

class QLabel;

namespace forja::ui {

class ErrorBox : public QFrame {
  Q_OBJECT

 public:
  enum class Severity { Info, Warning, Error };
  explicit ErrorBox(QWidget* parent = nullptr);
  void show_error(const QString& message, const QString& hint, Severity severity = Severity::Error);
  void clear();
  QString message() const;
  QString hint() const;

 private:
  QLabel* icon_;
  QLabel* message_;
  QLabel* hint_;
};

}  // namespace forja::ui
