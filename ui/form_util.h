// Spin boxes and the scroll area of the panes' settings forms (the Train pane's hyperparameters, the Chat
// pane's sampling) and of the Model pane's facts.
#pragma once

class QDoubleSpinBox;
class QScrollArea;
class QSpinBox;
class QWidget;

namespace forja::ui {

QSpinBox* int_box(int lo, int hi, int value);
QDoubleSpinBox* real_box(double lo, double hi, double value, int decimals, double step);
// A scroll area for a settings form that scrolls down only: it asks its splitter or layout for the width the
// form needs (its minimum and preferred widths follow the form's, in any language and font size), so that a
// field or label is never cut or hidden behind a sideways scroll bar.
// WrappedText: for wrapped labels rather than a form: no frame, and the height it asks for is what the text
// needs at the width it has, so that it follows the window's width.
enum class ScrollContent { Form, WrappedText };
QScrollArea* vertical_scroll_area(QWidget* content, ScrollContent kind = ScrollContent::Form);

}  // namespace forja::ui
