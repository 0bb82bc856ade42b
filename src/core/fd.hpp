// UniqueFd: owns one file descriptor and closes it exactly once. Move-only, so a directory opened
// once after its lstat check is handed around without ever being re-resolved by path.
#pragma once

#include <utility>

namespace myr {

class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    ~UniqueFd() { reset(); }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    explicit operator bool() const { return valid(); }
    // Gives up ownership without closing.
    [[nodiscard]] int release() { return std::exchange(fd_, -1); }
    // Closes the current descriptor (errors of close are ignored: nothing useful can follow) and
    // takes `fd`.
    void reset(int fd = -1);

  private:
    int fd_ = -1;
};

}  // namespace myr
