// The standard process_* metrics of a Prometheus client, read from /proc/self at scrape time:
// a few small reads, no allocation beyond the directory stream of /proc/self/fd.
#pragma once

#include "metrics/registry.hpp"

namespace myr::metrics {

class ProcessReader {
  public:
    // Reads the boot time (/proc/stat btime) and the clock tick once.
    ProcessReader();
    // Fields that could not be read are left unset (and their series out of the scrape).
    ProcessStats read() const;

  private:
    double ticks_per_second_ = 100;
    std::optional<double> boot_time_;  // Unix seconds
    double page_size_ = 4096;
};

// Bytes free for an unprivileged writer on the filesystem of `path` (statvfs f_bavail).
std::optional<uint64_t> free_bytes(const char* path);

}  // namespace myr::metrics
