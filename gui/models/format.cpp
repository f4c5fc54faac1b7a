// Number formatting shared by the GUI's models and views.
#include "gui/models/format.h"

#include <QLocale>
#include <algorithm>
#include <cmath>

namespace mplan::gui {

QString formatTime(double s) {
  double a = std::fabs(s);
  if (a >= 1.0) return QString::number(s, 'f', a >= 100 ? 1 : 3) + " s";
  if (a >= 1e-3) return QString::number(s * 1e3, 'f', a >= 0.1 ? 1 : 2) + " ms";
  if (a == 0) return "0";
  if (a >= 1e-6) return QString::number(s * 1e6, 'f', a >= 1e-4 ? 0 : 1) + " us";
  return QString::number(s * 1e9, 'f', 0) + " ns";
}

QString formatTimeTick(double s, double step) {
  if (std::fabs(s) < step * 1e-6) return "0";
  double scale = 1;
  const char* unit = "s";
  if (step < 1e-7)
    scale = 1e9, unit = "ns";
  else if (step < 1e-4)
    scale = 1e6, unit = "us";
  else if (step < 0.1)
    scale = 1e3, unit = "ms";
  int decimals = std::max(0, int(std::ceil(-std::log10(step * scale) - 1e-9)));
  return QString::number(s * scale, 'f', std::min(decimals, 6)) + " " + unit;
}

QString formatPercent(double f, int decimals) { return QString::number(f * 100.0, 'f', decimals) + "%"; }

QString formatGiB(double gib, int decimals) { return QString::number(gib, 'f', decimals) + " GiB"; }

QString formatCount(double v) { return QLocale(QLocale::English).toString(v, 'f', 0); }

QString recomputeLabel(const ParallelConfig& p) {
  switch (p.recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return p.recompute_num_layers > 0 ? QString("full(%1)").arg(p.recompute_num_layers) : QString("full");
  }
  return {};
}

QString scheduleLabel(const ParallelConfig& p) { return QString::fromStdString(to_string(p.schedule)); }

QString layoutLabel(const ParallelConfig& p) {
  QStringList parts;
  parts << QString("tp%1").arg(p.tp);
  if (p.sp) parts << "sp";
  parts << QString("pp%1").arg(p.pp);
  if (p.vpp > 1) parts << QString("vpp%1").arg(p.vpp);
  if (p.num_layers_in_first_pipeline_stage || p.num_layers_in_last_pipeline_stage)
    parts << QString("first%1 last%2").arg(p.num_layers_in_first_pipeline_stage).arg(p.num_layers_in_last_pipeline_stage);
  parts << QString("dp%1").arg(p.dp());
  if (p.cp > 1) parts << QString("cp%1").arg(p.cp);
  if (p.ep > 1) parts << QString("ep%1").arg(p.ep);
  if (p.etp > 1) parts << QString("etp%1").arg(p.etp);
  parts << QString("mbs%1").arg(p.micro_batch_size);
  parts << QString("z%1").arg(p.zero);
  if (p.tp_comm_overlap) parts << "tpov";
  if (p.recompute == Recompute::selective) parts << "sel";
  if (p.recompute == Recompute::full)
    parts << (p.recompute_num_layers > 0 ? QString("full%1").arg(p.recompute_num_layers) : QString("full"));
  return parts.join(' ');
}

}  // namespace mplan::gui
