// Spin boxes as the panes' settings forms use them (the Train pane's hyperparameters, the Chat pane's
// sampling).
#pragma once

class QDoubleSpinBox;
class QSpinBox;

namespace forja::ui {

QSpinBox* int_box(int lo, int hi, int value);
QDoubleSpinBox* real_box(double lo, double hi, double value, int decimals, double step);

}  // namespace forja::ui
