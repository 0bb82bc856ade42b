#include "net/tls.hpp"

#include <arpa/inet.h>
#include <malloc.h>
#include <mbedtls/asn1.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "core/random.hpp"
#include "core/text.hpp"

namespace myr::net {

struct TlsConfig::State {
    bool is_server = false;
    std::string ca_file;  // as given to the user, for messages
    mbedtls_ssl_config conf;
    mbedtls_x509_crt ca;
    mbedtls_x509_crt own_cert;
    mbedtls_pk_context own_key;
    State() {
        mbedtls_ssl_config_init(&conf);
        mbedtls_x509_crt_init(&ca);
        mbedtls_x509_crt_init(&own_cert);
        mbedtls_pk_init(&own_key);
    }
    ~State() {
        mbedtls_ssl_config_free(&conf);
        mbedtls_x509_crt_free(&ca);
        mbedtls_x509_crt_free(&own_cert);
        mbedtls_pk_free(&own_key);
    }
};

namespace {

std::string mbed_error(int ret) {
    char buf[160];
    mbedtls_strerror(ret, buf, sizeof buf);
    return buf;
}

// One subject alternative name of the peer's certificate.
struct San {
    bool ip = false;
    std::string value;  // a DNS name, or the raw 4/16 address bytes
};

// mbedTLS 2.28 keeps only dNSName and otherName SAN entries, so the extension is read here from
// the certificate's raw extensions to see iPAddress entries too.
std::vector<San> subject_alt_names(const mbedtls_x509_crt* crt) {
    std::vector<San> out;
    unsigned char* p = crt->v3_ext.p;
    if (p == nullptr || crt->v3_ext.len == 0) return out;
    unsigned char* end = p + crt->v3_ext.len;
    size_t len = 0;
    // The buffer may start at the [3] wrapper or at the SEQUENCE inside it.
    if (*p == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3)) {
        if (mbedtls_asn1_get_tag(
                &p, end, &len, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3) != 0) {
            return out;
        }
        end = p + len;
    }
    if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) !=
        0) {
        return out;
    }
    end = p + len;
    while (p < end) {
        if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) !=
            0) {
            return out;
        }
        unsigned char* ext_end = p + len;
        size_t oid_len = 0;
        if (mbedtls_asn1_get_tag(&p, ext_end, &oid_len, MBEDTLS_ASN1_OID) != 0) return out;
        const bool is_san = oid_len == MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME) &&
                            std::memcmp(p, MBEDTLS_OID_SUBJECT_ALT_NAME, oid_len) == 0;
        p += oid_len;
        if (!is_san) {
            p = ext_end;
            continue;
        }
        int critical = 0;
        mbedtls_asn1_get_bool(&p, ext_end, &critical);  // optional
        size_t oct_len = 0;
        if (mbedtls_asn1_get_tag(&p, ext_end, &oct_len, MBEDTLS_ASN1_OCTET_STRING) != 0) return out;
        unsigned char* names_end = p + oct_len;
        if (mbedtls_asn1_get_tag(&p, names_end, &len,
                                 MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) {
            return out;
        }
        names_end = p + len;
        while (p < names_end) {
            const unsigned char tag = *p++;
            if (mbedtls_asn1_get_len(&p, names_end, &len) != 0) return out;
            if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2)) {
                out.push_back({false, std::string(reinterpret_cast<char*>(p), len)});
            } else if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && (len == 4 || len == 16)) {
                out.push_back({true, std::string(reinterpret_cast<char*>(p), len)});
            }
            p += len;
        }
        return out;
    }
    return out;
}

// The mbedTLS f_rng signature over the kernel's random source; `ctx` is unused.
int random_for_mbedtls(void*, unsigned char* buf, size_t len) noexcept {
    random_bytes(buf, len);
    return 0;
}

// RFC 6125: case-insensitive; a wildcard only as the whole leftmost label, matching one label.
bool dns_name_matches(std::string_view pattern, std::string_view host) {
    std::string pat = text::lower(pattern);
    std::string h = text::lower(host);
    if (!pat.empty() && pat.back() == '.') pat.pop_back();
    if (!h.empty() && h.back() == '.') h.pop_back();
    if (pat.size() > 2 && pat[0] == '*' && pat[1] == '.') {
        const size_t dot = h.find('.');
        if (dot == std::string::npos || dot == 0) return false;
        // Two labels at least after the wildcard, so "*.com" never matches.
        if (pat.find('.', 2) == std::string::npos) return false;
        return h.substr(dot) == pat.substr(1);
    }
    return pat == h;
}

