// Light and dark: the window follows the system palette (Qt hands it over; on a theme switch every widget
// gets a PaletteChange event). Plots are not styled by the palette on their own, so they ask here.
#pragma once

#include <QColor>
#include <QPalette>

class QCustomPlot;

namespace forja::ui {

bool is_dark(const QPalette& palette);
// Colors the axes, grid, legend and background of `plot` from `palette`; call again on PaletteChange.
void style_plot(QCustomPlot* plot, const QPalette& palette);
// The i-th series color, readable on the palette's base color.
QColor series_color(int index, const QPalette& palette);

}  // namespace forja::ui
