// Writes a file on a thread of its own, not the GUI's nor the journal's: a slow or full disk stalls neither
// the window nor the journal.
#pragma once

#include <QObject>
#include <QString>

#include <functional>
#include <string>

namespace forja::ui {

// Replaces `path` with `content` atomically, then calls done(error) on `owner`'s thread: error is empty on
// success, else what went wrong. Not called once `owner` is gone.
void write_file_in_background(QObject* owner, std::string content, const QString& path,
                              std::function<void(const QString& error)> done);

}  // namespace forja::ui
