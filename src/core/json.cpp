#include "core/json.hpp"

#include <json-c/json.h>

namespace myr::json {

void Put::operator()(json_object* o) const noexcept {
    json_object_put(o);
}

}  // namespace myr::json
