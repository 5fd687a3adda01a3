// ChatPane: the layout, the hand-off to the ChatWorker, the streaming conversation view and the journal.
#include "panes/chat_pane.h"

#include <QCheckBox>
#include <QClipboard>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include <filesystem>
#include <limits>
#include <optional>

#include "background_write.h"
#include "chat_export.h"
#include "error_box.h"
#include "forja/error.h"
#include "forja/journal.h"
#include "form_util.h"
#include "format.h"
#include "journal_service.h"
#include "markdown_pieces.h"
#if FORJA_UI_HAS_SERVE
#include "serve_box.h"
#endif

namespace forja::ui {
namespace {

const QString kUser = QStringLiteral("user");
const QString kAssistant = QStringLiteral("assistant");
// Marks the blocks that hold a code block's copy link (QTextFormat's user property range).
constexpr int kCopyLinkBlock = QTextFormat::UserProperty + 1;
// Marks a message's first block (its "You" / "Assistant" line) with the message's role.
constexpr int kRoleHeader = QTextFormat::UserProperty + 2;
const QString kSystem = QStringLiteral("system");

// A chat's title in the list: its first message, on one line, cut at a length that fits the list.
constexpr int kTitleChars = 60;

QString chat_title(const QString& first_message) {
  QString line = first_message.simplified();
  if (line.size() > kTitleChars) line = line.left(kTitleChars - 1) + QChar(0x2026);  // …
  return line;
}

// Characters of a finished answer laid out in one event-loop turn (a few milliseconds on a slow CPU).
constexpr int kRenderPieceChars = 1500;

// Model text may contain HTML; it is shown as text, not interpreted.
constexpr auto kMarkdown =
    QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub) | QTextDocument::MarkdownNoHTML;

// One side of a comparison: its title, the answer and the answer's score under both models.
QWidget* answer_column(const QString& title, const QString& name, QTextBrowser*& view, QLabel*& score) {
  auto* column = new QWidget;
  auto* l = new QVBoxLayout(column);
  l->setContentsMargins(0, 0, 0, 0);
  auto* label = new QLabel(title);
  QFont bold = label->font();
  bold.setBold(true);
  label->setFont(bold);
  view = new QTextBrowser;
  view->setObjectName(name);
  view->setOpenExternalLinks(true);
  score = new QLabel;
  score->setObjectName(name + QStringLiteral("Score"));
  score->setWordWrap(true);
  l->addWidget(label);
  l->addWidget(view, 1);
  l->addWidget(score);
  return column;
}

}  // namespace

ChatPane::ChatPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("ChatPane"));
  worker_ = new ChatWorker(this);
  build_layout();
  wire_controls();
  wire_worker();
  connect(context_.journal, &JournalService::unavailable, this, &ChatPane::show_journal_unavailable);
  if (const auto& why = context_.journal->open_failure()) show_journal_unavailable(why->message, why->hint);
  refresh_chats();
  update_controls();
}

void ChatPane::build_layout() {
  auto* heading = make_heading(tr("Chat"));
  model_label_ = new QLabel(tr("Open a model in the Model pane to chat with it."));
  model_label_->setObjectName(QStringLiteral("chatModel"));
  model_label_->setWordWrap(true);
  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("chatError"));
  auto* split = new QSplitter;
  split->addWidget(build_chat_list());
  split->addWidget(build_conversation());
  split->addWidget(build_settings());
  split->setStretchFactor(1, 1);
  split->setSizes({200, 600, 300});
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(heading);
  layout->addWidget(model_label_);
  layout->addWidget(error_);
  layout->addWidget(split, 1);
}

// Left: the chats kept in the journal.
QWidget* ChatPane::build_chat_list() {
  chat_list_ = new QListWidget;
  chat_list_->setObjectName(QStringLiteral("chatList"));
  new_chat_ = new QPushButton(QIcon(QStringLiteral(":/icons/chat.svg")), tr("New Chat"));
  new_chat_->setObjectName(QStringLiteral("newChat"));
  new_chat_->setToolTip(tr("Start a new conversation (%1)")
                            .arg(QKeySequence(QKeySequence::New).toString(QKeySequence::NativeText)));
  new_chat_->setShortcut(QKeySequence::New);
  delete_chat_ = new QPushButton(QIcon(QStringLiteral(":/icons/delete.svg")), tr("Delete…"));
  delete_chat_->setObjectName(QStringLiteral("deleteChat"));
  delete_chat_->setToolTip(tr("Delete the selected chat and its messages (Del)"));
  chat_search_ = new QLineEdit;
  chat_search_->setObjectName(QStringLiteral("chatSearch"));
  chat_search_->setPlaceholderText(tr("Search chats"));
  chat_search_->setClearButtonEnabled(true);
  search_timer_ = new QTimer(this);
  search_timer_->setSingleShot(true);
  search_timer_->setInterval(200);
  connect(chat_search_, &QLineEdit::textChanged, search_timer_, qOverload<>(&QTimer::start));
  connect(search_timer_, &QTimer::timeout, this, &ChatPane::apply_chat_search);
  export_chat_ = new QPushButton(tr("Export…"));
  export_chat_->setObjectName(QStringLiteral("exportChat"));
  export_chat_->setToolTip(tr("Save the conversation as Markdown, or as a line of chat training data"));
  auto* export_menu = new QMenu(export_chat_);
  export_menu->addAction(tr("Markdown…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export chat as Markdown"),
                                                      QStringLiteral("chat.md"), tr("Markdown (*.md)"));
    if (!path.isEmpty()) export_chat(QStringLiteral("markdown"), path);
  });
  export_menu->addAction(tr("Training data (JSONL)…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export chat as training data"), QStringLiteral("chat.jsonl"), tr("JSON Lines (*.jsonl)"));
    if (!path.isEmpty()) export_chat(QStringLiteral("training"), path);
  });
  export_chat_->setMenu(export_menu);
  auto* chat_buttons = new QHBoxLayout;
  chat_buttons->addWidget(delete_chat_);
  chat_buttons->addWidget(export_chat_);
  auto* chats_box = new QGroupBox(tr("Chats"));
  auto* chats_layout = new QVBoxLayout(chats_box);
  chats_layout->addWidget(new_chat_);
  chats_layout->addWidget(chat_search_);
  chats_layout->addWidget(chat_list_, 1);
  chats_layout->addLayout(chat_buttons);
  return chats_box;
}

