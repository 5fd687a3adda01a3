// Jobs for the Hugging Face Hub: planning a pull (a network round trip), pulling (minutes to hours), and
// reading or deleting the cache with the model library around it (disk walks, config.json and safetensors
// headers). None of it may run on the GUI thread; even the settings (the token file) are read on the job's
// thread.
#pragma once

#include <QDateTime>
#include <QMap>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "forja/hub.h"
#include "jobs/job.h"

namespace forja::ui {

class HubPlanJob : public Job {
  Q_OBJECT

 public:
  explicit HubPlanJob(forja::hub::RepoRef ref);

 Q_SIGNALS:
  void planned(const forja::hub::PullPlan& plan);

 protected:
  void execute() override;

 private:
  forja::hub::RepoRef ref_;
};

class HubPullJob : public Job {
  Q_OBJECT

 public:
  explicit HubPullJob(forja::hub::RepoRef ref);

 Q_SIGNALS:
  // The snapshot folder: a model folder to open.
  void pulled(const QString& dir);

 protected:
  void execute() override;

 private:
  forja::hub::RepoRef ref_;
};

// One row of the Model pane's library: a model of the Hugging Face cache or a folder the user opened, with
// what forja::inspect_model read from it.
struct LibraryEntry {
  QString path;     // the folder to open (a cache snapshot or the folder itself)
  QString repo_id;  // empty for a folder outside the cache
  QString commit;
  QStringList revisions;   // refs pointing at the commit ("main")
  bool found = true;       // false: a recent folder that is gone
  bool complete = true;    // false: a cache entry without config.json or its weights; not inspected
  bool supported = false;  // inspect_model read it: Forja loads this architecture
  QString problem;         // why not: inspect_model's message and hint
  QString architecture;    // config.json "architectures"[0]
  int64_t parameters = 0;
  QString checkpoint_dtype;  // "BF16", "F32", ...
  uint64_t disk_bytes = 0;   // a cache repository's whole folder (what deleting it frees), else the folder
  QDateTime last_used;       // when the pane last opened it; invalid: never
};

// Builds the library: the cache (after deleting one repository from it when `delete_repo` is set), then the
// recent folders that are not cache snapshots, each read with inspect_model. `last_used` maps a folder to
// when it was last opened; the pane reads it from QSettings, the folders are read here.
class HubCacheJob : public Job {
  Q_OBJECT

 public:
  explicit HubCacheJob(std::string delete_repo = {}, QStringList recent = {},
                       QMap<QString, QDateTime> last_used = {});

 Q_SIGNALS:
  void listed(const std::vector<forja::ui::LibraryEntry>& entries, quint64 freed_bytes);

 protected:
  void execute() override;

 private:
  std::string delete_repo_;
  QStringList recent_;
  QMap<QString, QDateTime> last_used_;
};

}  // namespace forja::ui
