// The import-order model on facts alone (probe/import_order.hpp): which cuDNN each consumer runs
// on when torch or TE is imported first, and when torch's cuDNN check rejects TE's copy.
#include "probe/import_order.hpp"
#include "support/probe_helpers.hpp"

#include <gtest/gtest.h>

using test_support::str;

namespace {

const std::string k_wheel = "/venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
const std::string k_system = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0";

model::Facts picks(const std::string& te_path, const std::string& te_version, const std::string& torch_path,
                   const std::string& torch_version) {
  model::Facts f;
  f.set("te.version", *model::Version::parse("2.15.0"));
  f.set("te.cudnn.path", te_path);
  f.set("te.cudnn.version", *model::Version::parse(te_version));
  f.set("torch.cudnn.path", torch_path);
  f.set("torch.cudnn.version", *model::Version::parse(torch_version));
  return f;
}

} // namespace

TEST(ImportOrder, OlderTeCopyBreaksTorchWhenTeComesFirst) {
  model::Facts f = picks(k_system, "9.14.0", k_wheel, "9.19.0.56");
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(str(f, "te.cudnn.torch_first.path"), k_system);
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.torch_first"), 2);
  EXPECT_EQ(str(f, "torch.cudnn.te_first.path"), k_system);
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.te_first"), 1);
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), true);
  // torch's own escape hatch turns the check off.
  f.set("env.PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK", "1");
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), false);
}

TEST(ImportOrder, NewerTeCopyIsAcceptedButStillTakesTorchOver) {
  model::Facts f = picks(k_wheel, "9.19.0", k_system, "9.14.0");
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(str(f, "torch.cudnn.te_first.version"), "9.19.0");
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), false);
  // The build's cuDNN decides, not the copy torch loads: a torch built against 9.20 rejects 9.19.
  f.set("torch.cudnn.compiled_version", *model::Version::parse("9.20.0"));
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), true);
}

TEST(ImportOrder, AnotherMajorIsAnotherSonameAndOneCopyIsOneCopy) {
  model::Facts f = picks(k_wheel, "9.1.0", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7", "8.9.7");
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(str(f, "torch.cudnn.te_first.version"), "8.9.7");
  EXPECT_EQ(f.get_int("cudnn.mapped_copies.te_first"), 2);
  EXPECT_EQ(f.get_bool("torch.cudnn.te_first.fails"), false);

  model::Facts same = picks(k_wheel, "9.19.0", k_wheel, "9.19.0");
  probe::derive_import_orders(same, "cudnn");
  EXPECT_EQ(same.get_int("cudnn.mapped_copies.torch_first"), 1);
  EXPECT_EQ(same.get_int("cudnn.mapped_copies.te_first"), 1);
  EXPECT_EQ(same.get_bool("torch.cudnn.te_first.fails"), false);
}

TEST(ImportOrder, StaleFactsGoWhenAPickIsGoneAndUnmodelledTeIsLeftAlone) {
  model::Facts f = picks(k_system, "9.14.0", k_wheel, "9.19.0");
  probe::derive_import_orders(f, "cudnn");
  f.erase("te.cudnn.path");
  probe::derive_import_orders(f, "cudnn");
  EXPECT_FALSE(f.has("te.cudnn.torch_first.path"));
  EXPECT_FALSE(f.has("torch.cudnn.te_first.fails"));
  EXPECT_FALSE(f.has("cudnn.mapped_copies.torch_first"));
  // TE 1.9 is not modelled: its copy is whatever its core library's NEEDED binds to.
  model::Facts old = picks(k_system, "9.14.0", k_wheel, "9.19.0");
  old.set("te.version", *model::Version::parse("1.9.0"));
  probe::derive_import_orders(old, "cudnn");
  EXPECT_FALSE(old.has("torch.cudnn.te_first.fails"));
}

// torch alone: its own copy against the cuDNN its wheel pins.
TEST(ImportOrder, TorchsOwnCopyAgainstItsBuild) {
  model::Facts f;
  f.set("torch.cudnn.path", k_system);
  f.set("torch.cudnn.version", *model::Version::parse("9.14.0"));
  probe::derive_import_orders(f, "cudnn");
  EXPECT_FALSE(f.has("torch.cudnn.check_fails")); // the build's cuDNN unknown: no verdict
  f.set("torch.cudnn.compiled_version", *model::Version::parse("9.19.0.56"));
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(f.get_bool("torch.cudnn.check_fails"), true);
  f.set("torch.cudnn.version", *model::Version::parse("9.20.0"));
  probe::derive_import_orders(f, "cudnn");
  EXPECT_EQ(f.get_bool("torch.cudnn.check_fails"), false);
}
