// ChatPane: talk to the open model, with or without a LoRA adapter. The conversation streams in as the model
// writes (finished answers are rendered as Markdown); Enter sends, Shift+Enter starts a new line; Stop keeps
// the answer so far. Sampling settings and the system prompt sit beside the conversation, with the adapter
// switch and a "Compare base vs fine-tuned" mode that answers one prompt with both models side by side, each
// answer scored under both. Chats are kept in the journal and listed for reopening.
//
// The model is loaded when the pane is first shown after a model was opened (not at once: training may want
// the GPU memory), on a ChatWorker thread; the GUI thread only ever queues requests and receives signals.
#pragma once

#include <QList>
#include <QString>
#include <QTextFormat>
#include <QVector>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "chat_worker.h"
#include "pane.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTextBrowser;
class QTextCursor;
class QTextDocumentFragment;

namespace forja {
struct ChatRecord;
struct MessageRecord;
}  // namespace forja

namespace forja::ui {

class ErrorBox;
class ServeBox;
struct JournalFailure;

class ChatPane : public Pane {
  Q_OBJECT

 public:
  explicit ChatPane(AppContext& context, QWidget* parent = nullptr);
  ~ChatPane() override;

  QString title() const override { return tr("Chat"); }
  QIcon icon() const override { return QIcon(QStringLiteral(":/icons/chat.svg")); }

  bool model_ready() const { return model_ready_; }
  bool generating() const { return generating_; }
  bool has_adapter() const { return adapter_loaded_; }
  // The text of the latest assistant message on screen; empty when there is none.
  QString last_answer() const;
  // The journal id of the chat on screen; 0 for a new chat that has no message yet.
  int64_t chat_id() const { return chat_id_; }
  // The sampling settings of the form.
  forja::GenerationConfig generation_config() const;

 public Q_SLOTS:
  // The model to chat with (the Model pane opened it); it loads when the pane is shown.
  void set_model_dir(const QString& dir);
  // A LoRA adapter for the model (a finished run, the Runs pane); it replaces the current one.
  void open_adapter(const QString& adapter_dir);
  void send();
  void stop();
  void new_chat();
  // Shows a chat from the journal; the next message continues it.
  void open_chat(int64_t chat_id);
  // Asks for confirmation, then deletes the selected chat from the journal.
  void delete_selected_chat();
  void refresh_chats();
  // Writes the conversation on screen to `path`: format "markdown", or "training" for one line of chat
  // training data. Answers with chat_exported.
  void export_chat(const QString& format, const QString& path);
  // Takes the last exchange back (from the view, the engine's conversation and the journal) and sends its
  // message again for a new answer; or puts the message in the message box to edit and send.
  void regenerate();
  void edit_last_message();
  void copy_last_answer();

 Q_SIGNALS:
  void model_ready_changed(bool ready);
  void adapter_ready(const QString& adapter_dir);
  // A send or a comparison finished (stopped ones included).
  void answer_finished();
  void chat_exported(bool ok, const QString& path);
  // The chat list now shows only the chats that match the search box (all of them when it is empty).
  void chats_filtered();

