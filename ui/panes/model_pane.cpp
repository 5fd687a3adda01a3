// ModelPane: the open flow (dialog, drop, recent list), the job hand-off and the facts view.
#include "panes/model_pane.h"

#include <QDateTime>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "app_paths.h"
#include "error_box.h"
#include "forja/memory_estimate.h"
#include "form_util.h"
#include "format.h"
#include "hub_dialog.h"
#include "jobs/hub_jobs.h"
#include "jobs/inspect_model_job.h"
#include "jobs/job_monitor.h"

namespace forja::ui {
namespace {

const char* const kRecentKey = "ModelPane/recent";
// Folder -> when the pane last opened it (ISO 8601, UTC). Kept after a folder leaves the recent list, so a
// cached model opened long ago still says when; only the kMaxLastUsed newest are kept.
const char* const kLastUsedKey = "ModelPane/lastUsed";
constexpr int kMaxLastUsed = 100;

// The library's columns.
enum LibraryColumn {
  kModelColumn,
  kArchColumn,
  kParamsColumn,
  kDtypeColumn,
  kSizeColumn,
  kSupportColumn,
  kUsedColumn,
  kColumnCount
};
// Where each row keeps the folder it opens, its repo id (for Delete) and its columns' sort keys.
constexpr int kPathRole = Qt::UserRole;
constexpr int kRepoRole = Qt::UserRole + 1;
constexpr int kSortRole = Qt::UserRole + 2;

// Sizes, counts and times sort by their numbers, not by their text ("9 M" after "10 M").
class LibraryItem : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  bool operator<(const QTreeWidgetItem& other) const override {
    const int column = treeWidget() ? treeWidget()->sortColumn() : kModelColumn;
    const QVariant a = data(column, kSortRole), b = other.data(column, kSortRole);
    if (a.isValid() && b.isValid()) return a.toLongLong() < b.toLongLong();
    return text(column).localeAwareCompare(other.text(column)) < 0;
  }
};

QMap<QString, QDateTime> last_used_times() {
  QMap<QString, QDateTime> out;
  const QVariantMap saved = QSettings().value(QLatin1String(kLastUsedKey)).toMap();
  for (auto it = saved.cbegin(); it != saved.cend(); ++it) {
    const QDateTime t = QDateTime::fromString(it.value().toString(), Qt::ISODateWithMs);
    if (t.isValid()) out.insert(it.key(), t);
  }
  return out;
}

QString join(const std::vector<std::string>& items) {
  QStringList out;
  for (const auto& s : items) out << QString::fromStdString(s);
  return out.join(QStringLiteral(", "));
}

QString number(int64_t v) {
  return QLocale().toString(static_cast<qlonglong>(v));
}

}  // namespace

