// ChatWorker: the request queue on the worker thread, the throttled text stream and the exception boundary.
#include "chat_worker.h"

#include <QThread>

#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <utility>

#include "forja/error.h"
#include "format.h"

namespace forja::ui {
namespace {

using Clock = std::chrono::steady_clock;

// Gathers the streamed text and hands it on in pieces: the first at once (the time to the first token is
// what the user sees), then at most one per interval.
class TextThrottle {
 public:
  explicit TextThrottle(std::function<void(const QString&)> out) : out_(std::move(out)) {}
  void add(const std::string& text) {
    pending_ += text;
    if (!pending_.empty() &&
        (!sent_any_ || Clock::now() - last_ >= std::chrono::milliseconds(ChatWorker::kStreamIntervalMs)))
      flush();
  }
  void flush() {
    if (pending_.empty()) return;
    // TokenEvent::text holds whole UTF-8 characters only, so every piece converts on its own.
    out_(QString::fromStdString(pending_));
    pending_.clear();
    last_ = Clock::now();
    sent_any_ = true;
  }

 private:
  std::function<void(const QString&)> out_;
  std::string pending_;
  Clock::time_point last_{};
  bool sent_any_ = false;
};

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

ChatReply make_reply(const forja::GenerationResult& r, int64_t max_context) {
  ChatReply reply;
  reply.text = QString::fromStdString(r.text);
  reply.stop = r.stop;
  reply.new_tokens = r.stats.new_tokens;
  reply.prompt_tokens = r.stats.prompt_tokens;
  reply.reused_tokens = r.stats.reused_tokens;
  reply.first_token_seconds = r.stats.first_token_seconds;
  reply.tokens_per_second = r.stats.decode_tokens_per_second();
  reply.mean_logprob = mean(r.logprobs);
  reply.context_tokens = r.stats.prompt_tokens + r.stats.new_tokens;
  reply.max_context = max_context;
  return reply;
}

}  // namespace

ChatWorker::ChatWorker(QObject* parent) : QObject(parent) {
  thread_ = new QThread;
  thread_->setObjectName(QStringLiteral("chat"));
  on_thread_ = new QObject;
  on_thread_->moveToThread(thread_);
  thread_->start();
}

ChatWorker::~ChatWorker() {
  closing_ = true;
  cancel_ = true;
  // The session goes on its own thread (where its model was loaded), after the request in progress; the
  // ones still queued see closing_ and do nothing.
  QMetaObject::invokeMethod(
      on_thread_,
      [this] {
        session_.reset();
        QThread::currentThread()->quit();
      },
      Qt::QueuedConnection);
  thread_->wait();
  delete on_thread_;
  delete thread_;
}

template <typename Work, typename OnError>
void ChatWorker::post(Work work, OnError on_error) {
  QMetaObject::invokeMethod(
      on_thread_,
      [this, work = std::move(work), on_error = std::move(on_error)]() mutable {
        if (closing_) return;
        try {
          work();
        } catch (const forja::Error& e) {
          on_error(QString::fromStdString(e.message()), QString::fromStdString(e.hint()));
        } catch (const std::exception& e) {
          on_error(
              QString::fromUtf8(e.what()),
              tr("This is an error Forja did not expect. Please report it with the steps that led to it."));
        }
      },
      Qt::QueuedConnection);
}

void ChatWorker::load_model(const QString& model_dir, const forja::EngineOptions& options) {
  post(
      [this, model_dir, options] {
        session_.reset();  // the old model's memory is freed before the new one is read
        session_ = std::make_unique<forja::ChatSession>(model_dir.toStdString(), options);
        const forja::ModelFacts f = session_->generator().facts();
        QString description =
            tr("%1 on %2 (%3), context %4 tokens")
                .arg(QString::fromStdString(f.family), device_display_name(QString::fromStdString(f.device)),
                     dtype_display_name(QString::fromStdString(f.dtype)))
                .arg(f.max_context);
        if (options.base_quant == "nf4") description += tr(", 4-bit base (NF4)");
        Q_EMIT model_loaded(model_dir, description);
      },
      [this, model_dir](const QString& message, const QString& hint) {
        session_.reset();
        Q_EMIT model_failed(model_dir, message, hint);
      });
}

void ChatWorker::load_adapter(const QString& adapter_dir) {
  post(
      [this, adapter_dir] {
        if (!session_)
          throw forja::Error(tr("No model is loaded to put the adapter on.").toStdString(),
                             tr("Open the adapter's base model in the Model pane first.").toStdString());
        session_->generator().load_adapter(adapter_dir.toStdString());
        Q_EMIT adapter_loaded(adapter_dir);
      },
      [this, adapter_dir](const QString& message, const QString& hint) {
        Q_EMIT adapter_failed(adapter_dir, message, hint);
      });
}

void ChatWorker::set_adapter_enabled(bool enabled) {
  post(
      [this, enabled] {
        if (session_ && session_->generator().has_adapter())
          session_->generator().set_adapter_enabled(enabled);
      },
      [this](const QString& message, const QString& hint) { Q_EMIT generation_failed(message, hint); });
}

void ChatWorker::set_conversation(const QString& system_prompt, const std::vector<forja::ChatTurn>& turns) {
  post(
      [this, system = system_prompt.toStdString(), turns] {
        if (!session_) return;  // a model loaded later starts with no conversation anyway
        session_->set_system_prompt(system);
        session_->set_history(turns);
      },
      [this](const QString& message, const QString& hint) { Q_EMIT generation_failed(message, hint); });
}

void ChatWorker::send(const QString& text, const QString& system_prompt,
                      const forja::GenerationConfig& config) {
  // Cleared here, not on the thread: a Stop pressed while this request waits in the queue still counts.
  cancel_ = false;
  post(
      [this, text = text.toStdString(), system = system_prompt.toStdString(), config] {
        if (!session_)
          throw forja::Error(tr("No model is loaded.").toStdString(),
                             tr("Open a model folder in the Model pane, then chat here.").toStdString());
        session_->set_system_prompt(system);
        TextThrottle out([this](const QString& piece) { Q_EMIT streamed(piece, false); });
        const forja::GenerationResult r = session_->send(
            text, config,
            [&out](const forja::TokenEvent& e) {
              out.add(e.text);
              return true;
            },
            &cancel_);
        out.flush();
        Q_EMIT answered(make_reply(r, session_->generator().facts().max_context));
      },
      [this](const QString& message, const QString& hint) { Q_EMIT generation_failed(message, hint); });
}

void ChatWorker::compare(const QString& text, const QString& system_prompt,
                         const forja::GenerationConfig& config) {
  cancel_ = false;
  post(
      [this, text = text.toStdString(), system = system_prompt.toStdString(), config] {
        if (!session_ || !session_->generator().has_adapter())
          throw forja::Error(
              tr("Comparing needs a model with an adapter.").toStdString(),
              tr("Load a fine-tuned adapter (Load Adapter… or a finished run) first.").toStdString());
        session_->set_system_prompt(system);
        // The base answer streams completely before the adapted one starts.
        TextThrottle base_out([this](const QString& piece) { Q_EMIT streamed(piece, false); });
        TextThrottle adapted_out([this](const QString& piece) { Q_EMIT streamed(piece, true); });
        const forja::CompareResult c = session_->compare(
            text, config,
            [&](bool adapted, const forja::TokenEvent& e) {
              if (adapted) {
                base_out.flush();
                adapted_out.add(e.text);
              } else {
                base_out.add(e.text);
              }
              return true;
            },
            &cancel_);
        base_out.flush();
        adapted_out.flush();
        CompareReply reply;
        const int64_t context = session_->generator().facts().max_context;
        reply.base = make_reply(c.base, context);
        reply.adapted = make_reply(c.adapted, context);
        reply.base_under_adapter = mean(c.base_under_adapter);
        reply.adapted_under_base = mean(c.adapted_under_base);
        Q_EMIT compared(reply);
      },
      [this](const QString& message, const QString& hint) { Q_EMIT generation_failed(message, hint); });
}

}  // namespace forja::ui
