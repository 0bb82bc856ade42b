// Names through a real DNS server (issue 25, item 2; docs/net.md, "Name resolution"): the real
// binary as PID 1 in a mount namespace whose /etc is an empty tmpfs holding only resolv.conf (no
// hosts, no nsswitch.conf, no passwd: what a `FROM scratch` image has before Kubernetes mounts its
// files), naming dnsmasq (Debian's dnsmasq-base) on a loopback address of its own, port 53. The
// fleet server and the artifact server are reached by name; a name dnsmasq does not know
// (NXDOMAIN) and a DNS server that never answers fail the download with the host named, after the
// downloader's bounded tries, while the probes stay fast (resolution runs off the loop).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include "../update/update_rig.hpp"
#include "realnet_support.hpp"

using namespace myr::test;
using namespace myr::test::upd;
using namespace myr::test::realnet;

namespace {

// This process (and what it starts from now on) in a private mount namespace whose /etc is an
// empty tmpfs with `resolv_conf`; back in the original namespace at destruction.
class EmptyEtc {
  public:
    explicit EmptyEtc(const std::string& resolv_conf) {
        saved_ = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        REQUIRE(saved_ >= 0);
        REQUIRE_MESSAGE(::unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS): " << errno);
        REQUIRE(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
        REQUIRE(::mount("tmpfs", "/etc", "tmpfs", 0, "mode=0755,size=64k") == 0);
        set(resolv_conf);
    }
    ~EmptyEtc() {
        if (::setns(saved_, CLONE_NEWNS) != 0) FAIL("setns back: " << errno);
        ::close(saved_);
    }
    EmptyEtc(const EmptyEtc&) = delete;
    EmptyEtc& operator=(const EmptyEtc&) = delete;
    // A new resolv.conf by rename: glibc notices the new file at its next lookup.
    static void set(const std::string& text) {
        write_file("/etc/resolv.conf.tmp", text);
        REQUIRE(::rename("/etc/resolv.conf.tmp", "/etc/resolv.conf") == 0);
    }

  private:
    int saved_ = -1;
};

// A loopback address of this process's own (127.53.x.y), so that parallel runs do not meet.
std::string own_address(int salt) {
    const int p = static_cast<int>(::getpid());
    return "127.53." + std::to_string(p % 250 + 1) + "." +
           std::to_string((p / 250 + salt) % 250 + 1);
}

// A UDP socket on address:53 that never reads: a DNS server that does not answer.
Process silent_server(const std::string& address, const std::string& ready) {
    Process p = Process::spawn({"python3", "-c",
                                "import socket, sys, time\n"
                                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                                "s.bind((sys.argv[1], 53))\n"
                                "open(sys.argv[2], 'w').close()\n"
                                "time.sleep(3600)\n",
                                address, ready});
    REQUIRE_MESSAGE(wait_until([&] { return exists(ready); }, 10s, 20ms), p.err());
    return p;
}

}  // namespace

TEST_CASE("dns: dnsmasq alone resolves the fleet and artifact servers in an empty /etc") {
    if (!can_run_pid1()) return;
    Rig rig;
    const std::string dns = own_address(0);
    Dnsmasq dnsmasq(rig.dir.path(), dns, {"fleet.test/127.0.0.1", "artifacts.test/127.0.0.1"});
    const std::string port = std::to_string(rig.artifact_server->port());
    rig.cfg.endpoint = "ws://fleet.test:" + std::to_string(rig.server->port()) + "/v1/opamp";
    // Names are not loopback literals: plain http and ws need allowInsecureTransport, and net/
    // still checks that each resolved address is loopback.
    rig.cfg.allow_insecure_transport = true;
    rig.cfg.allowed_download_prefixes = {"http://artifacts.test:" + port + "/artifacts/",
                                         "http://missing.test:" + port + "/artifacts/",
                                         "http://silent.test:" + port + "/artifacts/"};
    rig.cfg.collector_health_url = "";  // the stand-in's health is not what this case is about
    rig.configure(rig.release("0.116.0"));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");

    EmptyEtc etc("nameserver " + dns + "\n");
    Updater u(rig.config());
    rig.settle(u);
    CHECK_MESSAGE(dnsmasq.queries("fleet.test") >= 1, dnsmasq.log());

    Offer ok{"0.117.0", v117};
    ok.url = "http://artifacts.test:" + port + "/artifacts/" + v117;
    Status st = final_status(rig, u, ok);
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    check_settled(rig, "0.117.0");
    CHECK_MESSAGE(dnsmasq.queries("artifacts.test") >= 1, dnsmasq.log());

    // NXDOMAIN: the downloader's tries (5), each asking again, then a failure naming the host.
    Offer missing{"0.118.0", v118};
    missing.url = "http://missing.test:" + port + "/artifacts/" + v118;
    st = final_status(rig, u, missing);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error.find("resolve missing.test: unknown node or service, after 5 tries") !=
                      std::string::npos,
                  st.error);
    CHECK_MESSAGE(dnsmasq.queries("missing.test") >= 5, dnsmasq.log());
    check_settled(rig, "0.117.0");

    // A server that never answers: each lookup ends at resolv.conf's timeout (1 s, one attempt;
    // glibc's default is 5 s × 2), five times; /healthz answers meanwhile.
    const std::string quiet = own_address(1);
    Process silent = silent_server(quiet, rig.dir / "silent.ready");
    EmptyEtc::set("nameserver " + quiet + "\noptions timeout:1 attempts:1\n");
    Offer stalled{"0.118.0", v118};
    stalled.url = "http://silent.test:" + port + "/artifacts/" + v118;
    stalled.sha256 = std::string(64, 'a');  // another offer than the quarantined one
    const size_t from = rig.mark();
    rig.offer(stalled);
    Latencies probes;
    auto done = [&] {
        probes.sample("127.0.0.1", rig.health_port(), "/healthz");
        return rig.wait_status("0.118.0", "", from, 0s).has_value();
    };
    REQUIRE_MESSAGE(wait_until(done, 120s, 50ms), rig.record() << "\nlog:\n" << u.log());
    st = *rig.wait_status("0.118.0", "", from);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(
        st.error.find("resolve silent.test: temporary failure, after 5 tries") != std::string::npos,
        st.error);
    MESSAGE("a DNS server that never answers: " << st.error << "; /healthz meanwhile "
                                                << probes.summary());
    CHECK(probes.failed() == 0);
    CHECK(probes.percentile(99) < 100.0);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}
