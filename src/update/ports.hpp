// What the installer works with, as interfaces (runtime.md, "How the installer plugs in"): each
// entry action of the state machine starts one asynchronous step through one of these ports. The
// container runtime plugs in the real ones (volume_ops.hpp, the downloader, the preflight over the
// reaper, and its own adapters for Sigstore, extraction and health); tests plug in fakes that
// complete on command on a FakeScheduler.
//
// Rules every port keeps, so that the installer needs no re-entrancy cases: all calls happen on
// the loop; every callback runs exactly once, on a later loop turn, never from inside the call;
// destroying a returned Step cancels it and no callback runs afterwards (loop::Step). Blocking
// work (hashing, extraction, fsync, rename) runs on the work queue (loop::post_job), never on the
// loop.
//
// update/ knows no OpAMP type: the runtime's adapter turns PackagesAvailable into an Offer and a
// Report into PackageStatuses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "core/url.hpp"
#include "download/downloader.hpp"
#include "loop/step.hpp"
#include "stage/preflight.hpp"
#include "update/outcome.hpp"

namespace myr::update {

template <class T>
using Callback = std::function<void(Result<T>)>;
using Done = std::function<void(Status)>;

using Step = loop::Step;

// ---- What the server offers, and what the installer reports (no OpAMP types) ----

struct OfferedFile {
    std::string url;
    std::string content_hash;  // raw bytes (SHA-256 of the file, 32 bytes when well-formed)
    std::string signature;     // Sigstore bundle JSON; empty when unsigned
    std::vector<std::pair<std::string, std::string>> headers;
    bool operator==(const OfferedFile&) const = default;
};

struct OfferedPackage {
    std::string name;
    bool top_level = true;  // PackageType TopLevel
    std::string version;
    std::optional<OfferedFile> file;
    std::string hash;  // the package hash, raw bytes
    // Why the codec refused the entry ("33 download headers, at most 32"), or "": a refused
    // package is answered InstallFailed with it and never installed.
    std::string refusal;
    bool operator==(const OfferedPackage&) const = default;
};

struct Offer {
    std::vector<OfferedPackage> packages;
    std::string all_packages_hash;  // raw bytes
    size_t refused = 0;             // entries the codec dropped past its cap
    bool operator==(const Offer&) const = default;
};

enum class Code { installed, install_pending, installing, install_failed, downloading };
const char* to_string(Code c);

struct PackageReport {
    std::string name;
    std::string agent_has_version;
    std::string agent_has_hash;  // raw bytes
    std::string offered_version;
    std::string offered_hash;  // raw bytes
    Code code = Code::installed;
    std::string error;
    std::optional<double> percent;  // with Code::downloading
    double bytes_per_second = 0;
    bool operator==(const PackageReport&) const = default;
};

struct Report {
    std::vector<PackageReport> packages;
    std::string all_packages_hash;  // of the offer these statuses answer
    std::string error;
    bool operator==(const Report&) const = default;
};

// ---- Ports ----

// The downloader and the preflight are ports of their own modules, one interface each
// (download/downloader.hpp, stage/preflight.hpp); the installer calls them under these names.
using Fetcher = download::Downloader;
using Preflighter = stage::Preflighter;

// The Sigstore bundle of an artifact, verified offline against update.trustedRootFile and
// update.signerIdentity. It runs before the download, against the digest the offer names (its
// content hash); Verifying then checks that the downloaded bytes have that digest.
class Verifier {
  public:
    virtual ~Verifier() = default;
    struct Request {
        std::string sha256_hex;  // the offered content hash, which the download must match
        std::string bundle_json;
        // The offered version, canonical: fills `{version}` in the identity's certificate fields.
        std::string version;
    };
    struct Verified {
        std::string subject;
        std::string issuer;
        // The certificate fields checked against the offer, for the log:
        // `sourceRepositoryRef="refs/tags/v0.158.0" ...`; "" when none are configured.
        std::string fields = {};
    };
    [[nodiscard]] virtual std::unique_ptr<Step> verify(Request request,
                                                       Callback<Verified> done) = 0;
    // What the verifier trusts now (the trusted root's SHA-256), "" when nothing names it: a
    // signature refused under one root is quarantined only while that root is in use.
    virtual std::string trust() const { return {}; }
};

// The collector binary out of the archive into a fresh `.staging/<id>/` of the store.
class Stager {
  public:
    virtual ~Stager() = default;
    struct Staged {
        std::string id;           // the staging directory (store::Staging::id)
        std::string binary_path;  // absolute: where the preflight runs it
        std::string sha256_hex;
        uint64_t size = 0;
    };
    [[nodiscard]] virtual std::unique_ptr<Step> stage(std::string archive_path,
                                                      Callback<Staged> done) = 0;
};

// One HTTP GET of a health URL; the answer is the status code (an error when nothing answered).
class HealthProbe {
  public:
    virtual ~HealthProbe() = default;
    [[nodiscard]] virtual std::unique_ptr<Step> get(const Url& url, Duration timeout,
                                                    Callback<int> done) = 0;
};

// The last outcome of an install, `stateDir/last-attempt.json`: for the quarantine rule, for
// /readyz text and for the report after a restart.
struct Attempt {
    std::string package_hash_hex;  // of the offered package ("" when the offer had none)
    std::string version;
    Outcome outcome = Outcome::failed;  // its words in the file: state_files.cpp
    std::string reason;                 // one line; "" when installed
    std::string at;                     // RFC 3339
    // With failed and rolled-back: what the failure says about the next try (docs/update.md,
    // "Failure classes"); only a deterministic one is quarantined. Files without the field:
    // deterministic.
    FailureClass cls = FailureClass::deterministic;
    // A signature refused under a trusted root: that root's SHA-256 (lower-case hex). The
    // quarantine holds only while the same root is in use, so that a root replaced by the
    // operator (the right CA, a new log key) gets the package verified again.
    std::string trust{};
    std::string lifted{};  // RFC 3339: when `myriarch-updater forget` lifted the quarantine
    // Starts of the container that found this package's new version running before its trial
    // (journal phase starting or health-checking): carried from one interrupted install of the
    // same package to the next, so that a version that kills the container while it is checked
    // is not installed for ever (record_recovery).
    int64_t restarts = 0;
    bool operator==(const Attempt&) const = default;
};

// `stateDir/packages.json`: what the last offer came to.
struct Installed {
    // Of the offer last Installed ("" before any): kept when a later offer fails, because the
    // server is told this hash only for what was really installed.
    std::string all_packages_hash;  // raw bytes
    std::string name;               // the package installed with it ("" before any)
    std::string version;
    std::string package_hash;  // raw bytes
    // The statuses reported when the last offer ended (Installed or InstallFailed), and which of
    // them is the TopLevel package the installer handled.
    std::vector<PackageReport> statuses;
    size_t top_index = 0;
    bool operator==(const Installed&) const = default;
};

// What the volume says before an install.
struct Inspection {
    std::string active;  // the version `current` names ("" when none)
    bool active_intact = false;
    std::string previous;  // the active marker's previousVersion
    std::optional<Attempt> last_attempt;
    // The package hash the active version was installed with (packages.json, raw bytes): "" when
    // not known, as for the image's version seeded at start.
    std::string active_package_hash;
    // For "room first" (check.hpp): the active binary's size (its marker; 0 when none is intact),
    // the estimate of the offered binary before its archive is fetched, and the room where the
    // install writes (statvfs, read in the same pass).
    uint64_t active_size = 0;
    struct Room {
        std::string path;  // for the message: installDir, or stateDir's spool
        uint64_t available = 0;
        uint64_t device = 0;
    };
    std::optional<Room> volume_room;  // installDir: staging, then versions/ (nullopt: unknown)
    std::optional<Room> spool_room;   // stateDir/spool: the archive
};

// Everything the installer changes on the volume and in the state directory. Each call blocks on
// disk, so the real one runs it on the work queue and answers on the loop.
class VolumeOps {
  public:
    virtual ~VolumeOps() = default;

