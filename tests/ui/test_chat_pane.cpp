// Tests of the Chat pane, driven through the main window like a user: a real model on the CPU answers in
// streamed pieces, Stop keeps the answer so far, the adapter switches without a reload, the comparison shows
// both answers with their scores, chats are kept in the journal and reopen in a new window, a model folder
// without a tokenizer shows its error, and the window's event loop never stalls while the model writes.
#include <QCheckBox>
#include <QClipboard>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "chat_export.h"
#include "chat_worker.h"
#include "error_box.h"
#include "forja/file_util.h"
#include "forja/journal.h"
#include "forja/safetensors.h"
#include "jobs/job.h"
#include "main_window.h"
#include "panes/chat_pane.h"
#include "ui_test_support.h"

using forja::ui::ChatPane;
using forja::ui::ChatReply;
using forja::ui::ChatWorker;
using forja::ui::CompareReply;
using forja::ui::MainWindow;
using forja::ui::PaneId;
namespace fs = std::filesystem;

namespace {

// tests/fixtures/models/smollm (make_fixtures.py): a 2-layer SmolLM-shaped Llama, hidden 64, one KV head of
// 16, tied embeddings, 320 tokens, context 128. tests/fixtures/tokenizers/smollm_bpe
// (make_tokenizer_fixtures.py): a byte-level BPE of 1400 ids with SmolLM's ChatML template and its special
// tokens at SmolLM's ids (0 <|endoftext|>, 1 <|im_start|> = BOS, 2 <|im_end|> = EOS). No fixture tokenizer
// fits in 320 ids, so the test model is the fixture widened to the tokenizer (write_chat_model).
const fs::path kFixtureModel = fs::path(FORJA_FIXTURES_DIR) / "models" / "smollm";
const fs::path kFixtureTokenizer = fs::path(FORJA_FIXTURES_DIR) / "tokenizers" / "smollm_bpe";
constexpr int64_t kFixtureVocab = 320, kTokenizerVocab = 1400, kHidden = 64, kKvWidth = 16, kLayers = 2;
// Room for the long answers of the Stop and responsiveness tests (the fixture's 128 would end them at once);
// RoPE has no learned positions, so only config.json changes.
constexpr int kContext = 4096;

std::vector<float> floats_of(const forja::io::SafetensorsFile& file, const forja::io::TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  const auto bytes = file.bytes(t);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// Uniform values of a given standard deviation from a fixed seed (mt19937's output is the same everywhere).
std::vector<float> random_values(size_t n, double std_dev, uint32_t seed) {
  std::mt19937 gen(seed);
  const double half_width = std_dev * 1.7320508075688772;  // uniform on [-a, a] has std a / sqrt(3)
  std::vector<float> out(n);
  for (float& v : out) v = static_cast<float>((gen() / 4294967295.0 * 2 - 1) * half_width);
  return out;
}

// The fixture model with its embedding widened from 320 to the tokenizer's 1400 rows, an untied output head
// and a 4096-token context, with the tokenizer's files beside it.
void write_chat_model(const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kFixtureTokenizer))
    fs::copy(e.path(), dir / e.path().filename());
  fs::copy(kFixtureModel / "generation_config.json", dir / "generation_config.json");
  std::string config = forja::read_text_file(kFixtureModel / "config.json");
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"\"vocab_size\": 320", "\"vocab_size\": 1400"},
        {"\"max_position_embeddings\": 128", "\"max_position_embeddings\": 4096"},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"}}) {
    const size_t at = config.find(from);
    if (at == std::string::npos) qFatal("the smollm fixture's config.json has no %s", from.c_str());
    config.replace(at, from.size(), to);
  }
  forja::write_file_atomic(dir / "config.json", config);

  const auto file = forja::io::SafetensorsFile::open(kFixtureModel / "model.safetensors");
  std::vector<std::vector<float>> keep;
  std::vector<forja::io::TensorToWrite> tensors;
  keep.reserve(file.tensors().size() + 1);  // the spans below point into these
  for (const auto& t : file.tensors()) {
    if (t.dtype != forja::io::DType::F32) qFatal("the smollm fixture is stored in F32");
    std::vector<float> values = floats_of(file, t);
    std::vector<int64_t> shape = t.shape;
    if (t.name == "model.embed_tokens.weight") {
      // New rows drawn like the fixture's own (transformers' initializer_range 0.02).
      const std::vector<float> extra =
          random_values(static_cast<size_t>((kTokenizerVocab - kFixtureVocab) * kHidden), 0.02, 7);
      values.insert(values.end(), extra.begin(), extra.end());
      shape = {kTokenizerVocab, kHidden};
    }
    keep.push_back(std::move(values));
    tensors.push_back({t.name, forja::io::DType::F32, shape, bytes_of(keep.back())});
  }
  // An output head of its own. Tied to these tiny random embeddings, the head's best guess is the last token
  // again, so every answer would be one character repeated, the same with the adapter or without. The rows of
  // <|endoftext|> and <|im_end|> are zero: their logit is exactly 0, below the best of the other 1397, so a
  // greedy answer never ends early and the long-answer tests stay long.
  keep.push_back(random_values(static_cast<size_t>(kTokenizerVocab * kHidden), 0.02, 11));
  for (int64_t id : {0, 2}) std::fill_n(keep.back().begin() + id * kHidden, kHidden, 0.0f);
  tensors.push_back(
      {"lm_head.weight", forja::io::DType::F32, {kTokenizerVocab, kHidden}, bytes_of(keep.back())});
  forja::io::write_safetensors(dir / "model.safetensors", tensors);
}