ModelPane::ModelPane(AppContext& context, QWidget* parent) : Pane(context, parent) {
  setObjectName(QStringLiteral("ModelPane"));
  setAcceptDrops(true);

  heading_ = make_heading(tr("No model open"));
  heading_->setObjectName(QStringLiteral("modelHeading"));
  auto* open_button =
      new QPushButton(QIcon(QStringLiteral(":/icons/open-folder.svg")), tr("Open Model Folder…"));
  open_button->setObjectName(QStringLiteral("openModelButton"));
  connect(open_button, &QPushButton::clicked, this, &ModelPane::open_dialog);
  auto* demo_button = new QPushButton(tr("Try the Demo"));
  demo_button->setObjectName(QStringLiteral("tryDemoButton"));
  demo_button->setToolTip(
      tr("Fine-tune Forja's built-in toy model on its bundled questions and answers, on the "
         "CPU, then chat with it. About a minute; no GPU or download needed."));
  demo_button->setEnabled(!demo_dir().isEmpty());
  connect(demo_button, &QPushButton::clicked, this, &ModelPane::demo_requested);
  auto* hub_button = new QPushButton(tr("Download from Hugging Face…"));
  hub_button->setObjectName(QStringLiteral("downloadModelButton"));
  hub_button->setToolTip(
      tr("Download a model by its repo id into the Hugging Face cache that other tools share"));
  connect(hub_button, &QPushButton::clicked, this, [this] {
    download_dialog()->show();
    download_dialog()->raise();
  });
  auto* top = new QHBoxLayout;
  top->addWidget(heading_, 1);
  top->addWidget(demo_button);
  top->addWidget(hub_button);
  top->addWidget(open_button);

  status_ =
      new QLabel(tr("Open a Hugging Face model folder (config.json and .safetensors files) with the button "
                    "or Ctrl+O, or drop it here."));
  status_->setObjectName(QStringLiteral("modelStatus"));
  status_->setWordWrap(true);
  error_ = new ErrorBox;
  error_->setObjectName(QStringLiteral("modelError"));
  demo_note_ = new QLabel(tr(
      "<b>This is Forja's toy demo model</b>: about a million parameters, pretrained only on the demo's own "
      "texts about GPUs and fine-tuning. It shows the whole loop (data, LoRA training, chat) in a minute on "
      "the CPU; it knows nothing else. To fine-tune for real, open a Hugging Face model folder such as "
      "TinyLlama, Qwen2 or Mistral with <i>Open Model Folder…</i>."));
  demo_note_->setObjectName(QStringLiteral("demoNote"));
  demo_note_->setWordWrap(true);
  demo_note_->hide();

  facts_box_ = new QGroupBox(tr("What this model is"));
  facts_box_->setObjectName(QStringLiteral("modelFacts"));
  auto* form = new QFormLayout(facts_box_);
  form->setLabelAlignment(Qt::AlignRight);
  add_fact(form, QStringLiteral("architecture"), tr("Architecture"));
  add_fact(form, QStringLiteral("family"), tr("Family"));
  add_fact(form, QStringLiteral("parameters"), tr("Parameters"));
  add_fact(form, QStringLiteral("dtype"), tr("Checkpoint dtype"));
  add_fact(form, QStringLiteral("checkpoint"), tr("Checkpoint files"));
  add_fact(form, QStringLiteral("layers"), tr("Layers"));
  add_fact(form, QStringLiteral("width"), tr("Hidden / MLP size"));
  add_fact(form, QStringLiteral("heads"), tr("Attention heads"));
  add_fact(form, QStringLiteral("context"), tr("Context length"));
  add_fact(form, QStringLiteral("vocab"), tr("Vocabulary"));
  add_fact(form, QStringLiteral("tied"), tr("Tied embeddings"));
  add_fact(form, QStringLiteral("rope"), tr("Positions"));
  add_fact(form, QStringLiteral("tokenizer"), tr("Tokenizer files"));
  add_fact(form, QStringLiteral("memory"), tr("GPU memory, weights in bf16"));
  add_fact(form, QStringLiteral("chat_memory"), tr("GPU memory to chat"));
  add_fact(form, QStringLiteral("train_memory"), tr("GPU memory to train"));
  facts_box_->hide();

  recent_list_ = new QListWidget;
  recent_list_->setObjectName(QStringLiteral("recentModels"));
  recent_list_->setMaximumWidth(320);
  connect(recent_list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { open(item->data(Qt::UserRole).toString()); });
  auto* recent_box = new QGroupBox(tr("Recent models"));
  auto* recent_layout = new QVBoxLayout(recent_box);
  recent_layout->addWidget(recent_list_);

  library_ = new QTreeWidget;
  library_->setObjectName(QStringLiteral("cachedModels"));
  library_->setColumnCount(kColumnCount);
  library_->setHeaderLabels({tr("Model"), tr("Architecture"), tr("Parameters"), tr("Dtype"), tr("Size"),
                             tr("Supported"), tr("Last used")});
  library_->setRootIsDecorated(false);
  library_->setUniformRowHeights(true);
  library_->setAllColumnsShowFocus(true);
  library_->setSortingEnabled(true);
  library_->sortByColumn(kUsedColumn, Qt::DescendingOrder);
  library_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  library_->header()->setStretchLastSection(false);
  // Its own height hint would take the facts' room; it asks for five rows and takes what is left over.
  library_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Ignored);
  library_->setMinimumHeight(library_->header()->sizeHint().height() + 5 * (fontMetrics().height() + 4) +
                             2 * library_->frameWidth());
  connect(library_, &QTreeWidget::itemActivated, this,
          [this](QTreeWidgetItem* item) { open(item->data(kModelColumn, kPathRole).toString()); });
  cache_status_ = new QLabel;
  cache_status_->setObjectName(QStringLiteral("cacheStatus"));
  cache_status_->setWordWrap(true);
  delete_button_ = new QPushButton(tr("Delete from Cache…"));
  delete_button_->setObjectName(QStringLiteral("deleteCachedModel"));
  delete_button_->setEnabled(false);
  connect(delete_button_, &QPushButton::clicked, this, &ModelPane::delete_selected_cached);
  // Only a model of the cache can be deleted from it; a folder of the user's own is never deleted here.
  connect(library_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    delete_button_->setEnabled(item && !item->data(kModelColumn, kRepoRole).toString().isEmpty());
  });
  auto* library_box = new QGroupBox(tr("Model library: the Hugging Face cache and recent folders"));
  auto* library_layout = new QVBoxLayout(library_box);
  library_layout->addWidget(library_);
  auto* library_foot = new QHBoxLayout;
  library_foot->addWidget(cache_status_, 1);
  library_foot->addWidget(delete_button_);
  library_layout->addLayout(library_foot);

  auto* left_widget = new QWidget;
  auto* left = new QVBoxLayout(left_widget);
  left->setContentsMargins(0, 0, 0, 0);
  left->addWidget(status_);
  left->addWidget(demo_note_);
  left->addWidget(error_);
  left->addWidget(facts_box_);
  left->addStretch(1);
  auto* body = new QHBoxLayout;
  // The facts ask for their whole height at their width, so the library below takes only what they leave; at
  // 1280 × 720 that is not enough for both, and the facts scroll down (never sideways) rather than lose a
  // wrapped line while the library keeps its few rows.
  body->addWidget(vertical_scroll_area(left_widget, ScrollContent::WrappedText), 1);
  body->addWidget(recent_box);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(body);
  layout->addWidget(library_box, 1);
  reload_recent_list();
  refresh_cache();
}

