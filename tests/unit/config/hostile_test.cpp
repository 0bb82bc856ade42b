// Hostile input: every case ends in a clean problem with a position, never a crash or a hang.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "harness.hpp"
#include "helpers.hpp"

using namespace myr::config;
using namespace myr::config::test;

namespace {

// The only problem of a failed load.
Problem only_problem(const LoadResult& r) {
    INFO(dump(r));
    REQUIRE_FALSE(r.config.has_value());
    REQUIRE(r.problems.size() == 1);
    return r.problems[0];
}

}  // namespace

TEST_CASE("config: an empty file, or one with only comments, is an error") {
    for (const char* text : {"", "\n\n", "# only a comment\n", "---\n", "~\n", "null\n"}) {
        CAPTURE(text);
        Problem p = only_problem(load(text));
        CHECK(p.message == "empty configuration file");
        CHECK(p.line == 1);
    }
}

TEST_CASE("config: a root that is not a mapping is refused") {
    Problem p = only_problem(load("- server\n- update\n"));
    CHECK(p.message.find("expected a mapping of sections") != std::string::npos);
    CHECK(p.message.find("got a list") != std::string::npos);
    Problem q = only_problem(load("just text\n"));
    CHECK(q.message.find("got \"just text\"") != std::string::npos);
}

TEST_CASE("config: a tab in the indentation gives libyaml's error with its position") {
    Problem p = only_problem(load("server:\n\tendpoint: ws://127.0.0.1/\n"));
    CHECK(p.line == 2);
    CHECK(p.column == 1);
    CHECK(p.message.find("tab") != std::string::npos);
}

TEST_CASE("config: syntax errors carry libyaml's position") {
    Problem p = only_problem(load("log:\n  level: info\n    format: json\n"));
    CHECK(p.line == 3);
    CHECK(p.message.find("mapping values are not allowed") != std::string::npos);
    Problem q = only_problem(load("log: {level: info\n"));
    CHECK(q.line >= 1);
    CHECK_FALSE(q.message.empty());
}

TEST_CASE("config: aliases are refused, which defeats billion laughs") {
    std::string laughs =
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
    for (char c = 'b'; c <= 'j'; ++c) {
        std::string prev(1, static_cast<char>(c - 1));
        laughs += std::string(1, c) + ": &" + c + " [*" + prev + ",*" + prev + ",*" + prev + ",*" +
                  prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n";
    }
    Problem p = only_problem(load(laughs));
    CHECK(p.line == 2);
    CHECK(p.message.find("aliases") != std::string::npos);
}

TEST_CASE("config: deep nesting is capped without recursion") {
    for (const std::string& open : {std::string(10000, '['), std::string(10000, '{')}) {
        Problem p = only_problem(load(open));
        CHECK(p.message.find("nesting deeper than 32 levels") != std::string::npos);
        CHECK(p.line == 1);
        CHECK(p.column == 33);
    }
    std::string block;
    for (int i = 0; i < 10000; ++i) block += std::string(i % 200, ' ') + "k:\n";
    CHECK_FALSE(load(block).config.has_value());
    std::string lists;
    for (size_t i = 0; i < 500; ++i) lists += std::string(i * 2, ' ') + "-\n";
    lists += std::string(1000, ' ') + "x\n";
    Problem q = only_problem(load(lists));
    CHECK(q.message.find("nesting deeper") != std::string::npos);
}

TEST_CASE("config: a huge number of nodes is refused") {
    std::string many = "a: [";
    for (int i = 0; i < 150000; ++i) many += "1,";
    many += "1]\n";
    Problem p = only_problem(load(many));
    CHECK(p.message.find("more than 100000 YAML nodes") != std::string::npos);
}

TEST_CASE("config: a string over 1 MiB is refused before parsing, naming its size") {
    std::string big(kMaxFileSize + 1, '#');
    Problem p = only_problem(load(big));
    CHECK(p.line == 0);
    CHECK(p.message.find(std::to_string(kMaxFileSize + 1) + " bytes") != std::string::npos);
    CHECK(p.message.find("1024 KiB limit") != std::string::npos);
}

TEST_CASE("config: binary garbage is refused cleanly") {
    std::mt19937 rng(42);
    for (int round = 0; round < 200; ++round) {
        std::string junk(static_cast<size_t>(rng() % 512), '\0');
        for (char& c : junk) c = static_cast<char>(rng() & 0xff);
        LoadResult r = load(junk);
        if (!r.config) {
            CHECK_FALSE(r.problems.empty());
            for (const Problem& p : r.problems) CHECK_FALSE(p.message.empty());
        }
    }
    Problem p =
        only_problem(load(std::string("\x7f"
                                      "ELF\x02\x01\x01\0\0\0",
                                      10)));
    CHECK_FALSE(p.message.empty());
}

