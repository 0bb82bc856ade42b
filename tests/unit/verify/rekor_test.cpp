#include "verify/rekor.hpp"

#include <doctest/doctest.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>

#include <string>
#include <vector>

using namespace myr::verify;
using namespace myr::hash;

namespace {

// A P-256 key made for the test, signing with SHA-256 like a Rekor log.
class TestKey {
  public:
    TestKey() {
        mbedtls_pk_init(&pk_);
        mbedtls_entropy_init(&entropy_);
        mbedtls_ctr_drbg_init(&drbg_);
        REQUIRE(mbedtls_ctr_drbg_seed(&drbg_, mbedtls_entropy_func, &entropy_, nullptr, 0) == 0);
        REQUIRE(mbedtls_pk_setup(&pk_, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) == 0);
        REQUIRE(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk_),
                                    mbedtls_ctr_drbg_random, &drbg_) == 0);
        unsigned char buf[256];
        int n = mbedtls_pk_write_pubkey_der(&pk_, buf, sizeof buf);
        REQUIRE(n > 0);
        spki_.assign(buf + sizeof buf - n, buf + sizeof buf);
    }
    ~TestKey() {
        mbedtls_pk_free(&pk_);
        mbedtls_ctr_drbg_free(&drbg_);
        mbedtls_entropy_free(&entropy_);
    }
    const Bytes& spki() const { return spki_; }
    Bytes log_id() const {
        Digest d =
            sha256(std::string_view(reinterpret_cast<const char*>(spki_.data()), spki_.size()));
        return Bytes(d.begin(), d.end());
    }
    LogKey log_key() const {
        LogKey k;
        k.base_url = "https://rekor.test";
        k.log_id = log_id();
        k.spki = spki_;
        k.valid_for.start = 1000;
        return k;
    }
    Bytes sign(std::string_view data) {
        unsigned char hash[32];
        mbedtls_sha256_ret(reinterpret_cast<const unsigned char*>(data.data()), data.size(), hash,
                           0);
        unsigned char sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
        size_t len = 0;
        REQUIRE(mbedtls_pk_sign(&pk_, MBEDTLS_MD_SHA256, hash, 32, sig, &len,
                                mbedtls_ctr_drbg_random, &drbg_) == 0);
        return Bytes(sig, sig + len);
    }

  private:
    mbedtls_pk_context pk_;
    mbedtls_entropy_context entropy_;
    mbedtls_ctr_drbg_context drbg_;
    Bytes spki_;
};

Digest leaf_hash(const Bytes& data) {
    Sha256 h;
    uint8_t z = 0;
    h.update(&z, 1);
    h.update(data.data(), data.size());
    return h.finish();
}

Digest node_hash(const Digest& l, const Digest& r) {
    Sha256 h;
    uint8_t one = 1;
    h.update(&one, 1);
    h.update(l.data(), 32);
    h.update(r.data(), 32);
    return h.finish();
}

// RFC 6962 section 2.1 MTH and section 2.1.1 PATH, written recursively as the RFC states them
// (the product code uses the iterative RFC 9162 form).
Digest mth(const std::vector<Bytes>& d, size_t lo, size_t hi) {
    if (hi - lo == 1) return leaf_hash(d[lo]);
    size_t k = 1;
    while (k * 2 < hi - lo) k *= 2;
    return node_hash(mth(d, lo, lo + k), mth(d, lo + k, hi));
}

void path(const std::vector<Bytes>& d, size_t m, size_t lo, size_t hi, std::vector<Bytes>& out) {
    if (hi - lo == 1) return;
    size_t k = 1;
    while (k * 2 < hi - lo) k *= 2;
    if (m < k) {
        path(d, m, lo, lo + k, out);
        Digest h = mth(d, lo + k, hi);
        out.emplace_back(h.begin(), h.end());
    } else {
        path(d, m - k, lo + k, hi, out);
        Digest h = mth(d, lo, lo + k);
        out.emplace_back(h.begin(), h.end());
    }
}

std::string b64(const Digest& d) {
    return base64_encode(d.data(), d.size());
}
std::string b64(const Bytes& b) {
    return base64_encode(b);
}

InclusionProof proof_for(uint64_t size, const Digest& root) {
    InclusionProof p;
    p.tree_size = static_cast<int64_t>(size);
    p.root_hash.assign(root.begin(), root.end());
    return p;
}

std::string note_for(uint64_t size, const Digest& root) {
    return "rekor.test - 42\n" + std::to_string(size) + "\n" + b64(root) + "\n";
}

std::string sign_note(TestKey& key, const std::string& note, Bytes hint) {
    Bytes blob = std::move(hint);
    Bytes sig = key.sign(note);
    blob.insert(blob.end(), sig.begin(), sig.end());
    return "\xE2\x80\x94 rekor.test " + b64(blob) + "\n";
}

}  // namespace

TEST_CASE("inclusion proof: the computed root matches RFC 6962 for every leaf of trees up to 33") {
    for (size_t n = 1; n <= 33; ++n) {
        std::vector<Bytes> leaves;
        for (size_t i = 0; i < n; ++i) leaves.push_back(Bytes{uint8_t(i), uint8_t(n), 7});
        Digest root = mth(leaves, 0, n);
        for (size_t m = 0; m < n; ++m) {
            std::vector<Bytes> hashes;
            path(leaves, m, 0, n, hashes);
            auto r = inclusion_root(leaves[m], m, n, hashes);
            REQUIRE_MESSAGE(r.ok(), "n=" << n << " m=" << m << ": " << r.error().message());
            CHECK(*r == root);
            if (!hashes.empty()) {
                hashes.back()[0] ^= 1;
                CHECK(*inclusion_root(leaves[m], m, n, hashes) != root);
                hashes.pop_back();
                CHECK_FALSE(inclusion_root(leaves[m], m, n, hashes).ok());
            }
        }
    }
}

