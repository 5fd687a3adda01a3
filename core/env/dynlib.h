// A shared library opened at run time with dlopen: the NVIDIA libraries are optional, so nothing about them
// is needed at build time and a machine without the driver still runs Forja.
#pragma once

#include <string>

namespace forja::env {

class DynamicLibrary {
 public:
  // keep_loaded: never dlclose (libcuda starts threads that must not lose their code).
  DynamicLibrary(const std::string& name, bool keep_loaded);
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  // The file that was loaded, symlinks resolved ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.14").
  const std::string& path() const { return path_; }
  void* symbol(const char* name) const;

  template <typename Fn>
  bool bind(Fn*& fn, const char* name) const {
    fn = reinterpret_cast<Fn*>(symbol(name));
    return fn != nullptr;
  }

 private:
  void* handle_ = nullptr;
  bool keep_loaded_ = false;
  std::string error_;
  std::string path_;
};

// "libnvidia-ml.so.550.54.14" → "550.54.14": the driver installs its libraries with the version in the name,
// which tells the user-space version even when the library refuses to initialise.
std::string version_from_library_file(const std::string& path);

// The first value of `primary`, else the environment variable `env`, else `fallback`.
std::string choose(const std::string& primary, const char* env, const std::string& fallback);

}  // namespace forja::env