// Middle: the conversation, or the two answers of a comparison, and the message box.
QWidget* ChatPane::build_conversation() {
  conversation_ = new QTextBrowser;
  conversation_->setObjectName(QStringLiteral("conversation"));
  // Links are handled here: a code block's copy link, or a web link opened in the browser.
  conversation_->setOpenLinks(false);
  connect(conversation_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
    if (url.scheme() == QLatin1String("forja-copy-code")) {
      const int i = url.path().toInt();
      if (i >= 0 && i < code_blocks_.size()) QGuiApplication::clipboard()->setText(code_blocks_[i]);
    } else {
      QDesktopServices::openUrl(url);
    }
  });
  conversation_->setPlaceholderText(tr("Your conversation appears here."));
  compare_prompt_ = new QLabel;
  compare_prompt_->setObjectName(QStringLiteral("comparePrompt"));
  compare_prompt_->setWordWrap(true);
  compare_prompt_->setTextFormat(Qt::PlainText);
  compare_prompt_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* columns = new QSplitter(Qt::Horizontal);
  columns->addWidget(
      answer_column(tr("Base model"), QStringLiteral("compareBase"), compare_base_, compare_base_score_));
  columns->addWidget(answer_column(tr("Fine-tuned (adapter on)"), QStringLiteral("compareAdapted"),
                                   compare_adapted_, compare_adapted_score_));
  auto* compare_view = new QWidget;
  compare_view->setObjectName(QStringLiteral("compareView"));
  auto* compare_layout = new QVBoxLayout(compare_view);
  compare_layout->setContentsMargins(0, 0, 0, 0);
  compare_layout->addWidget(compare_prompt_);
  compare_layout->addWidget(columns, 1);
  views_ = new QStackedWidget;
  views_->addWidget(conversation_);
  views_->addWidget(compare_view);

  input_ = new QPlainTextEdit;
  input_->setObjectName(QStringLiteral("chatInput"));
  input_->setPlaceholderText(tr("Message (Enter sends, Shift+Enter starts a new line)"));
  input_->setTabChangesFocus(true);
  input_->setMaximumHeight(input_->fontMetrics().lineSpacing() * 5 + 12);  // about four lines and a margin
  input_->installEventFilter(this);
  send_ = new QPushButton(tr("Send"));
  send_->setObjectName(QStringLiteral("sendButton"));
  stop_ = new QPushButton(tr("Stop"));
  stop_->setObjectName(QStringLiteral("stopButton"));
  stop_->setToolTip(tr("Stop the answer here; what was written so far stays"));
  compare_mode_ = new QCheckBox(tr("Compare base vs fine-tuned"));
  compare_mode_->setObjectName(QStringLiteral("compareMode"));
  compare_mode_->setToolTip(
      tr("Answer the next message with the adapter off and on, side by side, and score each answer under "
         "both models. The answers do not join the conversation."));
  regenerate_ = new QPushButton(tr("Regenerate"));
  regenerate_->setObjectName(QStringLiteral("regenerateButton"));
  regenerate_->setToolTip(tr("Answer the last message again"));
  edit_last_ = new QPushButton(tr("Edit"));
  edit_last_->setObjectName(QStringLiteral("editLastButton"));
  edit_last_->setToolTip(tr("Take the last message back into the message box, to change it and send again"));
  copy_answer_ = new QPushButton(tr("Copy"));
  copy_answer_->setObjectName(QStringLiteral("copyAnswerButton"));
  copy_answer_->setToolTip(tr("Copy the last answer"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addWidget(regenerate_);
  buttons->addWidget(edit_last_);
  buttons->addWidget(copy_answer_);
  buttons->addWidget(compare_mode_);
  buttons->addStretch(1);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("chatStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* middle = new QWidget;
  auto* middle_layout = new QVBoxLayout(middle);
  middle_layout->setContentsMargins(0, 0, 0, 0);
  middle_layout->addWidget(views_, 1);
  middle_layout->addWidget(input_);
  middle_layout->addLayout(buttons);
  middle_layout->addWidget(status_);
  return middle;
}

// Right: how the model answers.
QWidget* ChatPane::build_settings() {
  system_prompt_ = new QPlainTextEdit;
  system_prompt_->setObjectName(QStringLiteral("systemPrompt"));
  system_prompt_->setPlaceholderText(tr("Optional: how the assistant should behave"));
  system_prompt_->setTabChangesFocus(true);
  system_prompt_->setMaximumHeight(input_->fontMetrics().lineSpacing() * 6 + 12);
  // Defaults of common chat front ends: some variety (0.7, top-p 0.9, top-k 40) and an answer of a page.
  temperature_ = real_box(0, 2, 0.7, 2, 0.05);
  temperature_->setToolTip(tr("0 always picks the most likely token (greedy); higher is more varied"));
  top_p_ = real_box(0.01, 1, 0.9, 2, 0.05);
  top_p_->setToolTip(
      tr("Sample only from the most likely tokens that together have this probability; 1 is off"));
  top_k_ = int_box(0, 100000, 40);
  top_k_->setSpecialValueText(tr("off"));
  top_k_->setToolTip(tr("Sample only from this many most likely tokens; 0 is off"));
  max_new_tokens_ = int_box(1, 1000000, 512);
  repetition_penalty_ = real_box(1, 3, 1, 2, 0.05);
  repetition_penalty_->setToolTip(tr("Above 1 makes tokens already in the conversation less likely"));
  seed_ = int_box(0, std::numeric_limits<int>::max(), 0);
  seed_->setToolTip(tr("The same seed, message and settings give the same answer"));
  const QList<std::pair<QWidget*, const char*>> named = {{temperature_, "temperature"},
                                                         {top_p_, "topP"},
                                                         {top_k_, "topK"},
                                                         {max_new_tokens_, "maxNewTokens"},
                                                         {repetition_penalty_, "repetitionPenalty"},
                                                         {seed_, "seed"}};
  for (const auto& [w, name] : named) w->setObjectName(QString::fromLatin1(name));
  adapter_label_ = new QLabel(tr("No adapter: answers come from the base model."));
  adapter_label_->setObjectName(QStringLiteral("adapterLabel"));
  adapter_label_->setWordWrap(true);
  adapter_on_ = new QCheckBox(tr("Adapter on"));
  adapter_on_->setObjectName(QStringLiteral("adapterOn"));
  adapter_on_->setToolTip(tr("Switch the fine-tuning off and on without reloading"));
  base_4bit_ = new QCheckBox(tr("4-bit base (NF4)"));
  base_4bit_->setObjectName(QStringLiteral("base4bit"));
  base_4bit_->setToolTip(
      tr("Quantize the base model's projections to 4 bits as it loads (QLoRA's NF4): about a quarter of the "
         "memory for the weights, slightly different answers. Reloads the model; the conversation is kept."));
  load_adapter_ = new QPushButton(QIcon(QStringLiteral(":/icons/open-folder.svg")), tr("Load Adapter…"));
  load_adapter_->setObjectName(QStringLiteral("loadAdapter"));

  auto* form = new QFormLayout;
  // A label that leaves its field too little room goes above it: one column where the pane is narrow.
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  form->addRow(tr("System prompt:"), system_prompt_);
  form->addRow(tr("Temperature:"), temperature_);
  form->addRow(tr("Top-p:"), top_p_);
  form->addRow(tr("Top-k:"), top_k_);
  form->addRow(tr("Max new tokens:"), max_new_tokens_);
  form->addRow(tr("Repetition penalty:"), repetition_penalty_);
  form->addRow(tr("Seed:"), seed_);
  form->addRow(tr("Base weights:"), base_4bit_);
  auto* adapter_box = new QGroupBox(tr("Adapter"));
  auto* adapter_layout = new QVBoxLayout(adapter_box);
  adapter_layout->addWidget(adapter_label_);
  adapter_layout->addWidget(adapter_on_);
  adapter_layout->addWidget(load_adapter_);
  auto* settings = new QWidget;
  auto* settings_layout = new QVBoxLayout(settings);
  settings_layout->addLayout(form);
  settings_layout->addWidget(adapter_box);
#if FORJA_UI_HAS_SERVE
  serve_box_ = new ServeBox;
  settings_layout->addWidget(serve_box_);
#endif
  settings_layout->addStretch(1);
  return vertical_scroll_area(settings);
}

void ChatPane::wire_controls() {
  connect(chat_list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { open_chat(item->data(Qt::UserRole).toLongLong()); });
  connect(chat_list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { open_chat(item->data(Qt::UserRole).toLongLong()); });
  connect(chat_list_, &QListWidget::currentItemChanged, this, &ChatPane::update_controls);
  auto* del = new QShortcut(QKeySequence::Delete, chat_list_, nullptr, nullptr, Qt::WidgetShortcut);
  connect(del, &QShortcut::activated, this, &ChatPane::delete_selected_chat);
  connect(new_chat_, &QPushButton::clicked, this, &ChatPane::new_chat);
  connect(delete_chat_, &QPushButton::clicked, this, &ChatPane::delete_selected_chat);
  connect(send_, &QPushButton::clicked, this, &ChatPane::send);
  connect(stop_, &QPushButton::clicked, this, &ChatPane::stop);
  connect(regenerate_, &QPushButton::clicked, this, &ChatPane::regenerate);
  connect(edit_last_, &QPushButton::clicked, this, &ChatPane::edit_last_message);
  connect(copy_answer_, &QPushButton::clicked, this, &ChatPane::copy_last_answer);
  connect(compare_mode_, &QCheckBox::toggled, this, [this](bool on) {
    views_->setCurrentIndex(on ? 1 : 0);
    update_controls();
  });
  connect(adapter_on_, &QCheckBox::toggled, this, [this](bool on) {
    if (!adapter_loaded_) return;
    worker_->set_adapter_enabled(on);
    status_->setText(on ? tr("Adapter on: answers come from the fine-tuned model.")
                        : tr("Adapter off: answers come from the base model."));
  });
  connect(base_4bit_, &QCheckBox::toggled, this, [this] {
    if (model_dir_.isEmpty() || loaded_dir_.isEmpty()) return;  // the choice applies at the next load
    model_ready_ = false;
    if (!adapter_dir_.isEmpty()) {
      adapter_loaded_ = false;
      adapter_label_->setText(tr("Adapter %1 loads with the model.").arg(QFileInfo(adapter_dir_).fileName()));
    }
    update_controls();
    Q_EMIT model_ready_changed(false);
    if (isVisible()) load_model_if_needed();
  });
  connect(load_adapter_, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Open a LoRA adapter folder (adapter_config.json)"),
                                          adapter_dir_.isEmpty() ? QDir::homePath() : adapter_dir_);
    if (!dir.isEmpty()) open_adapter(dir);
  });
}

