#include "opamp/messages.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "core/text.hpp"
#include "opamp.pb-c.h"

namespace myr::opamp {

namespace {

// Owns everything the generated structs point at while one message is packed. The C++ values
// being encoded outlive the arena, so strings are borrowed, not copied.
class Arena {
  public:
    template <class T>
    T* make(const T& init) {
        auto p = std::make_shared<T>(init);
        keep_.push_back(p);
        return p.get();
    }
    template <class T>
    T** array(size_t n) {
        if (n == 0) return nullptr;
        std::shared_ptr<T*[]> p(new T*[n]());
        keep_.push_back(p);
        return p.get();
    }
    static char* str(const std::string& s) { return const_cast<char*>(s.c_str()); }
    // A proto3 string of an AgentToServer: valid UTF-8 whatever `s` holds (a peer that checks,
    // such as opamp-go, drops the whole message otherwise) and at most `max` bytes. The copy
    // lives as long as the arena.
    char* text(const std::string& s, size_t max = SIZE_MAX) {
        auto p = std::make_shared<std::string>(text::valid_utf8(s, max));
        keep_.push_back(p);
        return const_cast<char*>(p->c_str());
    }
    static ProtobufCBinaryData bin(const std::string& s) {
        return ProtobufCBinaryData{s.size(),
                                   reinterpret_cast<uint8_t*>(const_cast<char*>(s.data()))};
    }