HubDownloadDialog* ModelPane::download_dialog() {
  if (!download_dialog_) {
    download_dialog_ = new HubDownloadDialog(this);
    connect(download_dialog_, &HubDownloadDialog::downloaded, this, [this](const QString& dir) {
      open(dir);
      refresh_cache();
    });
  }
  return download_dialog_;
}

void ModelPane::refresh_cache() {
  if (library_job_) {
    library_again_ = true;
    return;
  }
  start_library_job({});
}

void ModelPane::delete_cached(const QString& repo) {
  if (library_job_) {
    pending_deletes_ << repo;
    return;
  }
  start_library_job(repo);
}

// One job at a time, so that a listing made before a delete or an open never replaces one made after it.
void ModelPane::start_library_job(const QString& delete_repo) {
  library_again_ = false;
  auto* job = new HubCacheJob(delete_repo.toStdString(), recent(), last_used_times());
  library_job_ = job;
  connect(job, &HubCacheJob::listed, this, &ModelPane::show_library);
  connect(job, &Job::failed, this,
          [this](const QString& message, const QString&) { cache_status_->setText(message); });
  // A cancelled job is the window closing: nothing more to list.
  connect(job, &Job::cancelled, this, [this] {
    library_again_ = false;
    pending_deletes_.clear();
  });
  connect(job, &Job::ended, this, [this] {
    library_job_ = nullptr;
    if (!pending_deletes_.isEmpty())
      start_library_job(pending_deletes_.takeFirst());
    else if (library_again_)
      start_library_job({});
  });
  job->start();
}

