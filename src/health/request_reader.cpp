#include "health/request_reader.hpp"

#include <utility>

namespace myr::health {

RequestReader::RequestReader(ReaderLimits limits) : limits_(limits) {
    llhttp_settings_init(&settings_);
    settings_.on_url = [](llhttp_t* p, const char* at, size_t n) noexcept {
        RequestReader* r = of(p);
        if (r->count(n) != 0) return -1;
        r->target_.append(at, n);
        return 0;
    };
    settings_.on_header_field = [](llhttp_t* p, const char*, size_t n) noexcept {
        return of(p)->count(n);
    };
    settings_.on_header_value = [](llhttp_t* p, const char*, size_t n) noexcept {
        return of(p)->count(n);
    };
    settings_.on_headers_complete = [](llhttp_t* p) noexcept {
        of(p)->method_ = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
        return 0;
    };
    settings_.on_body = [](llhttp_t* p, const char*, size_t) noexcept {
        of(p)->has_body_ = true;
        return -1;
    };
    // Pausing here leaves the bytes after the request unparsed, so the next request waits for
    // the answer to this one.
    settings_.on_message_complete = [](llhttp_t* p) noexcept {
        of(p)->complete_ = true;
        return static_cast<int>(HPE_PAUSED);
    };
    llhttp_init(&parser_, HTTP_REQUEST, &settings_);
    parser_.data = this;
}

int RequestReader::count(size_t n) {
    header_bytes_ += n;
    if (header_bytes_ > limits_.max_header_bytes) {
        too_large_ = true;
        return -1;  // stops the parser
    }
    return 0;
}

RequestReader::Step RequestReader::feed(const char* data, size_t n) {
    if (!holding_) return parse(data, n);
    if (input_.size() + n > limits_.max_input_bytes) return Step::over_budget;
    input_.append(data, n);
    return Step::more;
}

RequestReader::Step RequestReader::next() {
    if (!holding_) return Step::more;
    holding_ = false;
    method_.clear();
    target_.clear();
    header_bytes_ = 0;
    complete_ = false;
    llhttp_resume(&parser_);
    std::string ahead = std::exchange(input_, {});
    if (ahead.empty()) return Step::more;
    return parse(ahead.data(), ahead.size());
}

RequestReader::Step RequestReader::parse(const char* data, size_t n) {
    llhttp_errno_t err = llhttp_execute(&parser_, data, n);
    if (too_large_) return Step::too_large;
    if (has_body_) return Step::has_body;
    if (err == HPE_PAUSED && complete_) {
        const char* end = llhttp_get_error_pos(&parser_);
        const size_t used =
            end != nullptr && end >= data && end <= data + n ? static_cast<size_t>(end - data) : n;
        if (n - used > limits_.max_input_bytes) return Step::over_budget;
        input_.assign(data + used, n - used);
        holding_ = true;
        keep_alive_ = llhttp_should_keep_alive(&parser_) != 0;
        return Step::request;
    }
    if (err != HPE_OK) return Step::malformed;
    return Step::more;
}

}  // namespace myr::health