TEST_CASE("inclusion proof: refuses an index outside the tree and hashes of the wrong size") {
    Bytes leaf{1, 2, 3};
    CHECK_FALSE(inclusion_root(leaf, 0, 0, {}).ok());
    CHECK_FALSE(inclusion_root(leaf, 5, 5, {}).ok());
    CHECK_FALSE(inclusion_root(leaf, 0, 2, {Bytes(31, 0)}).ok());
    CHECK(inclusion_root(leaf, 0, 1, {}).ok());
    CHECK_FALSE(inclusion_root(leaf, 0, 1, {Bytes(32, 0)}).ok());
    // A huge tree needs at most 64 hashes; the index arithmetic must not overflow.
    std::vector<Bytes> many(64, Bytes(32, 0));
    auto r = inclusion_root(leaf, 0, UINT64_MAX, many);
    CHECK(r.ok());

    TlogEntry e;
    e.canonicalized_body = leaf;
    e.inclusion_proof = proof_for(1, leaf_hash(leaf));
    CHECK(verify_inclusion_proof(e).ok());
    e.inclusion_proof->root_hash[3] ^= 1;
    auto bad = verify_inclusion_proof(e);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message() == "computed root != rootHash");
}

TEST_CASE("checkpoint: accepts the log's signature and refuses every mismatch") {
    TestKey key;
    TestKey other;
    LogKey log = key.log_key();
    Digest root = leaf_hash(Bytes{9});
    InclusionProof p = proof_for(7, root);
    Bytes hint(log.log_id.begin(), log.log_id.begin() + 4);
    std::string note = note_for(7, root);

    p.checkpoint = note + "\n" + sign_note(key, note, hint);
    CHECK(verify_checkpoint(p, log).ok());

    // Extension lines are part of the signed note; a foreign co-signature first is skipped.
    std::string ext_note = note + "Timestamp: 1\n";
    Bytes other_hint(4, 0xEE);
    p.checkpoint =
        ext_note + "\n" + sign_note(other, ext_note, other_hint) + sign_note(key, ext_note, hint);
    CHECK(verify_checkpoint(p, log).ok());

    auto expect_fail = [&](const std::string& envelope, const std::string& why) {
        InclusionProof q = p;
        q.checkpoint = envelope;
        auto r = verify_checkpoint(q, log);
        REQUIRE_FALSE(r.ok());
        CHECK_MESSAGE(r.error().message().find(why) != std::string::npos, r.error().message());
    };
    expect_fail(note + "\n" + sign_note(key, note, Bytes(4, 0)),
                "no signature with the log's key hint");
    expect_fail(note + "\n" + sign_note(other, note, hint), "log signature");
    expect_fail(note + sign_note(key, note, hint), "no blank line");
    std::string wrong_size = note_for(8, root);
    expect_fail(wrong_size + "\n" + sign_note(key, wrong_size, hint), "tree size 8");
    std::string wrong_root = note_for(7, leaf_hash(Bytes{8}));
    expect_fail(wrong_root + "\n" + sign_note(key, wrong_root, hint), "root hash");
    expect_fail("", "missing");
    expect_fail("origin\n\n" + sign_note(key, "origin\n", hint), "fewer than three lines");
    expect_fail(note + "\n- rekor.test AAAA\n", "malformed signature line");
}

TEST_CASE("SET: verifies over the canonical JSON and binds every field") {
    TestKey key;
    LogKey log = key.log_key();
    TlogEntry e;
    e.canonicalized_body = Bytes{'{', '}'};
    e.integrated_time = 1700000000;
    e.log_index = 12345;
    e.log_id = log.log_id;
    std::string hexid;
    for (uint8_t c : log.log_id) {
        static const char* x = "0123456789abcdef";
        hexid += x[c >> 4];
        hexid += x[c & 15];
    }
    e.signed_entry_timestamp =
        key.sign("{\"body\":\"e30=\",\"integratedTime\":1700000000,\"logID\":\"" + hexid +
                 "\",\"logIndex\":12345}");
    CHECK(verify_signed_entry_timestamp(e, log).ok());
    TlogEntry moved = e;
    moved.log_index = 12346;
    CHECK_FALSE(verify_signed_entry_timestamp(moved, log).ok());
    TlogEntry later = e;
    later.integrated_time += 1;
    CHECK_FALSE(verify_signed_entry_timestamp(later, log).ok());
    TlogEntry none = e;
    none.signed_entry_timestamp.clear();
    CHECK_FALSE(verify_signed_entry_timestamp(none, log).ok());
}

TEST_CASE("find_log: matches by log ID within a closed validity interval with a start") {
    TestKey key;
    LogKey k = key.log_key();
    k.valid_for.start = 100;
    k.valid_for.end = 200;
    std::vector<LogKey> logs{k};
    CHECK(find_log(logs, k.log_id, 100).ok());
    CHECK(find_log(logs, k.log_id, 200).ok());
    CHECK_FALSE(find_log(logs, k.log_id, 99).ok());
    CHECK_FALSE(find_log(logs, k.log_id, 201).ok());
    CHECK(find_log(logs, Bytes(32, 1), 150).error().message().find("not in the trusted root") !=
          std::string::npos);
    logs[0].valid_for.start.reset();
    auto r = find_log(logs, k.log_id, 150);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("no validFor.start") != std::string::npos);
}