// A PEFT LoRA adapter (rank 4 on q_proj and v_proj of both layers) with values large enough to change every
// greedy answer of the tiny-weight base model.
void write_adapter(const fs::path& dir) {
  fs::create_directories(dir);
  forja::write_file_atomic(dir / "adapter_config.json", R"({"peft_type": "LORA", "task_type": "CAUSAL_LM",
  "base_model_name_or_path": "smollm-chat", "r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "use_rslora": false,
  "target_modules": ["q_proj", "v_proj"], "fan_in_fan_out": false, "bias": "none", "use_dora": false})");
  constexpr int64_t rank = 4;
  std::vector<std::vector<float>> keep;
  std::vector<forja::io::TensorToWrite> tensors;
  keep.reserve(4 * kLayers);
  uint32_t seed = 100;
  for (int layer = 0; layer < kLayers; ++layer) {
    for (const auto& [module, out] :
         {std::pair<std::string, int64_t>{"q_proj", kHidden}, {"v_proj", kKvWidth}}) {
      const std::string name =
          "base_model.model.model.layers." + std::to_string(layer) + ".self_attn." + module + ".lora_";
      keep.push_back(random_values(static_cast<size_t>(rank * kHidden), 0.3, seed++));
      tensors.push_back({name + "A.weight", forja::io::DType::F32, {rank, kHidden}, bytes_of(keep.back())});
      keep.push_back(random_values(static_cast<size_t>(out * rank), 0.3, seed++));
      tensors.push_back({name + "B.weight", forja::io::DType::F32, {out, rank}, bytes_of(keep.back())});
    }
  }
  forja::io::write_safetensors(dir / "adapter_model.safetensors", tensors);
}

// Space on the focused box, as a keyboard user switches it (a click's spot depends on the layout's width).
void toggle(QCheckBox* box) {
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Space);
}

}  // namespace

class TestChatPane : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void init();
  void cleanup();
  void streamsTheAnswerInPieces();
  void stopKeepsTheAnswerSoFar();
  void adapterSwitchesWithoutReload();
  void compareShowsBothAnswersWithScores();
  void chatsAreKeptAndReopen();
  void chatsAreSearchedAndExported();
  void regenerateAndEditTakeBackTheLastExchange();
  void codeBlocksAreShadedWithACopyLink();
  void fourBitBaseReloadsAndKeepsTheChat();
  void modelWithoutTokenizerShowsError();
  void staysResponsiveWhileGenerating();

 private:
  void open_window();
  void open_model(const QString& dir);
  // Types `text` into the message box, presses Enter and waits for the answer to finish.
  void send_message(const QString& text);
  ChatReply last_reply() const;
  template <typename T>
  T* child(const char* name) const {
    T* w = pane_->findChild<T*>(QLatin1String(name));
    if (!w) qFatal("the Chat pane has no %s", name);
    return w;
  }

  QTemporaryDir fixtures_;
  QString model_dir_, adapter_dir_;
  QTemporaryDir* tmp_ = nullptr;
  MainWindow* window_ = nullptr;
  ChatPane* pane_ = nullptr;
  QSignalSpy* answered_ = nullptr;
  QSignalSpy* finished_ = nullptr;
};

void TestChatPane::initTestCase() {
  forja::test::init_ui_test_environment("test_chat_pane");
  QVERIFY(fixtures_.isValid());
  model_dir_ = fixtures_.filePath(QStringLiteral("smollm-chat"));
  adapter_dir_ = fixtures_.filePath(QStringLiteral("adapter"));
  write_chat_model(model_dir_.toStdString());
  write_adapter(adapter_dir_.toStdString());
}

void TestChatPane::init() {
  QSettings().clear();
  tmp_ = new QTemporaryDir;
  open_window();
}

void TestChatPane::open_window() {
  window_ = new MainWindow({tmp_->filePath(QStringLiteral("journal.db"))});
  window_->show();
  pane_ = window_->chat_pane();
  auto* worker = pane_->findChild<ChatWorker*>();
  QVERIFY(worker);
  delete answered_;
  delete finished_;
  answered_ = new QSignalSpy(worker, &ChatWorker::answered);
  finished_ = new QSignalSpy(pane_, &ChatPane::answer_finished);
  forja::test::settle_journal(window_);  // the chat list is read
}

void TestChatPane::cleanup() {
  delete answered_;
  delete finished_;
  answered_ = finished_ = nullptr;
  QVERIFY(forja::ui::Job::cancel_all_and_wait(5000));
  delete window_;
  delete tmp_;
}

void TestChatPane::open_model(const QString& dir) {
  // As the user does it: open the folder in the Model pane (the window hands it to the Chat pane), then go
  // to the Chat pane, whose first show loads the model.
  window_->open_model(dir);
  window_->show_pane(PaneId::Chat);
  QVERIFY(pane_->isVisible());
  QTRY_VERIFY_WITH_TIMEOUT(pane_->model_ready(), 30000);
  // Greedy answers: the same message gives the same answer, so answers can be compared.
  child<QDoubleSpinBox>("temperature")->setValue(0);
}