  private:
    std::vector<std::shared_ptr<void>> keep_;
};

std::string bin_str(const ProtobufCBinaryData& b) {
    return b.len ? std::string(reinterpret_cast<const char*>(b.data), b.len) : std::string();
}
std::string cstr(const char* s) {
    return s ? std::string(s) : std::string();
}

// protobuf-c stores an enum field's wire value as it came, also one the .proto does not name (a
// newer server, or garbage). Loading such a value through the C enum type is undefined behaviour,
// so it is read as the int32 it is stored as; our own enums have a fixed `int` underlying type and
// hold any value.
template <class CEnum>
int32_t enum_wire_value(const CEnum& field) {
    static_assert(sizeof(CEnum) == sizeof(int32_t), "protobuf-c enums are stored as int32");
    int32_t v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

template <class Msg>
std::string pack(const Msg* m) {
    std::string out(protobuf_c_message_get_packed_size(&m->base), '\0');
    protobuf_c_message_pack(&m->base, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

// ---- encoding ----

Opamp__KeyValue** encode_kvs(Arena& a, const std::vector<KeyValue>& kvs) {
    auto** out = a.array<Opamp__KeyValue>(kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
        Opamp__AnyValue v = OPAMP__ANY_VALUE__INIT;
        v.value_case = OPAMP__ANY_VALUE__VALUE_STRING_VALUE;
        v.string_value = a.text(kvs[i].value, kMaxReportText);
        Opamp__KeyValue kv = OPAMP__KEY_VALUE__INIT;
        kv.key = a.text(kvs[i].key);
        kv.value = a.make(v);
        out[i] = a.make(kv);
    }
    return out;
}

template <class Health>
Opamp__ComponentHealth encode_health_fields(Arena& a, const Health& h) {
    Opamp__ComponentHealth m = OPAMP__COMPONENT_HEALTH__INIT;
    m.healthy = h.healthy;
    m.start_time_unix_nano = h.start_time_unix_nano;
    m.last_error = a.text(h.last_error, kMaxReportText);
    m.status = a.text(h.status, kMaxReportText);
    m.status_time_unix_nano = h.status_time_unix_nano;
    return m;
}

Opamp__ComponentHealth* encode_health(Arena& a, const ComponentHealth& h) {
    Opamp__ComponentHealth m = encode_health_fields(a, h);
    const size_t n = std::min(h.components.size(), kMaxHealthComponents);
    m.n_component_health_map = n;
    m.component_health_map = a.array<Opamp__ComponentHealth__ComponentHealthMapEntry>(n);
    for (size_t i = 0; i < n; ++i) {
        const auto& [name, sub] = h.components[i];
        Opamp__ComponentHealth v = encode_health_fields(a, sub);
        const std::vector<KeyValue> attrs(
            sub.attributes.begin(),
            sub.attributes.begin() +
                static_cast<std::ptrdiff_t>(std::min(sub.attributes.size(), kMaxHealthAttributes)));
        v.n_attributes = attrs.size();
        v.attributes = encode_kvs(a, attrs);
        Opamp__ComponentHealth__ComponentHealthMapEntry e =
            OPAMP__COMPONENT_HEALTH__COMPONENT_HEALTH_MAP_ENTRY__INIT;
        e.key = a.text(name, kMaxReportText);
        e.value = a.make(v);
        m.component_health_map[i] = a.make(e);
    }
    return a.make(m);
}

Opamp__PackageStatuses* encode_statuses(Arena& a, const PackageStatuses& s) {
    Opamp__PackageStatuses m = OPAMP__PACKAGE_STATUSES__INIT;
    m.n_packages = s.packages.size();
    m.packages = a.array<Opamp__PackageStatuses__PackagesEntry>(s.packages.size());
    for (size_t i = 0; i < s.packages.size(); ++i) {
        const PackageStatus& p = s.packages[i];
        Opamp__PackageStatus ps = OPAMP__PACKAGE_STATUS__INIT;
        // The server's own names and versions are echoed whole (its message's budget bounds
        // them); only what the agent writes is cut.
        ps.name = a.text(p.name);
        ps.agent_has_version = a.text(p.agent_has_version);
        ps.agent_has_hash = Arena::bin(p.agent_has_hash);
        ps.server_offered_version = a.text(p.server_offered_version);
        ps.server_offered_hash = Arena::bin(p.server_offered_hash);
        ps.status = static_cast<Opamp__PackageStatusEnum>(p.status);
        ps.error_message = a.text(p.error_message, kMaxReportText);
        if (p.download_details) {
            Opamp__PackageDownloadDetails d = OPAMP__PACKAGE_DOWNLOAD_DETAILS__INIT;
            d.download_percent = p.download_details->download_percent;
            d.download_bytes_per_second = p.download_details->download_bytes_per_second;
            ps.download_details = a.make(d);
        }
        Opamp__PackageStatuses__PackagesEntry e = OPAMP__PACKAGE_STATUSES__PACKAGES_ENTRY__INIT;
        e.key = ps.name;
        e.value = a.make(ps);
        m.packages[i] = a.make(e);
    }
    m.server_provided_all_packages_hash = Arena::bin(s.server_provided_all_packages_hash);
    m.error_message = a.text(s.error_message, kMaxReportText);
    return a.make(m);
}

// ---- decoding ----

std::string any_to_text(const Opamp__AnyValue* v, bool* is_string) {
    *is_string = false;
    if (!v) return "";
    switch (v->value_case) {
        case OPAMP__ANY_VALUE__VALUE_STRING_VALUE:
            *is_string = true;
            return cstr(v->string_value);
        case OPAMP__ANY_VALUE__VALUE_BOOL_VALUE:
            return v->bool_value ? "true" : "false";
        case OPAMP__ANY_VALUE__VALUE_INT_VALUE:
            return std::to_string(v->int_value);
        case OPAMP__ANY_VALUE__VALUE_DOUBLE_VALUE:
            return std::to_string(v->double_value);
        case OPAMP__ANY_VALUE__VALUE_BYTES_VALUE:
            return bin_str(v->bytes_value);
        case OPAMP__ANY_VALUE__VALUE_ARRAY_VALUE:
            return "[array]";
        case OPAMP__ANY_VALUE__VALUE_KVLIST_VALUE:
            return "[kvlist]";
        case OPAMP__ANY_VALUE__VALUE__NOT_SET:
        case _OPAMP__ANY_VALUE__VALUE__CASE_IS_INT_SIZE:
            break;
    }
    return "";
}

std::vector<KeyValue> decode_kvs(Opamp__KeyValue** kvs, size_t n) {
    std::vector<KeyValue> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        KeyValue kv;
        kv.key = cstr(kvs[i]->key);
        kv.value = any_to_text(kvs[i]->value, &kv.is_string);
        out.push_back(std::move(kv));
    }
    return out;
}

template <class Msg>
struct Unpacked {
    Msg* msg;
    void (*free_fn)(Msg*, ProtobufCAllocator*);
    ~Unpacked() {
        if (msg) free_fn(msg, nullptr);
    }
};

// ---- budgets before decoding ----

// protobuf-c's allocator with a ceiling: unpack fails (and frees what it made) once a message
// needs more than `limit` bytes. Frees are not credited back; unpack frees nothing it keeps.
// Memory comes from malloc, so free_unpacked's default allocator (free) releases it.
struct AllocBudget {
    size_t used = 0;
    size_t limit = 0;
    bool exceeded = false;
};
void* budget_alloc(void* data, size_t size) {
    auto* b = static_cast<AllocBudget*>(data);
    if (size > b->limit - b->used) {
        b->exceeded = true;
        return nullptr;
    }
    void* p = std::malloc(size);
    if (p) b->used += size;
    return p;
}
void budget_free(void*, void* p) {
    std::free(p);
}

// Just enough of the protobuf wire format to find and drop map entries before protobuf-c
// allocates a struct for each one.
bool read_varint(std::string_view& in, uint64_t& v) {
    v = 0;
    for (unsigned i = 0; i < 10; ++i) {
        if (in.empty()) return false;
        const auto b = static_cast<uint8_t>(in.front());
        in.remove_prefix(1);
        v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) return true;
    }
    return false;
}
void append_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

struct WireField {
    uint64_t number = 0;
    unsigned type = 0;
    std::string_view whole;    // key and value, as on the wire
    std::string_view payload;  // the bytes of a length-delimited value
};

// False on bytes that are not a field; protobuf-c then refuses the message itself.
bool next_field(std::string_view& in, WireField& f) {
    const char* start = in.data();
    uint64_t key = 0, v = 0;
    if (!read_varint(in, key)) return false;
    f.number = key >> 3;
    f.type = static_cast<unsigned>(key & 7);
    f.payload = {};
    switch (f.type) {
        case 0:
            if (!read_varint(in, v)) return false;
            break;
        case 1:
        case 5: {
            const size_t n = f.type == 1 ? 8 : 4;
            if (in.size() < n) return false;
            in.remove_prefix(n);
            break;
        }
        case 2:
            if (!read_varint(in, v) || v > in.size()) return false;
            f.payload = in.substr(0, v);
            in.remove_prefix(v);
            break;
        default:
            return false;
    }
    f.whole = std::string_view(start, static_cast<size_t>(in.data() - start));
    return true;
}

constexpr uint64_t kPackagesAvailableField = 5;  // ServerToAgent.packages_available
constexpr uint64_t kPackagesField = 1;           // PackagesAvailable.packages

// The message without the packages past `max` (counted over every occurrence of the field, which
// protobuf merges), or nullopt when there are not that many or the bytes are not protobuf.
//
// The occurrences are merged here into one, as protobuf would merge them: the first `max` map
// entries and the last of every other field of PackagesAvailable. Emitting one (empty)
// occurrence per dropped one instead left protobuf-c millions of merges to do: a 14 MiB offer of
// empty entries cost 64 MiB and 221 ms of loop time in PID 1 (integration-hostile).
std::optional<std::string> drop_excess_packages(std::string_view msg, size_t max, size_t& dropped) {
    auto offers = [](WireField& f) { return f.number == kPackagesAvailableField && f.type == 2; };
    size_t total = 0;
    WireField f, g;
    for (std::string_view in = msg; !in.empty();) {
        if (!next_field(in, f)) return std::nullopt;
        if (!offers(f)) continue;
        for (std::string_view sub = f.payload; !sub.empty();) {
            if (!next_field(sub, g)) return std::nullopt;
            if (g.number == kPackagesField) ++total;
        }
    }
    if (total <= max) return std::nullopt;
    std::string out, entries;
    std::map<uint64_t, std::string_view> last_other;  // PackagesAvailable's other fields
    size_t kept = 0;
    for (std::string_view in = msg; !in.empty();) {
        next_field(in, f);
        if (!offers(f)) {
            out.append(f.whole);
            continue;
        }
        for (std::string_view rest = f.payload; !rest.empty();) {
            next_field(rest, g);
            if (g.number != kPackagesField) {
                last_other[g.number] = g.whole;
            } else if (kept < max) {
                entries.append(g.whole);
                ++kept;
            }
        }
    }
    for (const auto& [number, whole] : last_other) entries.append(whole);
    append_varint(out, (kPackagesAvailableField << 3) | 2);
    append_varint(out, entries.size());
    out.append(entries);
    dropped = total - kept;
    return out;
}

}  // namespace

const char* to_string(PackageStatusCode code) {
    switch (code) {
        case PackageStatusCode::installed:
            return "Installed";
        case PackageStatusCode::install_pending:
            return "InstallPending";
        case PackageStatusCode::installing:
            return "Installing";
        case PackageStatusCode::install_failed:
            return "InstallFailed";
        case PackageStatusCode::downloading:
            return "Downloading";
    }
    return "Unknown";
}

std::string encode(const AgentToServer& msg) {
    Arena a;
    Opamp__AgentToServer m = OPAMP__AGENT_TO_SERVER__INIT;
    m.instance_uid = Arena::bin(msg.instance_uid);
    m.sequence_num = msg.sequence_num;
    m.capabilities = msg.capabilities;
    m.flags = msg.flags;
    if (msg.agent_description) {
        Opamp__AgentDescription d = OPAMP__AGENT_DESCRIPTION__INIT;
        const auto& id = msg.agent_description->identifying_attributes;
        const auto& non = msg.agent_description->non_identifying_attributes;
        d.n_identifying_attributes = id.size();
        d.identifying_attributes = encode_kvs(a, id);
        d.n_non_identifying_attributes = non.size();
        d.non_identifying_attributes = encode_kvs(a, non);
        m.agent_description = a.make(d);
    }
    if (msg.health) m.health = encode_health(a, *msg.health);
    if (msg.package_statuses) m.package_statuses = encode_statuses(a, *msg.package_statuses);
    Opamp__AgentDisconnect disc = OPAMP__AGENT_DISCONNECT__INIT;
    if (msg.agent_disconnect) m.agent_disconnect = &disc;
    return pack(&m);
}

std::string encode(const ServerToAgent& msg) {
    Arena a;
    Opamp__ServerToAgent m = OPAMP__SERVER_TO_AGENT__INIT;
    m.instance_uid = Arena::bin(msg.instance_uid);
    m.flags = msg.flags;
    m.capabilities = msg.capabilities;
    if (msg.error_response) {
        Opamp__ServerErrorResponse e = OPAMP__SERVER_ERROR_RESPONSE__INIT;
        e.type = static_cast<Opamp__ServerErrorResponseType>(msg.error_response->type);
        e.error_message = Arena::str(msg.error_response->error_message);
        if (msg.error_response->retry_after_nanoseconds) {
            Opamp__RetryInfo r = OPAMP__RETRY_INFO__INIT;
            r.retry_after_nanoseconds = *msg.error_response->retry_after_nanoseconds;
            e.details_case = OPAMP__SERVER_ERROR_RESPONSE__DETAILS_RETRY_INFO;
            e.retry_info = a.make(r);
        }
        m.error_response = a.make(e);
    }
    if (msg.heartbeat_interval_seconds) {
        Opamp__OpAMPConnectionSettings o = OPAMP__OP_AMPCONNECTION_SETTINGS__INIT;
        o.heartbeat_interval_seconds = *msg.heartbeat_interval_seconds;
        Opamp__ConnectionSettingsOffers c = OPAMP__CONNECTION_SETTINGS_OFFERS__INIT;
        c.opamp = a.make(o);
        m.connection_settings = a.make(c);
    }
    if (msg.packages_available) {
        const PackagesAvailable& pa = *msg.packages_available;
        Opamp__PackagesAvailable p = OPAMP__PACKAGES_AVAILABLE__INIT;
        p.n_packages = pa.packages.size();
        p.packages = a.array<Opamp__PackagesAvailable__PackagesEntry>(pa.packages.size());
        for (size_t i = 0; i < pa.packages.size(); ++i) {
            const PackageAvailable& src = pa.packages[i];
            Opamp__PackageAvailable pk = OPAMP__PACKAGE_AVAILABLE__INIT;
            pk.type = static_cast<Opamp__PackageType>(src.type);
            pk.version = Arena::str(src.version);
            pk.hash = Arena::bin(src.hash);
            if (src.file) {
                Opamp__DownloadableFile f = OPAMP__DOWNLOADABLE_FILE__INIT;
                f.download_url = Arena::str(src.file->download_url);
                f.content_hash = Arena::bin(src.file->content_hash);
                f.signature = Arena::bin(src.file->signature);
                if (!src.file->headers.empty()) {
                    Opamp__Headers hs = OPAMP__HEADERS__INIT;
                    hs.n_headers = src.file->headers.size();
                    hs.headers = a.array<Opamp__Header>(hs.n_headers);
                    for (size_t j = 0; j < hs.n_headers; ++j) {
                        Opamp__Header h = OPAMP__HEADER__INIT;
                        h.key = Arena::str(src.file->headers[j].key);
                        h.value = Arena::str(src.file->headers[j].value);
                        hs.headers[j] = a.make(h);
                    }
                    f.headers = a.make(hs);
                }
                pk.file = a.make(f);
            }
            Opamp__PackagesAvailable__PackagesEntry e =
                OPAMP__PACKAGES_AVAILABLE__PACKAGES_ENTRY__INIT;
            e.key = Arena::str(src.name);
            e.value = a.make(pk);
            p.packages[i] = a.make(e);
        }
        p.all_packages_hash = Arena::bin(pa.all_packages_hash);
        m.packages_available = a.make(p);
    }
    if (msg.new_instance_uid) {
        Opamp__AgentIdentification id = OPAMP__AGENT_IDENTIFICATION__INIT;
        id.new_instance_uid = Arena::bin(*msg.new_instance_uid);
        m.agent_identification = a.make(id);
    }
    if (msg.command) {
        Opamp__ServerToAgentCommand c = OPAMP__SERVER_TO_AGENT_COMMAND__INIT;
        c.type = static_cast<Opamp__CommandType>(*msg.command);
        m.command = a.make(c);
    }
    return pack(&m);
}

Result<AgentToServer> decode_agent_to_server(std::string_view bytes) {
    Unpacked<Opamp__AgentToServer> u{
        opamp__agent_to_server__unpack(nullptr, bytes.size(),
                                       reinterpret_cast<const uint8_t*>(bytes.data())),
        opamp__agent_to_server__free_unpacked};
    if (!u.msg) return fail("AgentToServer: not a valid protobuf message");
    const Opamp__AgentToServer& m = *u.msg;
    AgentToServer out;
    out.instance_uid = bin_str(m.instance_uid);
    out.sequence_num = m.sequence_num;
    out.capabilities = m.capabilities;
    out.flags = m.flags;
    out.agent_disconnect = m.agent_disconnect != nullptr;
    if (m.agent_description) {
        AgentDescription d;
        d.identifying_attributes = decode_kvs(m.agent_description->identifying_attributes,
                                              m.agent_description->n_identifying_attributes);
        d.non_identifying_attributes =
            decode_kvs(m.agent_description->non_identifying_attributes,
                       m.agent_description->n_non_identifying_attributes);
        out.agent_description = std::move(d);
    }
    if (m.health) {
        ComponentHealth h;
        h.healthy = m.health->healthy;
        h.start_time_unix_nano = m.health->start_time_unix_nano;
        h.last_error = cstr(m.health->last_error);
        h.status = cstr(m.health->status);
        h.status_time_unix_nano = m.health->status_time_unix_nano;
        const size_t n = std::min(m.health->n_component_health_map, kMaxHealthComponents);
        for (size_t i = 0; i < n; ++i) {
            const auto* e = m.health->component_health_map[i];
            SubHealth sub;
            if (const Opamp__ComponentHealth* v = e->value) {
                sub.healthy = v->healthy;
                sub.start_time_unix_nano = v->start_time_unix_nano;
                sub.last_error = cstr(v->last_error);
                sub.status = cstr(v->status);
                sub.status_time_unix_nano = v->status_time_unix_nano;
                sub.attributes =
                    decode_kvs(v->attributes, std::min(v->n_attributes, kMaxHealthAttributes));
            }
            h.components.emplace_back(cstr(e->key), std::move(sub));
        }
        out.health = std::move(h);
    }
    if (m.package_statuses) {
        PackageStatuses s;
        for (size_t i = 0; i < m.package_statuses->n_packages; ++i) {
            const auto* e = m.package_statuses->packages[i];
            PackageStatus p;
            p.name = cstr(e->key);
            if (const Opamp__PackageStatus* v = e->value) {
                if (v->name && *v->name) p.name = v->name;
                p.agent_has_version = cstr(v->agent_has_version);
                p.agent_has_hash = bin_str(v->agent_has_hash);
                p.server_offered_version = cstr(v->server_offered_version);
                p.server_offered_hash = bin_str(v->server_offered_hash);
                p.status = static_cast<PackageStatusCode>(enum_wire_value(v->status));
                p.error_message = cstr(v->error_message);
                if (v->download_details) {
                    p.download_details =
                        PackageDownloadDetails{v->download_details->download_percent,
                                               v->download_details->download_bytes_per_second};
                }
            }
            s.packages.push_back(std::move(p));
        }
        s.server_provided_all_packages_hash =
            bin_str(m.package_statuses->server_provided_all_packages_hash);
        s.error_message = cstr(m.package_statuses->error_message);
        out.package_statuses = std::move(s);
    }
    return out;
}

Result<ServerToAgent> decode_server_to_agent(std::string_view bytes) {
    size_t refused = 0;
    const std::optional<std::string> trimmed =
        drop_excess_packages(bytes, kMaxOfferedPackages, refused);
    if (trimmed) bytes = *trimmed;
    AllocBudget budget{0, kMaxDecodedBytes, false};
    ProtobufCAllocator alloc{budget_alloc, budget_free, &budget};
    Unpacked<Opamp__ServerToAgent> u{
        opamp__server_to_agent__unpack(&alloc, bytes.size(),
                                       reinterpret_cast<const uint8_t*>(bytes.data())),
        opamp__server_to_agent__free_unpacked};
    if (!u.msg && budget.exceeded) {
        return fail("ServerToAgent: decoding needs more than " +
                    std::to_string(kMaxDecodedBytes >> 20) + " MiB; refused");
    }
    if (!u.msg) return fail("ServerToAgent: not a valid protobuf message");
    const Opamp__ServerToAgent& m = *u.msg;
    ServerToAgent out;
    out.instance_uid = bin_str(m.instance_uid);
    out.flags = m.flags;
    out.capabilities = m.capabilities;
    if (m.error_response) {
        ServerErrorResponse e;
        e.type = static_cast<ServerErrorType>(enum_wire_value(m.error_response->type));
        e.error_message = cstr(m.error_response->error_message);
        if (m.error_response->details_case == OPAMP__SERVER_ERROR_RESPONSE__DETAILS_RETRY_INFO &&
            m.error_response->retry_info) {
            e.retry_after_nanoseconds = m.error_response->retry_info->retry_after_nanoseconds;
        }
        out.error_response = std::move(e);
    }
    if (m.connection_settings && m.connection_settings->opamp) {
        out.heartbeat_interval_seconds = m.connection_settings->opamp->heartbeat_interval_seconds;
    }
    if (m.packages_available) {
        PackagesAvailable pa;
        for (size_t i = 0; i < m.packages_available->n_packages; ++i) {
            const auto* e = m.packages_available->packages[i];
            PackageAvailable p;
            p.name = cstr(e->key);
            if (const Opamp__PackageAvailable* v = e->value) {
                p.type = static_cast<PackageType>(enum_wire_value(v->type));
                p.version = cstr(v->version);
                p.hash = bin_str(v->hash);
                if (const Opamp__DownloadableFile* f = v->file) {
                    DownloadableFile df;
                    df.download_url = cstr(f->download_url);
                    df.content_hash = bin_str(f->content_hash);
                    df.signature = bin_str(f->signature);
                    if (f->headers && f->headers->n_headers > kMaxFileHeaders) {
                        p.refusal = std::to_string(f->headers->n_headers) +
                                    " download headers, at most " + std::to_string(kMaxFileHeaders);
                    } else if (f->headers) {
                        for (size_t j = 0; j < f->headers->n_headers; ++j) {
                            df.headers.push_back(Header{cstr(f->headers->headers[j]->key),
                                                        cstr(f->headers->headers[j]->value)});
                        }
                    }
                    p.file = std::move(df);
                }
            }
            pa.packages.push_back(std::move(p));
        }
        pa.all_packages_hash = bin_str(m.packages_available->all_packages_hash);
        pa.refused = refused;
        out.packages_available = std::move(pa);
    }
    if (m.agent_identification) {
        out.new_instance_uid = bin_str(m.agent_identification->new_instance_uid);
    }
    if (m.command) out.command = enum_wire_value(m.command->type);
    return out;
}

std::string frame_message(std::string_view protobuf) {
    std::string out;
    out.reserve(protobuf.size() + 1);
    out.push_back('\0');
    out.append(protobuf);
    return out;
}

Result<std::string_view> unframe_message(std::string_view message) {
    // The header is a varint; only 0 is defined. Read it in full so that an overlong encoding of
    // a non-zero value is named as such rather than misread as protobuf bytes.
    uint64_t header = 0;
    size_t i = 0;
    for (;; ++i) {
        if (i >= message.size()) return fail("OpAMP message: truncated header");
        if (i >= 10) return fail("OpAMP message: header varint too long");
        auto b = static_cast<uint8_t>(message[i]);
        header |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) break;
    }
    if (header != 0) {
        return fail("OpAMP message: unsupported header " + std::to_string(header) +
                    " (only 0 is defined)");
    }
    return message.substr(i + 1);
}

}  // namespace myr::opamp
