// Registers the resources compiled into the forja_resources static library. A static library's resource
// object would be dropped by the linker (nothing references it); calling this from the UI keeps it.
#include <QtCore/qglobal.h>
#include <QtCore/qresource.h>

static void forja_init_resources_impl() {
  Q_INIT_RESOURCE(forja);
#ifdef FORJA_HAVE_TRANSLATIONS
  Q_INIT_RESOURCE(forja_translations);
#endif
}

namespace forja::resources {
void init() {
  forja_init_resources_impl();
}
}  // namespace forja::resources
