// PNG writer for plot scenes: QImage + QPainter. Text needs fonts, which need a QGuiApplication;
// one is created on the offscreen platform when the program has none (command-line use).
#include "runs/plot_png.h"

#include <QBuffer>
#include <QByteArray>
#include <QColor>
#include <QFile>
#include <QFont>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <QPen>
#include <QPolygonF>
#include <QString>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string_view>

#include "core/safe_output.h"

namespace mplan::runs {

namespace {

QColor color(const std::string& c, double opacity = 1) {
  if (c == "none") return Qt::transparent;
  QColor q(QString::fromStdString(c));
  q.setAlphaF(static_cast<float>(opacity));
  return q;
}

void draw(QPainter& g, const PlotPrim& p) {
  QPen pen(p.stroke == "none" ? QPen(Qt::NoPen) : QPen(color(p.stroke), p.stroke_width));
  if (p.dashed) pen.setDashPattern({6.0 / std::max(1.0, p.stroke_width), 4.0 / std::max(1.0, p.stroke_width)});
  switch (p.kind) {
    case PlotPrim::line:
      g.setPen(pen);
      g.drawLine(QPointF(p.xy[0], p.xy[1]), QPointF(p.xy[2], p.xy[3]));
      break;
    case PlotPrim::polyline: {
      QPolygonF poly;
      for (size_t i = 0; i + 1 < p.xy.size(); i += 2) poly << QPointF(p.xy[i], p.xy[i + 1]);
      g.setPen(pen);
      g.setBrush(Qt::NoBrush);
      g.drawPolyline(poly);
      break;
    }
    case PlotPrim::rect:
      g.setPen(Qt::NoPen);
      g.setBrush(color(p.fill, p.opacity));
      g.drawRect(QRectF(p.xy[0], p.xy[1], p.xy[2], p.xy[3]));
      break;
    case PlotPrim::circle:
      g.setPen(pen);
      g.setBrush(color(p.fill));
      g.drawEllipse(QPointF(p.xy[0], p.xy[1]), p.radius, p.radius);
      break;
    case PlotPrim::text: {
      QFont f("DejaVu Sans");
      f.setPixelSize(std::max(1, static_cast<int>(std::lround(p.font_px))));
      f.setBold(p.bold);
      g.setFont(f);
      g.setPen(color(p.fill));
      QString s = QString::fromStdString(p.label);
      double w = QFontMetricsF(f).horizontalAdvance(s);
      double x = p.xy[0] - (p.anchor < 0 ? 0 : p.anchor > 0 ? w : w / 2);
      g.drawText(QPointF(x, p.xy[1]), s);
      break;
    }
  }
}

// Qt's informational warnings (e.g. "XDG_RUNTIME_DIR not set") are noise on a command line.
void quiet_handler(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtCriticalMsg || type == QtFatalMsg) std::fprintf(stderr, "Qt: %s\n", msg.toLocal8Bit().constData());
}

}  // namespace

Status write_png(const PlotScene& scene, const std::string& path) {
  std::unique_ptr<QGuiApplication> app;
  QtMessageHandler previous = nullptr;
  if (!QGuiApplication::instance()) {
    previous = qInstallMessageHandler(quiet_handler);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char arg0[] = "mplan";
    static char* argv[] = {arg0, nullptr};
    app = std::make_unique<QGuiApplication>(argc, argv);
  }
  struct Restore {
    QtMessageHandler h;
    bool active;
    ~Restore() {
      if (active) qInstallMessageHandler(h);
    }
  } restore{previous, app != nullptr};
  const double scale = scene.height <= 8000 ? 2.0 : 1.0;  // crisp on high-density screens, bounded memory
  QImage img(static_cast<int>(scene.width * scale), static_cast<int>(scene.height * scale), QImage::Format_ARGB32);
  img.fill(Qt::white);
  {
    QPainter g(&img);
    g.setRenderHint(QPainter::Antialiasing);
    g.setRenderHint(QPainter::TextAntialiasing);
    g.scale(scale, scale);
    for (const auto& p : scene.prims) draw(g, p);
  }
  QByteArray png;
  QBuffer buffer(&png);
  buffer.open(QIODevice::WriteOnly);
  if (!img.save(&buffer, "PNG")) return Error("--plot " + path + ": cannot encode the PNG");
  std::string err = write_output_file(path, std::string_view(png.constData(), size_t(png.size())));
  if (!err.empty()) return Error("--plot " + err);
  return {};
}

}  // namespace mplan::runs
