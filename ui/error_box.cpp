// ErrorBox: layout and severity icons.
#include "error_box.h"

#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QVBoxLayout>

namespace forja::ui {

ErrorBox::ErrorBox(QWidget* parent) : QFrame(parent) {
  setFrameShape(QFrame::StyledPanel);
  icon_ = new QLabel(this);
  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("errorMessage"));
  hint_ = new QLabel(this);
  hint_->setObjectName(QStringLiteral("errorHint"));
  for (QLabel* l : {message_, hint_}) {
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setTextFormat(Qt::PlainText);
  }
  QFont bold = message_->font();
  bold.setBold(true);
  message_->setFont(bold);
  auto* text = new QVBoxLayout;
  text->addWidget(message_);
  text->addWidget(hint_);
  auto* row = new QHBoxLayout(this);
  row->addWidget(icon_, 0, Qt::AlignTop);
  row->addLayout(text, 1);
  hide();
}

void ErrorBox::show_error(const QString& message, const QString& hint, Severity severity) {
  const char* icon = severity == Severity::Error     ? ":/icons/severity-error.svg"
                     : severity == Severity::Warning ? ":/icons/severity-warning.svg"
                                                     : ":/icons/severity-info.svg";
  icon_->setPixmap(QIcon(QString::fromLatin1(icon)).pixmap(24, 24));
  message_->setText(message);
  hint_->setText(hint);
  hint_->setVisible(!hint.isEmpty());
  show();
}

void ErrorBox::clear() {
  message_->clear();
  hint_->clear();
  hide();
}

QString ErrorBox::message() const {
  return message_->text();
}
QString ErrorBox::hint() const {
  return hint_->text();
}

}  // namespace forja::ui