void TestChatPane::send_message(const QString& text) {
  const qsizetype before = finished_->count();
  auto* input = child<QPlainTextEdit>("chatInput");
  input->setFocus();
  QTest::keyClicks(input, text);
  QTest::keyClick(input, Qt::Key_Return);
  QVERIFY(input->toPlainText().isEmpty());
  QTRY_VERIFY_WITH_TIMEOUT(finished_->count() > before, 60000);
  forja::test::settle_journal(window_);  // the exchange is saved and the pane knows its chat
}

ChatReply TestChatPane::last_reply() const {
  return answered_->isEmpty() ? ChatReply{} : answered_->last().at(0).value<ChatReply>();
}

void TestChatPane::streamsTheAnswerInPieces() {
  open_model(model_dir_);
  QVERIFY(!child<forja::ui::ErrorBox>("chatError")->isVisible());
  QVERIFY(child<QLabel>("chatModel")->text().contains(QStringLiteral("context 4096 tokens")));
  // 1500 tokens take the CPU a good part of a second, far longer than the 33 ms between two pieces.
  child<QSpinBox>("maxNewTokens")->setValue(1500);

  // Shift+Enter starts a new line; an empty box sends nothing.
  auto* input = child<QPlainTextEdit>("chatInput");
  QTest::keyClick(input, Qt::Key_Return);
  QCOMPARE(finished_->count(), 0);
  QTest::keyClicks(input, QStringLiteral("Hello"));
  QTest::keyClick(input, Qt::Key_Return, Qt::ShiftModifier);
  QCOMPARE(input->toPlainText(), QStringLiteral("Hello\n"));
  QCOMPARE(finished_->count(), 0);
  input->clear();

  auto* worker = pane_->findChild<ChatWorker*>();
  auto* view = child<QTextBrowser>("conversation");
  QString streamed;
  int pieces = 0, pieces_seen_in_view = 0;
  qsizetype answer_starts_at = -1;
  connect(worker, &ChatWorker::streamed, this, [&](const QString& piece, bool adapted) {
    QVERIFY(!adapted);
    ++pieces;
    streamed += piece;
    // The pane received the piece before this (it connected first) and shows it while the answer goes on:
    // the view grows by exactly the streamed text (toPlainText keeps the length of every character).
    const qsizetype shown = view->toPlainText().size();
    if (answer_starts_at < 0) answer_starts_at = shown - piece.size();
    if (pane_->generating() && shown - answer_starts_at == streamed.size()) ++pieces_seen_in_view;
  });
  send_message(QStringLiteral("Hello there"));
  const ChatReply reply = last_reply();
  QCOMPARE(reply.stop, forja::StopReason::MaxTokens);
  QCOMPARE(reply.new_tokens, qint64{1500});
  QVERIFY2(pieces >= 3, qPrintable(QStringLiteral("%1 pieces").arg(pieces)));
  QCOMPARE(pieces_seen_in_view, pieces);
  QCOMPARE(streamed, reply.text);
  QVERIFY(!reply.text.isEmpty());
  // The finished conversation: the user's message and the answer (now rendered), and the numbers.
  QVERIFY(view->toPlainText().contains(QStringLiteral("Hello there")));
  const QString status = child<QLabel>("chatStatus")->text();
  QVERIFY2(status.contains(QStringLiteral("tokens/s")) &&
               status.contains(QStringLiteral("first token after")) &&
               status.contains(QStringLiteral("max new tokens")),
           qPrintable(status));
  // How full the context is: the conversation's prompt and this answer, against the loaded context.
  QCOMPARE(reply.context_tokens, reply.prompt_tokens + reply.new_tokens);
  QVERIFY(reply.max_context >= reply.context_tokens);
  QVERIFY2(status.contains(
               QStringLiteral("context %1 of %2 tokens").arg(reply.context_tokens).arg(reply.max_context)),
           qPrintable(status));
  QVERIFY(child<QPushButton>("sendButton")->isEnabled());
  QVERIFY(!child<QPushButton>("stopButton")->isEnabled());
}

void TestChatPane::stopKeepsTheAnswerSoFar() {
  open_model(model_dir_);
  constexpr int kMaxNew = 4000;  // all of the 4096-token context after the prompt: tens of seconds, uncut
  child<QSpinBox>("maxNewTokens")->setValue(kMaxNew);
  auto* worker = pane_->findChild<ChatWorker*>();
  auto* stop = child<QPushButton>("stopButton");
  bool clicked = false;
  connect(worker, &ChatWorker::streamed, this, [&] {
    if (clicked) return;
    clicked = true;
    QVERIFY(stop->isEnabled());
    QTest::mouseClick(stop, Qt::LeftButton);
  });
  send_message(QStringLiteral("Tell me a long story"));
  QVERIFY(clicked);
  const ChatReply reply = last_reply();
  QCOMPARE(reply.stop, forja::StopReason::Cancelled);
  QVERIFY2(reply.new_tokens > 0 && reply.new_tokens < kMaxNew, qPrintable(QString::number(reply.new_tokens)));
  QVERIFY(!reply.text.isEmpty());
  // The answer so far stays, marked as stopped, in the view and in the journal.
  QVERIFY(child<QTextBrowser>("conversation")->toPlainText().contains(QStringLiteral("(stopped)")));
  QVERIFY(child<QLabel>("chatStatus")->text().contains(QStringLiteral("stopped by you")));
  const auto messages = forja::test::read_journal(window_).messages(pane_->chat_id());
  QCOMPARE(messages.size(), size_t{2});
  QCOMPARE(QString::fromStdString(messages[1].content), reply.text);
  // The next message is answered normally.
  child<QSpinBox>("maxNewTokens")->setValue(8);
  send_message(QStringLiteral("Shorter, please"));
  QCOMPARE(last_reply().stop, forja::StopReason::MaxTokens);
}