void ModelPane::show_library(const std::vector<LibraryEntry>& entries, quint64 freed) {
  library_entries_ = entries;
  const QTreeWidgetItem* current = library_->currentItem();
  const QString current_path = current ? current->data(kModelColumn, kPathRole).toString() : QString();
  QStringList local_dirs;
  for (const auto& e : entries)
    if (e.repo_id.isEmpty()) local_dirs << e.path;
  const QStringList local_names = distinct_folder_names(local_dirs);
  const QString none = QStringLiteral("—");

  // Rows go in unsorted; the tree sorts them once, by the column the user chose.
  library_->setSortingEnabled(false);
  library_->clear();
  int local = 0;
  int cached = 0;
  for (const auto& e : entries) {
    auto* item = new LibraryItem(library_);
    item->setData(kModelColumn, kPathRole, e.path);
    item->setData(kModelColumn, kRepoRole, e.repo_id);
    if (e.repo_id.isEmpty()) {
      item->setText(kModelColumn, local_names[local++]);
      item->setToolTip(kModelColumn, QDir::toNativeSeparators(e.path));
    } else {
      ++cached;
      item->setText(kModelColumn, e.repo_id);
      const QString revs = e.revisions.join(QStringLiteral(", "));
      item->setToolTip(kModelColumn, tr("%1\ncommit %2%3")
                                         .arg(QDir::toNativeSeparators(e.path), e.commit,
                                              revs.isEmpty() ? QString() : tr(" (%1)").arg(revs)));
    }
    item->setText(kArchColumn, e.architecture.isEmpty() ? none : e.architecture);
    item->setText(kParamsColumn, e.supported ? format_count(e.parameters) : none);
    item->setData(kParamsColumn, kSortRole, qlonglong(e.supported ? e.parameters : -1));
    item->setToolTip(kParamsColumn, e.supported ? number(e.parameters) : QString());
    item->setText(kDtypeColumn, e.checkpoint_dtype.isEmpty() ? none : e.checkpoint_dtype);
    item->setText(kSizeColumn, e.found ? format_bytes(static_cast<int64_t>(e.disk_bytes)) : none);
    item->setData(kSizeColumn, kSortRole, qlonglong(e.found ? e.disk_bytes : 0));
    if (!e.found) {
      item->setText(kSupportColumn, tr("folder missing"));
      item->setToolTip(kSupportColumn, tr("%1 is no longer there.").arg(QDir::toNativeSeparators(e.path)));
    } else if (!e.complete) {
      item->setText(kSupportColumn, tr("incomplete"));
      item->setToolTip(kSupportColumn, tr("config.json or a weight file is missing: the download did not "
                                          "finish. Download the model again to complete it."));
    } else if (e.supported) {
      item->setText(kSupportColumn, tr("yes"));
    } else {
      item->setText(kSupportColumn, tr("no"));
      item->setToolTip(kSupportColumn, e.problem);
    }
    item->setText(kUsedColumn,
                  e.last_used.isValid() ? format_timestamp_ms(e.last_used.toMSecsSinceEpoch()) : tr("never"));
    item->setData(kUsedColumn, kSortRole,
                  qlonglong(e.last_used.isValid() ? e.last_used.toMSecsSinceEpoch() : -1));
    if (e.path == current_path) library_->setCurrentItem(item);
  }
  library_->setSortingEnabled(true);

  QString text =
      cached == 0 ? tr("No models in the cache yet.") : tr("%n model(s) in the cache.", "", cached);
  if (freed)
    text += QLatin1Char(' ') + tr("Deleting freed %1.").arg(format_bytes(static_cast<int64_t>(freed)));
  cache_status_->setText(text);
}

void ModelPane::delete_selected_cached() {
  QTreeWidgetItem* item = library_->currentItem();
  if (!item) return;
  const QString repo = item->data(kModelColumn, kRepoRole).toString();
  if (repo.isEmpty()) return;  // a folder outside the cache
  const auto answer = QMessageBox::question(
      this, tr("Delete from cache"),
      tr("Delete %1 from the Hugging Face cache? Other tools that use the cache lose it too.").arg(repo));
  if (answer == QMessageBox::Yes) delete_cached(repo);
}