std::string format_ip(const std::string& raw) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(raw.size() == 4 ? AF_INET : AF_INET6, raw.data(), buf, sizeof buf);
    return buf;
}

std::string format_date(const mbedtls_x509_time& t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", t.year, t.mon, t.day, t.hour,
                  t.min, t.sec);
    return buf;
}

// Runs `f` on a thread of its own that ends before this returns: for parsing and freeing the CA
// bundle. glibc keeps up to seven freed chunks of each small size in the freeing thread's cache
// (tcache), which no trim touches; done on the loop thread, those chunks pinned about 350 kB of
// pages all over where the system bundle's certificates lay, dirty for the life of PID 1
// (docs/footprint.md). A thread's cache goes back to the heap when the thread ends, so the
// malloc_trim after the free returns whole pages. Without a thread to be had, `f` runs here.
// The thread starts with every signal blocked, so that none of PID 1's signals is handled there.
template <class F>
void on_own_thread(F f) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
        std::thread t(f);
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        t.join();
    } catch (const std::system_error&) {
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        f();
    }
}

}  // namespace

TlsConfig::TlsConfig() : state_(std::make_unique<State>()) {}
TlsConfig::~TlsConfig() = default;

Result<std::shared_ptr<TlsConfig>> TlsConfig::client(const std::string& ca_file) {
    std::shared_ptr<TlsConfig> cfg(new TlsConfig());
    State& s = *cfg->state_;
    s.ca_file = ca_file.empty() ? system_ca_file : ca_file;
    // A bundle may hold certificates mbedTLS cannot parse (ret > 0): the others still count.
    int ret = 0;
    on_own_thread([&] { ret = mbedtls_x509_crt_parse_file(&s.ca, s.ca_file.c_str()); });
    if (ret < 0) return fail("TLS: load CA file " + s.ca_file + ": " + mbed_error(ret));
    if (s.ca.version == 0) return fail("TLS: load CA file " + s.ca_file + ": no certificate in it");
    ret = mbedtls_ssl_config_defaults(&s.conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                      MBEDTLS_SSL_PRESET_DEFAULT);
    if (ret != 0) return fail("TLS: client configuration: " + mbed_error(ret));
    mbedtls_ssl_conf_min_version(&s.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_authmode(&s.conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&s.conf, &s.ca, nullptr);
    mbedtls_ssl_conf_rng(&s.conf, random_for_mbedtls, nullptr);
    return cfg;
}

Result<std::shared_ptr<TlsConfig>> TlsConfig::server(const std::string& cert_file,
                                                     const std::string& key_file) {
    std::shared_ptr<TlsConfig> cfg(new TlsConfig());
    State& s = *cfg->state_;
    s.is_server = true;
    int ret = mbedtls_x509_crt_parse_file(&s.own_cert, cert_file.c_str());
    if (ret != 0) return fail("TLS: load certificate " + cert_file + ": " + mbed_error(ret));
    ret = mbedtls_pk_parse_keyfile(&s.own_key, key_file.c_str(), nullptr);
    if (ret != 0) return fail("TLS: load key " + key_file + ": " + mbed_error(ret));
    ret = mbedtls_ssl_config_defaults(&s.conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                      MBEDTLS_SSL_PRESET_DEFAULT);
    if (ret != 0) return fail("TLS: server configuration: " + mbed_error(ret));
    mbedtls_ssl_conf_min_version(&s.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_authmode(&s.conf, MBEDTLS_SSL_VERIFY_NONE);
    mbedtls_ssl_conf_rng(&s.conf, random_for_mbedtls, nullptr);
    ret = mbedtls_ssl_conf_own_cert(&s.conf, &s.own_cert, &s.own_key);
    if (ret != 0) return fail("TLS: certificate " + cert_file + ": " + mbed_error(ret));
    return cfg;
}

struct TlsSession::State {
    std::shared_ptr<TlsConfig> config;
    mbedtls_ssl_context ssl;
    std::string host;  // the name the peer's certificate must carry (client)
    std::string in;
    size_t in_pos = 0;
    std::string out;
    bool done = false;
    bool failed = false;
    // What the verify callback learnt about the peer's certificate, for messages.
    std::string peer_names;
    std::string peer_not_after;
    std::string peer_not_before;

    State() { mbedtls_ssl_init(&ssl); }
    ~State() { mbedtls_ssl_free(&ssl); }

    // The trust anchors are read only during a handshake (renegotiation stays off, mbedTLS's
    // default), and a system bundle parsed is about 450 kB of heap, held for as long as the
    // connection lasts: the agent's stays up for days. So a client configuration that this
    // connection alone holds (parsed for it: the agent reconnects with a fresh one) drops them
    // once the handshake is over, and the freed pages go back to the kernel. A configuration
    // shared with other connections (preloaded, as the downloader's) keeps them for the next
    // handshake.
    void release_trust_anchors() {
        TlsConfig::State& c = *config->state_;
        if (c.is_server || config.use_count() != 1 || c.ca.version == 0) return;
        mbedtls_ssl_conf_ca_chain(&c.conf, nullptr, nullptr);
        on_own_thread([&c] { mbedtls_x509_crt_free(&c.ca); });
        mbedtls_x509_crt_init(&c.ca);
        ::malloc_trim(0);  // the certificates lay below the session's buffers: no top to trim
    }

    static int send_cb(void* ctx, const unsigned char* buf, size_t len) noexcept {
        static_cast<State*>(ctx)->out.append(reinterpret_cast<const char*>(buf), len);
        return static_cast<int>(len);
    }
    static int recv_cb(void* ctx, unsigned char* buf, size_t len) noexcept {
        auto* s = static_cast<State*>(ctx);
        const size_t avail = s->in.size() - s->in_pos;
        if (avail == 0) return MBEDTLS_ERR_SSL_WANT_READ;
        const size_t n = std::min(avail, len);
        std::memcpy(buf, s->in.data() + s->in_pos, n);
        s->in_pos += n;
        if (s->in_pos == s->in.size()) {
            s->in.clear();
            s->in_pos = 0;
        }
        return static_cast<int>(n);
    }

    // The host name check, replacing mbedTLS's (which ignores IP SANs in 2.28).
    static int verify_cb(void* ctx, mbedtls_x509_crt* crt, int depth, uint32_t* flags) noexcept {
        auto* s = static_cast<State*>(ctx);
        if (depth != 0) return 0;
        const std::vector<San> sans = subject_alt_names(crt);
        unsigned char ip[16];
        size_t ip_len = 0;
        if (inet_pton(AF_INET, s->host.c_str(), ip) == 1) {
            ip_len = 4;
        } else if (inet_pton(AF_INET6, s->host.c_str(), ip) == 1) {
            ip_len = 16;
        }
        bool match = false;
        std::string names;
        for (const San& san : sans) {
            if (!names.empty()) names += ", ";
            names += san.ip ? format_ip(san.value) : san.value;
            if (san.ip && ip_len == san.value.size() &&
                std::memcmp(ip, san.value.data(), ip_len) == 0) {
                match = true;
            }
            if (!san.ip && ip_len == 0 && dns_name_matches(san.value, s->host)) match = true;
        }
        if (names.empty()) {
            char subject[256];
            if (mbedtls_x509_dn_gets(subject, sizeof subject, &crt->subject) > 0) {
                names = std::string("\"") + subject + "\" (no subject alternative names)";
            }
        }
        s->peer_names = names;
        s->peer_not_after = format_date(crt->valid_to);
        s->peer_not_before = format_date(crt->valid_from);
        *flags &= ~static_cast<uint32_t>(MBEDTLS_X509_BADCERT_CN_MISMATCH);
        if (!match) *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
        return 0;
    }

    std::string verify_message() const {
        const uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);
        std::vector<std::string> why;
        const std::string for_names =
            peer_names.empty() ? std::string("certificate") : "certificate for " + peer_names;
        if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) {
            why.push_back("certificate not trusted by " + config->state_->ca_file);
        }
        if (flags & MBEDTLS_X509_BADCERT_EXPIRED) {
            why.push_back(for_names + " expired at " + peer_not_after);
        }
        if (flags & MBEDTLS_X509_BADCERT_FUTURE) {
            why.push_back(for_names + " is not valid before " + peer_not_before);
        }
        if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) {
            why.push_back(for_names + " does not match host \"" + host + "\"");
        }
        const uint32_t rest =
            flags &
            ~static_cast<uint32_t>(MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_EXPIRED |
                                   MBEDTLS_X509_BADCERT_FUTURE | MBEDTLS_X509_BADCERT_CN_MISMATCH);
        if (rest != 0 || why.empty()) {
            char info[512];
            int n = mbedtls_x509_crt_verify_info(info, sizeof info, "", rest ? rest : flags);
            std::string text = n > 0 ? std::string(info, static_cast<size_t>(n)) : "rejected";
            for (char& c : text) {
                if (c == '\n') c = ';';
            }
            while (!text.empty() && (text.back() == ';' || text.back() == ' ')) text.pop_back();
            why.push_back(for_names + ": " + text);
        }
        std::string msg = "TLS: ";
        for (size_t i = 0; i < why.size(); ++i) msg += (i ? "; " : "") + why[i];
        return msg;
    }
};