// The worker's replies, queued from its thread.
void ChatPane::wire_worker() {
  connect(worker_, &ChatWorker::model_loaded, this, [this](const QString& dir, const QString& description) {
    if (--pending_loads_ > 0) return;  // a newer model is queued
    model_ready_ = true;
    model_label_->setText(tr("%1 — %2").arg(QDir::toNativeSeparators(dir), description));
    update_controls();
    Q_EMIT model_ready_changed(true);
  });
  connect(worker_, &ChatWorker::model_failed, this,
          [this](const QString& dir, const QString& message, const QString& hint) {
            if (--pending_loads_ > 0) return;
            model_ready_ = false;
            loaded_dir_.clear();
            model_label_->setText(tr("Could not load %1").arg(QDir::toNativeSeparators(dir)));
            error_->show_error(message, hint);
            update_controls();
            Q_EMIT model_ready_changed(false);
          });
  connect(worker_, &ChatWorker::adapter_loaded, this, [this](const QString& dir) {
    if (dir != adapter_dir_) return;  // another adapter was asked for since
    adapter_loaded_ = true;
#if FORJA_UI_HAS_SERVE
    serve_box_->set_model(model_dir_, dir);
#endif
    adapter_label_->setText(tr("Adapter: %1").arg(adapter_display_name(dir)));
    adapter_label_->setToolTip(QDir::toNativeSeparators(dir));
    // A run's adapter goes by the run's name, once the journal has said which run wrote it.
    const std::string path = dir.toStdString();
    context_.journal->request(
        this,
        [path](forja::Journal& j) {
          for (const auto& r : j.runs())
            if (!r.adapter_path.empty() &&
                std::filesystem::path(r.adapter_path) == std::filesystem::path(path))
              return r.name;
          return std::string();
        },
        [this, dir](const std::string& run_name) {
          if (dir == adapter_dir_ && adapter_loaded_ && !run_name.empty())
            adapter_label_->setText(tr("Adapter: run “%1”").arg(QString::fromStdString(run_name)));
        },
        [](const JournalFailure&) {});        // without the journal, the folder's name stands
    const QSignalBlocker quiet(adapter_on_);  // a new adapter starts enabled in the engine too
    adapter_on_->setChecked(true);
    update_controls();
    Q_EMIT adapter_ready(dir);
  });
  connect(worker_, &ChatWorker::adapter_failed, this,
          [this](const QString& dir, const QString& message, const QString& hint) {
            if (dir != adapter_dir_) return;
            adapter_dir_.clear();
            adapter_loaded_ = false;
            adapter_label_->setText(tr("No adapter: answers come from the base model."));
            // Without a model the model's own error is the one to read.
            if (!loaded_dir_.isEmpty()) error_->show_error(message, hint);
            update_controls();
          });
  connect(worker_, &ChatWorker::streamed, this, &ChatPane::on_streamed);
  connect(worker_, &ChatWorker::answered, this, &ChatPane::on_answered);
  connect(worker_, &ChatWorker::compared, this, &ChatPane::on_compared);
  connect(worker_, &ChatWorker::generation_failed, this, &ChatPane::on_generation_failed);
}

