// Jobs for the Hugging Face Hub: planning a pull (a network round trip), pulling (minutes to hours), and reading
// or deleting the cache (disk walks). None of it may run on the GUI thread; even the settings (the token file)
// are read on the job's thread.
#pragma once

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

// Lists the cache, after deleting one repository from it when `delete_repo` is set.
class HubCacheJob : public Job {
  Q_OBJECT

 public:
  explicit HubCacheJob(std::string delete_repo = {});

 Q_SIGNALS:
  void listed(const std::vector<forja::hub::CachedModel>& models, quint64 freed_bytes);

 protected:
  void execute() override;

 private:
  std::string delete_repo_;
};

}  // namespace forja::ui
