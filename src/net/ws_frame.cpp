#include "net/ws_frame.hpp"

#include <mbedtls/base64.h>
#include <mbedtls/sha1.h>

#include <cstring>

#include "core/random.hpp"

namespace myr::net::ws {
namespace {

bool is_control(Opcode op) {
    return (static_cast<uint8_t>(op) & 0x8) != 0;
}

bool known_opcode(uint8_t op) {
    switch (op) {
        case 0x0:
        case 0x1:
        case 0x2:
        case 0x8:
        case 0x9:
        case 0xA:
            return true;
        default:
            return false;
    }
}

std::string base64(const unsigned char* data, size_t len) {
    std::string out(4 * ((len + 2) / 3) + 1, '\0');
    size_t olen = 0;
    mbedtls_base64_encode(reinterpret_cast<unsigned char*>(out.data()), out.size(), &olen, data,
                          len);
    out.resize(olen);
    return out;
}

}  // namespace

Event Decoder::fail(uint16_t code, std::string why) {
    Event e;
    e.kind = Event::Kind::error;
    e.code = code;
    e.data = std::move(why);
    error_ = e;
    return e;
}

Event Decoder::next(std::string_view& input) {
    if (error_) return *error_;
    while (!input.empty() || (state_ == State::payload && payload_read_ == payload_len_)) {
        if (state_ == State::header) {
            // Bytes needed so far: 2, then the extended length and the mask key.
            size_t need = 2;
            if (header_len_ >= 2) {
                uint8_t len7 = header_[1] & 0x7F;
                need += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
                if (header_[1] & 0x80) need += 4;
            }
            while (header_len_ < need && !input.empty()) {
                header_[header_len_++] = static_cast<uint8_t>(input.front());
                input.remove_prefix(1);
                if (header_len_ == 2) {
                    // The first two bytes decide the rest of the header; check them at once.
                    uint8_t len7 = header_[1] & 0x7F;
                    need += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
                    if (header_[1] & 0x80) need += 4;
                }
            }
            if (header_len_ < need) return Event{};
            Event e = header_complete();
            if (e.kind != Event::Kind::none) return e;
            continue;
        }
        // Payload.
        uint64_t left = payload_len_ - payload_read_;
        size_t take = static_cast<size_t>(std::min<uint64_t>(left, input.size()));
        std::string& dest = is_control(opcode_) ? control_ : message_;
        size_t at = dest.size();
        dest.append(input.data(), take);
        if (masked_) {
            for (size_t i = 0; i < take; ++i) {
                dest[at + i] = static_cast<char>(static_cast<uint8_t>(dest[at + i]) ^
                                                 mask_[(payload_read_ + i) & 3]);
            }
        }
        payload_read_ += take;
        input.remove_prefix(take);
        if (payload_read_ == payload_len_) {
            state_ = State::header;
            header_len_ = 0;
            Event e = frame_complete();
            if (e.kind != Event::Kind::none) return e;
        }
    }
    return Event{};
}

Event Decoder::header_complete() {
    const uint8_t b0 = header_[0];
    const uint8_t b1 = header_[1];
    if (b0 & 0x70) return fail(1002, "reserved bits set without a negotiated extension");
    const uint8_t op = b0 & 0x0F;
    if (!known_opcode(op)) return fail(1002, "unknown opcode " + std::to_string(op));
    fin_ = (b0 & 0x80) != 0;
    opcode_ = static_cast<Opcode>(op);
    masked_ = (b1 & 0x80) != 0;
    if (role_ == Role::client && masked_) return fail(1002, "masked frame from the server");
    if (role_ == Role::server && !masked_) return fail(1002, "unmasked frame from the client");

    const uint8_t len7 = b1 & 0x7F;
    size_t pos = 2;
    if (len7 == 126) {
        payload_len_ = (uint64_t{header_[2]} << 8) | header_[3];
        pos = 4;
        if (payload_len_ < 126) return fail(1002, "non-minimal 16-bit payload length");
    } else if (len7 == 127) {
        payload_len_ = 0;
        for (size_t i = 0; i < 8; ++i) payload_len_ = (payload_len_ << 8) | header_[2 + i];
        pos = 10;
        if (payload_len_ >> 63) return fail(1002, "64-bit payload length with the top bit set");
        if (payload_len_ <= 0xFFFF) return fail(1002, "non-minimal 64-bit payload length");
    } else {
        payload_len_ = len7;
    }
    if (masked_) std::memcpy(mask_.data(), &header_[pos], 4);
    payload_read_ = 0;

    if (is_control(opcode_)) {
        if (!fin_) return fail(1002, "fragmented control frame");
        if (payload_len_ > 125) return fail(1002, "control frame payload over 125 bytes");
        control_.clear();
    } else if (opcode_ == Opcode::continuation) {
        if (!message_opcode_) return fail(1002, "continuation frame without a message to continue");
    } else {
        if (message_opcode_) return fail(1002, "new data frame inside a fragmented message");
        message_opcode_ = opcode_;
        message_.clear();
    }
    if (!is_control(opcode_) && payload_len_ > max_message_ - message_.size()) {
        return fail(1009, "message larger than " + std::to_string(max_message_) + " bytes");
    }
    state_ = State::payload;
    return Event{};
}

Event Decoder::frame_complete() {
    Event e;
    switch (opcode_) {
        case Opcode::ping:
            e.kind = Event::Kind::ping;
            e.data = std::move(control_);
            control_.clear();
            return e;
        case Opcode::pong:
            e.kind = Event::Kind::pong;
            e.data = std::move(control_);
            control_.clear();
            return e;
        case Opcode::close: {
            e.kind = Event::Kind::close;
            if (control_.empty()) {
                e.code = 1005;
                return e;
            }
            if (control_.size() == 1) return fail(1002, "close frame with a 1-byte payload");
            e.code = static_cast<uint16_t>((static_cast<uint8_t>(control_[0]) << 8) |
                                           static_cast<uint8_t>(control_[1]));
            if (!valid_close_code(e.code)) {
                return fail(1002, "invalid close code " + std::to_string(e.code));
            }
            e.data = control_.substr(2);
            if (!valid_utf8(e.data)) return fail(1007, "close reason is not valid UTF-8");
            control_.clear();
            return e;
        }
        case Opcode::continuation:
        case Opcode::text:
        case Opcode::binary:
            if (!fin_) return Event{};
            e.kind = Event::Kind::message;
            e.opcode = *message_opcode_;
            message_opcode_.reset();
            if (e.opcode == Opcode::text && !valid_utf8(message_)) {
                return fail(1007, "text message is not valid UTF-8");
            }
            e.data = std::move(message_);
            message_.clear();
            return e;
    }
    return Event{};
}

void encode_frame(std::string& out, Opcode opcode, std::string_view payload, bool fin,
                  const std::optional<std::array<uint8_t, 4>>& mask) {
    out.push_back(static_cast<char>((fin ? 0x80 : 0x00) | static_cast<uint8_t>(opcode)));
    const uint8_t mask_bit = mask ? 0x80 : 0x00;
    const uint64_t len = payload.size();
    if (len < 126) {
        out.push_back(static_cast<char>(mask_bit | len));
    } else if (len <= 0xFFFF) {
        out.push_back(static_cast<char>(mask_bit | 126));
        out.push_back(static_cast<char>(len >> 8));
        out.push_back(static_cast<char>(len & 0xFF));
    } else {
        out.push_back(static_cast<char>(mask_bit | 127));
        for (int shift = 56; shift >= 0; shift -= 8) {
            out.push_back(static_cast<char>((len >> shift) & 0xFF));
        }
    }
    if (!mask) {
        out.append(payload);
        return;
    }
    out.append(reinterpret_cast<const char*>(mask->data()), 4);
    const size_t at = out.size();
    out.append(payload);
    for (size_t i = 0; i < payload.size(); ++i) {
        out[at + i] = static_cast<char>(static_cast<uint8_t>(out[at + i]) ^ (*mask)[i & 3]);
    }
}

std::string close_payload(uint16_t code, std::string_view reason) {
    if (code == 1005) return {};
    std::string out;
    out.push_back(static_cast<char>(code >> 8));
    out.push_back(static_cast<char>(code & 0xFF));
    // 125 bytes of control payload, 2 of them taken by the code; never cut a character in half.
    size_t n = std::min<size_t>(reason.size(), 123);
    while (n > 0 && n < reason.size() && (static_cast<uint8_t>(reason[n]) & 0xC0) == 0x80) --n;
    out.append(reason.substr(0, n));
    return out;
}

bool valid_close_code(uint16_t code) {
    if (code >= 3000 && code <= 4999) return true;
    if (code >= 1000 && code <= 1003) return true;
    return code >= 1007 && code <= 1014;
}

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const uint8_t c = static_cast<uint8_t>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            const uint8_t cc = static_cast<uint8_t>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
        if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return false;
        i += len;
    }
    return true;
}

std::string accept_key(std::string_view client_key) {
    static constexpr std::string_view guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    std::string input(client_key);
    input.append(guid);
    unsigned char digest[20];
    mbedtls_sha1_ret(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
    return base64(digest, sizeof digest);
}

std::string make_client_key() {
    unsigned char nonce[16];
    random_bytes(nonce, sizeof nonce);
    return base64(nonce, sizeof nonce);
}

}  // namespace myr::net::ws
