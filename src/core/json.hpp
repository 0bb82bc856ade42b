// The owner of a json-c document: one holder for every module that reads or writes JSON (markers,
// the journal, Sigstore bundles). json-c itself stays behind the modules that parse with it; this
// header only names the type.
#pragma once

#include <memory>

struct json_object;

namespace myr::json {

struct Put {
    void operator()(json_object* o) const noexcept;  // json_object_put
};
using Ptr = std::unique_ptr<json_object, Put>;

}  // namespace myr::json
