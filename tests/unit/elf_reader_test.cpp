#include "probe/elf_reader.hpp"
#include "probe/node_path.hpp"
#include "support/node_fixture.hpp"

#include <fstream>
#include <optional>
#include <thread>
#include <gtest/gtest.h>

using namespace probe;
using test_support::fake_lib;

TEST(ElfReader, ReadsSonameNeededAndRunpath) {
  auto dyn = read_elf_dynamic(fake_lib("torch_cuda_cu130"));
  ASSERT_TRUE(dyn.ok()) << dyn.error().message;
  EXPECT_EQ(dyn->soname, "libtorch_cuda.so");
  EXPECT_NE(std::find(dyn->needed.begin(), dyn->needed.end(), "libcudnn.so.9"), dyn->needed.end());
  EXPECT_NE(std::find(dyn->needed.begin(), dyn->needed.end(), "libcudart.so.13"), dyn->needed.end());
  ASSERT_EQ(dyn->runpath.size(), 4u);
  EXPECT_EQ(dyn->runpath[0], "$ORIGIN/../../nvidia/cudnn/lib");
  EXPECT_EQ(dyn->runpath[3], "$ORIGIN");
  EXPECT_TRUE(dyn->rpath.empty());
  EXPECT_TRUE(dyn->is_64bit);
  EXPECT_EQ(dyn->machine, native_elf_machine());
}

TEST(ElfReader, OldStyleRpathIsRpathNotRunpath) {
  auto dyn = read_elf_dynamic(fake_lib("consumer_rpath"));
  ASSERT_TRUE(dyn.ok()) << dyn.error().message;
  EXPECT_TRUE(dyn->runpath.empty());
  ASSERT_EQ(dyn->rpath.size(), 1u);
  EXPECT_EQ(dyn->rpath[0], "$ORIGIN/rpath_dir");
}

TEST(ElfReader, RejectsTruncatedAndNonElfFiles) {
  auto dir = std::filesystem::temp_directory_path();
  auto truncated = dir / "nvte-truncated.so";
  {
    std::ifstream in(fake_lib("cudnn9_14"), std::ios::binary);
    std::string head(200, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(truncated, std::ios::binary) << head;
  }
  auto r = read_elf_dynamic(truncated);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, util::ErrorKind::parse);
  EXPECT_NE(r.error().message.find("nvte-truncated.so"), std::string::npos);
  auto text = dir / "nvte-script.so";
  std::ofstream(text) << "/* GNU ld script */ GROUP ( libc.so.6 )\n";
  auto t = read_elf_dynamic(text);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, util::ErrorKind::parse);
  std::filesystem::remove(truncated);
  std::filesystem::remove(text);
  EXPECT_EQ(read_elf_dynamic(dir / "nvte-absent.so").error().kind, util::ErrorKind::not_found);
}

TEST(ElfReader, ExpandsOrigin) {
  EXPECT_EQ(expand_origin("$ORIGIN/../../nvidia/cudnn/lib", "/v/torch/lib"), "/v/torch/lib/../../nvidia/cudnn/lib");
  EXPECT_EQ(expand_origin("${ORIGIN}/x", "/a"), "/a/x");
  EXPECT_EQ(expand_origin("$ORIGIN", "/a"), "/a");
  EXPECT_EQ(expand_origin("$ORIGINAL/x", "/a"), "$ORIGINAL/x");
  EXPECT_EQ(expand_origin("/usr/$LIB", "/a"), "/usr/$LIB");
}

TEST(ElfReader, FindsTheRodataRangeThatHoldsTheVersionString) {
  // The fake NVRTC embeds its "Cuda compilation tools" string as a constant: it lies in .rodata.
  auto file = fake_lib("nvrtc13");
  auto rodata = read_elf_section_range(file, ".rodata");
  ASSERT_TRUE(rodata.ok()) << rodata.error().message;
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto at = bytes.find("Cuda compilation tools, release ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(at, rodata->offset);
  EXPECT_LT(at, rodata->offset + rodata->size);
  auto missing = read_elf_section_range(file, ".no_such_section");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, util::ErrorKind::not_found);
}

