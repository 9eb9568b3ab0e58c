/* error.c -- the libtrace error table: messages and errno conversion. */
#include <errno.h>
#include "trace.h"

#define LT__ERR_MSG(name, msg) msg,
static const char *const lt__messages[LT__ERR_COUNT] = {
    LT_ERRNO_MAP(LT__ERR_MSG)};
#undef LT__ERR_MSG

const char *lt_strerror(int err) {
    if (err == 0) return "success";
    if (err < 0 && err >= -LT__ERR_COUNT) return lt__messages[-1 - err];
    return "unknown error";
}

int lt_from_errno(int errnum) {
    switch (errnum) {
    case ENOMEM: return LT_ENOMEM;
    case EEXIST: return LT_EEXIST;
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return LT_ENOSPC;
    case EFBIG: return LT_EFBIG;
    case EINVAL: return LT_EINVAL;
    case ENOENT:
    case EACCES:
    case EPERM:
    case EISDIR:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:
    case EROFS:
    case EMFILE:
    case ENFILE:
        return LT_EOPEN;
    case ECONNREFUSED:
    case ECONNRESET:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
        return LT_ECONNECT;
    default: return LT_EIO;
    }
}
