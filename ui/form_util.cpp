#include "form_util.h"

#include <QDoubleSpinBox>
#include <QEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>

namespace forja::ui {

namespace {

class VerticalScrollArea : public QScrollArea {
 public:
  explicit VerticalScrollArea(QWidget* content) {
    setWidget(content);
    setWidgetResizable(true);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    content->installEventFilter(this);
  }

  QSize minimumSizeHint() const override {
    return with_width(QScrollArea::minimumSizeHint(), widget()->minimumSizeHint());
  }
  QSize sizeHint() const override { return with_width(QScrollArea::sizeHint(), widget()->sizeHint()); }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    // The form's needs change with its texts (a language, a longer value): ask for a new width.
    if (watched == widget() && event->type() == QEvent::LayoutRequest) updateGeometry();
    return QScrollArea::eventFilter(watched, event);
  }

 private:
  QSize with_width(QSize hint, QSize content) const {
    hint.setWidth(content.width() + verticalScrollBar()->sizeHint().width() + 2 * frameWidth());
    return hint;
  }
};

}  // namespace

QScrollArea* vertical_scroll_area(QWidget* content) {
  return new VerticalScrollArea(content);
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
