// The seam between the update pipeline and the downloader: what the installer asks for (one
// offered artifact into the spool) and what it gets back (a file on the volume whose SHA-256 was
// computed while it was written, or an error with its kind).
//
// The installer holds a Downloader& (its `fetcher` port); the container runtime plugs in the real
// one (HTTP(S) over net/, resumable, allowlisted — docs/download.md), tests plug in a fake that
// completes on command. Only this interface is shared; how bytes move is the implementation's
// business.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/step.hpp"

namespace myr::download {

struct Request {
    std::string url;  // as offered (DownloadableFile.download_url); the downloader checks it
    std::vector<std::pair<std::string, std::string>> headers;  // DownloadableFile.headers
    std::string content_hash_hex;  // expected SHA-256, lower-case hex (names the spool file)
    uint64_t max_size = 0;         // update.maxArtifactSize
    // Bytes that must stay free on the spool's filesystem besides the artifact: the new binary
    // when the spool shares the volume's filesystem (the installer's room rule), else 0.
    uint64_t reserve = 0;
    // Start from zero: a part kept from an earlier fetch is discarded first (the installer asks
    // for it once when a resumed download's digest did not match).
    bool fresh = false;
};

struct Progress {
    uint64_t bytes = 0;   // in the spool file so far (a resumed part counts)
    uint64_t total = 0;   // 0 = unknown (no Content-Length)
    double percent = -1;  // -1 = unknown
    double bytes_per_second = 0;
};

struct Artifact {
    std::string path;        // stateDir/spool/<content_hash_hex> (complete, fsynced)
    std::string sha256_hex;  // computed over the whole file
    uint64_t size = 0;
    // Some of its bytes came from a part kept from an earlier fetch (a 206 continued it).
    bool resumed = false;
};

class Downloader {
  public:
    virtual ~Downloader() = default;
    struct Handlers {
        // At most every 2 s while bytes arrive.
        std::function<void(const Progress&)> on_progress;
        // Exactly once, on a later loop turn, unless the Step is destroyed first. Errors
        // carry their kind: invalid (URL policy, size cap, a 4xx other than 408/429), network
        // (after the retries), integrity (never: the hash is compared by the caller), system
        // (disk), timeout. The installer classes them (update/retry.hpp).
        std::function<void(Result<Artifact>)> on_done;
    };
    // The URL policy the downloader owns (allowed prefixes, http:// only where the endpoint may
    // be plain), answered at once: the installer's Checking calls it before any byte moves, and
    // fetch() applies the same rule again (to redirects too).
    [[nodiscard]] virtual Status check_url(const std::string& url) const = 0;
    // Starts fetching. Starting a request for another content hash removes spool files of other
    // hashes first (the spool holds at most the current artifact). Destroying the returned Step
    // cancels the download (no callback runs afterwards); its `.part` is kept so that the same
    // content hash can resume it.
    [[nodiscard]] virtual std::unique_ptr<loop::Step> fetch(Request request, Handlers handlers) = 0;
};

}  // namespace myr::download