ChatPane::~ChatPane() {
  // The worker first: it stops a generation and waits for its thread, whose queued signals target this pane.
  delete worker_;
}

forja::GenerationConfig ChatPane::generation_config() const {
  forja::GenerationConfig c;
  c.max_new_tokens = max_new_tokens_->value();
  c.temperature = temperature_->value();
  c.top_p = top_p_->value();
  c.top_k = top_k_->value();
  c.repetition_penalty = repetition_penalty_->value();
  c.seed = static_cast<uint64_t>(seed_->value());
  return c;
}

void ChatPane::set_model_dir(const QString& dir) {
  if (dir == model_dir_) {
    if (isVisible()) load_model_if_needed();  // again after a failed load
    return;
  }
  model_dir_ = dir;
#if FORJA_UI_HAS_SERVE
  serve_box_->set_model(dir, {});
#endif
  // The adapter and the conversation belong to the previous model.
  adapter_dir_.clear();
  adapter_loaded_ = false;
  adapter_label_->setText(tr("No adapter: answers come from the base model."));
  model_ready_ = false;
  error_->clear();
  if (generating_) {
    worker_->stop();
    new_chat_after_answer_ = true;
  } else {
    new_chat();
  }
  model_label_->setText(tr("%1 — loads when this pane is shown.").arg(QDir::toNativeSeparators(dir)));
  if (isVisible()) load_model_if_needed();
  update_controls();
  Q_EMIT model_ready_changed(false);
}

void ChatPane::load_model_if_needed() {
  const QString quant = base_4bit_->isChecked() ? QStringLiteral("nf4") : QStringLiteral("none");
  if (model_dir_.isEmpty() || (loaded_dir_ == model_dir_ && loaded_quant_ == quant)) return;
  const bool same_model = loaded_dir_ == model_dir_;  // only the base's precision changes
  loaded_dir_ = model_dir_;
  loaded_quant_ = quant;
  ++pending_loads_;
  model_label_->setText(tr("Loading %1…").arg(QDir::toNativeSeparators(model_dir_)));
  forja::EngineOptions options;
  options.base_quant = quant.toStdString();
  worker_->load_model(model_dir_, options);
  if (!adapter_dir_.isEmpty()) worker_->load_adapter(adapter_dir_);  // queued after the model
  if (same_model && !shown_.isEmpty()) {
    // The new engine starts empty: it gets the conversation on screen, so the chat goes on where it was.
    worker_->set_conversation(system_prompt_->toPlainText().trimmed(), shown_turns());
  }
  update_controls();
}

void ChatPane::open_adapter(const QString& adapter_dir) {
  if (adapter_dir.isEmpty()) return;
  adapter_dir_ = adapter_dir;
  adapter_loaded_ = false;
  adapter_label_->setText(tr("Adapter %1 loads with the model.").arg(QFileInfo(adapter_dir).fileName()));
  error_->clear();
  // With the model loaded or loading, the request queues after it; otherwise load_model_if_needed sends it.
  if (!loaded_dir_.isEmpty()) {
    adapter_label_->setText(tr("Loading adapter %1…").arg(QFileInfo(adapter_dir).fileName()));
    worker_->load_adapter(adapter_dir);
  }
  update_controls();
}

void ChatPane::showEvent(QShowEvent* event) {
  Pane::showEvent(event);
  load_model_if_needed();
}

bool ChatPane::eventFilter(QObject* watched, QEvent* event) {
  if (watched == input_ && event->type() == QEvent::KeyPress) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
        !(key->modifiers() & Qt::ShiftModifier)) {
      send();
      return true;  // Enter sends; Shift+Enter reaches the editor and starts a new line
    }
  }
  return Pane::eventFilter(watched, event);
}

QString ChatPane::last_answer() const {
  for (auto it = shown_.crbegin(); it != shown_.crend(); ++it)
    if (it->role == QLatin1String("assistant")) return it->text;
  return {};
}

void ChatPane::send() {
  const QString text = input_->toPlainText().trimmed();
  if (text.isEmpty() || !model_ready_ || generating_) return;
  error_->clear();
  input_->clear();
  pending_user_ = text;
  const QString system = system_prompt_->toPlainText().trimmed();
  generating_ = true;
  comparing_ = compare_mode_->isChecked() && adapter_loaded_;
  if (comparing_) {
    compare_prompt_->setText(text);
    compare_base_->clear();
    compare_adapted_->clear();
    compare_base_score_->clear();
    compare_adapted_score_->clear();
    views_->setCurrentIndex(1);
    worker_->compare(text, system, generation_config());
  } else {
    shown_.push_back({kUser, text});
    shown_.push_back({kAssistant, QString()});
    views_->setCurrentIndex(0);
    // Only the new messages are added: a long conversation is not laid out again.
    QTextCursor end(conversation_->document());
    end.movePosition(QTextCursor::End);
    insert_message(end, shown_.size() - 2);
    insert_message(end, shown_.size() - 1);
    answer_start_ = end.position();
    conversation_->verticalScrollBar()->setValue(conversation_->verticalScrollBar()->maximum());
    worker_->send(text, system, generation_config());
  }
  status_->setText(tr("Writing…"));
  update_controls();
}

std::vector<forja::ChatTurn> ChatPane::shown_turns() const {
  std::vector<forja::ChatTurn> turns;
  for (const auto& m : shown_) turns.push_back({m.role.toStdString(), m.text.toStdString()});
  return turns;
}

