#include "form_util.h"

#include <QDoubleSpinBox>
#include <QEvent>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <algorithm>

namespace forja::ui {

namespace {

class VerticalScrollArea : public QScrollArea {
 public:
  VerticalScrollArea(QWidget* content, ScrollContent kind) : wrapped_(kind == ScrollContent::WrappedText) {
    setWidget(content);
    setWidgetResizable(true);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    if (wrapped_) setFrameShape(QFrame::NoFrame);
    content->installEventFilter(this);
  }

  QSize minimumSizeHint() const override {
    return with_width(QScrollArea::minimumSizeHint(), widget()->minimumSizeHint());
  }
  QSize sizeHint() const override {
    QSize hint = with_width(QScrollArea::sizeHint(), widget()->sizeHint());
    if (wrapped_) {
      // Wrapped lines: the height the content needs at the width it has (never below its narrowest).
      const QWidget* content = widget();
      const int width = std::max(viewport()->width(), content->minimumSizeHint().width());
      hint.setHeight(content->hasHeightForWidth() ? content->heightForWidth(width)
                                                  : content->sizeHint().height());
    }
    return hint;
  }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    // The form's needs change with its texts (a language, a longer value): ask for a new width.
    if (watched == widget() && event->type() == QEvent::LayoutRequest) updateGeometry();
    return QScrollArea::eventFilter(watched, event);
  }
  void resizeEvent(QResizeEvent* event) override {
    QScrollArea::resizeEvent(event);
    if (wrapped_ && event->size().width() != event->oldSize().width()) updateGeometry();
  }

 private:
  QSize with_width(QSize hint, QSize content) const {
    hint.setWidth(content.width() + verticalScrollBar()->sizeHint().width() + 2 * frameWidth());
    return hint;
  }

  bool wrapped_;
};

}  // namespace

QScrollArea* vertical_scroll_area(QWidget* content, ScrollContent kind) {
  return new VerticalScrollArea(content, kind);
}

QSpinBox* int_box(int lo, int hi, int value) {
  auto* b = new QSpinBox;
  b->setRange(lo, hi);
  b->setValue(value);
  return b;
}

QDoubleSpinBox* real_box(double lo, double hi, double value, int decimals, double step) {
  auto* b = new QDoubleSpinBox;
  b->setDecimals(decimals);
  b->setRange(lo, hi);
  b->setSingleStep(step);
  b->setValue(value);
  return b;
}

}  // namespace forja::ui