void TestChatPane::adapterSwitchesWithoutReload() {
  open_model(model_dir_);
  auto* adapter_on = child<QCheckBox>("adapterOn");
  QVERIFY(!adapter_on->isVisible());
  QVERIFY(!child<QCheckBox>("compareMode")->isEnabled());
  // A folder that is no adapter says so, and the chat goes on with the base model.
  auto* box = child<forja::ui::ErrorBox>("chatError");
  pane_->open_adapter(tmp_->path());
  QTRY_VERIFY_WITH_TIMEOUT(box->isVisible(), 30000);
  QVERIFY2(box->message().contains(QStringLiteral("adapter_config.json")), qPrintable(box->message()));
  QVERIFY(!pane_->has_adapter() && !adapter_on->isVisible());

  QSignalSpy adapter_ready(pane_, &ChatPane::adapter_ready);
  pane_->open_adapter(adapter_dir_);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 1, 30000);
  QVERIFY(!box->isVisible());
  QVERIFY(adapter_on->isVisible() && adapter_on->isChecked());
  // Named by the folder it sits in, as a run's adapter is named by its run.
  QCOMPARE(child<QLabel>("adapterLabel")->text(),
           QStringLiteral("Adapter: ") + QFileInfo(fixtures_.path()).fileName());
  {
    // The journal knows a run that wrote this adapter: the line then names the run.
    forja::Journal journal = forja::test::read_journal(window_);
    forja::NewRun r;
    r.name = "Receitas, segunda tentativa";
    r.model_dir = model_dir_.toStdString();
    const int64_t id = journal.create_run(r);
    journal.finish_run(id, forja::RunStatus::Completed, 1.0, std::nullopt, adapter_dir_.toStdString());
  }
  pane_->open_adapter(tmp_->path());  // another folder, then this adapter again
  QTRY_VERIFY_WITH_TIMEOUT(box->isVisible(), 30000);
  pane_->open_adapter(adapter_dir_);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 2, 30000);
  QTRY_COMPARE_WITH_TIMEOUT(child<QLabel>("adapterLabel")->text(),
                            QStringLiteral("Adapter: run “Receitas, segunda tentativa”"), 5000);
  child<QSpinBox>("maxNewTokens")->setValue(24);

  QSignalSpy reloads(pane_, &ChatPane::model_ready_changed);
  auto answer = [&] {
    QTest::mouseClick(child<QPushButton>("newChat"), Qt::LeftButton);
    send_message(QStringLiteral("Hi"));
    return last_reply().text;
  };
  const QString tuned = answer();
  toggle(adapter_on);
  QVERIFY(!adapter_on->isChecked());
  const QString base = answer();
  toggle(adapter_on);
  QVERIFY(adapter_on->isChecked());
  const QString tuned_again = answer();
  QVERIFY(tuned != base);
  QCOMPARE(tuned_again, tuned);
  QCOMPARE(reloads.count(), 0);  // switched in place, never reloaded
  // The chat remembers which adapter answered.
  const auto chats = forja::test::read_journal(window_).chats();
  QCOMPARE(chats.size(), size_t{3});
  QCOMPARE(QString::fromStdString(chats[0].adapter_path), adapter_dir_);
  QCOMPARE(QString::fromStdString(chats[1].adapter_path), QString());
}

