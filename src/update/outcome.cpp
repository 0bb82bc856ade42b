#include "update/outcome.hpp"

#include "core/text.hpp"

namespace myr::update {

std::string one_line(std::string s) {
    s = text::single_line(std::move(s));
    // Cut on a code point boundary, never inside one: the text goes to the server as UTF-8.
    constexpr size_t kMax = 600;
    return text::valid_utf8(s, kMax);
}

const char* to_string(FailureClass c) {
    switch (c) {
        case FailureClass::deterministic:
            return "deterministic";
        case FailureClass::transient:
            return "transient";
        case FailureClass::refused:
            return "refused";
    }
    return "?";
}

const char* to_string(Failure f) {
    switch (f) {
        case Failure::none:
            return "none";
        case Failure::inspect:
            return "inspect";
        case Failure::policy:
            return "policy";
        case Failure::room:
            return "room";
        case Failure::journal:
            return "journal";
        case Failure::download:
            return "download";
        case Failure::integrity:
            return "integrity";
        case Failure::signature:
            return "signature";
        case Failure::stage:
            return "stage";
        case Failure::preflight:
            return "preflight";
        case Failure::stop:
            return "stop";
        case Failure::activation:
            return "activation";
        case Failure::start:
            return "start";
        case Failure::health:
            return "health";
        case Failure::commit:
            return "commit";
        case Failure::trial:
            return "trial";
        case Failure::cancelled:
            return "cancelled";
    }
    return "?";
}

}  // namespace myr::update