QString ChatPane::take_back_last_exchange() {
  if (generating_ || shown_.size() < 2 || shown_.back().role != kAssistant ||
      shown_[shown_.size() - 2].role != kUser)
    return {};
  const QString text = shown_[shown_.size() - 2].text;
  shown_.resize(shown_.size() - 2);
  worker_->set_conversation(system_prompt_->toPlainText().trimmed(), shown_turns());
  if (journal_ok_ && chat_started_) {
    // Queued behind any exchange still being saved, so it removes that one and never an older one.
    auto cell = chat_cell_;
    context_.journal->write(
        this,
        [cell](forja::Journal& j) {
          if (const int64_t id = cell->load()) j.drop_last_exchange(id);
        },
        [this](const JournalFailure& why) { show_journal_failure(why); });
  }
  render_conversation();
  return text;
}

void ChatPane::regenerate() {
  if (!model_ready_ || compare_mode_->isChecked()) return;
  const QString text = take_back_last_exchange();
  if (text.isEmpty()) return;
  const QString draft = input_->toPlainText();  // what the user was writing stays in the box
  input_->setPlainText(text);
  send();
  input_->setPlainText(draft);
}

void ChatPane::edit_last_message() {
  const QString text = take_back_last_exchange();
  if (text.isEmpty()) return;
  // A draft in the box is kept after the message taken back.
  const QString draft = input_->toPlainText();
  input_->setPlainText(draft.isEmpty() ? text : text + QLatin1Char('\n') + draft);
  input_->setFocus();
  input_->moveCursor(QTextCursor::End);
  update_controls();
}

void ChatPane::copy_last_answer() {
  const QString answer = last_answer();
  if (!answer.isEmpty()) QGuiApplication::clipboard()->setText(answer);
}

void ChatPane::stop() {
  if (!generating_) return;
  worker_->stop();
  status_->setText(tr("Stopping…"));
}

void ChatPane::on_streamed(const QString& text, bool adapted) {
  if (!generating_) return;
  if (comparing_) {
    append_text(adapted ? compare_adapted_ : compare_base_, text);
  } else if (!shown_.isEmpty()) {
    shown_.back().text += text;
    append_text(conversation_, text);
  }
}

void ChatPane::on_answered(const ChatReply& reply) {
  const bool rerender = !shown_.isEmpty() && shown_.back().role == kAssistant && answer_start_ >= 0;
  if (rerender) {
    shown_.back().text = reply.text;
    shown_.back().stopped = reply.stop == forja::StopReason::Cancelled;
  }
  save_exchange(pending_user_, reply.text);
  status_->setText(describe(reply));
  // The streamed plain text gives way to the answer rendered as Markdown; the rest stays as it is. Laying a
  // long answer out takes tens of milliseconds on a slow CPU, so the parsing, the answer's pieces (a few
  // paragraphs each) and the decoration each get an event-loop turn of their own, after the saving above,
  // with the view's painting held until the last; the answer is finished (and Send enabled again) then.
  QTimer::singleShot(0, this, [this, rerender] {
    if (!rerender || answer_start_ < 0 || shown_.isEmpty()) return finish_generation();
    QTextDocument parsed;
    parsed.setMarkdown(shown_.back().text, kMarkdown);
    const QList<QTextDocumentFragment> pieces = markdown_pieces(parsed, kRenderPieceChars);
    QTimer::singleShot(0, this, [this, pieces] {
      conversation_->setUpdatesEnabled(false);
      QTextCursor answer(conversation_->document());
      answer.setPosition(answer_start_);
      answer.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
      answer.removeSelectedText();
      render_answer_piece(pieces, 0);
    });
  });
}

void ChatPane::render_answer_piece(const QList<QTextDocumentFragment>& pieces, qsizetype index) {
  QTextCursor c(conversation_->document());
  c.movePosition(QTextCursor::End);  // the answer is the conversation's end
  if (index < pieces.size()) {
    insert_markdown_piece(c, pieces, index);
    QTimer::singleShot(0, this, [this, pieces, index] { render_answer_piece(pieces, index + 1); });
    return;
  }
  if (shown_.back().stopped) insert_stopped_note(c);
  answer_start_ = -1;
  QTimer::singleShot(0, this, [this] {
    decorate_conversation();
    conversation_->setUpdatesEnabled(true);
    finish_generation();
  });
}

namespace {

// Where two answers part: the first word that differs is marked in both views (the text before it is the
// same), so the eye goes straight to where the fine-tuning changed the answer. Returns that position, -1
// when the answers are the same.
qsizetype mark_divergence(QTextBrowser* a, QTextBrowser* b, const QColor& color) {
  const QString ta = a->document()->toPlainText(), tb = b->document()->toPlainText();
  qsizetype k = 0;
  while (k < ta.size() && k < tb.size() && ta[k] == tb[k]) ++k;
  if (k == ta.size() && k == tb.size()) return -1;
  while (k > 0 && !ta[k - 1].isSpace()) --k;  // back to the start of the word (the prefix is shared)
  QTextCharFormat mark;
  mark.setBackground(color);
  for (auto [view, text] : {std::pair{a, ta}, std::pair{b, tb}}) {
    qsizetype e = k;
    while (e < text.size() && text[e].isSpace()) ++e;
    while (e < text.size() && !text[e].isSpace()) ++e;
    if (e == k) continue;  // this answer ends where the other goes on
    QTextCursor c(view->document());
    c.setPosition(static_cast<int>(k));
    c.setPosition(static_cast<int>(e), QTextCursor::KeepAnchor);
    c.mergeCharFormat(mark);
  }
  return k;
}

}  // namespace

void ChatPane::on_compared(const CompareReply& reply) {
  auto show = [this](QTextBrowser* view, QLabel* score, const ChatReply& r, double under_base,
                     double under_adapter) {
    view->document()->setMarkdown(r.text, kMarkdown);
    if (r.stop == forja::StopReason::Cancelled) append_text(view, QStringLiteral("\n") + tr("(stopped)"));
    score->setText(tr("%n token(s); mean log-prob per token: %1 under the base model, %2 with the adapter",
                      nullptr, static_cast<int>(r.new_tokens))
                       .arg(under_base, 0, 'f', 3)
                       .arg(under_adapter, 0, 'f', 3));
  };
  show(compare_base_, compare_base_score_, reply.base, reply.base.mean_logprob, reply.base_under_adapter);
  show(compare_adapted_, compare_adapted_score_, reply.adapted, reply.adapted_under_base,
       reply.adapted.mean_logprob);
  QColor mark = palette().color(QPalette::Highlight);
  mark.setAlpha(90);
  mark_divergence(compare_base_, compare_adapted_, mark);
  status_->setText(tr("Base: %1\nFine-tuned: %2").arg(describe(reply.base), describe(reply.adapted)));
  finish_generation();
}