void TestChatPane::compareShowsBothAnswersWithScores() {
  open_model(model_dir_);
  QSignalSpy adapter_ready(pane_, &ChatPane::adapter_ready);
  pane_->open_adapter(adapter_dir_);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 1, 30000);
  child<QSpinBox>("maxNewTokens")->setValue(16);
  // The plain answers first, adapter off and on.
  toggle(child<QCheckBox>("adapterOn"));
  send_message(QStringLiteral("Hi"));
  const ChatReply base = last_reply();
  toggle(child<QCheckBox>("adapterOn"));
  QTest::mouseClick(child<QPushButton>("newChat"), Qt::LeftButton);
  send_message(QStringLiteral("Hi"));
  const ChatReply tuned = last_reply();
  QTest::mouseClick(child<QPushButton>("newChat"), Qt::LeftButton);

  auto* worker = pane_->findChild<ChatWorker*>();
  QSignalSpy compared(worker, &ChatWorker::compared);
  auto* mode = child<QCheckBox>("compareMode");
  QVERIFY(mode->isEnabled());
  toggle(mode);
  QVERIFY(child<QWidget>("compareView")->isVisible());
  send_message(QStringLiteral("Hi"));
  QCOMPARE(compared.count(), 1);
  const auto c = compared.last().at(0).value<CompareReply>();
  // Greedy: the same answers as the plain chat gave with the adapter off and on.
  QCOMPARE(c.base.text, base.text);
  QCOMPARE(c.adapted.text, tuned.text);
  QVERIFY(c.base.text != c.adapted.text);
  // Side by side, each rendered as Markdown.
  auto rendered = [](const QString& markdown) {
    QTextDocument doc;
    doc.setMarkdown(markdown, QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub) |
                                  QTextDocument::MarkdownNoHTML);
    return doc.toPlainText();
  };
  QCOMPARE(child<QTextBrowser>("compareBase")->toPlainText(), rendered(base.text));
  QCOMPARE(child<QTextBrowser>("compareAdapted")->toPlainText(), rendered(tuned.text));
  QCOMPARE(child<QLabel>("comparePrompt")->text(), QStringLiteral("Hi"));
  // The first word where they part is marked in both, and nothing before it.
  auto marked = [](QTextBrowser* view) {
    for (QTextBlock b = view->document()->begin(); b.isValid(); b = b.next())
      for (auto it = b.begin(); !it.atEnd(); ++it)
        if (it.fragment().charFormat().background().style() != Qt::NoBrush)
          return std::pair<int, QString>(it.fragment().position(), it.fragment().text());
    return std::pair<int, QString>(-1, QString());
  };
  const auto [base_at, base_word] = marked(child<QTextBrowser>("compareBase"));
  const auto [tuned_at, tuned_word] = marked(child<QTextBrowser>("compareAdapted"));
  const QString base_text = child<QTextBrowser>("compareBase")->toPlainText();
  const QString tuned_text = child<QTextBrowser>("compareAdapted")->toPlainText();
  QVERIFY(base_at >= 0 || tuned_at >= 0);
  const int at = std::max(base_at, tuned_at);
  QCOMPARE(base_text.left(at), tuned_text.left(at));
  QVERIFY2(base_word != tuned_word, qPrintable(base_word + QStringLiteral(" / ") + tuned_word));
  // A greedy token is its model's most likely one, so its probability is at least 1/1400 (the vocabulary):
  // the mean log-prob under its own model lies in [-ln 1400, 0]. Under the other model it is another number.
  const double floor = -std::log(double(kTokenizerVocab));
  QVERIFY(c.base.mean_logprob <= 0 && c.base.mean_logprob >= floor);
  QVERIFY(c.adapted.mean_logprob <= 0 && c.adapted.mean_logprob >= floor);
  QVERIFY(c.base_under_adapter < 0 && c.base_under_adapter != c.base.mean_logprob);
  QVERIFY(c.adapted_under_base < 0 && c.adapted_under_base != c.adapted.mean_logprob);
  const QString score = child<QLabel>("compareBaseScore")->text();
  QVERIFY2(score.contains(QString::number(c.base.mean_logprob, 'f', 3)) &&
               score.contains(QString::number(c.base_under_adapter, 'f', 3)),
           qPrintable(score));
  QVERIFY(
      child<QLabel>("compareAdaptedScore")->text().contains(QString::number(c.adapted_under_base, 'f', 3)));
  // A comparison is not part of a conversation: no chat was saved for it.
  QCOMPARE(forja::test::read_journal(window_).chats().size(), size_t{2});
  QCOMPARE(pane_->chat_id(), int64_t{0});
}

void TestChatPane::chatsAreKeptAndReopen() {
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(12);
  QTest::keyClicks(child<QPlainTextEdit>("systemPrompt"), QStringLiteral("Be brief."));
  send_message(QStringLiteral("First question"));
  const qint64 first_prompt = last_reply().prompt_tokens;
  send_message(QStringLiteral("Second question"));
  const QString second_answer = last_reply().text;
  const int64_t id = pane_->chat_id();
  QVERIFY(id > 0);
  auto* list = child<QListWidget>("chatList");
  QCOMPARE(list->count(), 1);
  QCOMPARE(list->item(0)->text(), QStringLiteral("First question"));
  const auto messages = forja::test::read_journal(window_).messages(id);
  QCOMPARE(messages.size(), size_t{5});
  const char* roles[] = {"system", "user", "assistant", "user", "assistant"};
  for (size_t i = 0; i < messages.size(); ++i) QCOMPARE(messages[i].role, std::string(roles[i]));
  QCOMPARE(messages[0].content, std::string("Be brief."));
  QCOMPARE(QString::fromStdString(messages[4].content), second_answer);

  // A new window (a restart) lists the chat; a click shows it again, system prompt included.
  delete answered_;
  delete finished_;
  answered_ = finished_ = nullptr;
  delete window_;
  open_window();
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(12);
  list = child<QListWidget>("chatList");
  QCOMPARE(list->count(), 1);
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(list->item(0)).center());
  forja::test::settle_journal(window_);
  QCOMPARE(pane_->chat_id(), id);
  const QString shown = child<QTextBrowser>("conversation")->toPlainText();
  QVERIFY(shown.contains(QStringLiteral("First question")) &&
          shown.contains(QStringLiteral("Second question")));
  QCOMPARE(child<QPlainTextEdit>("systemPrompt")->toPlainText(), QStringLiteral("Be brief."));
  // The next message continues it: the engine was given the earlier turns, so the prompt is longer than the
  // first one was, and the exchange joins the same chat.
  send_message(QStringLiteral("Third question"));
  QVERIFY(last_reply().prompt_tokens > first_prompt + 10);
  QCOMPARE(pane_->chat_id(), id);
  QCOMPARE(forja::test::read_journal(window_).messages(id).size(), size_t{7});

  // Delete (after confirming): gone from the list and the journal, and the view starts over.
  list->setCurrentRow(0);
  forja::test::answer_next_message_box(QMessageBox::Yes);
  QTest::mouseClick(child<QPushButton>("deleteChat"), Qt::LeftButton);
  forja::test::settle_journal(window_);
  QCOMPARE(list->count(), 0);
  QVERIFY(forja::test::read_journal(window_).chats().empty());
  QCOMPARE(pane_->chat_id(), int64_t{0});
  QVERIFY(child<QTextBrowser>("conversation")->toPlainText().isEmpty());
}

