// Pixel checks of grabbed views: not blank (many colours, enough non-background pixels) and a given
// colour present (e.g. the forward-pass blue in the timeline).
#pragma once
#include <QColor>
#include <QImage>
#include <QSet>

namespace gui_test {

inline int distinctColors(const QImage& img, int limit = 100000) {
  QSet<QRgb> seen;
  const QImage im = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < im.height(); y += 2)
    for (int x = 0; x < im.width(); x += 2) {
      seen.insert(im.pixel(x, y));
      if (seen.size() >= limit) return int(seen.size());
    }
  return int(seen.size());
}

// Fraction of pixels that differ from the most common colour (the background).
inline double foregroundFraction(const QImage& img) {
  const QImage im = img.convertToFormat(QImage::Format_RGB32);
  QHash<QRgb, int> count;
  int total = 0;
  for (int y = 0; y < im.height(); y += 2)
    for (int x = 0; x < im.width(); x += 2) ++count[im.pixel(x, y)], ++total;
  int most = 0;
  for (int c : count) most = std::max(most, c);
  return total ? 1.0 - double(most) / total : 0.0;
}

// Number of pixels within `tol` (per channel) of `c`.
inline int countColor(const QImage& img, const QColor& c, int tol = 6) {
  const QImage im = img.convertToFormat(QImage::Format_RGB32);
  int n = 0;
  for (int y = 0; y < im.height(); ++y)
    for (int x = 0; x < im.width(); ++x) {
      QRgb p = im.pixel(x, y);
      if (std::abs(qRed(p) - c.red()) <= tol && std::abs(qGreen(p) - c.green()) <= tol && std::abs(qBlue(p) - c.blue()) <= tol)
        ++n;
    }
  return n;
}

}  // namespace gui_test
