// Host lists in Slurm's syntax: "gpu[0001-0004,0007],login[1-2]-ib". A host name is split at its
// last run of digits into prefix, number and suffix; hosts with the same prefix and suffix whose
// numbers follow each other become one range, and the names' zero padding is kept: gpu0098,
// gpu0099, gpu0100 -> gpu[0098-0100]; gpu9, gpu10 -> gpu[9-10]; gpu1 and gpu01 are two hosts and
// stay two. Host names hold no brackets or commas, so the list reads back unambiguously.
#pragma once

#include "util/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace util {

// One item of a compressed list: a host alone ("login") or a range of numbered hosts.
struct HostRange {
  std::string prefix, suffix;
  unsigned long long lo = 0, hi = 0;
  std::size_t width = 0; // digits of every number, zero-padded; 0: unpadded (gpu9, gpu10)
  bool numbered = false; // false: a name without digits, held in prefix
  std::size_t size() const { return numbered ? static_cast<std::size_t>(hi - lo + 1) : 1; }
};

// The hosts as ranges, sorted by prefix, suffix and number (duplicates dropped).
std::vector<HostRange> host_ranges(std::vector<std::string> hosts);

// Slurm's ranged string of the ranges: ranges that share prefix and suffix share one bracket
// ("gpu[1-4,7]"); a bracket with one host has none ("gpu7").
std::string format_hostlist(const std::vector<HostRange>& ranges);

// format_hostlist(host_ranges(hosts)).
std::string compress_hostlist(std::vector<std::string> hosts);

// The host names of a list in Slurm's syntax ("gpu[01-03,7]-ib,login"), in the order written.
// Fails on an unbalanced bracket, a reversed or malformed range, or more than max_hosts names.
Result<std::vector<std::string>> expand_hostlist(std::string_view list, std::size_t max_hosts = 1'000'000);

} // namespace util