void TestChatPane::chatsAreSearchedAndExported() {
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(8);
  send_message(QStringLiteral("Hello, how are you?"));
  QTest::mouseClick(child<QPushButton>("newChat"), Qt::LeftButton);
  QTest::keyClicks(child<QPlainTextEdit>("systemPrompt"), QStringLiteral("Be brief."));
  send_message(QStringLiteral("What is LoRA?"));
  const QString answer = last_reply().text;
  auto* list = child<QListWidget>("chatList");
  QTRY_COMPARE_WITH_TIMEOUT(list->count(), 2, 5000);
  auto visible = [&] {
    QStringList titles;
    for (int row = 0; row < list->count(); ++row)
      if (!list->item(row)->isHidden()) titles << list->item(row)->text();
    return titles;
  };
  // The search reads titles and messages in the journal (the answers too), ASCII in either case.
  auto* search = child<QLineEdit>("chatSearch");
  QSignalSpy filtered(pane_, &ChatPane::chats_filtered);
  search->setText(QStringLiteral("lora"));
  QTRY_COMPARE_WITH_TIMEOUT(filtered.count(), 1, 5000);
  QCOMPARE(visible(), QStringList{QStringLiteral("What is LoRA?")});
  search->setText(QStringLiteral("HOW ARE"));
  QTRY_COMPARE_WITH_TIMEOUT(filtered.count(), 2, 5000);
  QCOMPARE(visible(), QStringList{QStringLiteral("Hello, how are you?")});
  search->clear();
  QTRY_COMPARE_WITH_TIMEOUT(filtered.count(), 3, 5000);
  QCOMPARE(visible().size(), 2);

  // The open chat as Markdown, and as one line of training data in the chat shape.
  QSignalSpy exported(pane_, &ChatPane::chat_exported);
  const QString md = tmp_->filePath(QStringLiteral("chat.md"));
  pane_->export_chat(QStringLiteral("markdown"), md);
  QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 5000);
  QVERIFY(exported.at(0).at(0).toBool());
  QFile md_file(md);
  QVERIFY(md_file.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md_file.readAll());
  QVERIFY2(text.startsWith(QStringLiteral("# What is LoRA?\n")) &&
               text.contains(QStringLiteral("**System:** Be brief.")) &&
               text.contains(QStringLiteral("## User\n\nWhat is LoRA?")) &&
               text.contains(QStringLiteral("## Assistant\n\n") + answer.trimmed()),
           qPrintable(text));
  const QString jsonl = tmp_->filePath(QStringLiteral("chat.jsonl"));
  pane_->export_chat(QStringLiteral("training"), jsonl);
  QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 2, 5000);
  QFile line_file(jsonl);
  QVERIFY(line_file.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = line_file.readAll().split('\n');
  QCOMPARE(lines.size(), 2);  // one record and the final newline
  const QJsonArray messages =
      QJsonDocument::fromJson(lines[0]).object().value(QStringLiteral("messages")).toArray();
  QCOMPARE(messages.size(), 3);
  QCOMPARE(messages[0].toObject().value(QStringLiteral("role")).toString(), QStringLiteral("system"));
  QCOMPARE(messages[1].toObject().value(QStringLiteral("content")).toString(),
           QStringLiteral("What is LoRA?"));
  QCOMPARE(messages[2].toObject().value(QStringLiteral("content")).toString(), answer);
  // A stopped answer is not training data: its exchange is left out, and a chat of nothing else has no line.
  using forja::ui::ExportedTurn;
  const QVector<ExportedTurn> turns = {{QStringLiteral("user"), QStringLiteral("a"), false},
                                       {QStringLiteral("assistant"), QStringLiteral("cut"), true},
                                       {QStringLiteral("user"), QStringLiteral("b"), false},
                                       {QStringLiteral("assistant"), QStringLiteral("whole"), false}};
  const QJsonArray kept = QJsonDocument::fromJson(forja::ui::chat_as_training_record({}, turns))
                              .object()
                              .value(QStringLiteral("messages"))
                              .toArray();
  QCOMPARE(kept.size(), 2);
  QCOMPARE(kept[1].toObject().value(QStringLiteral("content")).toString(), QStringLiteral("whole"));
  QVERIFY(forja::ui::chat_as_training_record({}, turns.mid(0, 2)).isEmpty());
}

