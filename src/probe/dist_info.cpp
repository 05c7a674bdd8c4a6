// dist-info / egg-info reader. METADATA headers end at the first empty line; only Name and
// Version matter here. RECORD is CSV (path,hash,size) whose path may be quoted when it contains
// a comma; the path is relative to the site-packages directory ("nvidia/cudnn/lib/libcudnn.so.9",
// or "../../bin/x" for scripts).
#include "probe/dist_info.hpp"

#include "probe/node_path.hpp"
#include "util/file.hpp"
#include "util/file_cache.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sys/stat.h>

namespace probe {

std::string normalize_distribution_name(std::string_view name) {
  std::string out;
  bool separator = false;
  for (char c : util::trim(name)) {
    if (c == '-' || c == '_' || c == '.') {
      separator = true;
      continue;
    }
    if (separator && !out.empty()) out += '_';
    separator = false;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

util::Result<Distribution> parse_core_metadata(std::string_view text, std::string_view origin) {
  Distribution dist;
  for (auto line : util::split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break; // the body (long description) follows
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = util::to_lower(util::trim(line.substr(0, colon)));
    auto value = std::string(util::trim(line.substr(colon + 1)));
    if (key == "name" && dist.name.empty()) dist.name = value;
    if (key == "version" && dist.version.empty()) dist.version = value;
    if (key == "requires-dist" && !value.empty()) dist.requires_dist.push_back(value);
  }
  if (dist.name.empty() || dist.version.empty()) {
    return util::Error{util::ErrorKind::parse, std::string(origin) + ": no Name or Version header"};
  }
  dist.normalized = normalize_distribution_name(dist.name);
  return dist;
}

std::optional<Requirement> parse_requirement(std::string_view text) {
  Requirement r;
  auto semicolon = text.find(';');
  if (semicolon != std::string_view::npos) {
    r.marker = std::string(util::trim(text.substr(semicolon + 1)));
    text = text.substr(0, semicolon);
  }
  text = util::trim(text);
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-' || text[end] == '_' || text[end] == '.'))
    ++end;
  if (end == 0) return std::nullopt;
  r.name = std::string(text.substr(0, end));
  r.normalized = normalize_distribution_name(r.name);
  std::string_view rest = util::trim(text.substr(end));
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    rest = util::trim(rest.substr(close + 1));
  }
  if (!rest.empty() && rest.front() == '@') return r; // a direct reference: no version to check
  for (char c : rest) {
    if (c != ' ' && c != '(' && c != ')') r.specifier += c;
  }
  return r;
}

namespace {

// A METADATA's Name, Version and Requires-Dist across runs (util/file_cache.hpp), on the live
// system only: the identity comes from stat(2) of the file, one call where reading its head costs
// an open, a read and closes (a venv's few dozen distributions were 2.1-2.4 ms of the python
// probe's path on the H200 node). Under another root the file is opened inside that root, as
// before: a stat of the host path could follow a link out of the tree.
std::optional<util::FileIdentity> live_identity(const std::filesystem::path& root, const std::string& metadata) {
  if (!is_live_root(root) || !node_file_cache()) return std::nullopt;
  struct stat st {};
  if (::stat(metadata.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return util::file_identity(st);
}

std::optional<Distribution> cached_core_metadata(const util::FileIdentity& id, const std::string& metadata) {
  auto text = node_file_cache()->find("core_metadata", metadata, id);
  if (!text) return std::nullopt;
  auto parts = util::unpack_strings(*text);
  if (!parts || parts->size() < 2 || (*parts)[0].empty() || (*parts)[1].empty()) return std::nullopt;
  Distribution dist;
  dist.name = (*parts)[0];
  dist.version = (*parts)[1];
  dist.requires_dist.assign(parts->begin() + 2, parts->end());
  dist.normalized = normalize_distribution_name(dist.name);
  return dist;
}

void store_core_metadata(const util::FileIdentity& id, const std::string& metadata, const Distribution& dist) {
  std::vector<std::string> parts{dist.name, dist.version};
  parts.insert(parts.end(), dist.requires_dist.begin(), dist.requires_dist.end());
  node_file_cache()->put("core_metadata", metadata, id, util::pack_strings(parts));
}

} // namespace

SiteScan scan_site_packages(const std::filesystem::path& root, const std::string& site_packages, std::string_view name_prefix,
                            const std::function<bool(const std::string& normalized)>& wanted) {
  SiteScan scan;
  auto has_prefix = [&](std::string_view entry) {
    if (entry.size() < name_prefix.size()) return false;
    for (std::size_t i = 0; i < name_prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(entry[i])) != name_prefix[i]) return false;
    }
    return true;
  };
  struct Entry {
    std::string dir, metadata;
    bool egg_info = false;
    std::shared_ptr<const void> parsed; // util::Result<Distribution>
  };
  std::vector<Entry> entries;
  for (const auto& entry : node_list_directory(root, site_packages)) {
    bool dist_info = util::ends_with(entry, ".dist-info");
    bool egg_info = util::ends_with(entry, ".egg-info");
    if ((!dist_info && !egg_info) || !has_prefix(entry)) continue;
    // The directory is named <name>-<version>.dist-info (egg-info: <name>-<version>[-pyX.Y]).
    if (wanted && !wanted(normalize_distribution_name(std::string_view(entry).substr(0, entry.find('-'))))) continue;
    std::string dir = site_packages + "/" + entry;
    switch (node_file_type(root, dir)) {
    case NodeFileType::directory: entries.push_back({dir, dir + (dist_info ? "/METADATA" : "/PKG-INFO"), egg_info, nullptr}); break;
    case NodeFileType::regular: entries.push_back({dir, dir, egg_info, nullptr}); break; // an egg-info file is PKG-INFO itself
    default: scan.problems.push_back(dir + ": broken entry (dangling symlink or special file)"); continue;
    }
  }
  // Name and Version are among the first headers; the long description after them can be
  // hundreds of kilobytes (torch's README) and is never needed. One run reads a METADATA once
  // (the python probe, its requirements, the libraries probe's nvidia-* wheels and the native
  // probe ask for some of the same). Read on this thread: on the H200 node (TE's venv) reading
  // them on eight threads took 2.5-2.9 ms, on one 2.2 ms (NVTE_DOCTOR_THREADS=1), and 6.9 ms
  // beside check's rules thread: starting threads there costs more than the reads.
  using Parsed = util::Result<Distribution>;
  for (auto& e : entries) {
    e.parsed = node_memo_find("core_metadata", host_path(root, e.metadata).string());
    if (e.parsed) continue;
    // The identity before the read: a file changed in between is stored under an identity it no
    // longer has, never its old text under its new one.
    auto id = live_identity(root, e.metadata);
    if (id) {
      if (auto cached = cached_core_metadata(*id, e.metadata)) {
        e.parsed = std::make_shared<const Parsed>(std::move(*cached));
        continue;
      }
    }
    auto text = read_node_file_head(root, e.metadata, 16u << 10);
    if (!text) e.parsed = std::make_shared<const Parsed>(util::Error{text.error().kind, e.metadata + ": " + text.error().message});
    else e.parsed = std::make_shared<const Parsed>(parse_core_metadata(*text, e.metadata));
    if (const auto& parsed = *std::static_pointer_cast<const Parsed>(e.parsed); id && parsed) store_core_metadata(*id, e.metadata, *parsed);
  }
  for (auto& e : entries) {
    auto computed = e.parsed;
    e.parsed = node_memo_value("core_metadata", host_path(root, e.metadata).string(), [&] { return computed; });
    auto dist = *std::static_pointer_cast<const Parsed>(e.parsed);
    if (!dist) {
      scan.problems.push_back(dist.error().message);
      continue;
    }
    dist->metadata_path = e.dir;
    dist->site_packages = site_packages;
    dist->egg_info = e.egg_info;
    scan.distributions.push_back(std::move(dist).value());
  }
  std::sort(scan.distributions.begin(), scan.distributions.end(),
            [](const Distribution& a, const Distribution& b) { return a.normalized < b.normalized; });
  return scan;
}

util::Result<std::vector<std::string>> read_record(const std::filesystem::path& root, const Distribution& dist) {
  if (dist.egg_info) return util::Error{util::ErrorKind::not_found, dist.metadata_path + ": egg-info has no RECORD"};
  auto text = NVTE_TRY(read_node_file(root, dist.metadata_path + "/RECORD", 16u << 20));
  std::vector<std::string> files;
  for (auto line : util::split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::string path;
    if (line.front() == '"') {
      for (std::size_t i = 1; i < line.size(); ++i) {
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          path += '"';
          ++i;
        } else if (line[i] == '"') {
          break;
        } else {
          path += line[i];
        }
      }
    } else {
      path = std::string(line.substr(0, line.find(',')));
    }
    if (path.empty()) continue;
    files.push_back(normalize_node_path(path.front() == '/' ? path : dist.site_packages + "/" + path).string());
  }
  return files;
}

} // namespace probe
