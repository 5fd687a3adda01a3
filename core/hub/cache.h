// The Hub cache's internals shared by the planner and the downloader (public parts are in forja/hub.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "forja/hub.h"

namespace forja::hub {

// The commit a revision points to in the cache (refs/<revision>, or the revision itself when it is a
// snapshot).
std::optional<std::string> cached_commit(const HubSettings& settings, const RepoRef& ref);
std::filesystem::path blob_path(const HubSettings& settings, const std::string& repo_id,
                                const std::string& etag);
// snapshots/<commit>/<file> as a relative symlink to ../../blobs/<etag> (one more ".." per subfolder).
void link_snapshot_file(const std::filesystem::path& snapshot, const std::string& file,
                        const std::string& etag);
void write_ref(const HubSettings& settings, const RepoRef& ref, const std::string& commit);
bool blob_present(const std::filesystem::path& blob, uint64_t size);
bool snapshot_has(const std::filesystem::path& snapshot, const std::string& file);

}  // namespace forja::hub
