// WebSocket framing (RFC 6455 section 5) for both ends of a connection, with no I/O: an incremental
// decoder that reassembles messages and checks every protocol rule, an encoder, and the opening
// handshake's key helpers. The client masks what it sends and refuses masked frames; the server
// (the test OpAMP server) does the opposite.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace myr::net::ws {

enum class Opcode : uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

// Which end this codec works for. A client expects unmasked frames from the server and masks its
// own; a server expects masked frames and sends unmasked ones.
enum class Role { client, server };

// What the decoder produced from the bytes fed so far.
struct Event {
    enum class Kind {
        none,     // more bytes are needed
        message,  // a whole data message: `opcode` is text or binary, `data` the reassembled bytes
        ping,     // `data` is the payload to echo in the pong
        pong,
        close,  // `code` (1005 when the frame had none) and `data` the reason (valid UTF-8)
        error,  // the peer broke the protocol: close with `code` (1002, 1007 or 1009); `data` says
                // why
    };
    Kind kind = Kind::none;
    Opcode opcode = Opcode::binary;
    uint16_t code = 0;
    std::string data;
};

// Turns a byte stream into events. Control frames may arrive between the fragments of a message.
// Memory: a message is held once (up to max_message); frame headers are parsed as they arrive.
class Decoder {
  public:
    Decoder(Role role, size_t max_message) : role_(role), max_message_(max_message) {}

    // Consumes bytes from the front of `input` until one event is complete (returned, with the
    // consumed bytes removed from `input`) or `input` is used up (returns Kind::none). Call it
    // again while it returns events. After an error every call returns the same error.
    Event next(std::string_view& input);

  private:
    enum class State { header, payload };
    Event fail(uint16_t code, std::string why);
    Event header_complete();
    Event frame_complete();

    Role role_;
    size_t max_message_;
    State state_ = State::header;
    std::array<uint8_t, 14> header_{};
    size_t header_len_ = 0;
    // The frame being read.
    bool fin_ = false;
    Opcode opcode_ = Opcode::binary;
    bool masked_ = false;
    std::array<uint8_t, 4> mask_{};
    uint64_t payload_len_ = 0;
    uint64_t payload_read_ = 0;
    std::string control_;  // payload of a control frame (at most 125 bytes)
    // The message being reassembled.
    std::optional<Opcode> message_opcode_;
    std::string message_;
    std::optional<Event> error_;
};

// Appends one frame to `out`. With a mask the payload is masked (client to server).
void encode_frame(std::string& out, Opcode opcode, std::string_view payload, bool fin = true,
                  const std::optional<std::array<uint8_t, 4>>& mask = std::nullopt);

// The payload of a close frame: the code in network order, then the reason cut to fit 125 bytes
// on a UTF-8 boundary. Code 1005 gives an empty payload.
std::string close_payload(uint16_t code, std::string_view reason);

// A close code a peer may send (1000-1003, 1007-1014, 3000-4999).
bool valid_close_code(uint16_t code);

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

// The Sec-WebSocket-Accept value for a Sec-WebSocket-Key: base64(SHA-1(key + GUID)).
std::string accept_key(std::string_view client_key);

// A fresh Sec-WebSocket-Key: 16 random bytes, base64.
std::string make_client_key();

}  // namespace myr::net::ws
