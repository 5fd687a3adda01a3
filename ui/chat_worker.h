// ChatWorker: the Chat pane's engine, on a thread of its own. One forja::ChatSession (model, tokenizer, chat
// template, KV cache, adapter) lives on that thread for the worker's lifetime: requests are queued to it one
// after another, and its answers come back as queued signals. The streamed text is sent in pieces at most
// ~30 times a second, so a fast model cannot flood the GUI thread's event queue. stop() sets the atomic flag
// the engine polls before every decode step.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

#include "forja/generate.h"

class QThread;

namespace forja::ui {

// One finished (or stopped) answer and how it went.
struct ChatReply {
  QString text;
  forja::StopReason stop = forja::StopReason::MaxTokens;
  qint64 new_tokens = 0;
  qint64 prompt_tokens = 0;
  qint64 reused_tokens = 0;
  double first_token_seconds = 0;
  double tokens_per_second = 0;
  double mean_logprob = 0;  // per token, under the model that wrote it; 0 when there are no tokens
  // The conversation's tokens after this answer (prompt and answer), against the context the model was
  // loaded with.
  qint64 context_tokens = 0;
  qint64 max_context = 0;
};

// One prompt answered by the base model and by the fine-tuned one, each answer scored under both.
struct CompareReply {
  ChatReply base, adapted;
  double base_under_adapter = 0;  // mean per-token log-prob of the base answer with the adapter on
  double adapted_under_base = 0;  // mean per-token log-prob of the adapted answer with the adapter off
};

class ChatWorker : public QObject {
  Q_OBJECT

 public:
  explicit ChatWorker(QObject* parent = nullptr);
  // Stops a generation in progress and waits for the thread. A model load cannot be interrupted: the
  // destructor waits for it to end.
  ~ChatWorker() override;

  // Every request below returns at once; it runs on the worker thread after the ones queued before it.
  // Loads the model folder and its tokenizer (the previous model and adapter are dropped first).
  void load_model(const QString& model_dir, const forja::EngineOptions& options = {});
  // A PEFT adapter folder on top of the loaded model; it starts enabled.
  void load_adapter(const QString& adapter_dir);
  void set_adapter_enabled(bool enabled);
  // The conversation the next send() continues: a new chat (no turns) or one reopened from the journal.
  void set_conversation(const QString& system_prompt, const std::vector<forja::ChatTurn>& turns);
  // The user's message, answered in the conversation so far (which then holds both).
  void send(const QString& text, const QString& system_prompt, const forja::GenerationConfig& config);
  // The user's message answered with the adapter off and on, in the conversation so far; neither answer
  // joins the conversation.
  void compare(const QString& text, const QString& system_prompt, const forja::GenerationConfig& config);
  // Asks the generation in progress (or the next one queued) to stop; thread-safe.
  void stop() { cancel_ = true; }

  // The shortest interval between two streamed() signals: ~30 pieces a second reads as smooth typing.
  static constexpr int kStreamIntervalMs = 33;

 Q_SIGNALS:
  void model_loaded(const QString& model_dir, const QString& description);
  void model_failed(const QString& model_dir, const QString& message, const QString& hint);
  void adapter_loaded(const QString& adapter_dir);
  void adapter_failed(const QString& adapter_dir, const QString& message, const QString& hint);
  // New text of the answer being written; `adapted` tells the two answers of a comparison apart.
  void streamed(const QString& text, bool adapted);
  void answered(const forja::ui::ChatReply& reply);
  void compared(const forja::ui::CompareReply& reply);
  // A send() or compare() that failed; the conversation is unchanged.
  void generation_failed(const QString& message, const QString& hint);

 private:
  // Runs `work` on the worker thread; a forja::Error (or any exception) goes to `on_error`, also there.
  template <typename Work, typename OnError>
  void post(Work work, OnError on_error);

  QThread* thread_;
  QObject* on_thread_;  // lives on thread_: the context that queued requests run in
  std::atomic<bool> cancel_{false};
  std::atomic<bool> closing_{false};  // set by the destructor: requests still queued are skipped
  // Touched only on the worker thread.
  std::unique_ptr<forja::ChatSession> session_;
};

}  // namespace forja::ui