void ChatPane::on_generation_failed(const QString& message, const QString& hint) {
  if (!generating_) {  // a settings request failed; nothing was being written
    error_->show_error(message, hint);
    return;
  }
  error_->show_error(message, hint);
  // The engine kept the conversation as it was: so does the view, and the message goes back to the box.
  if (!comparing_ && shown_.size() >= 2) {
    shown_.resize(shown_.size() - 2);
    render_conversation();
  }
  if (input_->toPlainText().isEmpty()) input_->setPlainText(pending_user_);
  status_->clear();
  finish_generation();
}

void ChatPane::finish_generation() {
  generating_ = false;
  pending_user_.clear();
  answer_start_ = -1;
  comparing_ = false;
  if (new_chat_after_answer_) {
    new_chat_after_answer_ = false;
    new_chat();
  }
  update_controls();
  Q_EMIT answer_finished();
}

void ChatPane::show_journal_unavailable(const QString& message, const QString& hint) {
  journal_ok_ = false;
  error_->show_error(tr("Chats are not saved: %1").arg(message), hint, ErrorBox::Severity::Warning);
  update_controls();
}

void ChatPane::show_journal_failure(const JournalFailure& why) {
  error_->show_error(why.message, why.hint);
}

void ChatPane::new_chat() {
  if (generating_) return;
  chat_id_ = 0;
  chat_cell_ = std::make_shared<std::atomic<int64_t>>(0);
  chat_started_ = false;
  saved_system_.clear();
  shown_.clear();
  render_conversation();
  compare_prompt_->clear();
  compare_base_->clear();
  compare_adapted_->clear();
  compare_base_score_->clear();
  compare_adapted_score_->clear();
  status_->clear();
  worker_->set_conversation(system_prompt_->toPlainText().trimmed(), {});
  chat_list_->clearSelection();
  chat_list_->setCurrentItem(nullptr);
  input_->setFocus();
  update_controls();
}

void ChatPane::open_chat(int64_t chat_id) {
  if (generating_ || !journal_ok_ || chat_id == chat_id_) return;
  struct Opened {
    std::vector<forja::MessageRecord> messages;
    std::optional<forja::ChatRecord> record;
  };
  const int token = ++open_token_;
  context_.journal->request(
      this,
      [chat_id](forja::Journal& j) {
        Opened o{j.messages(chat_id), std::nullopt};
        for (const auto& c : j.chats())
          if (c.id == chat_id) o.record = c;
        return o;
      },
      [this, chat_id, token](const Opened& o) {
        // A later click, an answer begun or a new chat meanwhile wins over this one.
        if (token != open_token_ || generating_) return;
        show_opened_chat(chat_id, o.messages, o.record);
      },
      [this](const JournalFailure& why) { show_journal_failure(why); });
}

void ChatPane::show_opened_chat(int64_t chat_id, const std::vector<forja::MessageRecord>& messages,
                                const std::optional<forja::ChatRecord>& record) {
  error_->clear();
  shown_.clear();
  std::vector<forja::ChatTurn> turns;
  QString system;
  for (const auto& m : messages) {
    const QString role = QString::fromStdString(m.role);
    if (role == kSystem) {
      system = QString::fromStdString(m.content);  // a later one replaced it mid-chat
      continue;
    }
    shown_.push_back({role, QString::fromStdString(m.content)});
    turns.push_back({m.role, m.content});
  }
  chat_id_ = chat_id;
  chat_cell_ = std::make_shared<std::atomic<int64_t>>(chat_id);
  chat_started_ = true;
  saved_system_ = system;
  system_prompt_->setPlainText(system);
  worker_->set_conversation(system, turns);
  compare_mode_->setChecked(false);
  render_conversation();
  const QString chat_model = record ? QString::fromStdString(record->model_dir) : QString();
  status_->setText(!chat_model.isEmpty() && chat_model != model_dir_
                       ? tr("This chat was with %1; new answers come from the model open now.")
                             .arg(QDir::toNativeSeparators(chat_model))
                       : QString());
  update_controls();
}