QLabel* ModelPane::add_fact(QFormLayout* form, const QString& key, const QString& label) {
  auto* value = new QLabel;
  value->setObjectName(QStringLiteral("fact.") + key);
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  value->setWordWrap(true);
  form->addRow(label + QLatin1Char(':'), value);
  facts_.insert(key, value);
  return value;
}

void ModelPane::open_dialog() {
  const QString start = recent().isEmpty() ? QDir::homePath() : recent().first();
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a Hugging Face model folder"), start);
  if (!dir.isEmpty()) open(dir);
}

void ModelPane::open(const QString& path) {
  const QFileInfo fi(path);
  const QString dir = fi.isFile() ? fi.absolutePath() : fi.absoluteFilePath();
  const quint64 request = ++last_request_;
  pending_request_ = request;
  error_->clear();
  status_->setText(tr("Reading %1…").arg(QDir::toNativeSeparators(dir)));
  status_->show();

  auto* job = new InspectModelJob(dir.toStdString());
  // A slow folder answered after a newer request is ignored: the pane shows the last folder asked for.
  connect(job, &InspectModelJob::inspected, this, [this, request](const forja::ModelInfo& info) {
    if (request == last_request_) show_model(info);
  });
  connect(job, &Job::failed, this, [this, request, dir](const QString& message, const QString& hint) {
    if (request == last_request_) show_failure(dir, message, hint);
  });
  connect(job, &Job::ended, this, [this, request] {
    if (request == pending_request_) pending_request_ = 0;
  });
  context_.jobs->start(job);
}

void ModelPane::show_model(const forja::ModelInfo& info) {
  model_ = info;
  const QString dir = QString::fromStdString(info.dir.string());
  heading_->setText(QFileInfo(dir).fileName());
  status_->setText(QDir::toNativeSeparators(dir));
  facts_[QStringLiteral("architecture")]->setText(QString::fromStdString(info.architecture));
  facts_[QStringLiteral("family")]->setText(
      tr("%1 (model_type %2)")
          .arg(QString::fromStdString(info.family), QString::fromStdString(info.model_type)));
  facts_[QStringLiteral("parameters")]->setText(
      tr("%1 (%2)").arg(format_count(info.parameters), number(info.parameters)));
  facts_[QStringLiteral("dtype")]->setText(QString::fromStdString(info.checkpoint_dtype));
  facts_[QStringLiteral("checkpoint")]->setText(
      tr("%1 in %2").arg(format_bytes(info.checkpoint_bytes), join(info.weight_files)));
  facts_[QStringLiteral("layers")]->setText(number(info.layers));
  facts_[QStringLiteral("width")]->setText(
      tr("%1 / %2").arg(number(info.hidden_size), number(info.intermediate_size)));
  facts_[QStringLiteral("heads")]->setText(
      tr("%1 query, %2 key/value, head size %3")
          .arg(number(info.heads), number(info.kv_heads), number(info.head_dim)));
  facts_[QStringLiteral("context")]->setText(tr("%1 tokens").arg(number(info.context_length)));
  facts_[QStringLiteral("vocab")]->setText(tr("%1 tokens").arg(number(info.vocab_size)));
  facts_[QStringLiteral("tied")]->setText(
      info.tied_embeddings ? tr("yes (the output head shares the embedding)") : tr("no"));
  facts_[QStringLiteral("rope")]->setText(info.rope.empty()
                                              ? tr("learned position embeddings")
                                              : tr("RoPE, %1").arg(QString::fromStdString(info.rope)));
  facts_[QStringLiteral("tokenizer")]->setText(
      info.tokenizer_files.empty()
          ? tr("none found — chat and training need tokenizer.json or tokenizer.model in the folder")
          : join(info.tokenizer_files));
  facts_[QStringLiteral("memory")]->setText(format_bytes(info.bf16_weight_bytes));
  // Estimates before anything loads (forja/memory_estimate.h, calibrated on measured peaks).
  const forja::ModelShape shape = forja::model_shape(info);
  const int64_t context = std::min<int64_t>(info.context_length, 4096);
  facts_[QStringLiteral("chat_memory")]->setText(
      tr("about %1 (bf16, %2 tokens of context)")
          .arg(format_bytes(forja::estimate_chat_memory(shape, context).total()), number(context)));
  // The common LoRA recipe: r16 on the 7 projections, 4 × 1024 tokens, or the model's whole context when
  // shorter.
  forja::TrainShape train;
  if (info.context_length > 0) train.seq_len = std::min<int64_t>(train.seq_len, info.context_length);
  forja::TrainShape checkpointed = train;
  checkpointed.activation_checkpointing = true;
  QString train_text = tr("about %1 for LoRA r%2 at %3 × %4 tokens (%5 with activation checkpointing)")
                           .arg(format_bytes(forja::estimate_train_memory(shape, train).total()),
                                number(train.lora_rank), number(train.batch_size), number(train.seq_len),
                                format_bytes(forja::estimate_train_memory(shape, checkpointed).total()));
  if (shape.nf4_base) {
    forja::TrainShape qlora = checkpointed;
    qlora.nf4_base = true;
    train_text += tr("; %1 with a 4-bit base (QLoRA) and checkpointing")
                      .arg(format_bytes(forja::estimate_train_memory(shape, qlora).total()));
  }
  facts_[QStringLiteral("train_memory")]->setText(train_text);
  facts_box_->show();
  const QString demo = demo_dir();
  demo_note_->setVisible(!demo.isEmpty() && QDir(dir) == QDir(demo + QStringLiteral("/model")));
  remember(dir);
  Q_EMIT model_opened(info);
}

