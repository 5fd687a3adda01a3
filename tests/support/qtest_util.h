// Small helpers shared by the Qt Test suites of the engine: asserting a forja::Error and writing scratch
// files.
#pragma once

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "forja/error.h"

namespace forja_test {

// Runs f, which must throw forja::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    QFAIL("expected forja::Error");
  } catch (const forja::Error& e) {
    for (const auto& p : parts)
      QVERIFY2(e.message().find(p) != std::string::npos, (e.message() + " lacks: " + p).c_str());
  }
}

// Files written into a temporary folder that goes away with the object.
class TempFiles {
 public:
  std::filesystem::path write(const std::string& name, const std::string& content) {
    std::filesystem::path p = std::filesystem::path(dir_.path().toStdString()) / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::filesystem::path dir() const { return dir_.path().toStdString(); }

 private:
  QTemporaryDir dir_;
};

}  // namespace forja_test
