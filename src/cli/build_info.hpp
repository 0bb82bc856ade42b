// What was built: version, git commit, build type, and whether the binary is static.
#pragma once

namespace myr::build_info {

const char* version();
const char* git_commit();
const char* build_type();
bool is_static();
bool fault_injection();

}  // namespace myr::build_info