TEST_CASE("config: bytes that are not UTF-8 are refused with their position") {
    Problem p = only_problem(load("log:\n  level: \xff\xfe\n"));
    CHECK(p.line == 2);
    CHECK(p.column == 10);
    CHECK(p.message.find("UTF-8") != std::string::npos);
}

TEST_CASE("config: NUL bytes are refused, raw or escaped") {
    Problem p = only_problem(load(std::string("log:\n  level: in\0fo\n", 19)));
    CHECK(p.line == 2);
    CHECK(p.message.find("0x00") != std::string::npos);
    LoadResult r = load(kIdentity + "collector:\n  installDir: \"/a\\0b\"\n");
    CHECK(find(r, "collector.installDir", "NUL") != nullptr);
}

TEST_CASE("config: a second document, tags and complex keys are refused") {
    Problem p = only_problem(load("log: {}\n---\nlog: {}\n"));
    CHECK(p.line == 2);
    CHECK(p.message.find("second YAML document") != std::string::npos);
    Problem t = only_problem(load("log: !!map {level: info}\n"));
    CHECK(t.message.find("tags") != std::string::npos);
    Problem u = only_problem(load("log:\n  level: !custom info\n"));
    CHECK(u.message.find("tags") != std::string::npos);
}

TEST_CASE("config: messages never carry raw control or non-ASCII bytes") {
    LoadResult r = load("log:\n  level: \"\\e[31mred\\u00e9\"\n");
    const Problem* p = find(r, "log.level", "must be");
    REQUIRE(p != nullptr);
    CHECK(p->message.find('\x1b') == std::string::npos);
    CHECK(p->message.find("\\x1b[31mred\\xc3\\xa9") != std::string::npos);
    LoadResult k = load("\"lo\\ng\": 1\n");
    REQUIRE_FALSE(k.problems.empty());
    CHECK(k.problems[0].key == "lo\\x0ag");
}

// ---- files ----

TEST_CASE("config: a missing file says so") {
    myr::test::TempDir dir;
    LoadResult r = load_file(dir / "absent.yaml", Mode::any);
    Problem p = only_problem(r);
    CHECK(p.str() == dir / "absent.yaml" + ": No such file or directory");
}

TEST_CASE("config: a directory is refused") {
    myr::test::TempDir dir;
    Problem p = only_problem(load_file(dir.path(), Mode::any));
    CHECK(p.message == "is a directory, not a file");
}

TEST_CASE("config: a FIFO is refused without blocking") {
    myr::test::TempDir dir;
    std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    Problem p = only_problem(load_file(fifo, Mode::any));
    CHECK(p.message == "is a FIFO, not a file");
}

TEST_CASE("config: a symlink to a good file is followed") {
    myr::test::TempDir dir;
    myr::test::write_file(dir / "real.yaml", kIdentity);
    REQUIRE(::symlink((dir / "real.yaml").c_str(), (dir / "link.yaml").c_str()) == 0);
    LoadResult r = load_file(dir / "link.yaml", Mode::any);
    CHECK(r.config.has_value());
}

TEST_CASE("config: a 100 MB file is refused by its size, without reading it") {
    myr::test::TempDir dir;
    std::string f = dir / "big.yaml";
    int fd = ::open(f.c_str(), O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, 100 * 1024 * 1024) == 0);
    ::close(fd);
    Problem p = only_problem(load_file(f, Mode::any));
    CHECK(p.line == 0);
    CHECK(p.message.find("104857600 bytes") != std::string::npos);
    CHECK(p.message.find("limit") != std::string::npos);
}

TEST_CASE("config: an unreadable file reports the system's reason") {
    if (::geteuid() == 0) {
        // root reads any mode; the check would be meaningless. Use a path through a file instead.
        myr::test::TempDir dir;
        myr::test::write_file(dir / "f", "x");
        Problem p = only_problem(load_file(dir / "f/u.yaml", Mode::any));
        CHECK(p.message == "Not a directory");
        return;
    }
    myr::test::TempDir dir;
    myr::test::write_file(dir / "u.yaml", kIdentity, 0000);
    Problem p = only_problem(load_file(dir / "u.yaml", Mode::any));
    CHECK(p.message == "Permission denied");
}
