// Which side of a preflight owns a fact. A job's container image brings its userspace (Python,
// torch, TE, the cuDNN / NCCL / NVRTC wheels and libraries, its environment and OS release); the
// node brings the GPUs, the kernel driver and the driver's user-space library (libcuda, which the
// NVIDIA container runtime injects from the host). A preflight takes each fact from its owner:
// the image's tree for the first, the node's probe or report for the second.
// docs/preflight.md has the same table for people; a unit test keeps the two in step.
#pragma once

#include "model/facts.hpp"

#include <span>
#include <string_view>

namespace model {

enum class FactOrigin { node, image };

struct NodeFactRoot {
  std::string_view root; // a fact name or the root of a group: "gpu" covers gpu.count and gpu[i].*
  std::string_view why;  // one line: why the node, not the image, owns it
};

// The node's facts, by root; every other fact belongs to the image.
std::span<const NodeFactRoot> node_fact_roots();

FactOrigin fact_origin(std::string_view name);

// The facts a job of this image would meet on this node: every image fact of `image` and every
// node fact of `node` (a node fact the image's tree also had is dropped: the image's view of it
// is not what the job sees). Derived facts are re-derived.
Facts combine_image_and_node(const Facts& image, const Facts& node);

} // namespace model
