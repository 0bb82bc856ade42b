// The WebSocket frame codec against RFC 6455: lengths, masking, fragmentation, control frames and
// every protocol error the client must answer with a close code.
#include "net/ws_frame.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace myr::net::ws;

namespace {

// A raw server-to-client frame built by hand, so the decoder is not checked against the encoder.
std::string raw(uint8_t b0, std::string_view payload, int len_form = 0) {
    std::string f(1, static_cast<char>(b0));
    const size_t n = payload.size();
    if (len_form == 0 && n < 126) {
        f.push_back(static_cast<char>(n));
    } else if (len_form == 16 || (len_form == 0 && n <= 0xFFFF)) {
        f.push_back(126);
        f.push_back(static_cast<char>(n >> 8));
        f.push_back(static_cast<char>(n & 0xFF));
    } else {
        f.push_back(127);
        for (int s = 56; s >= 0; s -= 8) f.push_back(static_cast<char>((uint64_t{n} >> s) & 0xFF));
    }
    f.append(payload);
    return f;
}

std::vector<Event> decode_all(Decoder& d, std::string_view bytes) {
    std::vector<Event> out;
    for (;;) {
        Event e = d.next(bytes);
        if (e.kind == Event::Kind::none) break;
        out.push_back(e);
        if (e.kind == Event::Kind::error) return out;  // the rest is left unread
    }
    CHECK(bytes.empty());
    return out;
}

Event first(Role role, std::string_view bytes, size_t max = 1 << 20) {
    Decoder d(role, max);
    auto evs = decode_all(d, bytes);
    REQUIRE(!evs.empty());
    return evs.front();
}

}  // namespace