// The per-run memo (probe::NodeFsMemo): inside one, a listing, a resolution and an ELF read are
// answered from memory even after the node changed; after it ends they are read afresh.
TEST(NodeFsMemo, RemembersWithinARunAndForgetsAfter) {
  test_support::NodeFixture node("a100-node");
  node.write("/memo/a", "x");
  node.symlink("/memo/link", "/memo/a");
  {
    NodeFsMemo memo;
    NodeFsMemo inner; // nested: changes nothing
    EXPECT_EQ(node_list_directory(node.root(), "/memo").names(), (std::vector<std::string>{"a", "link"}));
    EXPECT_EQ(resolve_node_path(node.root(), "/memo/link")->real, "/memo/a");
    int made = 0;
    auto make = [&] { return std::make_shared<const int>(++made); };
    EXPECT_EQ(*std::static_pointer_cast<const int>(node_memo_value("test", "k", make)), 1);
    EXPECT_EQ(*std::static_pointer_cast<const int>(node_memo_value("test", "k", make)), 1); // remembered
    node.write("/memo/b", "y");
    std::filesystem::remove(node.path("/memo/link"));
    node.symlink("/memo/link", "/memo/b");
    EXPECT_EQ(node_list_directory(node.root(), "/memo").names(), (std::vector<std::string>{"a", "link"}));
    EXPECT_EQ(resolve_node_path(node.root(), "/memo/link")->real, "/memo/a");
  }
  EXPECT_EQ(*std::static_pointer_cast<const int>(node_memo_value("test", "k", [] { return std::make_shared<const int>(7); })), 7);
  EXPECT_EQ(node_list_directory(node.root(), "/memo").names(), (std::vector<std::string>{"a", "b", "link"}));
  EXPECT_EQ(resolve_node_path(node.root(), "/memo/link")->real, "/memo/b");
  // Paths that need normalising still are; normal ones come back unchanged.
  EXPECT_EQ(normalize_node_path("/a//b/./c/../d/"), "/a/b/d");
  EXPECT_EQ(normalize_node_path("usr/lib"), "/usr/lib");
  EXPECT_EQ(normalize_node_path("/usr/lib/x.so.9"), "/usr/lib/x.so.9");
}

// The component walk of resolve_node_path (on plain strings since issue 22's probe budget): links
// relative and absolute (re-rooted under the node root, never the host's), "..", a chain, a
// broken link and a loop, with and without the per-run memo.
// A helper thread's memo (the native probe's link of torch, the copy scan) has its own paths but
// shares the run's values (ELF files read once) and directory listings (a directory is read once
// a run, whichever thread asks first); a thread with a memo of its own shares nothing.
TEST(NodeFsMemo, AHelperThreadSharesValuesAndListings) {
  test_support::NodeFixture node("a100-node");
  node.write("/memo/a", "x");
  NodeFsMemo memo;
  EXPECT_EQ(*std::static_pointer_cast<const int>(node_memo_value("t", "k", [] { return std::make_shared<const int>(1); })), 1);
  EXPECT_EQ(node_list_directory(node.root(), "/memo").size(), 1u);
  node.write("/memo/b", "y");
  int shared = 0, own = 0;
  std::size_t listed = 0;
  std::thread([&, values = NodeFsMemo::share()] {
    NodeFsMemo helper(values);
    shared = *std::static_pointer_cast<const int>(node_memo_value("t", "k", [] { return std::make_shared<const int>(2); }));
    listed = node_list_directory(node.root(), "/memo").size(); // the run's listing, not read again
  }).join();
  bool found_alone = true;
  std::thread([&] {
    NodeFsMemo alone;
    found_alone = node_memo_find("t", "k") != nullptr;
    own = *std::static_pointer_cast<const int>(node_memo_value("t", "k", [] { return std::make_shared<const int>(3); }));
  }).join();
  EXPECT_FALSE(found_alone);
  ASSERT_NE(node_memo_find("t", "k"), nullptr);
  EXPECT_EQ(*std::static_pointer_cast<const int>(node_memo_find("t", "k")), 1);
  EXPECT_EQ(node_memo_find("t", "other"), nullptr);
  EXPECT_EQ(shared, 1);
  EXPECT_EQ(own, 3);
  EXPECT_EQ(listed, 1u);
  EXPECT_EQ(node_list_directory(node.root(), "/memo").size(), 1u); // this thread's, remembered
}

