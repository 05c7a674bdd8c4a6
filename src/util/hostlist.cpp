// Compression keeps, per prefix and suffix, one open range for each way of writing numbers: the
// unpadded one (gpu9, gpu10) and one per padded width (gpu009, gpu010). A number extends the open
// range it fits, so gpu1,gpu01,gpu2,gpu02 gives gpu[1-2],gpu[01-02] rather than four names; "100"
// fits both the unpadded range and the width-3 one (gpu098-gpu099 continue with gpu100, as in
// Slurm).
#include "util/hostlist.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace util {

namespace {

struct Parsed {
  std::string prefix, digits, suffix;
};

// Split at the last run of digits; digits empty when there is none (or it does not fit 64 bits).
Parsed parse_host(const std::string& host) {
  std::size_t end = host.size();
  while (end > 0 && !(host[end - 1] >= '0' && host[end - 1] <= '9')) --end;
  std::size_t begin = end;
  while (begin > 0 && host[begin - 1] >= '0' && host[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 18) return {host, "", ""};
  return {host.substr(0, begin), host.substr(begin, end - begin), host.substr(end)};
}

bool padded(const std::string& digits) { return digits.size() > 1 && digits[0] == '0'; }

std::string pad(unsigned long long n, std::size_t width) {
  std::string s = std::to_string(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

std::string range_text(const HostRange& r) {
  std::string lo = pad(r.lo, r.width);
  return r.lo == r.hi ? lo : lo + "-" + pad(r.hi, r.width);
}

} // namespace

std::vector<HostRange> host_ranges(std::vector<std::string> hosts) {
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());

  struct Entry {
    std::string prefix, suffix, digits;
    unsigned long long n = 0;
  };
  std::vector<Entry> entries;
  std::vector<HostRange> out;
  for (const auto& host : hosts) {
    Parsed p = parse_host(host);
    if (p.digits.empty()) {
      out.push_back(HostRange{host, "", 0, 0, 0, false});
      continue;
    }
    entries.push_back(Entry{std::move(p.prefix), std::move(p.suffix), p.digits, std::stoull(p.digits)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.prefix, a.suffix, a.n, a.digits) < std::tie(b.prefix, b.suffix, b.n, b.digits);
  });

  // Open ranges of the current prefix and suffix by width (0: unpadded), as indexes into out.
  std::map<std::size_t, std::size_t> open;
  const Entry* group = nullptr;
  for (const auto& e : entries) {
    if (!group || e.prefix != group->prefix || e.suffix != group->suffix) open.clear();
    group = &e;
    auto extends = [&](std::size_t width) {
      auto it = open.find(width);
      if (it == open.end() || out[it->second].hi + 1 != e.n) return false;
      out[it->second].hi = e.n;
      return true;
    };
    bool is_padded = padded(e.digits);
    if (extends(e.digits.size())) continue; // the padded range of this width: "099" or "100" after "098"
    if (!is_padded && extends(0)) continue;
    std::size_t width = is_padded ? e.digits.size() : 0;
    out.push_back(HostRange{e.prefix, e.suffix, e.n, e.n, width, true});
    open[width] = out.size() - 1;
  }
  std::sort(out.begin(), out.end(), [](const HostRange& a, const HostRange& b) {
    return std::tie(a.prefix, a.suffix, a.numbered, a.lo, a.width) < std::tie(b.prefix, b.suffix, b.numbered, b.lo, b.width);
  });
  return out;
}

std::string format_hostlist(const std::vector<HostRange>& ranges) {
  std::string out;
  for (std::size_t i = 0; i < ranges.size();) {
    const HostRange& first = ranges[i];
    if (!out.empty()) out += ',';
    if (!first.numbered) {
      out += first.prefix;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < ranges.size() && ranges[j].numbered && ranges[j].prefix == first.prefix && ranges[j].suffix == first.suffix) ++j;
    out += first.prefix;
    if (j - i == 1 && first.lo == first.hi) {
      out += range_text(first);
    } else {
      out += '[';
      for (std::size_t k = i; k < j; ++k) out += (k > i ? "," : "") + range_text(ranges[k]);
      out += ']';
    }
    out += first.suffix;
    i = j;
  }
  return out;
}

std::string compress_hostlist(std::vector<std::string> hosts) { return format_hostlist(host_ranges(std::move(hosts))); }

namespace {

Error bad_list(std::string_view list, const std::string& why) {
  return Error{ErrorKind::parse, "host list '" + std::string(list.substr(0, 200)) + "': " + why};
}

// Expands one item ("gpu[01-03]-ib[1-2]"), brackets left to right, appending to out.
Result<void> expand_item(std::string_view whole, std::string_view item, std::string prefix, std::vector<std::string>& out,
                         std::size_t max_hosts) {
  std::size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (item.find(']') != std::string_view::npos) return bad_list(whole, "']' without '['");
    if (out.size() >= max_hosts) return bad_list(whole, "more than " + std::to_string(max_hosts) + " hosts");
    out.push_back(prefix + std::string(item));
    return {};
  }
  std::size_t close = item.find(']', open);
  if (close == std::string_view::npos) return bad_list(whole, "'[' without ']'");
  std::string_view head = item.substr(0, open), body = item.substr(open + 1, close - open - 1), rest = item.substr(close + 1);
  if (head.find(']') != std::string_view::npos || body.find('[') != std::string_view::npos)
    return bad_list(whole, "nested or stray bracket");
  if (body.empty()) return bad_list(whole, "empty brackets");
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t comma = body.find(',', start);
    std::string_view part = body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t dash = part.find('-');
    std::string_view lo_text = part.substr(0, dash), hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    auto is_number = [](std::string_view s) {
      return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!is_number(lo_text) || !is_number(hi_text)) return bad_list(whole, "'" + std::string(part) + "' is not N or N-M");
    unsigned long long lo = std::stoull(std::string(lo_text)), hi = std::stoull(std::string(hi_text));
    if (hi < lo) return bad_list(whole, "range " + std::string(part) + " runs backwards");
    if (hi - lo >= max_hosts) return bad_list(whole, "more than " + std::to_string(max_hosts) + " hosts");
    for (unsigned long long n = lo; n <= hi; ++n) {
      auto expanded = expand_item(whole, rest, prefix + std::string(head) + pad(n, lo_text.size()), out, max_hosts);
      if (!expanded) return expanded;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {};
}

} // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view list, std::size_t max_hosts) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) return bad_list(list, "']' without '['");
    if (c != ',' || depth > 0) continue;
    std::string_view item = list.substr(start, i - start);
    start = i + 1;
    if (item.empty()) continue;
    auto expanded = expand_item(list, item, "", out, max_hosts);
    if (!expanded) return expanded.take_error();
  }
  if (depth != 0) return bad_list(list, "'[' without ']'");
  return out;
}

} // namespace util
