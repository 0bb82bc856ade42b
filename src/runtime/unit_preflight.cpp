#include "runtime/unit_preflight.hpp"

#include <fcntl.h>

#include "core/fd.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "loop/step.hpp"

namespace myr::runtime {

namespace {

constexpr Duration kShowTimeout = std::chrono::seconds(10);
// An account database larger than this is not a host's local one.
constexpr size_t kMaxAccountFile = 4 * 1024 * 1024;

Result<std::string> read_account_file(const std::string& path) {
    auto fd = open_regular(path);
    if (!fd) return fd.fail("read " + path);
    auto text = read_bounded(fd->get(), kMaxAccountFile);
    if (!text) return text.fail("read " + path);
    return text;
}

Result<service::UnitAccount> resolve(const service::UnitAccountSpec& spec,
                                     const UnitPreflightSettings& s) {
    auto passwd = read_account_file(s.passwd_file);
    if (!passwd) return passwd.fail();
    auto group = read_account_file(s.group_file);
    if (!group) return group.fail();
    return service::resolve_unit_account(spec, *passwd, *group);
}

// The chain of one preflight: the unit's account, then the real preflight. Destroying it drops
// whatever answer is still to come and kills a running preflight (the inner Step).
struct Chain final : loop::Step {
    loop::Guard guard;
    std::unique_ptr<loop::Step> pending;
};

}  // namespace

UnitPreflighter::UnitPreflighter(service::SystemctlRunner systemctl, loop::Scheduler& sched,
                                 stage::Preflighter& inner, UnitPreflightSettings settings)
    : systemctl_(std::move(systemctl)),
      sched_(sched),
      inner_(inner),
      settings_(std::move(settings)) {}

std::unique_ptr<loop::Step> UnitPreflighter::run(stage::PreflightRequest request,
                                                 stage::PreflightDone done) {
    auto chain = std::make_unique<Chain>();
    Chain* c = chain.get();
    const std::string what = "preflight: the account of unit " + settings_.unit;
    auto resolved =
        c->guard.bind([this, c, request, done, what](Result<service::UnitAccount> account) mutable {
            if (!account) return done(account.fail(what));
            log::info("preflight: as the supervisor's unit runs",
                      {{"unit", settings_.unit},
                       {"account", account->describe()},
                       {"environment", static_cast<int>(account->environment.size())}});
            request.uid = account->uid;
            request.gid = account->gid;
            request.env = std::move(account->environment);
            c->pending = inner_.run(std::move(request), std::move(done));
        });
    auto shown = c->guard.bind([this, c, resolved, what, done](Result<proc::Captured> r) mutable {
        if (!r) return done(r.fail(what));
        if (r->exit_code() != 0) {
            return done(fail(Errc::process, what + ": systemctl show exit " +
                                                std::to_string(r->exit_code()) + ": " + r->output));
        }
        auto spec = service::parse_unit_account(r->output);
        if (!spec) return done(spec.fail(what));
        c->pending = loop::post_job<service::UnitAccount>(
            sched_, what, [spec = std::move(*spec), s = settings_] { return resolve(spec, s); },
            std::move(resolved));
    });
    systemctl_(
        service::unit_args({"show", "-p", service::unit_account_properties()}, settings_.unit),
        kShowTimeout, std::move(shown));
    return chain;
}

}  // namespace myr::runtime
