// AboutDialog: Forja's version and licence, the versions of LibTorch, CUDA and Qt it runs with, and where the
// documentation is. LibTorch and CUDA are asked off the GUI thread (the doctor's probe).
#pragma once

#include <QDialog>

#include <memory>

#include "forja/env.h"

class QLabel;

namespace forja::ui {

struct AppContext;

class AboutDialog : public QDialog {
  Q_OBJECT

 public:
  explicit AboutDialog(AppContext& context, QWidget* parent = nullptr);

  // The address the dialog links to for the documentation.
  static QString docs_url();

 private:
  void show_runtime(std::shared_ptr<const forja::env::Report> report);

  QLabel* runtime_;
};

}  // namespace forja::ui