void ChatPane::delete_selected_chat() {
  QListWidgetItem* item = chat_list_->currentItem();
  if (!item || generating_ || !journal_ok_) return;
  const int64_t id = item->data(Qt::UserRole).toLongLong();
  const auto answer = QMessageBox::question(this, tr("Delete chat"),
                                            tr("Delete the chat “%1” and its messages?").arg(item->text()),
                                            QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
  if (answer != QMessageBox::Yes) return;
  context_.journal->request(
      this, [id](forja::Journal& j) { return j.delete_chat(id); },
      [this, id](bool) {
        if (id == chat_id_) new_chat();
        refresh_chats();
      },
      [this](const JournalFailure& why) { show_journal_failure(why); });
}

void ChatPane::refresh_chats() {
  context_.journal->request(
      this, [](forja::Journal& j) { return j.chats(); },
      [this](const std::vector<forja::ChatRecord>& chats) {
        const QSignalBlocker quiet(chat_list_);
        chat_list_->clear();
        for (const auto& c : chats) {
          auto* item = new QListWidgetItem(chat_list_);
          describe_chat_item(item, c);
          if (c.id == chat_id_) chat_list_->setCurrentItem(item);
        }
        if (!chat_search_->text().trimmed().isEmpty()) apply_chat_search();
        update_controls();
      },
      [this](const JournalFailure& why) {
        // The pane already said, once, that chats are not saved.
        if (!context_.journal->open_failure()) show_journal_failure(why);
      });
}

void ChatPane::apply_chat_search() {
  const QString text = chat_search_->text().trimmed();
  const int token = ++search_token_;
  if (text.isEmpty()) {
    for (int row = 0; row < chat_list_->count(); ++row) chat_list_->item(row)->setHidden(false);
    Q_EMIT chats_filtered();
    return;
  }
  context_.journal->request(
      this, [needle = text.toStdString()](forja::Journal& j) { return j.find_chats(needle); },
      [this, token](const std::vector<int64_t>& ids) {
        if (token != search_token_) return;
        for (int row = 0; row < chat_list_->count(); ++row) {
          const int64_t id = chat_list_->item(row)->data(Qt::UserRole).toLongLong();
          chat_list_->item(row)->setHidden(std::find(ids.begin(), ids.end(), id) == ids.end());
        }
        Q_EMIT chats_filtered();
      },
      [this](const JournalFailure& why) { show_journal_failure(why); });
}

void ChatPane::export_chat(const QString& format, const QString& path) {
  QVector<ExportedTurn> turns;
  for (const Shown& m : shown_) turns.push_back({m.role, m.text, m.stopped});
  QString title = chat_list_->currentItem() ? chat_list_->currentItem()->text() : QString();
  if (title.isEmpty()) title = tr("Chat");
  const QByteArray content = format == QLatin1String("markdown")
                                 ? chat_as_markdown(title, system_prompt_->toPlainText(), turns).toUtf8()
                                 : chat_as_training_record(system_prompt_->toPlainText(), turns);
  if (content.isEmpty()) {
    error_->show_error(tr("This chat has no finished exchange to export as training data."),
                       tr("Send a message and let the answer finish, then export again."));
    Q_EMIT chat_exported(false, path);
    return;
  }
  error_->clear();
  write_file_in_background(this, content.toStdString(), path, [this, path](const QString& error) {
    if (!error.isEmpty()) error_->show_error(error, tr("Choose another file or folder."));
    Q_EMIT chat_exported(error.isEmpty(), path);
  });
}

void ChatPane::describe_chat_item(QListWidgetItem* item, const forja::ChatRecord& c) {
  item->setText(QString::fromStdString(c.title));
  item->setData(Qt::UserRole, static_cast<qlonglong>(c.id));
  QString tip = tr("%1\n%2").arg(format_timestamp_ms(c.updated_at_ms),
                                 QDir::toNativeSeparators(QString::fromStdString(c.model_dir)));
  if (!c.adapter_path.empty())
    tip += QStringLiteral("\n") +
           tr("Adapter: %1").arg(QDir::toNativeSeparators(QString::fromStdString(c.adapter_path)));
  item->setToolTip(tip);
}

void ChatPane::save_exchange(const QString& user_text, const QString& answer) {
  if (!journal_ok_ || user_text.isEmpty()) return;
  const QString system = system_prompt_->toPlainText().trimmed();
  const bool opens_chat = !chat_started_;
  std::vector<std::pair<std::string, std::string>> messages;
  if (system != (opens_chat ? QString() : saved_system_))
    messages.emplace_back(kSystem.toStdString(), system.toStdString());
  messages.emplace_back(kUser.toStdString(), user_text.toStdString());
  messages.emplace_back(kAssistant.toStdString(), answer.toStdString());
  forja::ChatRecord c;
  const bool adapter_on = adapter_loaded_ && adapter_on_->isChecked();
  c.title = chat_title(user_text).toStdString();
  c.model_dir = model_dir_.toStdString();
  c.adapter_path = adapter_on ? adapter_dir_.toStdString() : std::string();
  chat_started_ = true;
  saved_system_ = system;
  // The journal thread learns the chat's id from the first exchange and keeps it in the cell, so that a
  // second answer saved before the first one's id reached this thread joins the same chat.
  auto cell = chat_cell_;
  context_.journal->request(
      this,
      [cell, c, messages](forja::Journal& j) {
        // One transaction: a crash keeps the whole exchange (with the chat it opened) or none of it.
        const int64_t before = cell->load();
        const int64_t id = j.add_exchange(before, c, messages);
        cell->store(id);
        return std::pair<int64_t, bool>(id, before == 0);
      },
      [this, cell, c](const std::pair<int64_t, bool>& saved) mutable {
        const auto [id, opened] = saved;
        if (cell == chat_cell_) chat_id_ = id;
        const QSignalBlocker quiet(chat_list_);
        if (opened) {
          c.id = id;
          c.updated_at_ms = forja::journal_now_ms();
          // The list grows by this one item, at the top (most recently updated first), without reading the
          // journal's whole chat list again on every answer.
          auto* item = new QListWidgetItem;
          describe_chat_item(item, c);
          chat_list_->insertItem(0, item);
          if (cell == chat_cell_) chat_list_->setCurrentItem(item);
        } else {
          // An older chat continued moves to the top.
          for (int row = 0; row < chat_list_->count(); ++row)
            if (chat_list_->item(row)->data(Qt::UserRole).toLongLong() == id) {
              QListWidgetItem* item = chat_list_->takeItem(row);
              chat_list_->insertItem(0, item);
              if (cell == chat_cell_) chat_list_->setCurrentItem(item);
              break;
            }
        }
        update_controls();
      },
      [this](const JournalFailure& why) {
        error_->show_error(tr("This chat could not be saved: %1").arg(why.message), why.hint,
                           ErrorBox::Severity::Warning);
      });
  update_controls();
}

void ChatPane::render_conversation() {
  answer_start_ = -1;
  conversation_->document()->clear();
  QTextCursor c(conversation_->document());
  for (qsizetype i = 0; i < shown_.size(); ++i) insert_message(c, i);
  if (!generating_) decorate_conversation();
  conversation_->verticalScrollBar()->setValue(conversation_->verticalScrollBar()->maximum());
}

void ChatPane::decorate_conversation() {
  QTextDocument* doc = conversation_->document();
  // The links already there come off first: the document is decorated again after each answer.
  for (QTextBlock b = doc->begin(); b.isValid();) {
    const QTextBlock next = b.next();
    if (b.blockFormat().boolProperty(kCopyLinkBlock)) {
      QTextCursor c(b);
      c.movePosition(QTextCursor::PreviousBlock, QTextCursor::MoveAnchor);
      c.movePosition(QTextCursor::EndOfBlock);
      c.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
      c.removeSelectedText();
    }
    b = next;
  }
  // Each message's blocks as a bubble (Markdown's own blocks included), from its header to the next one.
  QString role;
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
    if (const QString r = b.blockFormat().stringProperty(kRoleHeader); !r.isEmpty()) role = r;
    if (!role.isEmpty()) QTextCursor(b).mergeBlockFormat(bubble_format(role));
  }
  // Runs of code blocks (Markdown gives each line of a fence a block with a code language property).
  code_blocks_.clear();
  std::vector<int> ends;  // the position of each run's last block
  bool in_code = false;
  for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
    const bool code = b.blockFormat().hasProperty(QTextFormat::BlockCodeLanguage);
    if (code) {
      if (!in_code)
        code_blocks_ << QString();
      else
        code_blocks_.back() += QLatin1Char('\n');
      code_blocks_.back() += b.text();
      QTextBlockFormat shade;
      shade.setBackground(palette().color(QPalette::AlternateBase));
      QTextCursor(b).mergeBlockFormat(shade);
      if (in_code)
        ends.back() = b.position();
      else
        ends.push_back(b.position());
    }
    in_code = code;
  }
  // From the last run back, so that each insertion leaves the earlier positions as they were.
  for (int i = static_cast<int>(ends.size()) - 1; i >= 0; --i) {
    QTextCursor c(doc->findBlock(ends[static_cast<size_t>(i)]));
    c.movePosition(QTextCursor::EndOfBlock);
    QTextBlockFormat link_block;
    link_block.setProperty(kCopyLinkBlock, true);
    QTextCharFormat link;
    link.setAnchor(true);
    link.setAnchorHref(QStringLiteral("forja-copy-code:%1").arg(i));
    link.setForeground(palette().color(QPalette::Link));
    link.setFontUnderline(true);
    c.insertBlock(link_block, QTextCharFormat());
    c.insertText(tr("Copy code"), link);
  }
}

