// Helpers shared by the window's test suites: an isolated settings/XDG environment, hand-written model
// folders (a config.json and a safetensors file built byte by byte), and accepting the next modal dialog.
#pragma once

#include <QAbstractButton>
#include <QApplication>
#include <QByteArray>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ui_init.h"

namespace forja::test {

// Settings and XDG files go to ~/.qttest (QStandardPaths test mode) under a per-suite application name, and
// start empty: a suite never sees the user's real window state or another suite's.
inline void init_ui_test_environment(const char* suite) {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("forja-tests"));
  QCoreApplication::setApplicationName(QString::fromLatin1(suite));
  forja::ui::initialize(*qobject_cast<QApplication*>(QCoreApplication::instance()));
  // Settings in a folder of this process alone: two runs of the same suite (a developer's build and a CI
  // clone on one machine) must not clear each other's recent lists mid-test.
  static QTemporaryDir settings_dir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir.path());
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings_dir.path());
  QSettings().clear();
  // A 4-bit base's NF4 cache goes there too, not into the user's ~/.cache (the workers inherit it).
  qputenv("FORJA_CACHE_DIR", settings_dir.filePath(QStringLiteral("cache")).toUtf8());
}

struct FakeTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// Writes an F32 safetensors file by hand: 8-byte little-endian header length, the JSON header
// {name: {dtype, shape, data_offsets}}, then the (zero) bytes. `truncate_by` cuts that many bytes off the
// end.
inline void write_safetensors(const QString& path, const std::vector<FakeTensor>& tensors,
                              int truncate_by = 0) {
  QByteArray header = "{";
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t n = 1;
    QByteArray shape;
    for (int64_t d : tensors[i].shape) {
      n *= d;
      shape += (shape.isEmpty() ? "" : ",") + QByteArray::number(qlonglong(d));
    }
    const int64_t bytes = n * 4;  // F32
    header += (i ? "," : "") + QByteArray("\"") + tensors[i].name.c_str() +
              "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              QByteArray::number(qlonglong(offset)) + "," + QByteArray::number(qlonglong(offset + bytes)) +
              "]}";
    offset += bytes;
  }
  header += "}";
  QByteArray file;
  const uint64_t len = static_cast<uint64_t>(header.size());
  for (int b = 0; b < 8; ++b) file += char((len >> (8 * b)) & 0xff);
  file += header;
  file += QByteArray(static_cast<int>(offset), '\0');
  file.chop(truncate_by);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write(file);
}

// The numbers of the hand-written Llama below: 2 heads of 4, 1 kv head, 1 layer, vocab 16, untied head.
struct TinyLlama {
  static constexpr int64_t hidden = 8, intermediate = 12, heads = 2, kv_heads = 1, head_dim = 4, vocab = 16;
  // embed + lm_head (vocab × hidden each) + q, o (hidden × hidden) + k, v (kv_heads·head_dim × hidden)
  // + gate, up, down (intermediate × hidden) + 2 layer norms + the final norm (hidden each).
  static constexpr int64_t parameters = 2 * vocab * hidden + 2 * hidden * hidden +
                                        2 * kv_heads * head_dim * hidden + 3 * intermediate * hidden +
                                        3 * hidden;
};