TlsSession::TlsSession() : state_(std::make_unique<State>()) {}
TlsSession::~TlsSession() = default;

Result<std::unique_ptr<TlsSession>> TlsSession::client(std::shared_ptr<TlsConfig> config,
                                                       const std::string& host) {
    if (!config || config->state_->is_server) return fail("TLS: not a client configuration");
    std::unique_ptr<TlsSession> session(new TlsSession());
    State& s = *session->state_;
    s.config = std::move(config);
    s.host = host;
    int ret = mbedtls_ssl_setup(&s.ssl, &s.config->state_->conf);
    if (ret != 0) return fail("TLS: setup: " + mbed_error(ret));
    // SNI carries names only (RFC 6066 section 3); the name check itself is verify_cb's.
    unsigned char ip[16];
    const bool literal =
        inet_pton(AF_INET, host.c_str(), ip) == 1 || inet_pton(AF_INET6, host.c_str(), ip) == 1;
    if (!literal) {
        ret = mbedtls_ssl_set_hostname(&s.ssl, host.c_str());
        if (ret != 0) return fail("TLS: server name \"" + host + "\": " + mbed_error(ret));
    }
    mbedtls_ssl_set_verify(&s.ssl, &State::verify_cb, &s);
    mbedtls_ssl_set_bio(&s.ssl, &s, &State::send_cb, &State::recv_cb, nullptr);
    return session;
}

