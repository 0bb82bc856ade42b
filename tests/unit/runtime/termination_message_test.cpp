// The termination message file: written only when it is there and a regular file, replaced
// whole, at most 4 KiB cut at a UTF-8 boundary.
#include "runtime/termination_message.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.hpp"

using namespace myr;
using myr::test::exists;
using myr::test::read_file;
using myr::test::TempDir;
using myr::test::write_file;
using runtime::kTerminationMessageMax;
using runtime::TerminationWrite;
using runtime::write_termination_message;

TEST_CASE("termination message: replaces what an earlier run left") {
    TempDir dir;
    write_file(dir / "log", std::string(5000, 'x'));
    auto r = write_termination_message(dir / "log", "crash loop");
    REQUIRE(r);
    CHECK(*r == TerminationWrite::written);
    CHECK(read_file(dir / "log") == "crash loop\n");
}

TEST_CASE("termination message: no path or no file writes nothing and creates nothing") {
    TempDir dir;
    auto none = write_termination_message("", "why");
    REQUIRE(none);
    CHECK(*none == TerminationWrite::no_path);
    auto missing = write_termination_message(dir / "log", "why");
    REQUIRE(missing);
    CHECK(*missing == TerminationWrite::no_file);
    CHECK(!exists(dir / "log"));
}

TEST_CASE("termination message: a long reason is cut at a UTF-8 boundary within 4 KiB") {
    TempDir dir;
    write_file(dir / "log", "");
    // 3-byte code points: 4095 bytes of room is not a multiple of 3 plus the ellipsis.
    std::string reason;
    for (int i = 0; i < 2000; ++i) reason += "\xe2\x82\xac";  // €
    REQUIRE(write_termination_message(dir / "log", reason));
    std::string m = read_file(dir / "log");
    CHECK(m.size() <= kTerminationMessageMax);
    CHECK(m.size() > kTerminationMessageMax - 8);
    CHECK(m.substr(m.size() - 4) == "\xe2\x80\xa6\n");  // "…" and the newline
    CHECK(m.substr(0, m.size() - 4).find_first_not_of("\xe2\x82\xac") == std::string::npos);
    CHECK((m.size() - 4) % 3 == 0);
}

TEST_CASE("termination message: a symlink, a directory or a FIFO is refused") {
    TempDir dir;
    write_file(dir / "target", "kept");
    REQUIRE(::symlink((dir / "target").c_str(), (dir / "link").c_str()) == 0);
    auto link = write_termination_message(dir / "link", "why");
    REQUIRE(!link);
    CHECK(link.error().message().find("refusing a symlink") != std::string::npos);
    CHECK(read_file(dir / "target") == "kept");

    auto directory = write_termination_message(dir.path(), "why");
    CHECK(!directory);

    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    // Nobody reads the FIFO: an open that waited for a reader would hang here (ENXIO instead).
    auto fifo = write_termination_message(dir / "fifo", "why");
    REQUIRE(!fifo);
    CHECK(fifo.error().message().find(dir / "fifo") != std::string::npos);
}
