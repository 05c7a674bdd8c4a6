// The preflight's split of the facts between the node and the image (model/fact_origin.hpp), and
// the table of docs/preflight.md that tells operators the same.
#include "model/fact_origin.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace {

TEST(FactOrigin, GpusDriverAndLibcudaAreTheNodes) {
  for (const char* name :
       {"gpu.count", "gpu[0].sm", "gpu[3].name", "driver.version", "driver.kernel_module", "libcuda.version", "libcuda.copies[0].path",
        "system.hostname", "system.kernel", "system.arch", "probe.nvml.status", "probe.driver.seconds"})
    EXPECT_EQ(model::fact_origin(name), model::FactOrigin::node) << name;
}

TEST(FactOrigin, TheUserspaceIsTheImages) {
  for (const char* name :
       {"te.version", "torch.version", "torch.cudnn.path", "cudnn.version", "cudnn.copies[1].version", "nccl.version", "python.executable",
        "env.LD_LIBRARY_PATH", "cuda.compat.in_use", "cuda.runtime_version", "system.os_id", "system.glibc_version", "probe.python.status",
        "flash_attn.version", "package.numpy.version", "gpus.other", "driverless", "libcudart.version"})
    EXPECT_EQ(model::fact_origin(name), model::FactOrigin::image) << name;
}

TEST(FactOrigin, CombineTakesEachSideFromItsOwner) {
  model::Facts image;
  image.set("te.version", model::Version{2, 4, 0});
  image.set("env.PATH", std::string("/usr/bin"));
  image.set("system.hostname", std::string("build-box"));   // the image's view: dropped
  image.set("libcuda.version", model::Version{580, 95, 5}); // a compat copy seen as libcuda: the node's wins
  model::Facts node;
  node.set("te.version", model::Version{2, 8, 0}); // the host's own TE: ignored
  node.set("gpu[0].compute_capability", model::Version{8, 0});
  node.set("driver.version", model::Version{570, 133, 20});
  node.set("system.hostname", std::string("gpu017"));
  node.set("libcuda.version", model::Version{570, 133, 20});
  auto facts = model::combine_image_and_node(image, node);
  EXPECT_EQ(facts.get_version("te.version")->to_string(), "2.4.0");
  EXPECT_EQ(facts.get_string("env.PATH"), "/usr/bin");
  EXPECT_EQ(facts.get_string("system.hostname"), "gpu017");
  EXPECT_EQ(facts.get_version("libcuda.version")->to_string(), "570.133.20");
  EXPECT_EQ(facts.get_int("gpu[0].sm"), 80) << "derived facts are derived again";
  EXPECT_EQ(facts.get_int("gpu.count"), 1);
}

// Every root of the code's list is in the docs' table, as `root.*` or `root`.
TEST(FactOrigin, DocsTableNamesEveryNodeFact) {
  std::ifstream in(std::string(NVTE_SOURCE_DIR) + "/docs/preflight.md");
  ASSERT_TRUE(in) << "docs/preflight.md";
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  for (const auto& entry : model::node_fact_roots()) {
    std::string root(entry.root);
    bool named = doc.find("`" + root + ".*`") != std::string::npos || doc.find("`" + root + "`") != std::string::npos;
    EXPECT_TRUE(named) << root << " is a node fact but docs/preflight.md's table does not name it";
  }
}

} // namespace
