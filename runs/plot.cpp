// Regression plot: layout of one panel per plan and the SVG writer.
#include "runs/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/json_fields.h"

namespace mplan::runs {

namespace {

constexpr double kWidth = 960, kPanelH = 250, kHeader = 56;
constexpr double kLeft = 70, kRight = 24, kTitleH = 34, kBottom = 42;
const char* kBlue = "#1f77b4";
const char* kGreen = "#2ca02c";
const char* kOrange = "#ff7f0e";
const char* kRed = "#d62728";
const char* kGrey = "#999999";
const char* kInk = "#222222";

PlotPrim text(double x, double y, std::string s, double px, int anchor, const std::string& color = kInk, bool bold = false) {
  PlotPrim p;
  p.kind = PlotPrim::text;
  p.xy = {x, y};
  p.label = std::move(s);
  p.font_px = px;
  p.anchor = anchor;
  p.fill = color;
  p.bold = bold;
  return p;
}

PlotPrim line(double x1, double y1, double x2, double y2, const std::string& color, double w, bool dashed = false) {
  PlotPrim p;
  p.kind = PlotPrim::line;
  p.xy = {x1, y1, x2, y2};
  p.stroke = color;
  p.stroke_width = w;
  p.dashed = dashed;
  return p;
}

PlotPrim circle(double x, double y, double r, const std::string& color) {
  PlotPrim p;
  p.kind = PlotPrim::circle;
  p.xy = {x, y};
  p.radius = r;
  p.fill = color;
  p.stroke = "#ffffff";
  p.stroke_width = 1;
  return p;
}

PlotPrim rect(double x, double y, double w, double h, const std::string& color, double opacity) {
  PlotPrim p;
  p.kind = PlotPrim::rect;
  p.xy = {x, y, w, h};
  p.fill = color;
  p.opacity = opacity;
  return p;
}

std::string fmt_pct(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, v);
  return buf;
}

// Decimals that print every multiple of `step` exactly (2.5 -> 1, 0.25 -> 2, 5 -> 0).
int tick_decimals(double step) {
  for (int d = 0; d < 4; ++d) {
    double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 4;
}

void legend(PlotScene& s) {
  double x = kLeft, y = 40;
  auto item = [&](const char* color, const char* label, bool dashed, bool band) {
    if (band) s.prims.push_back(rect(x, y - 9, 26, 12, color, 0.18));
    s.prims.push_back(line(x, y - 3, x + 26, y - 3, color, 2, dashed));
    s.prims.push_back(text(x + 32, y, label, 12, -1));
    x += 40 + 7.0 * static_cast<double>(std::string(label).size());
  };
  item(kBlue, "measured MFU (median of measured steps)", false, false);
  item(kGreen, "baseline +/- noise band", true, true);
  item(kOrange, "predicted MFU", true, false);
  s.prims.push_back(circle(x + 6, y - 3, 5, kRed));
  s.prims.push_back(text(x + 16, y, "regression", 12, -1));
}

void panel(PlotScene& s, const PlanRegression& p, double top) {
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = top + kTitleH, y1 = top + kPanelH - kBottom;
  std::string status = p.status == "regression" ? "REGRESSION" : p.status;
  s.prims.push_back(text(x0, top + 20, p.label, 13, -1, kInk, true));
  s.prims.push_back(text(x1, top + 20, status + (p.baseline_mfu > 0 ? "  " + fmt_pct(p.change_pct, 1) : ""), 13, 1,
                         p.failed() ? kRed : kInk, p.failed()));
  std::vector<double> vals;
  for (const auto& h : p.history) {
    vals.push_back(h.mfu * 100);
    if (h.predicted_mfu > 0) vals.push_back(h.predicted_mfu * 100);
  }
  if (p.baseline_mfu > 0) {
    vals.push_back((p.baseline_mfu + p.noise_mfu) * 100);
    vals.push_back((p.baseline_mfu - p.noise_mfu) * 100);
  }
  double lo = *std::min_element(vals.begin(), vals.end()), hi = *std::max_element(vals.begin(), vals.end());
  double pad = std::max((hi - lo) * 0.08, std::max(0.05, hi * 0.01));
  auto ticks = nice_ticks(lo - pad, hi + pad, 5);
  AxisMap y{ticks.front(), ticks.back(), y1, y0};
  int decimals = tick_decimals(ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0);
  for (double t : ticks) {
    s.prims.push_back(line(x0, y(t), x1, y(t), "#e6e6e6", 1));
    s.prims.push_back(text(x0 - 6, y(t) + 4, fmt_pct(t, decimals), 11, 1, "#555555"));
  }
  s.prims.push_back(line(x0, y0, x0, y1, kGrey, 1));
  s.prims.push_back(line(x0, y1, x1, y1, kGrey, 1));
  PlotPrim ylabel = text(16, (y0 + y1) / 2, "MFU", 11, 0, "#555555");
  s.prims.push_back(ylabel);
  const size_t n = p.history.size();
  auto xat = [&](size_t i) { return x0 + (double(i) + 0.5) / double(n) * (x1 - x0); };
  if (p.baseline_mfu > 0) {
    double bx0 = x0, bx1 = x1;
    double top_band = y((p.baseline_mfu + p.noise_mfu) * 100), bottom_band = y((p.baseline_mfu - p.noise_mfu) * 100);
    s.prims.push_back(rect(bx0, top_band, bx1 - bx0, std::max(1.0, bottom_band - top_band), kGreen, 0.15));
    s.prims.push_back(line(bx0, y(p.baseline_mfu * 100), bx1, y(p.baseline_mfu * 100), kGreen, 1.5, true));
  }
  PlotPrim pred;
  pred.kind = PlotPrim::polyline;
  pred.stroke = kOrange;
  pred.stroke_width = 1.5;
  pred.dashed = true;
  PlotPrim meas;
  meas.kind = PlotPrim::polyline;
  meas.stroke = kBlue;
  meas.stroke_width = 2;
  for (size_t i = 0; i < n; ++i) {
    meas.xy.push_back(xat(i));
    meas.xy.push_back(y(p.history[i].mfu * 100));
    if (p.history[i].predicted_mfu > 0) {
      pred.xy.push_back(xat(i));
      pred.xy.push_back(y(p.history[i].predicted_mfu * 100));
    }
  }
  if (pred.xy.size() >= 4) s.prims.push_back(pred);
  for (size_t i = 0; i + 1 < pred.xy.size(); i += 2) s.prims.push_back(circle(pred.xy[i], pred.xy[i + 1], 3, kOrange));
  if (meas.xy.size() >= 4) s.prims.push_back(meas);
  size_t stride = std::max<size_t>(1, (n + 9) / 10);
  for (size_t i = 0; i < n; ++i) {
    bool last = i + 1 == n;
    s.prims.push_back(circle(xat(i), y(p.history[i].mfu * 100), last ? 5.5 : 3.5, last && p.failed() ? kRed : kBlue));
    if (i % stride == 0 || last) {
      s.prims.push_back(text(xat(i), y1 + 15, "#" + std::to_string(p.history[i].run_id), 10, 0, "#555555"));
      s.prims.push_back(text(xat(i), y1 + 28, p.history[i].started_at.substr(0, 10), 9, 0, "#777777"));
    }
  }
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  double raw = (hi - lo) / std::max(1, count);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::floor(lo / step) * step; v <= hi + step * 0.999; v += step) t.push_back(v);
  if (t.size() < 2) t.push_back(t.back() + step);
  return t;
}

PlotScene regress_plot(const RegressReport& report) {
  PlotScene s;
  s.width = kWidth;
  s.height = kHeader + kPanelH * std::max<size_t>(1, report.plans.size());
  s.prims.push_back(rect(0, 0, s.width, s.height, "#ffffff", 1));
  std::string title = "MFU per plan: baseline " + report.baseline + ", threshold " + fmt_pct(report.threshold_pct, 1) + ", " +
                      std::to_string(report.regressions()) + " regression(s)";
  s.prims.push_back(text(kLeft, 20, title, 15, -1, kInk, true));
  legend(s);
  if (report.plans.empty()) s.prims.push_back(text(kWidth / 2, kHeader + kPanelH / 2, "no runs with MFU", 14, 0));
  for (size_t i = 0; i < report.plans.size(); ++i) panel(s, report.plans[i], kHeader + kPanelH * double(i));
  return s;
}

std::string scene_to_svg(const PlotScene& s) {
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(s.width) << "\" height=\"" << num(s.height)
    << "\" viewBox=\"0 0 " << num(s.width) << " " << num(s.height)
    << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  for (const auto& p : s.prims) {
    std::string stroke = " stroke=\"" + p.stroke + "\" stroke-width=\"" + num(p.stroke_width) + "\"" +
                         (p.dashed ? " stroke-dasharray=\"6 4\"" : "");
    switch (p.kind) {
      case PlotPrim::line:
        o << "<line x1=\"" << num(p.xy[0]) << "\" y1=\"" << num(p.xy[1]) << "\" x2=\"" << num(p.xy[2]) << "\" y2=\""
          << num(p.xy[3]) << "\"" << stroke << "/>\n";
        break;
      case PlotPrim::polyline: {
        o << "<polyline fill=\"none\"" << stroke << " points=\"";
        for (size_t i = 0; i + 1 < p.xy.size(); i += 2) o << (i ? " " : "") << num(p.xy[i]) << "," << num(p.xy[i + 1]);
        o << "\"/>\n";
        break;
      }
      case PlotPrim::rect:
        o << "<rect x=\"" << num(p.xy[0]) << "\" y=\"" << num(p.xy[1]) << "\" width=\"" << num(p.xy[2]) << "\" height=\""
          << num(p.xy[3]) << "\" fill=\"" << p.fill << "\" fill-opacity=\"" << num(p.opacity) << "\"/>\n";
        break;
      case PlotPrim::circle:
        o << "<circle cx=\"" << num(p.xy[0]) << "\" cy=\"" << num(p.xy[1]) << "\" r=\"" << num(p.radius) << "\" fill=\"" << p.fill
          << "\"" << stroke << "/>\n";
        break;
      case PlotPrim::text:
        o << "<text x=\"" << num(p.xy[0]) << "\" y=\"" << num(p.xy[1]) << "\" font-size=\"" << num(p.font_px) << "\" fill=\""
          << p.fill << "\" text-anchor=\""
          << (p.anchor < 0   ? "start"
              : p.anchor > 0 ? "end"
                             : "middle")
          << "\"" << (p.bold ? " font-weight=\"bold\"" : "") << ">" << esc(p.label) << "</text>\n";
        break;
    }
  }
  o << "</svg>\n";
  return o.str();
}

Status write_plot(const PlotScene& scene, const std::string& path, PngWriter png_writer) {
  auto ends = [&](const char* ext) {
    std::string e = ext;
    if (path.size() < e.size()) return false;
    std::string tail = path.substr(path.size() - e.size());
    for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return tail == e;
  };
  if (ends(".svg")) {
    std::string err = write_text_file_atomic(path, scene_to_svg(scene));
    if (!err.empty()) return Error("--plot " + path + ": " + err);
    return {};
  }
  if (ends(".png")) {
    if (!png_writer)
      return Error("--plot " + path +
                   ": PNG output is not built into this mplan (Qt6 Gui was not found at build "
                   "time); write an .svg file instead");
    return png_writer(scene, path);
  }
  return Error("--plot " + path + ": unknown image type; use a file name ending in .svg or .png");
}

}  // namespace mplan::runs
