// The listening socket's accept queue. cpp-httplib listens with a backlog of 5, fixed when the library was
// built; a burst of clients overflows it, the kernel drops their handshakes, and a connection that completes
// only on a retransmission can reach its worker after httplib's wait for the first request has run out: the
// client then reads a closed connection instead of an answer.
#pragma once

namespace forja::serve {

// Re-issues listen() on `fd`, already listening, with the system's largest backlog; Linux and the BSDs take
// a second listen() as a new backlog. False when the call fails.
bool widen_listen_backlog(int fd);

}  // namespace forja::serve
