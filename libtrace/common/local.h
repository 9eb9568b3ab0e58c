/* local.h -- who is at the other end of a local connection, and where this
 * user's private files live (local.c).
 *
 * A program and a capture daemon on the same host meet on a Unix domain
 * socket in a folder only their user can enter (the *run folder*); the
 * rendezvous files of `python -m tracy` live there too. Both ends check the
 * other's user (SO_PEERCRED). A loopback TCP connection, used only when a
 * TCP address is named, is checked through the kernel's socket diagnostics
 * (sock_diag), which know the user that created each socket.
 */
#ifndef LIBTRACE_LOCAL_H
#define LIBTRACE_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The name of a local daemon's socket in the run folder: daemon-<N>.sock,
 * where N is its port number (8086 by default; one it picked with -p 0),
 * which clients give in TRACY_PORT. */
#define LT_LOCAL_SOCK_FMT "daemon-%ld.sock"
/* What TRACY_ADDR starts with to name a Unix socket by its path. */
#define LT_UNIX_PREFIX "unix:"

/* Checks that `path` is a folder (not a link to one) owned by this user
 * (the effective uid) that no other user may enter or write: lstat, owner,
 * no group or other permission bits. Returns 0, or -1 with the reason in
 * why ("owned by uid 1001", "is a symbolic link", ...). */
int lt__dir_private(const char *path, char *why, size_t why_len);

/* Finds or creates this user's run folder, the first of
 *   $XDG_RUNTIME_DIR/tracy, $TMPDIR/tracy-<uid>, /tmp/tracy-<uid>,
 *   $HOME/.cache/tracy-<host>
 * that is (or can be made, mode 0700) private as lt__dir_private() says
 * and short enough for a socket path. Writes it to out. Returns 0, or -1
 * when none qualifies. `note` (may be NULL) receives one sentence about
 * the first candidate that exists but failed the check ("PATH: it is owned
 * by uid 1001, ...", "" when none did):
 * another user may have planted it, and the caller says so. */
int lt__rundir(char *out, size_t out_len, char *note, size_t note_len);

/* The user (and process) at the other end of a connected Unix socket.
 * Returns 0 or -1 (errno set). */
int lt__unix_peer(int fd, uid_t *uid, pid_t *pid);

/* The user that owns the socket at the other end of a connected loopback
 * TCP socket `fd`, asked of the kernel (sock_diag; no scan of its tables):
 * for an accepted connection, the user that connected; for a connection
 * to a daemon, the user whose daemon accepted it. Returns 0 with *uid, or
 * -1 when it cannot be told (errno set). */
int lt__tcp_peer_uid(int fd, uid_t *uid);

/* Whether the address (struct sockaddr) is in 127.0.0.0/8, ::1 or
 * ::ffff:127.0.0.0/104. */
int lt__is_loopback(const void *sockaddr);

/* Servers with many clients need many descriptors: raises this process's
 * soft limit on open files to its hard limit (to 65536 when the hard limit
 * is higher and cannot be set). */
void lt__nofile_raise(void);

/* Descriptors this process could still open now: its soft limit less those
 * open (counted in /proc/self/fd; 32 assumed open when it cannot be read).
 * UINT64_MAX when there is no limit. */
uint64_t lt__nofile_room(void);

#endif
