// `status --config F [--json]`: what the collector volume and the state directory say, for a
// person at a terminal or `kubectl exec`, or as JSON for a program (docs/status.md). It reads
// only: no network, no writer lock, nothing created or written, so it is safe beside a running
// PID 1 (update/status_view.hpp says what a view taken during an install may mix).
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "update/status_view.hpp"
#include "verify/root_file.hpp"

namespace myr::cli {
namespace {

void read_trusted_root(const std::string& file, update::StatusView& v) {
    v.trusted_root_file = file;
    // The file as it is now, checked as the running updater checks it: a file it ignored shows
    // here as unusable, while the updater goes on with the one before (its log says so).
    auto root = verify::load_usable_root(file);
    if (!root) {
        v.trusted_root_problem = root.error().message();
        return;
    }
    v.trusted_root_start = root->newest_start;
    if (!v.trusted_root_start) v.trusted_root_problem = "no key or CA has a validity start";
}

}  // namespace

int cmd_status(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config"}, {"json"}, {}});
    if (!args) return usage_error("status", args.error().message());
    if (args->flag("help")) return print_help("status");
    if (!args->positional().empty()) {
        return usage_error("status", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("status", "--config FILE is required");
    config::LoadResult r = config::load_file(*path, config::Mode::any);
    if (!r.config) {
        for (const config::Problem& p : r.problems) {
            std::fprintf(stderr, "myriarch-updater: %s\n", p.str().c_str());
        }
        return 1;
    }
    const config::Config& c = *r.config;
    update::StatusInputs in{c.collector.install_dir, c.collector.state_dir,    c.collector.binary,
                            c.update.quarantine_for, c.update.trial_max_boots, wall_now()};
    update::StatusView v = update::read_status(in);
    read_trusted_root(c.update.trusted_root_file, v);
    const std::string out =
        args->flag("json") ? update::render_status_json(v) : update::render_status_text(v);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    for (const std::string& p : v.problems) {
        const std::string one = text::escape_controls(p);
        std::fprintf(stderr, "myriarch-updater status: %s\n", one.c_str());
    }
    return v.problems.empty() ? 0 : 1;
}

}  // namespace myr::cli
