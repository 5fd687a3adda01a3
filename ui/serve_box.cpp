#include "serve_box.h"

#include <QCheckBox>
#include <QDir>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "serve_worker.h"

namespace forja::ui {

ServeBox::ServeBox(QWidget* parent) : QGroupBox(tr("Use it from other tools"), parent) {
  setObjectName(QStringLiteral("serveBox"));
  worker_ = new ServeWorker(this);
  worker_->setObjectName(QStringLiteral("serveWorker"));
  toggle_ = new QCheckBox(tr("Serve this model"));
  toggle_->setObjectName(QStringLiteral("serveModel"));
  toggle_->setToolTip(tr(
      "An OpenAI-compatible API on this computer (localhost only) for editors, scripts and chat front ends. "
      "It loads its own copy of the model."));
  label_ = new QLabel(tr("Not serving."));
  label_->setObjectName(QStringLiteral("serveUrl"));
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(toggle_);
  layout->addWidget(label_);

  connect(toggle_, &QCheckBox::toggled, this, &ServeBox::switch_to);
  connect(worker_, &ServeWorker::started, this, [this](const QString& url) {
    if (!toggle_->isChecked()) return;  // switched off while it loaded: the stop is queued behind
    url_ = url;
    label_->setText(tr("Serving at %1 (model \"%2\")").arg(url, QDir(model_dir_).dirName()));
    Q_EMIT serving_changed(true, url_);
  });
  connect(worker_, &ServeWorker::failed, this, [this](const QString& message, const QString& hint) {
    const QSignalBlocker block(toggle_);
    toggle_->setChecked(false);
    url_.clear();
    label_->setText(hint.isEmpty() ? tr("Could not serve: %1").arg(message)
                                   : tr("Could not serve: %1 %2").arg(message, hint));
    Q_EMIT serving_changed(false, {});
  });
  connect(worker_, &ServeWorker::stopped, this, [this] {
    if (toggle_->isChecked()) return;  // switched on again: a start is queued behind
    label_->setText(tr("Not serving."));
  });
}

ServeBox::~ServeBox() {
  // The worker first: it stops the server and waits for its thread, whose queued signals target this box.
  delete worker_;
}

void ServeBox::set_model(const QString& model_dir, const QString& adapter_dir) {
  if (model_dir == model_dir_ && adapter_dir == adapter_dir_) return;
  model_dir_ = model_dir;
  adapter_dir_ = adapter_dir;
  if (toggle_->isChecked()) toggle_->setChecked(false);  // what it served is not the pane's model any more
}

void ServeBox::switch_to(bool on) {
  if (!on) {
    const bool was_serving = !url_.isEmpty();
    url_.clear();
    label_->setText(tr("Stopping…"));
    worker_->stop();
    if (was_serving) Q_EMIT serving_changed(false, {});
    return;
  }
  if (model_dir_.isEmpty()) {
    const QSignalBlocker block(toggle_);
    toggle_->setChecked(false);
    label_->setText(tr("Open a model in the Model pane first."));
    return;
  }
  forja::ServeOptions o;
  o.model_dir = model_dir_.toStdString();
  o.adapter_dir = adapter_dir_.toStdString();
  o.port = port_;
  label_->setText(tr("Loading %1 to serve it…").arg(QDir::toNativeSeparators(model_dir_)));
  worker_->start(o);
}

}  // namespace forja::ui