Result<std::unique_ptr<TlsSession>> TlsSession::server(std::shared_ptr<TlsConfig> config) {
    if (!config || !config->state_->is_server) return fail("TLS: not a server configuration");
    std::unique_ptr<TlsSession> session(new TlsSession());
    State& s = *session->state_;
    s.config = std::move(config);
    int ret = mbedtls_ssl_setup(&s.ssl, &s.config->state_->conf);
    if (ret != 0) return fail("TLS: setup: " + mbed_error(ret));
    mbedtls_ssl_set_bio(&s.ssl, &s, &State::send_cb, &State::recv_cb, nullptr);
    return session;
}

void TlsSession::feed(std::string_view ciphertext) {
    state_->in.append(ciphertext);
}

Result<bool> TlsSession::pump(std::string& plaintext) {
    State& s = *state_;
    if (s.failed) return fail("TLS: connection already failed");
    if (!s.done) {
        const int ret = mbedtls_ssl_handshake(&s.ssl);
        if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) return false;
        if (ret != 0) {
            s.failed = true;
            if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) return fail(s.verify_message());
            if (ret == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE) {
                return fail("TLS handshake: the peer refused the connection (fatal alert)");
            }
            return fail("TLS handshake: " + mbed_error(ret));
        }
        s.done = true;
        s.release_trust_anchors();
    }
    unsigned char buf[16384];
    for (;;) {
        const int ret = mbedtls_ssl_read(&s.ssl, buf, sizeof buf);
        if (ret > 0) {
            plaintext.append(reinterpret_cast<char*>(buf), static_cast<size_t>(ret));
            continue;
        }
        if (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE) return false;
        if (ret == 0 || ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) return true;
        s.failed = true;
        return fail("TLS: " + mbed_error(ret));
    }
}

bool TlsSession::handshake_done() const {
    return state_->done;
}

bool TlsSession::holds_trust_anchors() const {
    return state_->config->state_->ca.version != 0;
}

Status TlsSession::write(std::string_view plaintext) {
    State& s = *state_;
    if (!s.done || s.failed) return fail("TLS: write before the handshake completed");
    const auto* p = reinterpret_cast<const unsigned char*>(plaintext.data());
    size_t left = plaintext.size();
    while (left > 0) {
        // The send callback never blocks, so each call writes one whole record.
        const int ret = mbedtls_ssl_write(&s.ssl, p, left);
        if (ret < 0) {
            s.failed = true;
            return fail("TLS: write: " + mbed_error(ret));
        }
        p += ret;
        left -= static_cast<size_t>(ret);
    }
    return {};
}

void TlsSession::close_notify() {
    if (state_->done && !state_->failed) mbedtls_ssl_close_notify(&state_->ssl);
}

std::string TlsSession::take_output() {
    std::string out;
    out.swap(state_->out);
    return out;
}

bool TlsSession::has_output() const {
    return !state_->out.empty();
}

}  // namespace myr::net
