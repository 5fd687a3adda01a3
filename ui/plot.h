// QCustomPlot for a QT_NO_KEYWORDS build: its header still says `signals`, `slots`, `emit` and `foreach`, so
// they are spelled out for the duration of the include and removed again. Include this, never qcustomplot.h.
#pragma once

#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