void TestChatPane::regenerateAndEditTakeBackTheLastExchange() {
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(8);
  auto* regenerate = child<QPushButton>("regenerateButton");
  QVERIFY(!regenerate->isEnabled());  // nothing to answer again yet
  send_message(QStringLiteral("What is LoRA?"));
  const QString first = last_reply().text;
  const int64_t id = pane_->chat_id();
  QCOMPARE(forja::test::read_journal(window_).messages(id).size(), size_t{2});
  // Copy puts the last answer on the clipboard.
  QTest::mouseClick(child<QPushButton>("copyAnswerButton"), Qt::LeftButton);
  QCOMPARE(QGuiApplication::clipboard()->text(), first);
  // Regenerate: the same message answered again (greedy: the same answer), in place of the old exchange.
  QVERIFY(regenerate->isEnabled());
  const qsizetype before = finished_->count();
  auto* input = child<QPlainTextEdit>("chatInput");
  input->setPlainText(QStringLiteral("a draft"));  // what the user is writing is not lost
  QTest::mouseClick(regenerate, Qt::LeftButton);
  QCOMPARE(input->toPlainText(), QStringLiteral("a draft"));
  QTRY_VERIFY_WITH_TIMEOUT(finished_->count() > before, 60000);
  forja::test::settle_journal(window_);
  QCOMPARE(last_reply().text, first);
  auto messages = forja::test::read_journal(window_).messages(id);
  QCOMPARE(messages.size(), size_t{2});
  QCOMPARE(QString::fromStdString(messages[1].content), first);
  QCOMPARE(child<QTextBrowser>("conversation")->toPlainText().count(QStringLiteral("What is LoRA?")), 1);
  // Edit: the message goes back to the message box, the exchange leaves the view and the journal; sent
  // changed, the engine answers it without the old exchange in its context.
  input->clear();
  QTest::mouseClick(child<QPushButton>("editLastButton"), Qt::LeftButton);
  QCOMPARE(input->toPlainText(), QStringLiteral("What is LoRA?"));
  QVERIFY(child<QTextBrowser>("conversation")->toPlainText().isEmpty());
  forja::test::settle_journal(window_);
  QVERIFY(forja::test::read_journal(window_).messages(id).empty());
  const qint64 first_prompt = last_reply().prompt_tokens;
  input->moveCursor(QTextCursor::End);
  send_message(QStringLiteral(" Briefly"));
  QVERIFY(last_reply().prompt_tokens > first_prompt);      // the added word
  QVERIFY(last_reply().prompt_tokens < first_prompt + 8);  // no old exchange in the context
  messages = forja::test::read_journal(window_).messages(id);
  QCOMPARE(messages.size(), size_t{2});
  QCOMPARE(messages[0].content, std::string("What is LoRA? Briefly"));
}

void TestChatPane::codeBlocksAreShadedWithACopyLink() {
  // A kept chat whose answer has two code blocks: each is shaded, with a "Copy code" link under it that puts
  // that block's code on the clipboard.
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(4);
  {
    forja::Journal journal = forja::test::read_journal(window_);
    forja::ChatRecord c;
    c.title = "Code";
    c.model_dir = model_dir_.toStdString();
    journal.add_exchange(
        0, c,
        {{"user", "Show me code"},
         {"assistant", "First:\n\n```cpp\nint x = 1;\nint y = 2;\n```\n\nThen:\n\n```\nls -la\n```\n"}});
  }
  pane_->refresh_chats();
  forja::test::settle_journal(window_);
  auto* list = child<QListWidget>("chatList");
  QTRY_COMPARE_WITH_TIMEOUT(list->count(), 1, 5000);
  pane_->open_chat(list->item(0)->data(Qt::UserRole).toLongLong());
  forja::test::settle_journal(window_);
  auto* view = child<QTextBrowser>("conversation");
  QTRY_VERIFY_WITH_TIMEOUT(view->toPlainText().contains(QStringLiteral("ls -la")), 5000);
  QCOMPARE(view->toPlainText().count(QStringLiteral("Copy code")), 2);
  int shaded = 0;
  for (QTextBlock b = view->document()->begin(); b.isValid(); b = b.next())
    if (b.blockFormat().background().style() != Qt::NoBrush) {
      QVERIFY2(b.text() == QStringLiteral("int x = 1;") || b.text() == QStringLiteral("int y = 2;") ||
                   b.text() == QStringLiteral("ls -la") || b.text() == QStringLiteral("You") ||
                   b.text() == QStringLiteral("Show me code"),
               qPrintable(b.text()));
      ++shaded;
    }
  // Beside the code blocks, the user's message is a tinted bubble to the right; the answer runs from the
  // left.
  for (QTextBlock b = view->document()->begin(); b.isValid(); b = b.next()) {
    if (b.text() == QStringLiteral("Show me code"))
      QVERIFY(b.blockFormat().leftMargin() > 0);
    else if (b.text() == QStringLiteral("Then:")) {
      QVERIFY(b.blockFormat().rightMargin() > 0 && b.blockFormat().leftMargin() == 0);
      QCOMPARE(b.blockFormat().background().style(), Qt::NoBrush);
    }
  }
  QCOMPARE(shaded, 3 + 2);  // the code's three lines; the user's header and words
  Q_EMIT view->anchorClicked(QUrl(QStringLiteral("forja-copy-code:0")));
  QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("int x = 1;\nint y = 2;"));
  Q_EMIT view->anchorClicked(QUrl(QStringLiteral("forja-copy-code:1")));
  QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("ls -la"));
  // The chat goes on: the next answer is decorated with the rest, and the links are not doubled.
  send_message(QStringLiteral("More"));
  QVERIFY2(view->toPlainText().contains(QStringLiteral("More")) &&
               view->toPlainText().contains(QStringLiteral("ls -la")),
           qPrintable(view->toPlainText()));
  QCOMPARE(view->toPlainText().count(QStringLiteral("Copy code")), 2);
  Q_EMIT view->anchorClicked(QUrl(QStringLiteral("forja-copy-code:0")));
  QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("int x = 1;\nint y = 2;"));
}

