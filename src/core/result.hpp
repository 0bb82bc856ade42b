// Result<T>: a value or an Error, the return type of every call that can fail.
//
// std::expected would do, but libstdc++ 12 only enables it for compilers whose concepts support is
// C++23-complete, which excludes clang 14 (our fuzzing compiler). This is the small subset we use.
#pragma once

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace myr {

// The kind of a failure, so that a caller branches on a code and never on text: the installer
// maps it to what it reports (RAUC's error domains, Mender's error codes). Context added on the way
// up keeps the code of the failure it describes.
enum class Errc : uint8_t {
    unknown,    // not classified
    system,     // a system call failed; sys_errno() says which
    invalid,    // refused input: the configuration, a malformed file or message, a path
    network,    // resolving, connecting, TLS, HTTP, WebSocket
    integrity,  // a digest or a signature does not match
    process,    // a process could not be run, or failed
    timeout,    // a deadline passed
    cancelled,  // dropped unfinished, by a shutdown
    injected,   // a fault a test asked for (MYRIARCH_FAULT)
    // Our own policy or the node's state said no: the transport rule, an allowlist, a size
    // limit, no room known in advance, a proxy's or the artifact server's refusal of the request,
    // no usable trusted root. Not the package's fault and not a passing fault: the same request
    // gets the same answer until the operator changes something (docs/update.md, "Failure
    // classes").
    refused,
};
const char* to_string(Errc c);

// What failed and why, for people, and its kind (Errc) for programs. Each layer prefixes its own
// context on the way up, so the final message reads like "activate 0.116.0: copy to staging:
// write: No space left on device".
class Error {
  public:
    Error() = default;
    // The code is `system` when `sys_errno` is set, else `unknown`.
    explicit Error(std::string message, int sys_errno = 0)
        : message_(std::move(message)),
          errno_(sys_errno),
          code_(sys_errno != 0 ? Errc::system : Errc::unknown) {}
    Error(Errc code, std::string message, int sys_errno = 0)
        : message_(std::move(message)), errno_(sys_errno), code_(code) {}

    // An error from a failed system call: "<what>: <strerror(errno)>", code `system`.
    static Error from_errno(const std::string& what, int err = errno);

    const std::string& message() const { return message_; }
    // The errno behind the error, 0 when it did not come from a system call.
    int sys_errno() const { return errno_; }
    Errc code() const { return code_; }

    // Returns a copy of this error with "<prefix>: " in front of the message.
    [[nodiscard]] Error context(const std::string& prefix) const& {
        return Error(code_, prefix + ": " + message_, errno_);
    }
    [[nodiscard]] Error context(const std::string& prefix) && {
        message_.insert(0, prefix + ": ");
        return std::move(*this);
    }

  private:
    std::string message_;
    int errno_ = 0;
    Errc code_ = Errc::unknown;
};

// Tag wrapper so that Result<T> can be built from an error unambiguously: `return fail(err)`.
struct Failure {
    Error error;
};
inline Failure fail(Error e) {
    return Failure{std::move(e)};
}
inline Failure fail(std::string message) {
    return Failure{Error(std::move(message))};
}
inline Failure fail(Errc code, std::string message) {
    return Failure{Error(code, std::move(message))};
}
inline Failure fail_errno(const std::string& what, int err = errno) {
    return Failure{Error::from_errno(what, err)};
}

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Failure f) : v_(std::in_place_index<1>, std::move(f.error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const { return std::get<1>(v_); }
    // The error with a prefix, ready to be returned by the caller: `return r.fail("read marker")`.
    Failure fail(const std::string& prefix) const { return Failure{error().context(prefix)}; }
    Failure fail() const { return Failure{error()}; }

  private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Failure f) : err_(std::move(f.error)), ok_(false) {}

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return err_; }
    Failure fail(const std::string& prefix) const { return Failure{err_.context(prefix)}; }
    Failure fail() const { return Failure{err_}; }

  private:
    Error err_;
    bool ok_ = true;
};

using Status = Result<void>;

}  // namespace myr

// Propagate a failed Result with added context: MYR_TRY(write_all(fd, buf), "write marker");
#define MYR_TRY(expr, prefix)                            \
    do {                                                 \
        auto myr_try_r_ = (expr);                        \
        if (!myr_try_r_) return myr_try_r_.fail(prefix); \
    } while (0)
