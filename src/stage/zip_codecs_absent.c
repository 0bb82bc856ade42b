/* Linked into the static build instead of libbz2 and nettle (issue 38, docs/footprint.md: 95 kB).
 * libarchive's zip reader refers to bzip2 for members of method 12, and to nettle's AES, PBKDF2
 * and HMAC-SHA1 for WinZip AES encryption (method 99). Neither can be reached through stage/: the
 * directory scan (zip_scan.cpp) admits only stored and deflate members, in the directory and in
 * each local header, and no passphrase is ever given to libarchive, which refuses an encrypted
 * member for want of one before it derives any key. Should a member get past that (a zip inside a
 * compressed stream is read without the scan), bzip2's initialisation fails here as a missing
 * decoder would, and libarchive refuses the member. nettle's functions have no result to fail
 * with: they stop the process with a message rather than return bytes that were not decrypted.
 * bzip2's signatures mirror its ABI (a pointer and ints); nettle's stand-ins never return and read
 * none of their arguments, so they take none. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

enum { kBzConfigError = -9 }; /* BZ_CONFIG_ERROR: "the library was built wrongly" */

int BZ2_bzDecompressInit(void* strm, int verbosity, int small) {
    (void)strm;
    (void)verbosity;
    (void)small;
    return kBzConfigError;
}
int BZ2_bzDecompress(void* strm) {
    (void)strm;
    return kBzConfigError;
}
int BZ2_bzDecompressEnd(void* strm) {
    (void)strm;
    return 0;
}

static void no_zip_encryption(const char* what) {
    fprintf(stderr, "myriarch-updater: %s called: zip encryption is not in this build\n", what);
    abort();
}

#define MYR_NETTLE_ABSENT(name)   \
    void name(void) {             \
        no_zip_encryption(#name); \
    }
MYR_NETTLE_ABSENT(nettle_aes128_set_encrypt_key)
MYR_NETTLE_ABSENT(nettle_aes192_set_encrypt_key)
MYR_NETTLE_ABSENT(nettle_aes256_set_encrypt_key)
MYR_NETTLE_ABSENT(nettle_aes128_encrypt)
MYR_NETTLE_ABSENT(nettle_aes192_encrypt)
MYR_NETTLE_ABSENT(nettle_aes256_encrypt)
MYR_NETTLE_ABSENT(nettle_pbkdf2_hmac_sha1)
MYR_NETTLE_ABSENT(nettle_hmac_sha1_set_key)
MYR_NETTLE_ABSENT(nettle_hmac_sha1_update)
MYR_NETTLE_ABSENT(nettle_hmac_sha1_digest)
