#include "env/dynlib.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

namespace forja::env {

DynamicLibrary::DynamicLibrary(const std::string& name, bool keep_loaded) : keep_loaded_(keep_loaded) {
  dlerror();
  handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = dlerror();
    error_ = e ? e : ("cannot load " + name);
    return;
  }
  struct link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    std::error_code ec;
    auto canonical = std::filesystem::canonical(map->l_name, ec);
    path_ = ec ? std::string(map->l_name) : canonical.string();
  } else {
    path_ = name;
  }
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ && !keep_loaded_) dlclose(handle_);
}

void* DynamicLibrary::symbol(const char* name) const {
  if (!handle_) return nullptr;
  return dlsym(handle_, name);
}

std::string version_from_library_file(const std::string& path) {
  static const std::regex pattern(R"(\.so\.([0-9]+\.[0-9]+(\.[0-9]+)?)$)");
  std::smatch m;
  if (std::regex_search(path, m, pattern)) return m[1].str();
  return {};
}

std::string choose(const std::string& primary, const char* env, const std::string& fallback) {
  if (!primary.empty()) return primary;
  if (const char* v = std::getenv(env); v && *v) return v;
  return fallback;
}

}  // namespace forja::env