inline void write_tiny_llama(const QString& dir, int truncate_weights_by = 0) {
  QDir().mkpath(dir);
  using T = TinyLlama;
  QFile config(dir + QStringLiteral("/config.json"));
  if (!config.open(QIODevice::WriteOnly)) qFatal("cannot write config.json");
  config.write(QStringLiteral(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": %1, "intermediate_size": %2, "num_hidden_layers": 1, "num_attention_heads": %3,
  "num_key_value_heads": %4, "max_position_embeddings": 256, "vocab_size": %5, "rms_norm_eps": 1e-5,
  "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu"})")
                   .arg(T::hidden)
                   .arg(T::intermediate)
                   .arg(T::heads)
                   .arg(T::kv_heads)
                   .arg(T::vocab)
                   .toUtf8());
  config.close();
  const int64_t kv = T::kv_heads * T::head_dim;
  write_safetensors(dir + QStringLiteral("/model.safetensors"),
                    {{"model.embed_tokens.weight", {T::vocab, T::hidden}},
                     {"model.layers.0.input_layernorm.weight", {T::hidden}},
                     {"model.layers.0.self_attn.q_proj.weight", {T::hidden, T::hidden}},
                     {"model.layers.0.self_attn.k_proj.weight", {kv, T::hidden}},
                     {"model.layers.0.self_attn.v_proj.weight", {kv, T::hidden}},
                     {"model.layers.0.self_attn.o_proj.weight", {T::hidden, T::hidden}},
                     {"model.layers.0.post_attention_layernorm.weight", {T::hidden}},
                     {"model.layers.0.mlp.gate_proj.weight", {T::intermediate, T::hidden}},
                     {"model.layers.0.mlp.up_proj.weight", {T::intermediate, T::hidden}},
                     {"model.layers.0.mlp.down_proj.weight", {T::hidden, T::intermediate}},
                     {"model.norm.weight", {T::hidden}},
                     {"lm_head.weight", {T::vocab, T::hidden}}},
                    truncate_weights_by);
}

// Clicks `button` on the next message box that opens (call before the code that opens it).
// Gives up after ~5 s (500 looks, 10 ms apart) so that a box that never opens cannot keep a timer alive
// forever.
inline void answer_next_message_box(QMessageBox::StandardButton button, int looks_left = 500) {
  QTimer::singleShot(10, [button, looks_left] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (box && box->button(button)) {
      box->button(button)->click();
    } else if (looks_left > 0) {
      answer_next_message_box(button, looks_left - 1);  // not open yet: look again shortly
    }
  });
}

// The GUI's responsiveness: a timer every 10 ms on the event loop; `longest` is the longest time between two
// of its ticks (the longest the loop went without running it), from start() to stop().
// Measures how long the GUI event loop goes without running a 10 ms timer. `longest` is the wall-clock gap;
// `longest_own` is the same gap less the time the GUI thread spent runnable but waiting for a CPU (the
// kernel's per-thread run-queue delay, /proc/thread-self/schedstat). On a busy 2-core CI machine, where the
// training worker, the chat's generation thread and other test suites all want the CPUs, the scheduler can
// hold the GUI thread off for tens of milliseconds although it never blocked; `longest_own` counts only the
// time it ran (our code on the GUI thread) or slept waiting on something (a lock, I/O): what blocking on
// engine work would show up as. Where schedstat is not readable, `longest_own` is the wall-clock gap.
class EventLoopWatch {
 public:
  EventLoopWatch() {
    timer_.setInterval(10);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.nsecsElapsed();
      const qint64 waited = run_queue_delay_ns();
      if (last_ >= 0) {
        const qint64 gap = now - last_;
        longest = std::max(longest, gap / 1000000);
        const qint64 own = waited >= 0 && last_waited_ >= 0 ? gap - (waited - last_waited_) : gap;
        longest_own = std::max(longest_own, own / 1000000);
      }
      last_ = now;
      last_waited_ = waited;
      ++ticks;
    });
  }
  void start() {
    clock_.start();
    timer_.start();
  }
  void stop() { timer_.stop(); }
  qint64 longest = 0;      // ms, wall clock
  qint64 longest_own = 0;  // ms, less the time spent waiting for a CPU
  int ticks = 0;
  // Whether the run-queue delay could be read (the correction above applies).
  static bool corrected() { return run_queue_delay_ns() >= 0; }

  // Nanoseconds this thread has spent runnable but not running, or -1 where the kernel does not say.
  static qint64 run_queue_delay_ns() {
    QFile f(QStringLiteral("/proc/thread-self/schedstat"));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    const QList<QByteArray> fields = f.readAll().simplified().split(' ');
    bool ok = false;
    const qint64 v = fields.size() >= 2 ? fields[1].toLongLong(&ok) : -1;
    return ok ? v : -1;
  }

 private:
  QElapsedTimer clock_;
  QTimer timer_;
  qint64 last_ = -1;
  qint64 last_waited_ = -1;
};

}  // namespace forja::test
