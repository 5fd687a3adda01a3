#include "background_write.h"

#include <QThread>

#include <memory>

#include "forja/error.h"
#include "forja/file_util.h"

namespace forja::ui {

void write_file_in_background(QObject* owner, std::string content, const QString& path,
                              std::function<void(const QString& error)> done) {
  auto error = std::make_shared<QString>();
  QThread* writer = QThread::create([content = std::move(content), file = path.toStdString(), error] {
    try {
      forja::write_file_atomic(file, content);
    } catch (const forja::Error& e) {
      *error = QString::fromStdString(e.message());
    }
  });
  QObject::connect(writer, &QThread::finished, owner, [error, done = std::move(done)] { done(*error); });
  // Deleted when it ends, whether or not its owner is still there.
  QObject::connect(writer, &QThread::finished, writer, &QObject::deleteLater);
  writer->start();
}

}  // namespace forja::ui