TEST_CASE("ws handshake: accept key of the RFC 6455 example") {
    // RFC 6455 section 1.3 (also section 4.2.2): SHA-1 of key + GUID, base64.
    CHECK(accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST_CASE("ws handshake: client keys are 16 random bytes in base64, different each time") {
    const std::string a = make_client_key();
    const std::string b = make_client_key();
    CHECK(a.size() == 24);
    CHECK(a.substr(22) == "==");
    CHECK(a != b);
}

TEST_CASE("ws decoder: RFC 6455 5.7 examples") {
    // A single-frame unmasked text message "Hello".
    Event e = first(Role::client, std::string("\x81\x05\x48\x65\x6c\x6c\x6f", 7));
    CHECK(e.kind == Event::Kind::message);
    CHECK(e.opcode == Opcode::text);
    CHECK(e.data == "Hello");
    // A single-frame masked text message "Hello" (client to server).
    e = first(Role::server, std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
    CHECK(e.kind == Event::Kind::message);
    CHECK(e.data == "Hello");
    // A fragmented unmasked text message "Hel" + "lo".
    Decoder d(Role::client, 1024);
    auto evs = decode_all(d, std::string("\x01\x03\x48\x65\x6c\x80\x02\x6c\x6f", 9));
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].data == "Hello");
    // Unmasked ping with "Hello".
    e = first(Role::client, std::string("\x89\x05\x48\x65\x6c\x6c\x6f", 7));
    CHECK(e.kind == Event::Kind::ping);
    CHECK(e.data == "Hello");
    // Masked pong with "Hello".
    e = first(Role::server, std::string("\x8a\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
    CHECK(e.kind == Event::Kind::pong);
    CHECK(e.data == "Hello");
    // 256 bytes binary in a single unmasked frame: 16-bit length.
    std::string big(256, 'x');
    e = first(Role::client, std::string("\x82\x7E\x01\x00", 4) + big);
    CHECK(e.kind == Event::Kind::message);
    CHECK(e.opcode == Opcode::binary);
    CHECK(e.data == big);
    // 64 KiB binary in a single unmasked frame: 64-bit length.
    std::string huge(65536, 'y');
    e = first(Role::client, std::string("\x82\x7F\x00\x00\x00\x00\x00\x01\x00\x00", 10) + huge);
    CHECK(e.data == huge);
}

TEST_CASE("ws decoder: 7-, 16- and 64-bit lengths at their boundaries, fed one byte at a time") {
    for (size_t n : {0u, 1u, 125u, 126u, 127u, 65535u, 65536u, 70000u}) {
        CAPTURE(n);
        std::string payload(n, '\0');
        for (size_t i = 0; i < n; ++i) payload[i] = static_cast<char>(i * 7);
        const std::string frame = raw(0x82, payload);
        Decoder d(Role::client, 1 << 20);
        std::vector<Event> evs;
        for (char c : frame) {
            std::string_view one(&c, 1);
            Event e = d.next(one);
            CHECK(one.empty());
            if (e.kind != Event::Kind::none) evs.push_back(e);
        }
        REQUIRE(evs.size() == 1);
        CHECK(evs[0].kind == Event::Kind::message);
        CHECK(evs[0].data == payload);
    }
}

TEST_CASE("ws encoder: round trip through the decoder of the other role, masked and not") {
    for (size_t n : {0u, 5u, 125u, 126u, 65535u, 65536u}) {
        CAPTURE(n);
        std::string payload(n, 'q');
        std::string frame;
        encode_frame(frame, Opcode::binary, payload, true, std::array<uint8_t, 4>{1, 2, 3, 4});
        CHECK((static_cast<uint8_t>(frame[1]) & 0x80) != 0);
        if (n > 0) CHECK(frame.find(payload) == std::string::npos);  // the payload is masked
        Event e = first(Role::server, frame);
        CHECK(e.kind == Event::Kind::message);
        CHECK(e.data == payload);

        std::string plain;
        encode_frame(plain, Opcode::binary, payload);
        CHECK((static_cast<uint8_t>(plain[1]) & 0x80) == 0);
        e = first(Role::client, plain);
        CHECK(e.data == payload);
    }
}

TEST_CASE("ws encoder: lengths use the minimal form") {
    std::string f;
    encode_frame(f, Opcode::binary, std::string(125, 'a'));
    CHECK(static_cast<uint8_t>(f[1]) == 125);
    f.clear();
    encode_frame(f, Opcode::binary, std::string(126, 'a'));
    CHECK(static_cast<uint8_t>(f[1]) == 126);
    CHECK(f.size() == 4 + 126);
    f.clear();
    encode_frame(f, Opcode::binary, std::string(65536, 'a'));
    CHECK(static_cast<uint8_t>(f[1]) == 127);
    CHECK(f.size() == 10 + 65536);
}

TEST_CASE("ws decoder: a ping between fragments is delivered before the message, which survives") {
    const std::string bytes =
        raw(0x02, "abc") + raw(0x89, "p1") + raw(0x00, "def") + raw(0x8A, "") + raw(0x80, "ghi");
    Decoder d(Role::client, 1024);
    auto evs = decode_all(d, bytes);
    REQUIRE(evs.size() == 3);
    CHECK(evs[0].kind == Event::Kind::ping);
    CHECK(evs[0].data == "p1");
    CHECK(evs[1].kind == Event::Kind::pong);
    CHECK(evs[2].kind == Event::Kind::message);
    CHECK(evs[2].opcode == Opcode::binary);
    CHECK(evs[2].data == "abcdefghi");
}

TEST_CASE("ws decoder: consecutive messages in one buffer come out one per call") {
    const std::string bytes = raw(0x82, "one") + raw(0x82, "") + raw(0x82, "three");
    Decoder d(Role::client, 1024);
    auto evs = decode_all(d, bytes);
    REQUIRE(evs.size() == 3);
    CHECK(evs[0].data == "one");
    CHECK(evs[1].data.empty());
    CHECK(evs[2].data == "three");
}

TEST_CASE("ws decoder: close frames carry their code and reason") {
    Event e = first(Role::client, raw(0x88, std::string("\x03\xE8", 2) + "bye"));
    CHECK(e.kind == Event::Kind::close);
    CHECK(e.code == 1000);
    CHECK(e.data == "bye");
    e = first(Role::client, raw(0x88, ""));
    CHECK(e.kind == Event::Kind::close);
    CHECK(e.code == 1005);
    e = first(Role::client, raw(0x88, std::string("\x0F\xA0", 2)));  // 4000, private use
    CHECK(e.code == 4000);
}

TEST_CASE("ws decoder: each protocol violation is an error with close code 1002") {
    struct Case {
        const char* what;
        std::string bytes;
        Role role = Role::client;
    };
    const Case cases[] = {
        {"RSV1 set", raw(0xC2, "x")},
        {"RSV2 set", raw(0xA2, "x")},
        {"RSV3 set", raw(0x92, "x")},
        {"reserved data opcode 3", raw(0x83, "x")},
        {"reserved control opcode 0xB", raw(0x8B, "")},
        {"masked frame to a client", std::string("\x82\x81\x00\x00\x00\x00x", 7)},
        {"unmasked frame to a server", raw(0x82, "x"), Role::server},
        {"control frame over 125 bytes", raw(0x89, std::string(126, 'p'))},
        {"fragmented control frame", raw(0x09, "p")},
        {"close with a 1-byte payload", raw(0x88, "\x03")},
        {"close code 1005 on the wire", raw(0x88, std::string("\x03\xED", 2))},
        {"close code 1006 on the wire", raw(0x88, std::string("\x03\xEE", 2))},
        {"close code 999", raw(0x88, std::string("\x03\xE7", 2))},
        {"close code 1004", raw(0x88, std::string("\x03\xEC", 2))},
        {"close code 1015", raw(0x88, std::string("\x03\xF7", 2))},
        {"close code 2999", raw(0x88, std::string("\x0B\xB7", 2))},
        {"close code 5000", raw(0x88, std::string("\x13\x88", 2))},
        {"non-minimal 16-bit length", raw(0x82, "abc", 16)},
        {"non-minimal 64-bit length", raw(0x82, std::string(300, 'z'), 64)},
        {"64-bit length with the top bit set",
         std::string("\x82\x7F\x80\x00\x00\x00\x00\x00\x00\x00", 10)},
        {"continuation without a message", raw(0x80, "x")},
        {"new message inside a fragmented one", raw(0x02, "a") + raw(0x82, "b")},
    };
    for (const Case& c : cases) {
        const std::string what = c.what;
        CAPTURE(what);
        Decoder d(c.role, 1 << 20);
        auto evs = decode_all(d, c.bytes);
        REQUIRE(!evs.empty());
        CHECK(evs.back().kind == Event::Kind::error);
        CHECK(evs.back().code == 1002);
        CHECK(!evs.back().data.empty());
        // The decoder stays failed.
        std::string_view more = raw(0x82, "ok");
        CHECK(d.next(more).kind == Event::Kind::error);
    }
}

TEST_CASE("ws decoder: invalid UTF-8 in a close reason or text message is 1007") {
    Event e = first(Role::client, raw(0x88, std::string("\x03\xE8\xC3\x28", 4)));
    CHECK(e.kind == Event::Kind::error);
    CHECK(e.code == 1007);
    e = first(Role::client, raw(0x81, "\xED\xA0\x80"));  // a UTF-16 surrogate
    CHECK(e.kind == Event::Kind::error);
    CHECK(e.code == 1007);
}

TEST_CASE("ws decoder: a message over the cap is 1009, judged on the header before the payload") {
    Decoder d(Role::client, 150);
    std::string_view header("\x82\x7E\x00\xC8", 4);  // 200 bytes announced, none sent
    Event e = d.next(header);
    CHECK(e.kind == Event::Kind::error);
    CHECK(e.code == 1009);
    // Exactly at the cap is fine; the cap counts the whole reassembled message.
    Event ok = first(Role::client, raw(0x82, std::string(100, 'a')), 100);
    CHECK(ok.kind == Event::Kind::message);
    Decoder frag(Role::client, 100);
    auto evs = decode_all(frag, raw(0x02, std::string(60, 'a')) + raw(0x80, std::string(41, 'b')));
    REQUIRE(!evs.empty());
    CHECK(evs.back().kind == Event::Kind::error);
    CHECK(evs.back().code == 1009);
}

TEST_CASE("ws close payload: code in network order, reason cut on a UTF-8 boundary") {
    CHECK(close_payload(1000, "bye") == std::string("\x03\xE8", 2) + "bye");
    CHECK(close_payload(1005, "ignored").empty());
    std::string reason;
    for (int i = 0; i < 70; ++i) reason += "\xC3\xA9";  // 140 bytes of "é"
    const std::string p = close_payload(1002, reason);
    CHECK(p.size() <= 125);
    CHECK(valid_utf8(p.substr(2)));
    CHECK(p.size() == 124);
}

TEST_CASE("ws utf8: well-formed and malformed sequences") {
    CHECK(valid_utf8(""));
    CHECK(valid_utf8("plain ascii"));
    CHECK(valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
    CHECK_FALSE(valid_utf8("\xC0\xAF"));          // overlong
    CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));      // overlong
    CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
    CHECK_FALSE(valid_utf8("\xC3"));              // truncated
    CHECK_FALSE(valid_utf8("\x80"));              // lone continuation
}