// The 4-bit choice reloads the model with an NF4 base (the adapter with it), keeps the conversation, and
// switching back gives the full-precision answers again.
void TestChatPane::fourBitBaseReloadsAndKeepsTheChat() {
  open_model(model_dir_);
  QSignalSpy adapter_ready(pane_, &ChatPane::adapter_ready);
  pane_->open_adapter(adapter_dir_);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 1, 30000);
  child<QSpinBox>("maxNewTokens")->setValue(16);
  auto fresh_answer = [&] {
    QTest::mouseClick(child<QPushButton>("newChat"), Qt::LeftButton);
    send_message(QStringLiteral("Hi"));
    return last_reply().text;
  };
  const QString full = fresh_answer();
  QVERIFY(!full.isEmpty());
  const int64_t chat = pane_->chat_id();
  const qint64 first_prompt = last_reply().prompt_tokens;

  auto* base_4bit = child<QCheckBox>("base4bit");
  QVERIFY(base_4bit->isEnabled() && !base_4bit->isChecked());
  toggle(base_4bit);
  QVERIFY(!pane_->model_ready());  // reloading
  QTRY_VERIFY_WITH_TIMEOUT(pane_->model_ready(), 30000);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 2, 30000);  // the adapter came back on the new base
  QVERIFY2(child<QLabel>("chatModel")->text().contains(QStringLiteral("4-bit base (NF4)")),
           qPrintable(child<QLabel>("chatModel")->text()));
  QVERIFY(child<QCheckBox>("adapterOn")->isChecked());
  // The same chat goes on: the new engine was given the earlier turns (the prompt holds them), and the second
  // exchange lands in the same chat.
  send_message(QStringLiteral("And then?"));
  QVERIFY(!last_reply().text.isEmpty());
  QVERIFY2(last_reply().prompt_tokens > first_prompt + 10,
           qPrintable(QString::number(last_reply().prompt_tokens)));
  QCOMPARE(pane_->chat_id(), chat);
  QCOMPARE(forja::test::read_journal(window_).messages(chat).size(), size_t{4});
  const QString quantized = fresh_answer();
  QVERIFY(!quantized.isEmpty());
  QVERIFY2(quantized != full, qPrintable(quantized));  // the 4-bit base answers differently

  toggle(base_4bit);
  QTRY_VERIFY_WITH_TIMEOUT(pane_->model_ready(), 30000);
  QTRY_COMPARE_WITH_TIMEOUT(adapter_ready.count(), 3, 30000);
  QVERIFY(!child<QLabel>("chatModel")->text().contains(QStringLiteral("NF4")));
  QCOMPARE(fresh_answer(), full);  // full precision again, the same greedy answer
}

void TestChatPane::modelWithoutTokenizerShowsError() {
  // The fixture folder itself has no tokenizer files: the Model pane opens it, the chat cannot.
  window_->open_model(QString::fromStdString(kFixtureModel.string()));
  window_->show_pane(PaneId::Chat);
  auto* box = child<forja::ui::ErrorBox>("chatError");
  QTRY_VERIFY_WITH_TIMEOUT(box->isVisible(), 30000);
  QVERIFY2(box->message().contains(QStringLiteral("tokenizer")), qPrintable(box->message()));
  QVERIFY(!box->hint().isEmpty());
  QVERIFY(!pane_->model_ready());
  QVERIFY(!child<QPushButton>("sendButton")->isEnabled());
  // A good folder afterwards clears the error and loads.
  open_model(model_dir_);
  QVERIFY(!box->isVisible());
  QVERIFY(child<QPushButton>("sendButton")->isEnabled());
}

void TestChatPane::staysResponsiveWhileGenerating() {
  open_model(model_dir_);
  child<QSpinBox>("maxNewTokens")->setValue(2000);
  // A timer every 10 ms measures the longest time the event loop went without running it, from Send to the
  // end of the answer's final rendering.
  forja::test::EventLoopWatch watch;
  watch.start();
  send_message(QStringLiteral("Write as much as you can"));
  QTest::qWait(100);  // the ticks after the final rendering
  watch.stop();
  QCOMPARE(last_reply().new_tokens, qint64{2000});
  qInfo("generation: %lld tokens at %.0f tokens/s; %s", last_reply().new_tokens,
        last_reply().tokens_per_second, qPrintable(watch.report()));
  QVERIFY(watch.ticks > 10);
  // A stall of the GUI thread on engine work would last the whole generation (seconds).
  QVERIFY2(watch.within_bounds(), qPrintable(watch.report()));
}

QTEST_MAIN(TestChatPane)
#include "test_chat_pane.moc"
