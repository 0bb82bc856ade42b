#include "opamp/persistent_state.hpp"

#include <sys/stat.h>
#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "core/log.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "opamp/uid.hpp"

namespace myr::opamp {

namespace {

struct Parser {
    yaml_parser_t p;
    Parser() { yaml_parser_initialize(&p); }
    ~Parser() { yaml_parser_delete(&p); }
};

struct Event {
    yaml_event_t e{};
    bool live = false;
    ~Event() { reset(); }
    void reset() {
        if (live) yaml_event_delete(&e);
        live = false;
    }
};

}  // namespace

Result<std::string> parse_persistent_state(std::string_view yaml) {
    Parser parser;
    yaml_parser_set_input_string(&parser.p, reinterpret_cast<const unsigned char*>(yaml.data()),
                                 yaml.size());
    // Walk the event stream: the document root must be a mapping; at depth 1, a scalar key
    // "instance_id" followed by a scalar value. Nested collections are skipped by depth.
    int depth = 0;
    bool root_seen = false;
    bool expect_key = true;
    bool want_value = false;
    std::string found;
    bool have = false;
    for (;;) {
        Event ev;
        if (!yaml_parser_parse(&parser.p, &ev.e)) {
            std::string why = parser.p.problem ? parser.p.problem : "syntax error";
            return fail("not valid YAML: " + why + " at line " +
                        std::to_string(parser.p.problem_mark.line + 1));
        }
        ev.live = true;
        const yaml_event_type_t t = ev.e.type;
        if (t == YAML_STREAM_END_EVENT) break;
        if (t == YAML_DOCUMENT_END_EVENT) break;  // only the first document counts
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) continue;
        if (t == YAML_ALIAS_EVENT) {
            if (depth == 0) return fail("the document is an alias, not a mapping");
            if (depth == 1) {
                if (want_value) return fail("instance_id is an alias, not a UUID");
                expect_key = !expect_key;
            }
            continue;
        }
        if (!root_seen) {
            root_seen = true;
            if (t != YAML_MAPPING_START_EVENT) return fail("the document is not a mapping");
            depth = 1;
            continue;
        }
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
            if (depth == 1) {
                if (want_value) return fail("instance_id is not a scalar");
                if (expect_key) return fail("a mapping key is not a scalar");
                expect_key = true;  // the collection is this key's value
            }
            ++depth;
            if (depth > 64) return fail("nested too deeply");
            continue;
        }
        if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
            --depth;
            if (depth == 0) break;
            continue;
        }
        if (t == YAML_SCALAR_EVENT && depth == 1) {
            std::string_view v(reinterpret_cast<const char*>(ev.e.data.scalar.value),
                               ev.e.data.scalar.length);
            if (expect_key) {
                want_value = (v == "instance_id");
                expect_key = false;
            } else {
                if (want_value) {
                    found.assign(v);
                    have = true;
                    want_value = false;
                }
                expect_key = true;
            }
        }
    }
    if (!root_seen) return fail("the document is empty");
    if (!have) return fail("no instance_id");
    auto uid = uid_from_text(found);
    if (!uid) return uid.fail("instance_id");
    return uid_to_text(*uid);
}

Result<std::string> read_collector_instance_uid(const std::string& storage_dir) {
    const std::string path = storage_dir + "/" + kPersistentStateFile;
    auto dir = fsx::open_dir(storage_dir);
    if (!dir) return dir.fail(path);
    auto text = fsx::read_file_at(dir->get(), kPersistentStateFile, kMaxPersistentStateSize);
    if (!text) return text.fail(path);
    auto uid = parse_persistent_state(*text);
    if (!uid) return uid.fail(path);
    return uid;
}

PersistentStateWatcher::PersistentStateWatcher(loop::Scheduler& sched, std::string storage_dir,
                                               Duration poll_interval,
                                               std::function<void()> on_change)
    : storage_dir_(std::move(storage_dir)),
      interval_(poll_interval),
      on_change_(std::move(on_change)),
      timer_(sched.timer()),
      path_(storage_dir_ + "/" + kPersistentStateFile) {}

PersistentStateWatcher::~PersistentStateWatcher() = default;

std::string PersistentStateWatcher::stat_key() const {
    struct stat st {};
    if (lstat(path_.c_str(), &st) != 0) return "errno " + std::to_string(errno);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec) + ":" + std::to_string(st.st_mode);
}

void PersistentStateWatcher::start() {
    refresh();
    if (timer_->active()) return;
    timer_->start_repeating(std::max(interval_, Duration(1)), [this] {
        if (stat_key() != seen_) refresh();
    });
}

void PersistentStateWatcher::stop() {
    timer_->stop();
}

void PersistentStateWatcher::refresh() {
    // The stat comes first: a change after it shows up as a difference at the next tick.
    seen_ = stat_key();
    auto r = read_collector_instance_uid(storage_dir_);
    std::string next;
    if (r) {
        next = *r;
        if (!last_problem_.empty()) {
            log::info("collector instance uid readable again", {{"instance_uid", next}});
        }
        last_problem_.clear();
    } else {
        const std::string problem = r.error().sys_errno() == ENOENT
                                        ? "missing: " + r.error().message()
                                        : r.error().message();
        if (problem != last_problem_) {
            log::warn("collector instance uid unknown; dev.myriarch.collector.instance_uid omitted",
                      {{"error", problem}});
            last_problem_ = problem;
        }
    }
    if (next != uid_) {
        uid_ = std::move(next);
        if (on_change_) on_change_();
    }
}

}  // namespace myr::opamp
