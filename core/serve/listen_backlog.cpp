#include "listen_backlog.h"

#include <sys/socket.h>

namespace forja::serve {

bool widen_listen_backlog(int fd) {
  return fd >= 0 && ::listen(fd, SOMAXCONN) == 0;
}

}  // namespace forja::serve
