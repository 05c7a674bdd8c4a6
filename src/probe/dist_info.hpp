// Installed Python distributions, read from their metadata directories without starting Python:
// <name>-<ver>.dist-info/METADATA (and RECORD), <name>.egg-info/PKG-INFO, or a bare
// <name>.egg-info file. Only the Name, Version and Requires-Dist headers are read (core metadata,
// RFC 822 style).
#pragma once

#include "util/result.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace probe {

struct Distribution {
  std::string name;          // as written in METADATA ("transformer-engine-cu12")
  std::string normalized;    // PEP 503 with '_' ("transformer_engine_cu12")
  std::string version;       // "2.3.0+cu121"
  std::string metadata_path; // node path of the .dist-info / .egg-info
  std::string site_packages; // node path of the directory that holds it
  bool egg_info = false;
  std::vector<std::string> requires_dist; // Requires-Dist values as written ("pydantic", "pytest>=8; extra == \"test\"")
};

// One Requires-Dist value split up (PEP 508, the parts pip's resolver reads): name, extras
// dropped, the version specifier without spaces or the old-style parentheses, the marker after ';'.
struct Requirement {
  std::string name;       // as written
  std::string normalized; // normalize_distribution_name(name)
  std::string specifier;  // ">=1.0", "" for any version (or a direct URL reference)
  std::string marker;     // "extra == \"test\"", "" when none
  std::string text() const { return name + specifier; }
};
std::optional<Requirement> parse_requirement(std::string_view text);

// PEP 503 normalisation with '_' as the separator, so names are valid fact segments:
// "Flash-Attn" -> "flash_attn", "nvidia.cudnn-cu12" -> "nvidia_cudnn_cu12".
std::string normalize_distribution_name(std::string_view name);

// Name and Version from core-metadata text; parse error naming origin when either is missing.
util::Result<Distribution> parse_core_metadata(std::string_view text, std::string_view origin);

struct SiteScan {
  std::vector<Distribution> distributions; // sorted by normalized name
  std::vector<std::string> problems;       // one line per unreadable or broken metadata directory
};

// Every distribution installed in a site-packages directory (node path). Broken entries are
// reported in problems and skipped. name_prefix (lowercase, e.g. "nvidia") limits the scan to
// metadata directories whose name starts with it, case-insensitively, so that a caller after a
// few distributions does not read every METADATA file. wanted, when given, is asked with the
// normalized distribution name of each metadata directory's name ("Flash_Attn-2.7.4.dist-info" ->
// "flash_attn") and the METADATA of a directory it refuses is not read either (a torch venv holds
// about 200 distributions; the doctor needs a dozen).
SiteScan scan_site_packages(const std::filesystem::path& root, const std::string& site_packages,
                            std::string_view name_prefix = {},
                            const std::function<bool(const std::string& normalized)>& wanted = {});

// The files a dist-info's RECORD lists, as node paths (relative entries resolved against
// site_packages). Fails when RECORD is missing or unreadable; egg-info has no RECORD.
util::Result<std::vector<std::string>> read_record(const std::filesystem::path& root, const Distribution& dist);

} // namespace probe
