// A fixture node root made writable for one test: tests/fixtures/<name> copied to a temporary
// directory (symlinks kept as symlinks), the fake vendor libraries of fake-libs.txt installed
// at their node paths, and etc/ld.so.cache generated from etc/ld.so.cache.txt. Removed when the
// object goes away.
#pragma once

#include "probe/probe.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace test_support {

std::filesystem::path fixtures_dir();
std::filesystem::path fake_lib(const std::string& name); // build-tree file of a fake library

class NodeFixture {
public:
  explicit NodeFixture(const std::string& name);
  // name, then the fixture directory overlay copied over it (files replaced, its fake-libs.txt
  // installed too): one node's layout with something added, e.g. h100-node + h100-node-te.
  NodeFixture(const std::string& name, const std::string& overlay);
  // Several overlays, copied in order; an overlay's remove.txt lists node paths it removes.
  NodeFixture(const std::string& name, const std::vector<std::string>& overlays);
  NodeFixture(const NodeFixture&) = delete;
  NodeFixture& operator=(const NodeFixture&) = delete;
  ~NodeFixture();

  const std::filesystem::path& root() const { return m_root; }
  std::filesystem::path path(const std::string& node_path) const; // host path of a node path
  // Writes a file (creating directories) or installs a fake library at a node path.
  void write(const std::string& node_path, const std::string& content) const;
  void install(const std::string& node_path, const std::string& fake) const;
  void symlink(const std::string& node_path, const std::string& target) const;
  // The Host for this root with env read from the fixture's env.txt (KEY=VALUE lines); its fake
  // libraries may be loaded (Host::load_fixture_libraries).
  probe::Host host() const;

private:
  void install_fake_libs() const; // the fake-libs.txt now at the root

  std::filesystem::path m_root;
};

} // namespace test_support
