#include "support/node_fixture.hpp"

#include "support/ld_cache_writer.hpp"
#include "util/file.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace test_support {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

fs::path fixtures_dir() { return NVTE_FIXTURES_DIR; }
fs::path fake_lib(const std::string& name) { return fs::path(NVTE_FAKE_LIBS_DIR) / (name + ".so"); }

NodeFixture::NodeFixture(const std::string& name) : NodeFixture(name, std::vector<std::string>{}) {}

NodeFixture::NodeFixture(const std::string& name, const std::string& overlay)
    : NodeFixture(name, overlay.empty() ? std::vector<std::string>{} : std::vector<std::string>{overlay}) {}

NodeFixture::NodeFixture(const std::string& name, const std::vector<std::string>& overlays) {
  std::string tmpl = (fs::temp_directory_path() / ("nvte-node-" + name + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  m_root = tmpl;
  fs::path source = fixtures_dir() / name;
  fs::copy(source, m_root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  install_fake_libs();
  for (const auto& overlay : overlays) {
    fs::remove(m_root / "fake-libs.txt");
    fs::copy(fixtures_dir() / overlay, m_root,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
    install_fake_libs();
    // remove.txt: node paths the overlay takes away (one per line, '#' comments).
    if (fs::exists(m_root / "remove.txt")) {
      std::istringstream in(slurp(m_root / "remove.txt"));
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line[0] != '#') fs::remove(path(line));
      }
      fs::remove(m_root / "remove.txt");
    }
  }
  if (fs::exists(m_root / "etc/ld.so.cache.txt")) {
    write("/etc/ld.so.cache", build_ld_cache(parse_cache_listing(slurp(m_root / "etc/ld.so.cache.txt"))));
  }
}

void NodeFixture::install_fake_libs() const {
  if (fs::exists(m_root / "fake-libs.txt")) {
    std::istringstream in(slurp(m_root / "fake-libs.txt"));
    std::string node_path, fake;
    while (in >> node_path >> fake) {
      if (node_path[0] == '#') {
        std::string rest;
        std::getline(in, rest);
        continue;
      }
      install(node_path, fake);
    }
  }
}

NodeFixture::~NodeFixture() {
  std::error_code ec;
  // chmod 000 directories made by tests must be made readable again to be removed.
  for (auto it = fs::recursive_directory_iterator(m_root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(m_root, ec);
}

fs::path NodeFixture::path(const std::string& node_path) const { return util::under_root(m_root, node_path); }

void NodeFixture::write(const std::string& node_path, const std::string& content) const {
  fs::create_directories(path(node_path).parent_path());
  std::ofstream out(path(node_path), std::ios::binary | std::ios::trunc);
  out << content;
}

void NodeFixture::install(const std::string& node_path, const std::string& fake) const {
  fs::create_directories(path(node_path).parent_path());
  fs::copy_file(fake_lib(fake), path(node_path), fs::copy_options::overwrite_existing);
}

void NodeFixture::symlink(const std::string& node_path, const std::string& target) const {
  fs::create_directories(path(node_path).parent_path());
  fs::create_symlink(target, path(node_path));
}

probe::Host NodeFixture::host() const {
  probe::Host host;
  host.root = m_root;
  // A fixture tree is examined, never loaded, as any tree other than "/" (probe/tree_policy.hpp);
  // its fake libraries are the tests' own, and the "loaded" version source is tested on them.
  // The rule itself is tested with this off (UntrustedTree.*).
  host.load_fixture_libraries = true;
  std::istringstream in(fs::exists(m_root / "env.txt") ? slurp(m_root / "env.txt") : std::string{});
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    host.env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return host;
}

} // namespace test_support
