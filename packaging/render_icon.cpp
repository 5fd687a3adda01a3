// forja-render-icon <in.svg> <size> <out.png>: the app icon's PNG sizes, rendered at build time from the one
// SVG (resources/icons/forja.svg) so that the sizes cannot drift from it.
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: forja-render-icon <in.svg> <size> <out.png>\n");
    return 2;
  }
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
  bool ok = false;
  const int size = QString::fromLatin1(argv[2]).toInt(&ok);
  if (!svg.isValid() || !ok || size <= 0) {
    std::fprintf(stderr, "error: %s is not a valid SVG or %s is not a size\n", argv[1], argv[2]);
    return 1;
  }
  QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  svg.render(&painter);
  painter.end();
  if (!image.save(QString::fromLocal8Bit(argv[3]), "PNG")) {
    std::fprintf(stderr, "error: cannot write %s\n", argv[3]);
    return 1;
  }
  return 0;
}