    [[nodiscard]] virtual std::unique_ptr<Step> inspect(Callback<Inspection> done) = 0;

    // journal.json, durably (op update, one id for the whole install: `from`/`to` name it).
    struct JournalEntry {
        std::string phase;
        std::string from;  // active before the install
        std::string to;    // offered version
        // The offer's package hash: the first write of an install also records it as
        // "in-progress" in last-attempt.json, so a start after a crash knows which offer it was.
        std::string package_hash_hex;
        // Phase "trial": its deadline in Unix seconds (journal "trialUntil"); 0 otherwise.
        int64_t trial_until = 0;
    };
    [[nodiscard]] virtual std::unique_ptr<Step> write_journal(JournalEntry entry, Done done) = 0;

    // Activates a staged version: marker source update, previousVersion = `previous`, then
    // `current` switched. An error may come after the switch: the caller decides from the volume
    // (it keeps the journal and rolls back), never from the error alone.
    struct Activation {
        std::string version;
        std::string staged_id;
        std::string sha256_hex;
        std::string previous;
    };
    [[nodiscard]] virtual std::unique_ptr<Step> activate(Activation a, Done done) = 0;

    // Points `current` back at `version` (intact), durably; idempotent.
    [[nodiscard]] virtual std::unique_ptr<Step> switch_back(std::string version, Done done) = 0;

    // The end of an install. `clear_journal` false keeps the journal for the next start's recovery
    // (a rollback that could not switch back). Then: staging `staged_id` discarded, the spool
    // emptied, last-attempt.json written when `attempt` is set, packages.json written when
    // `packages` is set, GC when `gc` is set.
    struct Finish {
        bool clear_journal = true;
        std::string staged_id;
        std::optional<Attempt> attempt;
        std::optional<Installed> packages;
        bool gc = false;
    };
    [[nodiscard]] virtual std::unique_ptr<Step> finish(Finish f, Done done) = 0;
};

}  // namespace myr::update
