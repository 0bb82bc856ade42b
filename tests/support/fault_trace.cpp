#include "fault_trace.hpp"

#include <map>
#include <sstream>

#include "harness.hpp"

namespace myr::test {

std::vector<FaultPass> read_fault_trace(const std::string& path) {
    std::vector<FaultPass> out;
    std::map<std::string, int> passes;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        out.push_back({line, ++passes[line]});
    }
    return out;
}

std::string label(const FaultPass& p) {
    return p.point + "@" + std::to_string(p.pass);
}

std::string crash_at(const FaultPass& p) {
    return p.point + ":crash@" + std::to_string(p.pass);
}

}  // namespace myr::test
