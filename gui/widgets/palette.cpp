// Colours of the GUI (see palette.h). Tableau-10-like hues: distinct, print well, readable labels.
#include "gui/widgets/palette.h"

#include <utility>

namespace mplan::gui {

QColor phaseColor(char phase, int chunk) {
  static constexpr std::pair<char, const char*> kPhases[] = {
      {'F', "#4C78A8"}, {'B', "#F58518"}, {'W', "#B279A2"}, {'O', "#6F6F6F"}};
  QColor c("#54A24B");  // any other phase
  for (const auto& [p, hex] : kPhases)
    if (p == phase) c = QColor(hex);
  if (chunk > 0) c = c.lighter(100 + 22 * (chunk % 4));
  return c;
}

QColor streamColor(const QString& s) {
  if (s == "tp") return QColor("#72B7B2");
  if (s == "cp") return QColor("#D4A017");
  if (s == "ep") return QColor("#9D755D");
  if (s == "p2p") return QColor("#54A24B");
  if (s == "dp") return QColor("#E45756");
  return QColor("#4C78A8");
}

QColor bubbleColor() { return QColor("#C8C8C8"); }

QColor componentColor(int k) {
  static const char* c[] = {"#4C78A8", "#9ECAE9", "#72B7B2", "#D4A017", "#9D755D",
                            "#E45756", "#54A24B", "#BAB0AC", "#F2B447", "#6F6F6F"};
  return QColor(c[k >= 0 && k < 10 ? k : 0]);
}

QColor memoryKindColor(int k) {
  static const char* c[] = {"#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#BAB0AC"};
  return QColor(c[k >= 0 && k < 6 ? k : 0]);
}

QColor capacityColor() { return QColor("#C0392B"); }

QColor regressionColor() { return QColor("#D62728"); }

QColor seriesColor(int i) {
  static const char* c[] = {"#4C78A8", "#F58518", "#54A24B", "#B279A2", "#72B7B2", "#9D755D", "#FF9DA6", "#EECA3B"};
  return QColor(c[((i % 8) + 8) % 8]);
}

}  // namespace mplan::gui