QTextBlockFormat ChatPane::bubble_format(const QString& role) const {
  // The user's messages stand out to the right on a tint; the answers run from the left edge.
  QTextBlockFormat f;
  if (role == kUser) {
    QColor tint = palette().color(QPalette::Highlight);
    tint.setAlpha(40);
    f.setBackground(tint);
    f.setLeftMargin(48);
    f.setRightMargin(0);
  } else {
    f.setLeftMargin(0);
    f.setRightMargin(48);
  }
  return f;
}

void ChatPane::insert_message(QTextCursor& c, qsizetype index) {
  const Shown& m = shown_[index];
  QTextBlockFormat header = bubble_format(m.role);
  header.setTopMargin(index == 0 ? 0 : 14);
  header.setProperty(kRoleHeader, m.role);
  if (index > 0)
    c.insertBlock(header, QTextCharFormat());
  else
    c.setBlockFormat(header);
  QTextCharFormat role_format;
  role_format.setFontWeight(QFont::Bold);
  c.insertText(m.role == kUser ? tr("You") : tr("Assistant"), role_format);
  c.insertBlock(bubble_format(m.role), QTextCharFormat());
  insert_body(c, m, /*streaming=*/generating_ && index == shown_.size() - 1);
}

void ChatPane::insert_body(QTextCursor& c, const Shown& m, bool streaming) {
  // Finished answers as Markdown; the user's words, and an answer while it streams, as plain text.
  if (m.role == kAssistant && !streaming)
    c.insertMarkdown(m.text, kMarkdown);
  else
    c.insertText(m.text, QTextCharFormat());
  if (m.stopped) insert_stopped_note(c);
}

void ChatPane::insert_stopped_note(QTextCursor& c) {
  QTextCharFormat note_format;
  note_format.setFontItalic(true);
  note_format.setForeground(palette().color(QPalette::PlaceholderText));
  c.insertBlock(QTextBlockFormat(), QTextCharFormat());
  c.insertText(tr("(stopped)"), note_format);
}

void ChatPane::append_text(QTextBrowser* view, const QString& text) {
  QScrollBar* bar = view->verticalScrollBar();
  const bool follow = bar->value() >= bar->maximum() - 4;  // the reader is at the end: keep them there
  QTextCursor c(view->document());
  c.movePosition(QTextCursor::End);
  c.insertText(text, QTextCharFormat());
  if (follow) bar->setValue(bar->maximum());
}

void ChatPane::update_controls() {
  const bool idle = !generating_;
  send_->setEnabled(model_ready_ && idle);
  stop_->setEnabled(generating_);
  new_chat_->setEnabled(idle);
  chat_list_->setEnabled(idle && journal_ok_);
  delete_chat_->setEnabled(idle && journal_ok_ && chat_list_->currentItem() != nullptr);
  export_chat_->setEnabled(idle && !shown_.isEmpty());
  const bool has_answer = !shown_.isEmpty() && shown_.back().role == kAssistant;
  regenerate_->setEnabled(idle && model_ready_ && has_answer && views_->currentIndex() == 0);
  edit_last_->setEnabled(idle && has_answer && views_->currentIndex() == 0);
  copy_answer_->setEnabled(idle && has_answer);
  chat_search_->setEnabled(journal_ok_);
  if (!adapter_loaded_ && compare_mode_->isChecked()) compare_mode_->setChecked(false);
  compare_mode_->setEnabled(idle && adapter_loaded_);
  adapter_on_->setVisible(adapter_loaded_);
  adapter_on_->setEnabled(idle);
  base_4bit_->setEnabled(idle);
  load_adapter_->setEnabled(idle && !model_dir_.isEmpty());
}

QString ChatPane::describe(const ChatReply& r) const {
  QStringList parts;
  parts << tr("%n token(s)", nullptr, static_cast<int>(r.new_tokens));
  if (r.new_tokens > 1) parts << tr("%1 tokens/s").arg(r.tokens_per_second, 0, 'f', 1);
  if (r.new_tokens > 0) parts << tr("first token after %1 ms").arg(qRound(r.first_token_seconds * 1000));
  if (r.reused_tokens > 0)
    parts << tr("%1 of %2 prompt tokens reused").arg(r.reused_tokens).arg(r.prompt_tokens);
  if (r.max_context > 0) parts << tr("context %1 of %2 tokens").arg(r.context_tokens).arg(r.max_context);
  parts << stop_text(r.stop);
  return parts.join(QStringLiteral(" · "));
}

QString ChatPane::stop_text(forja::StopReason stop) const {
  switch (stop) {
    case forja::StopReason::EndOfSequence:
      return tr("ended: end of text");
    case forja::StopReason::StopToken:
      return tr("ended: end of turn");
    case forja::StopReason::StopString:
      return tr("ended: stop string");
    case forja::StopReason::MaxTokens:
      return tr("ended: max new tokens reached");
    case forja::StopReason::ContextFull:
      return tr("ended: the context is full");
    case forja::StopReason::Cancelled:
      return tr("stopped by you");
  }
  return {};
}

}  // namespace forja::ui