// A listing says whether the directory was read, and whether a name is in it.
TEST(NodeFsMemo, ListingsSayWhetherTheyWereRead) {
  test_support::NodeFixture node("a100-node");
  node.write("/tk/lib/libx.so.1", "x");
  NodeFsMemo memo;
  auto lib = node_list_directory(node.root(), "/tk/lib");
  EXPECT_TRUE(lib.listed());
  EXPECT_TRUE(lib.contains("libx.so.1"));
  EXPECT_FALSE(lib.contains("libx.so"));
  auto missing = node_list_directory(node.root(), "/tk/missing");
  EXPECT_FALSE(missing.listed());
  EXPECT_FALSE(missing.contains("anything"));
  EXPECT_TRUE(NodeListing(std::vector<std::string>{"a", "b"}).contains("b"));
}

TEST(NodePath, ResolvesLinksTheWayTheNodeWould) {
  test_support::NodeFixture node("a100-node");
  node.write("/walk/usr/lib/libx.so.1.2.3", "x");
  node.symlink("/walk/usr/lib/libx.so.1", "libx.so.1.2.3"); // relative, same directory
  node.symlink("/walk/lib", "usr/lib");                     // a merged-/usr style directory link
  node.symlink("/walk/abs", "/walk/usr/lib/libx.so.1");     // absolute: under the node root
  node.symlink("/walk/up", "../walk/usr/./lib//libx.so.1"); // "..", "." and a doubled slash
  node.symlink("/walk/broken", "/walk/usr/lib/libnone.so");
  node.symlink("/walk/loop_a", "loop_b");
  node.symlink("/walk/loop_b", "loop_a");
  for (bool memo : {false, true}) {
    std::optional<NodeFsMemo> scope;
    if (memo) scope.emplace();
    auto via_dir = resolve_node_path(node.root(), "/walk/lib/libx.so.1");
    ASSERT_TRUE(via_dir.ok()) << via_dir.error().message;
    EXPECT_EQ(via_dir->real, "/walk/usr/lib/libx.so.1.2.3");
    ASSERT_EQ(via_dir->chain.size(), 2u);
    EXPECT_EQ(via_dir->chain[0], "/walk/lib");
    EXPECT_EQ(via_dir->chain[1], "/walk/usr/lib/libx.so.1");
    EXPECT_EQ(resolve_node_path(node.root(), "/walk/abs")->real, "/walk/usr/lib/libx.so.1.2.3");
    EXPECT_EQ(resolve_node_path(node.root(), "/walk/up")->real, "/walk/usr/lib/libx.so.1.2.3");
    EXPECT_EQ(resolve_node_path(node.root(), "/../../walk/./lib/../lib/libx.so.1")->real, "/walk/usr/lib/libx.so.1.2.3");
    EXPECT_EQ(resolve_node_path(node.root(), "/walk/usr/lib")->real, "/walk/usr/lib");
    EXPECT_EQ(resolve_node_path(node.root(), "/")->real, "/");
    auto broken = resolve_node_path(node.root(), "/walk/broken");
    ASSERT_FALSE(broken.ok());
    EXPECT_EQ(broken.error().kind, util::ErrorKind::not_found);
    EXPECT_NE(broken.error().message.find("/walk/usr/lib/libnone.so"), std::string::npos) << broken.error().message;
    EXPECT_NE(broken.error().message.find("(broken symlink /walk/broken)"), std::string::npos) << broken.error().message;
    auto loop = resolve_node_path(node.root(), "/walk/loop_a");
    ASSERT_FALSE(loop.ok());
    EXPECT_EQ(loop.error().kind, util::ErrorKind::invalid);
    EXPECT_NE(loop.error().message.find("symlink loop"), std::string::npos) << loop.error().message;
  }
}
