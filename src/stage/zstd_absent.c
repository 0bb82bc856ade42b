/* Linked only into a static build that has no static libzstd (Debian's libzstd-dev is missing).
 * libarchive's zip reader refers to these for zip members compressed with zstd (method 93); here
 * each one fails, so such a member is refused as unreadable and the binary still links. Tar with
 * zstd is then refused too (the filter is not registered: MYR_HAVE_ZSTD is 0). The signatures
 * mirror zstd's public API at the ABI level: pointers and size_t. */
#include <stddef.h>

void* ZSTD_createDStream(void) {
    return NULL;
}
size_t ZSTD_freeDStream(void* zds) {
    (void)zds;
    return 0;
}
size_t ZSTD_initDStream(void* zds) {
    (void)zds;
    return (size_t)-1;
}
size_t ZSTD_decompressStream(void* zds, void* output, void* input) {
    (void)zds;
    (void)output;
    (void)input;
    return (size_t)-1;
}
size_t ZSTD_DStreamOutSize(void) {
    return 128 * 1024;
}
unsigned ZSTD_isError(size_t code) {
    return code > (size_t)-120;
}
const char* ZSTD_getErrorName(size_t code) {
    (void)code;
    return "zstd is not available in this build";
}
