// Interpreter discovery. Python finds its prefix from the path it was started as: a pyvenv.cfg
// next to the binary or one directory up marks a venv (PEP 405), conda-meta/ marks a conda env,
// anything else is a system install whose prefix is the parent of bin/. The version comes from
// pyvenv.cfg, else the binary's name (python3.12), else the names along its symlink chain, else
// the single lib/python3.X directory of the prefix.
#include "probe/interpreters.hpp"

#include "probe/node_path.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <set>

namespace probe {

namespace {

// "python3.12" -> "3.12"; "" for other names.
std::string version_in_name(std::string_view name) {
  if (!util::starts_with(name, "python3")) return {};
  auto rest = name.substr(6);
  if (rest == "3") return {};
  auto parts = util::split(rest, '.');
  if (parts.size() != 2 || !util::parse_int(parts[0]) || !util::parse_int(parts[1])) return {};
  return std::string(rest);
}

bool is_python3_name(std::string_view name) { return name == "python3" || !version_in_name(name).empty(); }

std::string parent(const std::string& node_path) {
  auto p = std::filesystem::path(node_path).parent_path().string();
  return p.empty() ? "/" : p;
}

// key = value lines of pyvenv.cfg.
std::map<std::string, std::string> read_cfg(const std::filesystem::path& root, const std::string& file) {
  std::map<std::string, std::string> out;
  auto text = read_node_file(root, file, 1u << 20);
  if (!text) return out;
  for (auto line : util::split(*text, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    out[util::to_lower(util::trim(line.substr(0, eq)))] = std::string(util::trim(line.substr(eq + 1)));
  }
  return out;
}

std::optional<model::Version> major_minor(std::string_view text) {
  auto parsed = model::Version::parse(text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

void add_dir(const std::filesystem::path& root, std::vector<std::string>& dirs, const std::string& dir) {
  if (node_file_type(root, dir) != NodeFileType::directory) return;
  for (const auto& d : dirs) {
    if (d == dir) return;
  }
  dirs.push_back(dir);
}

// Fills prefix, kind, version and site-packages of an interpreter found at it.path.
void describe(const Host& host, Interpreter& it) {
  const auto& root = host.root;
  std::string bin = parent(it.path);
  it.prefix = parent(bin);
  std::string cfg_file;
  for (const auto& candidate : {bin + "/pyvenv.cfg", it.prefix + "/pyvenv.cfg"}) {
    if (node_file_type(root, candidate) == NodeFileType::regular) {
      cfg_file = candidate;
      break;
    }
  }
  std::map<std::string, std::string> cfg;
  if (!cfg_file.empty()) {
    it.env_kind = "venv";
    it.prefix = parent(cfg_file);
    cfg = read_cfg(root, cfg_file);
    for (const char* key : {"version", "version_info"}) {
      if (auto v = cfg.find(key); v != cfg.end() && !it.version) {
        // version_info is "3.12.3.final.0": keep the numeric part.
        std::string text = v->second;
        auto parts = util::split(text, '.');
        if (parts.size() > 3) text = std::string(parts[0]) + "." + std::string(parts[1]) + "." + std::string(parts[2]);
        if ((it.version = major_minor(text))) it.version_source = "pyvenv.cfg";
      }
    }
  } else if (node_file_type(root, it.prefix + "/conda-meta") == NodeFileType::directory) {
    it.env_kind = "conda";
  } else {
    it.env_kind = "system";
  }
  // pyenv (<root>/versions/3.11.7) and conda (conda-meta/python-3.11.5-h955ad1f_0.json) name
  // the full version.
  if (!it.version && std::filesystem::path(it.prefix).parent_path().filename() == "versions") {
    auto parsed = model::Version::parse(std::filesystem::path(it.prefix).filename().string());
    if (parsed && parsed->components().size() >= 3 && parsed->major() == 3) {
      it.version = *parsed;
      it.version_source = "pyenv";
    }
  }
  if (!it.version && it.env_kind == "conda") {
    for (const auto& name : node_list_directory(root, it.prefix + "/conda-meta")) {
      if (!util::starts_with(name, "python-3.")) continue;
      std::string_view rest = std::string_view(name).substr(7); // "3.11.5-h955ad1f_0.json"
      if (auto parsed = model::Version::parse(rest.substr(0, rest.find('-')))) {
        it.version = *parsed;
        it.version_source = "conda-meta";
        break;
      }
    }
  }
  if (!it.version) {
    if (auto v = version_in_name(std::filesystem::path(it.path).filename().string()); !v.empty()) {
      it.version = major_minor(v);
      it.version_source = "file_name";
    }
  }
  if (!it.version) {
    if (auto resolved = resolve_node_path(root, it.path)) {
      auto names = resolved->chain;
      names.push_back(resolved->real);
      for (const auto& link : names) {
        if (auto v = version_in_name(link.filename().string()); !v.empty()) {
          it.version = major_minor(v);
          it.version_source = "symlink";
          break;
        }
      }
    }
  }
  // The lib/pythonX.Y directories say the version only when nothing before did: a system
  // interpreter's prefix/lib is /usr/lib, hundreds of names, listed on the python probe's path.
  std::vector<std::string> lib_versions;
  if (!it.version) {
    for (const auto& name : node_list_directory(root, it.prefix + "/lib")) {
      if (auto v = version_in_name(name); !v.empty()) lib_versions.push_back(v);
    }
  }
  if (!it.version && lib_versions.size() == 1) {
    it.version = major_minor(lib_versions[0]);
    it.version_source = "lib_dir";
  }
  std::vector<std::string> xy;
  if (it.version) xy.push_back(std::to_string(it.version->major()) + "." + std::to_string(it.version->minor()));
  else xy = lib_versions;

  for (const auto& v : xy) {
    std::string py = "python" + v;
    if (it.env_kind == "system" && util::starts_with(it.prefix, "/usr")) {
      // Debian/Ubuntu: pip installs to /usr/local/lib/python3.X/dist-packages, apt to /usr/lib/python3/dist-packages.
      std::string local = it.prefix == "/usr" ? "/usr/local" : it.prefix;
      if (it.purelib.empty()) {
        it.purelib = node_file_type(root, local + "/lib/" + py + "/dist-packages") == NodeFileType::directory
                         ? local + "/lib/" + py + "/dist-packages"
                         : it.prefix + "/lib/" + py + "/site-packages";
      }
      add_dir(root, it.site_packages, local + "/lib/" + py + "/dist-packages");
      add_dir(root, it.site_packages, it.prefix + "/lib/python3/dist-packages");
      add_dir(root, it.site_packages, it.prefix + "/lib/" + py + "/dist-packages");
    }
    if (it.purelib.empty()) it.purelib = it.prefix + "/lib/" + py + "/site-packages";
    add_dir(root, it.site_packages, it.prefix + "/lib/" + py + "/site-packages");
    add_dir(root, it.site_packages, it.prefix + "/lib64/" + py + "/site-packages");
    add_dir(root, it.site_packages, "/usr/local/lib/" + py + "/site-packages");
  }
  // A venv made with --system-site-packages also sees its base interpreter's directories.
  if (auto inc = cfg.find("include-system-site-packages"); inc != cfg.end() && util::to_lower(inc->second) == "true") {
    if (auto home = cfg.find("home"); home != cfg.end()) {
      Interpreter base;
      base.path = home->second + "/python3";
      base.version = it.version;
      describe(host, base);
      for (const auto& d : base.site_packages) add_dir(root, it.site_packages, d);
    }
  }
}

// pyenv puts shell-script shims on PATH (<PYENV_ROOT>/shims/python3) that run the selected
// version's binary: PYENV_VERSION, else the first line(s) of <PYENV_ROOT>/version. The shim is
// replaced by <PYENV_ROOT>/versions/<v>/bin/<name> of the first selected version that has it;
// "system" and versions without that binary are passed over (the system python is on PATH anyway).
std::optional<std::string> pyenv_target(const Host& host, const std::string& shim, std::vector<std::string>& problems) {
  std::filesystem::path p(shim);
  if (p.parent_path().filename() != "shims") return std::nullopt;
  std::string root = p.parent_path().parent_path().string();
  if (node_file_type(host.root, root + "/versions") != NodeFileType::directory) return std::nullopt;
  std::string selected;
  if (auto it = host.env.find("PYENV_VERSION"); it != host.env.end() && !it->second.empty()) {
    selected = it->second;
  } else if (auto text = read_node_file(host.root, root + "/version", 4096)) {
    for (auto line : util::split(*text, '\n')) {
      if (!util::trim(line).empty()) selected += (selected.empty() ? "" : ":") + std::string(util::trim(line));
    }
  }
  for (auto version : util::split(selected, ':')) {
    if (version.empty() || version == "system") continue;
    std::string target = root + "/versions/" + std::string(version) + "/bin/" + p.filename().string();
    if (node_file_type(host.root, target) == NodeFileType::regular) return target;
  }
  if (p.filename() == "python3")
    problems.push_back("pyenv shim " + shim + ": no selected version (" + (selected.empty() ? "none" : selected) + ") provides it");
  return std::string{};
}

} // namespace

std::vector<std::string> Interpreter::package_dirs() const {
  std::vector<std::string> dirs = python_path;
  for (const auto& d : site_packages)
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  return dirs;
}

namespace {

InterpreterScan find_interpreters_uncached(const Host& host) {
  InterpreterScan scan;
  std::vector<std::pair<std::string, std::string>> candidates; // path, origin
  if (host.python) candidates.emplace_back(normalize_node_path(*host.python).string(), "option");
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (auto it = host.env.find(var); it != host.env.end() && !it->second.empty()) {
      std::string origin = std::string(var) == "VIRTUAL_ENV" ? "virtual_env" : "conda_prefix";
      std::string bin = normalize_node_path(it->second).string() + "/bin/";
      std::string chosen = bin + "python3";
      if (node_file_type(host.root, chosen) != NodeFileType::regular) chosen = bin + "python";
      if (node_file_type(host.root, chosen) != NodeFileType::regular) {
        scan.problems.push_back(std::string(var) + "=" + it->second + ": no bin/python3 there");
        continue;
      }
      candidates.emplace_back(chosen, origin);
    }
  }
  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  if (auto it = host.env.find("PATH"); it != host.env.end()) path_var = it->second;
  for (auto dir : util::split(path_var, ':')) {
    if (dir.empty() || dir.front() != '/') continue;
    for (const auto& name : node_list_directory(host.root, std::string(dir))) {
      if (is_python3_name(name)) candidates.emplace_back(normalize_node_path(std::string(dir) + "/" + name).string(), "path");
    }
  }

  std::set<std::string> seen;
  for (auto& [path, origin] : candidates) {
    if (node_file_type(host.root, path) != NodeFileType::regular) {
      if (origin == "option") scan.problems.push_back("--python " + path + ": not found on the node");
      continue;
    }
    if (auto target = pyenv_target(host, path, scan.problems)) {
      if (target->empty()) continue;
      path = *target;
    }
    Interpreter it;
    it.path = path;
    it.origin = origin;
    describe(host, it);
    // PYTHONPATH belongs to the job, so every interpreter it starts sees it; relative entries
    // depend on the working directory and are left out.
    if (auto pp = host.env.find("PYTHONPATH"); pp != host.env.end()) {
      for (auto dir : util::split(pp->second, ':')) {
        if (dir.empty() || dir.front() != '/') continue;
        add_dir(host.root, it.python_path, normalize_node_path(std::string(dir)).string());
      }
    }
    // A venv is its prefix (its binary is usually a link to the system one); anything else is
    // its real binary (/bin/python3 and /usr/bin/python3.12 on a merged-/usr system are one).
    std::string key = it.prefix;
    if (it.env_kind != "venv") {
      if (auto real = resolve_node_path(host.root, it.path)) key = real->real.string();
    }
    if (!seen.insert(key).second) continue;
    scan.interpreters.push_back(std::move(it));
  }
  return scan;
}

} // namespace

InterpreterScan find_interpreters(const Host& host) {
  // The python and libraries probes both ask, for the same host, within one run.
  std::string key = host.root.string();
  for (const char* var : {"PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYENV_VERSION"}) {
    auto it = host.env.find(var);
    key += '\n' + (it == host.env.end() ? std::string("\x01") : it->second);
  }
  key += '\n' + (host.python ? host.python->string() : std::string("\x01"));
  auto value =
      node_memo_value("interpreters", key, [&] { return std::make_shared<const InterpreterScan>(find_interpreters_uncached(host)); });
  return *std::static_pointer_cast<const InterpreterScan>(value);
}

} // namespace probe
