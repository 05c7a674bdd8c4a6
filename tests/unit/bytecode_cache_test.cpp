// The Python tier's bytecode cache stays bounded (selftest/bytecode_cache.hpp): a tree within
// the limits is kept as it is, one past a limit (bytes, entries, depth) is removed whole, and a
// symlink in it is neither followed nor counted.
#include "selftest/bytecode_cache.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct PycTempDir {
  fs::path path;
  PycTempDir() {
    std::string tmpl = (fs::temp_directory_path() / "nvte-pyc-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~PycTempDir() { fs::remove_all(path); }
};

void write_bytes(const fs::path& file, std::size_t bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << std::string(bytes, 'x');
}

} // namespace

TEST(BytecodeCache, ATreeWithinItsLimitsIsKept) {
  PycTempDir tmp;
  const fs::path cache = tmp.path / "python-bytecode";
  write_bytes(cache / "opt/venv/lib/python3.12/site-packages/torch/__pycache__" / "__init__.cpython-312.pyc", 600);
  write_bytes(cache / "opt/venv/lib/python3.12/site-packages/torch/nn/__pycache__" / "modules.cpython-312.pyc", 400);
  selftest::BytecodeCacheLimits limits;
  limits.max_bytes = 1000;
  EXPECT_EQ(selftest::bound_bytecode_cache(cache, limits), std::nullopt);
  EXPECT_TRUE(fs::exists(cache / "opt/venv/lib/python3.12/site-packages/torch/nn/__pycache__/modules.cpython-312.pyc"));
  EXPECT_EQ(selftest::bound_bytecode_cache(tmp.path / "missing", limits), std::nullopt);
}

TEST(BytecodeCache, ATreePastALimitIsRemovedWhole) {
  PycTempDir tmp;
  const fs::path cache = tmp.path / "python-bytecode";
  selftest::BytecodeCacheLimits limits;
  limits.max_bytes = 1000;
  write_bytes(cache / "a/__pycache__/x.pyc", 600);
  write_bytes(cache / "b/__pycache__/y.pyc", 401);
  auto removed = selftest::bound_bytecode_cache(cache, limits);
  ASSERT_TRUE(removed);
  EXPECT_NE(removed->find("held more than 1000 bytes; removed"), std::string::npos) << *removed;
  EXPECT_FALSE(fs::exists(cache));

  limits = {};
  limits.max_entries = 3;
  for (int i = 0; i < 4; ++i) write_bytes(cache / ("m" + std::to_string(i) + ".pyc"), 1);
  removed = selftest::bound_bytecode_cache(cache, limits);
  ASSERT_TRUE(removed);
  EXPECT_NE(removed->find("more than 3 entries"), std::string::npos) << *removed;
  EXPECT_FALSE(fs::exists(cache));

  limits = {};
  limits.max_depth = 2;
  write_bytes(cache / "a/b/c/d.pyc", 1);
  removed = selftest::bound_bytecode_cache(cache, limits);
  ASSERT_TRUE(removed);
  EXPECT_NE(removed->find("nested more than 2 levels deep"), std::string::npos) << *removed;
  EXPECT_FALSE(fs::exists(cache));
}

TEST(BytecodeCache, ASymlinkIsNeitherFollowedNorCountedNorItsTargetRemoved) {
  PycTempDir tmp;
  const fs::path cache = tmp.path / "python-bytecode";
  write_bytes(tmp.path / "elsewhere" / "big.bin", 5000);
  write_bytes(cache / "a/__pycache__/x.pyc", 10);
  fs::create_directory_symlink(tmp.path / "elsewhere", cache / "link");
  selftest::BytecodeCacheLimits limits;
  limits.max_bytes = 1000;
  EXPECT_EQ(selftest::bound_bytecode_cache(cache, limits), std::nullopt);
  write_bytes(cache / "b/__pycache__/y.pyc", 2000);
  ASSERT_TRUE(selftest::bound_bytecode_cache(cache, limits));
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_TRUE(fs::exists(tmp.path / "elsewhere" / "big.bin"));
}
