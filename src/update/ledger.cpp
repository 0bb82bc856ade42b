#include "update/ledger.hpp"

#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

namespace myr::update {

const char* to_string(Code c) {
    switch (c) {
        case Code::installed:
            return "installed";
        case Code::install_pending:
            return "install-pending";
        case Code::installing:
            return "installing";
        case Code::install_failed:
            return "install-failed";
        case Code::downloading:
            return "downloading";
    }
    return "?";
}

void Ledger::set_active(std::string version, std::string package_hash) {
    active_ = std::move(version);
    active_hash_ = std::move(package_hash);
}

void Ledger::restore(Installed in) {
    // The hash stands for "this is installed" only while its version is still the one `current`
    // names: seeding may have activated the image's version since.
    bool still_active = !in.version.empty() && in.version == active_;
    if (!still_active) {
        in.all_packages_hash.clear();
        in.name.clear();
        in.version.clear();
        in.package_hash.clear();
    }
    // A repeat is nothing to do only while the statuses say Installed: after a failed offer the
    // installed one offered again must be answered Installed, so it goes through Checking (which
    // finds it active and intact, without a download).
    bool says_installed = in.statuses.empty() || in.statuses[in.top_index].code == Code::installed;
    restored_hash_ = says_installed ? in.all_packages_hash : "";
    if (!in.statuses.empty()) {
        // A packages.json written before errors were made valid UTF-8 may hold other bytes.
        for (PackageReport& p : in.statuses) p.error = text::valid_utf8(p.error);
        report_.packages = in.statuses;
        report_.all_packages_hash = in.all_packages_hash;
        report_.error.clear();
        restored_top_ = in.top_index;
        // What the collector runs now, which after seeding is not what was reported before.
        PackageReport& top = report_.packages[in.top_index];
        top.agent_has_version = active_;
        top.agent_has_hash = active_hash_;
        log::info("update: statuses of the last offer restored",
                  {{"version", top.offered_version},
                   {"status", to_string(top.code)},
                   {"all_packages_hash", hex::encode(report_.all_packages_hash)}});
    }
    last_installed_ = std::move(in);
}

void Ledger::report_interrupted(const Attempt& a, const std::string& package_name) {
    last_attempt_ = a;
    PackageReport p;
    p.name = package_name;
    // The restored entry of our package: its name is the server's, not ours.
    if (!report_.packages.empty()) p.name = report_.packages[restored_top_].name;
    p.offered_version = a.version;
    p.offered_hash.assign(a.package_hash_hex.size() / 2, '\0');
    if (!hex::decode(a.package_hash_hex, reinterpret_cast<uint8_t*>(p.offered_hash.data()),
                     p.offered_hash.size())) {
        p.offered_hash.clear();
    }
    p.agent_has_version = active_;
    p.agent_has_hash = active_hash_;
    p.code = Code::install_failed;
    p.error = text::valid_utf8(a.reason);
    if (report_.packages.empty()) {
        report_.packages.push_back(std::move(p));
        restored_top_ = 0;
    } else {
        report_.packages[restored_top_] = std::move(p);
    }
    // The installed offer again must be answered from the volume, not skipped as unchanged.
    restored_hash_.clear();
}

std::string Ledger::key_of(const Offer& o) {
    for (const OfferedPackage& p : o.packages) {
        if (!p.top_level) continue;
        std::string k = hex::encode(p.hash) + "/" + p.version;
        // Where the bytes come from is not what they are: a fresh (presigned) URL or new headers
        // keep the key, the bundle that vouches for them does not.
        if (p.file) {
            k += "/" + hex::encode(p.file->content_hash) + "/" +
                 std::to_string(std::hash<std::string>{}(p.file->signature));
        }
        return k;
    }
    return "";
}

namespace {

const OfferedFile* file_of(const Offer& o) {
    for (const OfferedPackage& p : o.packages) {
        if (p.top_level) return p.file ? &*p.file : nullptr;
    }
    return nullptr;
}

}  // namespace

void Ledger::refresh(const Offer& o) {
    report_.all_packages_hash = o.all_packages_hash;
}

Ledger::WhileBusy Ledger::while_busy(const Offer& o, const Offer& running, bool cancelled,
                                     const std::optional<Offer>& pending) {
    std::string key = key_of(o);
    if (key == key_of(running)) {
        if (cancelled) return WhileBusy::again;
        if (pending) return WhileBusy::withdraw;
        const OfferedFile* now = file_of(o);
        const OfferedFile* was = file_of(running);
        const bool moved = now && was && (now->url != was->url || now->headers != was->headers);
        return moved || o.all_packages_hash != running.all_packages_hash ? WhileBusy::refresh
                                                                         : WhileBusy::ignore;
    }
    if (pending && key == key_of(*pending)) return WhileBusy::ignore;
    return WhileBusy::remember;
}

bool Ledger::settled(const Offer& o) {
    std::string key = key_of(o);
    if (!key.empty() && key == installed_key_ && o.all_packages_hash == report_.all_packages_hash) {
        return true;  // the offer last Installed, unchanged since
    }
    // The offer Installed before a restart, offered again: the same rule, from packages.json,
    // which has no offer key.
    if (!restored_hash_.empty() && o.all_packages_hash == restored_hash_) {
        log::info("update: offer already installed",
                  {{"version", last_installed_->version},
                   {"all_packages_hash", hex::encode(restored_hash_)}});
        return true;
    }
    restored_hash_.clear();
    return false;
}

void Ledger::take_inspection(const Inspection& in) {
    if (in.active_intact) active_ = in.active;
    report_.packages[top_index_].agent_has_version = active_;
}

std::optional<OfferedPackage> Ledger::open(const Offer& o) {
    auto refused = [](const OfferedPackage& p) {
        std::string why = "offer refused: " + p.refusal;
        log::warn("update: offered package refused",
                  {{"package", text::valid_utf8(p.name, 256)}, {"error", why}});
        return why;
    };
    std::optional<OfferedPackage> pkg;
    bool top_seen = false;  // the first TopLevel package is ours, refused or not
    Report r;
    r.all_packages_hash = o.all_packages_hash;
    for (const OfferedPackage& p : o.packages) {
        PackageReport pr;
        pr.name = p.name;
        pr.offered_version = p.version;
        pr.offered_hash = p.hash;
        pr.agent_has_version = "";
        if (p.top_level && !top_seen) {
            top_seen = true;
            top_index_ = r.packages.size();
            pr.agent_has_version = active_;
            pr.agent_has_hash = active_hash_;
            pr.code = Code::install_pending;
            if (p.refusal.empty()) {
                pkg = p;
            } else {
                // The codec refused it: our package, answered, not installed.
                pr.code = Code::install_failed;
                pr.error = refused(p);
            }
        } else if (!p.refusal.empty()) {
            pr.code = Code::install_failed;
            pr.error = refused(p);
        } else {
            pr.code = Code::install_failed;
            pr.error = p.top_level ? "unsupported package: only one top-level package is installed"
                                   : "unsupported package type";
        }
        r.packages.push_back(std::move(pr));
    }
    report_ = std::move(r);
    return pkg;
}

void Ledger::set_status(Code code, std::string error) {
    if (report_.packages.empty()) return;
    PackageReport& r = report_.packages[top_index_];
    r.code = code;
    // packages.json keeps it and the next start reports it again: valid UTF-8 from here on.
    r.error = text::valid_utf8(error);
    r.agent_has_version = active_;
    r.agent_has_hash = active_hash_;
    if (code != Code::downloading) {
        r.percent.reset();
        r.bytes_per_second = 0;
    } else if (!r.percent) {
        r.percent = 0.0;
    }
}

bool Ledger::progress(const download::Progress& p, MonoTime now) {
    // The downloader promises at most every 2 s; the report keeps that promise itself so that a
    // chattier downloader cannot flood the server.
    if (progress_reported_ && now - last_progress_ < progress_every_) return false;
    progress_reported_ = true;
    last_progress_ = now;
    PackageReport& r = report_.packages[top_index_];
    r.code = Code::downloading;
    r.percent = p.percent < 0 ? 0.0 : p.percent;
    r.bytes_per_second = p.bytes_per_second;
    return true;
}

Installed Ledger::ended() const {
    Installed out = last_installed_.value_or(Installed{});
    out.statuses = report_.packages;
    out.top_index = top_index_;
    return out;
}

Installed Ledger::fail(std::string why, std::optional<Attempt> attempt) {
    set_status(Code::install_failed, std::move(why));
    if (attempt) last_attempt_ = std::move(attempt);
    return ended();
}

Installed Ledger::installed(const Offer& o, const OfferedPackage& pkg, bool fetched) {
    // Found installed in Checking (nothing fetched): the active version's hash stays the one it
    // was installed with (unknown for the image's version), never the offer's.
    const std::string hash = fetched ? pkg.hash : active_hash_;
    std::vector<PackageReport> statuses = report_.packages;
    PackageReport& p = statuses[top_index_];
    p.code = Code::installed;
    p.error.clear();
    p.percent.reset();
    p.bytes_per_second = 0;
    p.agent_has_version = pkg.version;
    p.agent_has_hash = hash;
    return Installed{o.all_packages_hash, pkg.name,  pkg.version, hash,
                     std::move(statuses), top_index_};
}

void Ledger::commit(const Offer& o, Installed packages, Attempt a) {
    // Only a commit that is on the volume makes the package the active one: a failed one is
    // undone, and the report keeps naming what runs.
    active_ = packages.version;
    active_hash_ = packages.package_hash;
    last_attempt_ = std::move(a);
    report_.packages = packages.statuses;
    last_installed_ = std::move(packages);
    installed_key_ = key_of(o);
}

}  // namespace myr::update
