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

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "forja/journal.h"
#include "jobs/job.h"
#include "journal_service.h"
#include "main_window.h"
#include "ui_init.h"

namespace forja::test {

// Until the window's journal is quiet: every request the panes made has run and its answer reached the
// pane, including the requests those answers made in turn.
inline void settle_journal(forja::ui::MainWindow* window) {
  forja::ui::JournalService* journal = window->context().journal;
  quint64 seen = 0;
  do {
    seen = journal->requests_made();
    journal->wait_for_requests();
    QCoreApplication::sendPostedEvents();
  } while (journal->requests_made() != seen);
}

// The end of a test's window: its jobs cancelled (false if one would not stop in time), then the window and
// its temporary folder deleted either way.
[[nodiscard]] inline bool close_window(forja::ui::MainWindow*& window, QTemporaryDir*& dir) {
  const bool stopped = forja::ui::Job::cancel_all_and_wait(5000);
  delete window;
  window = nullptr;
  delete dir;
  dir = nullptr;
  return stopped;
}

// The window's journal as it stands once settled, read through a connection of the test's own.
inline forja::Journal read_journal(forja::ui::MainWindow* window) {
  settle_journal(window);
  return forja::Journal(window->context().journal->path().toStdString());
}

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
  // The suites read the window's English words, whatever the language of the machine they run on.
  forja::ui::install_translations(QLocale(QLocale::English, QLocale::UnitedStates));
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

// The GUI thread's responsiveness, measured so that the load on the machine cannot decide the result: a
// 10 ms timer on the event loop, and for each gap between two of its ticks
//   cpu  the CPU time the GUI thread itself used in the gap (CLOCK_THREAD_CPUTIME_ID): the work our code did
//        on it in one go. Another process or thread competing for the CPUs does not add to it.
//   own  the wall-clock gap less the time the thread was runnable but waiting for a CPU (the kernel's
//        run-queue delay, /proc/thread-self/schedstat): what blocking on something (a lock, a join, I/O)
//        shows up as, besides the CPU time. Where schedstat is unreadable it is the wall-clock gap.
// The suites bound `cpu` tightly (a few timer periods) and `own` loosely (a stall on engine work lasts the
// whole job, seconds): neither fails because the CI machine is busy. Both are printed, with the wall gap.
class EventLoopWatch {
 public:
  EventLoopWatch() {
    timer_.setInterval(10);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.nsecsElapsed();
      const qint64 waited = run_queue_delay_ns();
      const qint64 cpu = thread_cpu_ns();
      if (last_ >= 0) {
        const qint64 gap = now - last_;
        longest = std::max(longest, gap / 1000000);
        const qint64 own = waited >= 0 && last_waited_ >= 0 ? gap - (waited - last_waited_) : gap;
        longest_own = std::max(longest_own, own / 1000000);
        longest_cpu = std::max(longest_cpu, (cpu - last_cpu_) / 1000000);
      }
      last_ = now;
      last_waited_ = waited;
      last_cpu_ = cpu;
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
  qint64 longest_cpu = 0;  // ms of the GUI thread's own CPU time in one gap
  int ticks = 0;
  // The bounds every timed suite uses: 50 ms of CPU in one turn (five timer periods), and 1 s of a gap not
  // spent waiting for a CPU (far below any engine job run on the GUI thread by mistake).
  static constexpr qint64 kMaxCpuMs = 50, kMaxOwnMs = 1000;
  bool within_bounds() const { return longest_cpu < kMaxCpuMs && longest_own < kMaxOwnMs; }
  QString report() const {
    return QStringLiteral(
               "%1 ticks; longest turn %2 ms of GUI-thread CPU (bound %3), longest gap %4 ms of "
               "which %5 ms not waiting for a CPU (bound %6)%7")
        .arg(ticks)
        .arg(longest_cpu)
        .arg(kMaxCpuMs)
        .arg(longest)
        .arg(longest_own)
        .arg(kMaxOwnMs)
        .arg(corrected() ? QString() : QStringLiteral("; schedstat unreadable"));
  }
  // Whether the run-queue delay could be read (the correction above applies).
  static bool corrected() { return run_queue_delay_ns() >= 0; }

  // Nanoseconds this thread has spent runnable but not running, or -1 where the kernel does not say.
  static qint64 thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
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
  qint64 last_cpu_ = 0;
};

}  // namespace forja::test
