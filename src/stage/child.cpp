// The extractor child and its one-line protocol. Arguments are positional (only the updater writes
// them): binary, max_binary_size, max_members, max_unpacked, archive, staging directory. The
// result is the last line of the child's output:
//
//   extracted <size> <sha256 hex> <member name, hex>
//   refused <Errc number> <errno> <message on one line>
//
// The member name is hex because an archive may name it with any bytes, newlines too.
#include "stage/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/fault.hpp"
#include "core/fd.hpp"
#include "core/hex.hpp"
#include "core/text.hpp"
#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"

namespace myr::stage {
namespace {

constexpr size_t kKeptOutput = 8 * 1024;  // the result line, or the tail of what a crash printed

bool parse_u64(std::string_view s, uint64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// RLIMIT_AS is left unset under AddressSanitizer, which reserves terabytes of address space for
// its shadow: the sanitizer build tests everything else of the child.
Status set_limits(uint64_t max_file) {
    auto set = [](int what, rlim_t value, const char* name) -> Status {
        struct rlimit l {
            value, value
        };
        if (::setrlimit(what, &l) != 0) return fail_errno(std::string("setrlimit ") + name);
        return {};
    };
#if !defined(__SANITIZE_ADDRESS__)
    if (auto ok = set(RLIMIT_AS, kChildAddressSpace, "RLIMIT_AS"); !ok) return ok;
#endif
    if (auto ok = set(RLIMIT_CPU, kChildCpuSeconds, "RLIMIT_CPU"); !ok) return ok;
    if (auto ok = set(RLIMIT_CORE, 0, "RLIMIT_CORE"); !ok) return ok;
    // A write past the limit then fails with EFBIG instead of killing with SIGXFSZ.
    ::signal(SIGXFSZ, SIG_IGN);
    return set(RLIMIT_FSIZE, static_cast<rlim_t>(max_file), "RLIMIT_FSIZE");
}

int print_refused(const Error& e) {
    std::printf("refused %d %d %s\n", static_cast<int>(e.code()), e.sys_errno(),
                text::single_line(e.message()).c_str());
    return 1;
}

// The last non-empty line of the output.
std::string_view last_line(std::string_view out) {
    while (!out.empty() && out.back() == '\n') out.remove_suffix(1);
    const size_t nl = out.rfind('\n');
    return nl == std::string_view::npos ? out : out.substr(nl + 1);
}

// "<word> " at the front of `line`, taken off; false when it is not there.
bool take_word(std::string_view& line, std::string_view& word) {
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return false;
    word = line.substr(0, sp);
    line.remove_prefix(sp + 1);
    return true;
}

// The fields after "extracted "; nothing when they do not parse.
std::optional<Extracted> parse_extracted(std::string_view line) {
    std::string_view size, sha;
    Extracted x;
    if (!take_word(line, size) || !take_word(line, sha) || !parse_u64(size, x.size) ||
        sha.size() != 64 || line.size() % 2 != 0) {
        return std::nullopt;
    }
    x.member.assign(line.size() / 2, '\0');
    if (!hex::decode(line, reinterpret_cast<uint8_t*>(x.member.data()), x.member.size())) {
        return std::nullopt;
    }
    x.sha256_hex = std::string(sha);
    return x;
}

// The fields after "refused ": the child's error as it was, code and errno kept.
std::optional<Error> parse_refused(std::string_view line) {
    std::string_view code, err;
    uint64_t c = 0, e = 0;
    if (!take_word(line, code) || !take_word(line, err) || !parse_u64(code, c) ||
        !parse_u64(err, e) || c > static_cast<uint64_t>(Errc::injected) || e > 4095) {
        return std::nullopt;
    }
    return Error(static_cast<Errc>(c), std::string(line), static_cast<int>(e));
}

}  // namespace

std::vector<std::string> child_argv(const ChildRequest& r) {
    return {r.exe,
            kExtractCommand,
            r.binary,
            std::to_string(r.limits.max_binary_size),
            std::to_string(r.limits.max_members),
            std::to_string(r.limits.max_unpacked),
            r.archive,
            r.staging_dir};
}

int child_main(const std::vector<std::string>& args) {
    // Fault injection is PID 1's: a crash matrix counts the passes of PID 1 through its points and
    // expects PID 1 to die at one, so the child neither traces nor triggers them.
    ::unsetenv("MYRIARCH_FAULT");
    ::unsetenv("MYRIARCH_FAULT_TRACE");
    fault::reload();
    ExtractLimits l;
    if (args.size() != 6 || !parse_u64(args[1], l.max_binary_size) ||
        !parse_u64(args[2], l.max_members) || !parse_u64(args[3], l.max_unpacked)) {
        std::fprintf(stderr, "%s: only the updater starts this command\n", kExtractCommand);
        return 2;
    }
    if (auto ok = set_limits(l.max_binary_size); !ok) return print_refused(ok.error());
    UniqueFd archive(::open(args[4].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (archive.get() < 0) return print_refused(Error::from_errno("stage: open " + args[4]));
    UniqueFd dir(::open(args[5].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (dir.get() < 0) return print_refused(Error::from_errno("stage: open " + args[5]));
    auto got = extract_binary(archive.get(), args[0], dir.get(), l);
    if (!got) return print_refused(got.error());
    std::printf("extracted %llu %s %s\n", static_cast<unsigned long long>(got->size),
                got->sha256_hex.c_str(), hex::encode(got->member).c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
}

Result<Extracted> parse_child_output(const std::string& output, const std::string& how_ended) {
    std::string_view line = last_line(output), word;
    if (take_word(line, word) && word == "extracted") {
        if (auto x = parse_extracted(line)) return std::move(*x);
    } else if (word == "refused") {
        if (auto e = parse_refused(line)) return fail(std::move(*e));
    }
    // No result: the child was killed (its CPU limit, our timeout) or crashed (an allocation
    // refused by RLIMIT_AS can end in an abort). The archive is what drove it there.
    std::string tail = text::single_line(std::string(last_line(output)));
    if (tail.size() > 512) tail = "…" + tail.substr(tail.size() - 512);
    return fail(Errc::invalid,
                "stage: archive: the extractor ended with " + how_ended +
                    " without a result (limits: " + std::to_string(kChildAddressSpace >> 20) +
                    " MiB of address space, " + std::to_string(kChildCpuSeconds) + " s of CPU)" +
                    (tail.empty() ? std::string() : ": " + tail));
}

namespace {

class RunningChild final : public loop::Step {
  public:
    explicit RunningChild(ChildDone done) : done_(std::move(done)) {}
    ~RunningChild() override {
        guard_.drop();
        if (pid_ > 0) ::kill(-pid_, SIGKILL);
    }

    void start(proc::Reaper& reaper, loop::Scheduler& sched, const ChildRequest& r) {
        proc::CaptureOptions o;
        o.timeout = r.timeout;
        o.max_output = kKeptOutput;
        o.keep_tail = true;
        pid_ = proc::run_capture(reaper, sched, child_argv(r), o,
                                 guard_.bind([this](Result<proc::Captured> c) {
                                     pid_ = -1;
                                     finish(std::move(c));
                                 }));
    }

  private:
    // `done` may destroy this Step (its owner moves on): it is called from a local, last.
    void finish(Result<proc::Captured> c) {
        ChildDone done = std::move(done_);
        if (!c) return done(fail(c.error().context("stage: extractor")));
        done(parse_child_output(c->output, proc::describe_status(c->wait_status)));
    }

    ChildDone done_;
    pid_t pid_ = -1;
    loop::Guard guard_;  // last: dropped first
};

}  // namespace

std::unique_ptr<loop::Step> extract_in_child(proc::Reaper& reaper, loop::Scheduler& sched,
                                             ChildRequest request, ChildDone done) {
    auto step = std::make_unique<RunningChild>(std::move(done));
    step->start(reaper, sched, request);
    return step;
}

}  // namespace myr::stage
