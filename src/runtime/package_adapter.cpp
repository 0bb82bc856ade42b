#include "runtime/package_adapter.hpp"

namespace myr::runtime {
namespace {

opamp::PackageStatusCode to_code(update::Code c) {
    switch (c) {
        case update::Code::installed:
            return opamp::PackageStatusCode::installed;
        case update::Code::install_pending:
            return opamp::PackageStatusCode::install_pending;
        case update::Code::installing:
            return opamp::PackageStatusCode::installing;
        case update::Code::install_failed:
            return opamp::PackageStatusCode::install_failed;
        case update::Code::downloading:
            return opamp::PackageStatusCode::downloading;
    }
    return opamp::PackageStatusCode::install_failed;
}

}  // namespace

update::Offer to_offer(const opamp::PackagesAvailable& in) {
    update::Offer out;
    out.all_packages_hash = in.all_packages_hash;
    out.refused = in.refused;
    for (const opamp::PackageAvailable& p : in.packages) {
        update::OfferedPackage q;
        q.name = p.name;
        // A type outside the enum is not TopLevel either: answered "unsupported package type".
        q.top_level = p.type == opamp::PackageType::top_level;
        q.version = p.version;
        q.hash = p.hash;
        q.refusal = p.refusal;
        if (p.file) {
            update::OfferedFile f;
            f.url = p.file->download_url;
            f.content_hash = p.file->content_hash;
            f.signature = p.file->signature;
            for (const opamp::Header& h : p.file->headers) f.headers.emplace_back(h.key, h.value);
            q.file = std::move(f);
        }
        out.packages.push_back(std::move(q));
    }
    return out;
}

opamp::PackageStatuses to_statuses(const update::Report& r, size_t refused) {
    opamp::PackageStatuses out;
    out.server_provided_all_packages_hash = r.all_packages_hash;
    out.error_message = r.error;
    if (refused) out.error_message = opamp::refused_packages_message(refused);
    for (const update::PackageReport& p : r.packages) {
        opamp::PackageStatus s;
        s.name = p.name;
        s.agent_has_version = p.agent_has_version;
        s.agent_has_hash = p.agent_has_hash;
        s.server_offered_version = p.offered_version;
        s.server_offered_hash = p.offered_hash;
        s.status = to_code(p.code);
        s.error_message = p.error;
        if (p.code == update::Code::downloading) {
            s.download_details =
                opamp::PackageDownloadDetails{p.percent.value_or(0), p.bytes_per_second};
        }
        out.packages.push_back(std::move(s));
    }
    return out;
}

void PackageAdapter::offer(const opamp::PackagesAvailable& offer) {
    installer_.offer(to_offer(offer));
}

// The installer's ledger is the one view of what was offered and reported, the entries the codec
// refused included.
opamp::PackageStatuses PackageAdapter::statuses() const {
    const update::Ledger& ledger = installer_.ledger();
    return to_statuses(ledger.report(), ledger.refused());
}

}  // namespace myr::runtime
