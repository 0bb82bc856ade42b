// The probe server's request reader, without sockets: llhttp, the header cap and the bytes a
// client sent ahead of the answer it waits for. The server and tests/fuzz/fuzz_probe.cpp both
// drive it, so the fuzzer checks the budget the server lives by.
//
// One request at a time: once a request is complete the reader holds it until next(), and bytes
// that arrive meanwhile (pipelined requests) wait in a buffer of at most `max_input_bytes`; a
// client that sends more than that ahead of its answer is refused (over_budget). What the reader
// holds is therefore never more than budget(): the request target (inside the header cap) and
// the read-ahead buffer.
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <string>

namespace myr::health {

struct ReaderLimits {
    size_t max_header_bytes = 8 * 1024;  // request line and headers: 431 beyond
    size_t max_input_bytes = 16 * 1024;  // read ahead of the answer in flight
};

class RequestReader {
  public:
    enum class Step {
        more,         // nothing to answer yet
        request,      // a complete request: answer it, then call next()
        too_large,    // headers over max_header_bytes: 431
        has_body,     // probes take no body: 400
        malformed,    // llhttp refused it: 400
        over_budget,  // more than max_input_bytes sent ahead of an answer: close
    };

    explicit RequestReader(ReaderLimits limits);
    RequestReader(const RequestReader&) = delete;  // llhttp points back at this object
    RequestReader& operator=(const RequestReader&) = delete;

    // Bytes from the socket. While a request is held they are only kept for next().
    Step feed(const char* data, size_t n);
    // The held request is answered: go on with the bytes read ahead of it.
    Step next();

    // The held request (after Step::request).
    bool holding() const { return holding_; }
    const std::string& method() const { return method_; }
    const std::string& target() const { return target_; }
    bool keep_alive() const { return keep_alive_; }

    // The bytes held for this connection: the target and the read-ahead buffer.
    size_t held_bytes() const { return target_.size() + input_.size(); }
    // What held_bytes() never exceeds.
    static size_t budget(const ReaderLimits& l) { return l.max_header_bytes + l.max_input_bytes; }

  private:
    Step parse(const char* data, size_t n);
    int count(size_t n);
    static RequestReader* of(llhttp_t* p) { return static_cast<RequestReader*>(p->data); }

    ReaderLimits limits_;
    llhttp_t parser_{};
    llhttp_settings_t settings_{};
    std::string method_;
    std::string target_;
    std::string input_;  // read ahead while a request is held
    size_t header_bytes_ = 0;
    bool too_large_ = false;
    bool has_body_ = false;
    bool complete_ = false;
    bool holding_ = false;
    bool keep_alive_ = false;
};

}  // namespace myr::health