void ModelPane::show_failure(const QString& dir, const QString& message, const QString& hint) {
  model_.reset();
  heading_->setText(tr("No model open"));
  facts_box_->hide();
  status_->setText(tr("Could not open %1").arg(QDir::toNativeSeparators(dir)));
  error_->show_error(message, hint);
  Q_EMIT open_failed(message, hint);
}

QStringList ModelPane::recent() const {
  return QSettings().value(QLatin1String(kRecentKey)).toStringList();
}

void ModelPane::remember(const QString& dir) {
  QStringList list = recent();
  list.removeAll(dir);
  list.prepend(dir);
  while (list.size() > kMaxRecent) list.removeLast();
  QSettings settings;
  settings.setValue(QLatin1String(kRecentKey), list);
  QVariantMap used = settings.value(QLatin1String(kLastUsedKey)).toMap();
  used.insert(QDir::cleanPath(dir), QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs));
  while (used.size() > kMaxLastUsed) {
    // ISO 8601 times in UTC sort as text: the smallest is the oldest.
    auto oldest = used.begin();
    for (auto it = used.begin(); it != used.end(); ++it)
      if (it.value().toString() < oldest.value().toString()) oldest = it;
    used.erase(oldest);
  }
  settings.setValue(QLatin1String(kLastUsedKey), used);
  reload_recent_list();
  refresh_cache();  // the library's "Last used", and the folder's row when it is new
  Q_EMIT recent_changed();
}

void ModelPane::reload_recent_list() {
  recent_list_->clear();
  const QStringList dirs = recent();
  const QStringList names = distinct_folder_names(dirs);
  for (int i = 0; i < dirs.size(); ++i) {
    const QString& dir = dirs[i];
    auto* item = new QListWidgetItem(QIcon(QStringLiteral(":/icons/model.svg")), names[i], recent_list_);
    item->setData(Qt::UserRole, dir);
    item->setToolTip(QDir::toNativeSeparators(dir));
  }
}

void ModelPane::dragEnterEvent(QDragEnterEvent* event) {
  const QMimeData* mime = event->mimeData();
  if (mime->hasUrls() && !mime->urls().isEmpty() && mime->urls().first().isLocalFile())
    event->acceptProposedAction();
}

void ModelPane::dropEvent(QDropEvent* event) {
  const QMimeData* mime = event->mimeData();
  if (!mime->hasUrls() || mime->urls().isEmpty() || !mime->urls().first().isLocalFile()) return;
  event->acceptProposedAction();
  open(mime->urls().first().toLocalFile());
}

}  // namespace forja::ui
