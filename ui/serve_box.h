// ServeBox: the Chat pane's "Serve this model" switch and the URL other tools use (the OpenAI-compatible
// API of forja/serve.h on localhost). It serves the pane's model and adapter through a ServeWorker; a model
// change stops it.
#pragma once

#include <QGroupBox>
#include <QString>

class QCheckBox;
class QLabel;

namespace forja::ui {

class ServeWorker;

class ServeBox : public QGroupBox {
  Q_OBJECT

 public:
  explicit ServeBox(QWidget* parent = nullptr);
  ~ServeBox() override;

  // The model (and adapter, empty for none) the switch serves; a change stops serving.
  void set_model(const QString& model_dir, const QString& adapter_dir);
  void set_port(int port) { port_ = port; }  // 8080 by default; 0: any free port
  bool serving() const { return !url_.isEmpty(); }
  QString url() const { return url_; }  // empty while not serving

 Q_SIGNALS:
  void serving_changed(bool serving, const QString& url);

 private:
  void switch_to(bool on);

  ServeWorker* worker_;
  QCheckBox* toggle_;
  QLabel* label_;
  QString model_dir_, adapter_dir_, url_;
  int port_ = 8080;
};

}  // namespace forja::ui
