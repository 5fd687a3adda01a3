// Plot styling derived from the palette.
#include "theme.h"

#include "plot.h"

namespace forja::ui {

bool is_dark(const QPalette& palette) {
  return palette.color(QPalette::Window).lightness() < 128;
}

void style_plot(QCustomPlot* plot, const QPalette& palette) {
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  QColor grid = text;
  grid.setAlpha(40);
  plot->setBackground(base);
  for (QCPAxis* axis : plot->axisRect()->axes()) {
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
  }
  plot->legend->setBrush(base);
  plot->legend->setTextColor(text);
  plot->legend->setBorderPen(QPen(grid));
  plot->replot();
}

QColor series_color(int index, const QPalette& palette) {
  // Tableau-10 hues: distinct for the first ten runs and for the common kinds of color blindness.
  static const QRgb light[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                               0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  QColor c = QColor::fromRgb(light[index % 10]);
  return is_dark(palette) ? c.lighter(130) : c;
}

}  // namespace forja::ui
