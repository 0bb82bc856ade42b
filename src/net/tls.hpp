// TLS (mbedTLS 2.28) over any byte transport, with no I/O of its own: ciphertext from the network
// goes in with feed(), ciphertext for the network comes out of take_output(). That keeps it
// non-blocking and usable by the client streams and by the test servers alike.
//
// Client mode verifies the server's chain against a CA file (default: the system store) and its
// host name against the certificate's DNS and IP subject alternative names (mbedTLS 2.28 ignores
// IP SANs, so host names are checked here). TLS 1.2 is the minimum.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::net {

inline constexpr const char* system_ca_file = "/etc/ssl/certs/ca-certificates.crt";

// Certificates and keys loaded once, shared by any number of sessions.
class TlsConfig {
  public:
    // A client configuration trusting the PEM certificates in `ca_file` ("" = system_ca_file).
    [[nodiscard]] static Result<std::shared_ptr<TlsConfig>> client(const std::string& ca_file);
    // A server configuration presenting the PEM chain in `cert_file` with the key in `key_file`.
    [[nodiscard]] static Result<std::shared_ptr<TlsConfig>> server(const std::string& cert_file,
                                                                   const std::string& key_file);
    ~TlsConfig();
    TlsConfig(const TlsConfig&) = delete;
    TlsConfig& operator=(const TlsConfig&) = delete;

    struct State;

  private:
    TlsConfig();
    std::unique_ptr<State> state_;
    friend class TlsSession;
};

// One TLS connection.
class TlsSession {
  public:
    // `host` is the name the certificate must carry (a DNS name or an IP literal); it is also sent
    // as SNI when it is a name.
    [[nodiscard]] static Result<std::unique_ptr<TlsSession>> client(
        std::shared_ptr<TlsConfig> config, const std::string& host);
    [[nodiscard]] static Result<std::unique_ptr<TlsSession>> server(
        std::shared_ptr<TlsConfig> config);
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    // Ciphertext that arrived from the peer.
    void feed(std::string_view ciphertext);
    // Advances the handshake and decrypts what it can, appending plaintext to `plaintext`.
    // Fails with a message for people ("TLS: certificate not trusted by /path/ca.pem").
    // Returns true once the peer has sent close_notify.
    [[nodiscard]] Result<bool> pump(std::string& plaintext);
    bool handshake_done() const;
    // Whether the configuration still holds its parsed CA certificates (a client's own
    // configuration drops them after the handshake; see tls.cpp).
    bool holds_trust_anchors() const;
    // Encrypts application data (only after the handshake).
    [[nodiscard]] Status write(std::string_view plaintext);
    // Queues a close_notify alert.
    void close_notify();
    // Ciphertext to send to the peer; empties the internal buffer.
    std::string take_output();
    bool has_output() const;

    struct State;

  private:
    TlsSession();
    std::unique_ptr<State> state_;
};

}  // namespace myr::net
