#include "form_util.h"

#include <QDoubleSpinBox>
#include <QSpinBox>

namespace forja::ui {

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