 protected:
  void showEvent(QShowEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Shown {
    QString role;  // "user", "assistant"
    QString text;
    bool stopped = false;
  };

  // The constructor's parts: the widgets and their layout (chats, conversation, settings), then the signals.
  void build_layout();
  QWidget* build_chat_list();
  QWidget* build_conversation();
  QWidget* build_settings();
  void wire_controls();
  void wire_worker();

  void load_model_if_needed();
  void on_answered(const ChatReply& reply);
  void on_compared(const CompareReply& reply);
  void on_streamed(const QString& text, bool adapted);
  void on_generation_failed(const QString& message, const QString& hint);
  void finish_generation();
  // The whole conversation anew (a chat opened, a new chat).
  void render_conversation();
  // Lays each message out as a bubble, shades the code blocks and puts a "Copy code" link under each
  // (code_blocks_ holds their texts, in order, for the links).
  void decorate_conversation();
  QTextBlockFormat bubble_format(const QString& role) const;
  // Message `index` of shown_ at the cursor: its role, then its body.
  void insert_message(QTextCursor& c, qsizetype index);
  void insert_body(QTextCursor& c, const Shown& m, bool streaming);
  void insert_stopped_note(QTextCursor& c);
  // Piece `index` of the finished answer at the conversation's end, then the next in a turn of its own; after
  // the last, the decoration and the end of the generation.
  void render_answer_piece(const QList<QTextDocumentFragment>& pieces, qsizetype index);
  void append_text(QTextBrowser* view, const QString& text);
  void update_controls();
  // Writes the finished exchange to the journal (creating the chat on its first one). A journal that cannot
  // be written shows in the error box; the chat goes on unsaved.
  void save_exchange(const QString& user_text, const QString& answer);
  void show_opened_chat(int64_t chat_id, const std::vector<forja::MessageRecord>& messages,
                        const std::optional<forja::ChatRecord>& record);
  void apply_chat_search();
  QString take_back_last_exchange();
  // The conversation on screen, as the engine takes it.
  std::vector<forja::ChatTurn> shown_turns() const;
  void show_journal_unavailable(const QString& message, const QString& hint);
  void show_journal_failure(const JournalFailure& why);
  // An item of the chat list showing `chat` (title, id, time and model in its tooltip).
  void describe_chat_item(QListWidgetItem* item, const forja::ChatRecord& chat);
  QString describe(const ChatReply& reply) const;
  QString stop_text(forja::StopReason stop) const;

  ChatWorker* worker_;
  QString model_dir_;     // the model to chat with
  QString loaded_dir_;    // the model the worker holds (or is loading)
  QString loaded_quant_;  // its base weights: "none" or "nf4"
  QString adapter_dir_;   // the adapter asked for; loaded once adapter_loaded_
  int pending_loads_ = 0;
  bool model_ready_ = false;
  bool adapter_loaded_ = false;
  bool generating_ = false;
  bool comparing_ = false;
  bool new_chat_after_answer_ = false;  // the model changed while an answer was being written
  int64_t chat_id_ = 0;  // the open chat's id, once the journal gave it (0: new, or not saved yet)
  // The chat this conversation's exchanges go to, as the journal thread knows it; a new conversation gets a
  // new cell, so an exchange still being saved never lands in the next one.
  std::shared_ptr<std::atomic<int64_t>> chat_cell_ = std::make_shared<std::atomic<int64_t>>(0);
  bool chat_started_ = false;  // an exchange of this conversation has been handed to the journal
  bool journal_ok_ = true;     // false once the journal could not be opened
  int open_token_ = 0;         // the newest chat opening asked for; older answers are dropped
  QString saved_system_;       // the system prompt the journal has for this chat
  QString pending_user_;       // the message being answered
  QVector<Shown> shown_;
  QStringList code_blocks_;
  int answer_start_ = -1;  // where the answer being written begins in the conversation document

  QLabel* model_label_;
  ErrorBox* error_;
  QListWidget* chat_list_;
  QLineEdit* chat_search_;
  QTimer* search_timer_;  // a search runs once typing pauses
  int search_token_ = 0;  // the newest search asked for; older answers are dropped
  QPushButton* delete_chat_;
  QPushButton* export_chat_;
  QStackedWidget* views_;
  QTextBrowser* conversation_;
  QLabel* compare_prompt_;
  QTextBrowser *compare_base_, *compare_adapted_;
  QLabel *compare_base_score_, *compare_adapted_score_;
  QPlainTextEdit* input_;
  QPushButton *send_, *stop_, *new_chat_, *load_adapter_;
  QPushButton *regenerate_, *edit_last_, *copy_answer_;
  QCheckBox* compare_mode_;
  QLabel* status_;
  QPlainTextEdit* system_prompt_;
  QDoubleSpinBox *temperature_, *top_p_, *repetition_penalty_;
  QSpinBox *top_k_, *max_new_tokens_, *seed_;
  QLabel* adapter_label_;
  QCheckBox* adapter_on_;
  QCheckBox* base_4bit_;           // the base's projections in 4 bits (NF4): a reload, the conversation kept
  ServeBox* serve_box_ = nullptr;  // "Serve this model" (where the serve area was built)
};

}  // namespace forja::ui
