#include "runtime/termination_message.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/fd.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

namespace myr::runtime {

Result<TerminationWrite> write_termination_message(const std::string& path,
                                                   std::string_view reason) {
    if (path.empty()) return TerminationWrite::no_path;
    // No O_CREAT: the kubelet made the file, or there is none to write. O_NOFOLLOW refuses a
    // symlink (ELOOP) and O_NONBLOCK keeps a FIFO from holding the exit; the type is checked on
    // the opened fd, so nothing swapped in after a check is written to. O_TRUNC only once it is
    // known to be a regular file: truncating is the write.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd) {
        if (errno == ENOENT) return TerminationWrite::no_file;
        if (errno == ELOOP) return fail(Error("open " + path + ": refusing a symlink", ELOOP));
        return fail_errno("open " + path);
    }
    if (auto st = keep_if_regular(fd.get()); !st) return st.fail(path);
    if (::ftruncate(fd.get(), 0) != 0) return fail_errno("truncate " + path);
    // Room for the newline; valid_utf8 cuts at a code point boundary.
    std::string text = text::valid_utf8(reason, kTerminationMessageMax - 1) + "\n";
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail_errno("write " + path);
        done += static_cast<size_t>(n);
    }
    return TerminationWrite::written;
}

void leave_termination_message(const std::string& path, std::string_view reason) {
    auto r = write_termination_message(path, reason);
    if (!r) {
        log::warn("termination message not written",
                  {{"path", path}, {"error", r.error().message()}});
        return;
    }
    if (*r == TerminationWrite::written) {
        log::info("termination message written", {{"path", path}});
    }
}

}  // namespace myr::runtime
