// Fuzz target: the fix search over random facts and workloads built from the input bytes (values
// drawn from the ones the rules and the catalog distinguish, plus raw ones), against the shipped
// rules and catalog. It must not crash, and every search must stay within its budget: the
// target aborts when one input takes more than a second of CPU (the thread's CPU time, not the
// wall clock: a campaign on a loaded machine, niced, waits for a core longer than that).
#include "fuzz_common.hpp"
#include "probe/relink.hpp"
#include "rules/fix_search.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#ifndef NVTE_RULES_DIR
#error "NVTE_RULES_DIR must name the shipped rules"
#endif

namespace {

const rules::RuleSet& shipped() {
  static const rules::RuleSet set = [] {
    // NVTE_FUZZ_RULES_DIR: a fuzzer carried to another machine (scripts/fuzz-carry.sh) finds the
    // rules of the checkout it runs in, not the path it was built at.
    const char* dir = std::getenv("NVTE_FUZZ_RULES_DIR");
    auto loaded = rules::RuleSet::load({dir != nullptr && *dir != '\0' ? dir : NVTE_RULES_DIR}, rules::TestCases::count);
    if (!loaded.rules) {
      for (const auto& d : loaded.diagnostics) std::fprintf(stderr, "fuzz_fix_search: %s\n", d.rendered().c_str());
      std::abort();
    }
    return std::move(*loaded.rules);
  }();
  return set;
}

class Bytes {
public:
  Bytes(const std::uint8_t* data, std::size_t size) : m_data(data), m_size(size) {}
  std::uint8_t next() { return m_pos < m_size ? m_data[m_pos++] : 0; }
  template <std::size_t N> const char* pick(const char* const (&options)[N]) { return options[next() % N]; }
  bool more() const { return m_pos < m_size; }

private:
  const std::uint8_t* m_data;
  std::size_t m_size;
  std::size_t m_pos = 0;
};

constexpr const char* k_fact_sets[] = {
    "te.version=2.3.0", "te.version=2.8.0", "te.version=2.11.0", "te.version=2.12.0", "te.version=2.18.0", "te.version=1.11.0",
    "te.version=0.1", "cudnn.version=9.1.0", "cudnn.version=9.10.1", "cudnn.version=8.9.7", "cudnn.version=9.19.0.56",
    "gpu.compute_capability=8.0", "gpu.compute_capability=9.0", "gpu.compute_capability=10.0", "gpu.compute_capability=12.0",
    "torch.cuda_version=12.4", "torch.cuda_version=13.0", "torch.version=2.6.0", "torch.version=2.11.0+cu130",
    "python.version=3.12.3", "python.version=3.8.0", "python.executable=/opt/my env/bin/python3",
    "python.site_packages=/opt/my env/lib/python3.12/site-packages", "flash_attn.version=2.7.4", "flash_attn.version=2.8.3",
    "flash_attn_3.version=3.0.0b1", "env.NVTE_FLASH_ATTN=0", "env.NVTE_FUSED_ATTN=0", "env.NVTE_UNFUSED_ATTN=0",
    "env.CUDNN_HOME=/usr/local/cuda", "env.CUDA_HOME=/usr/local/cuda", "te.cudnn.path=/usr/local/cuda/lib64/libcudnn.so.9",
    "te.cudnn.version=9.1.0", "cudnn.copies[0].path=/usr/local/cuda/lib64/libcudnn.so.9", "cudnn.copies[0].version=9.1.0",
    "cudnn.copies[0].source=cuda_home", "cuda.compat.in_use=true", "driver.version=580.159.04", "nccl.version=2.21.5"};

constexpr const char* k_workload_sets[] = {
    "qkv_format=thd", "qkv_format=bshd", "qkv_format=sbhd", "attn_mask_type=causal", "attn_mask_type=padding_causal",
    "attn_mask_type=causal_bottom_right", "head_dim_qk=192", "head_dim_qk=256", "head_dim_v=128", "head_dim_qk=64",
    "cp_size=2", "cp_comm_type=all_gather", "cp_comm_type=a2a", "qkv_dtype=fp8", "qkv_dtype=fp16", "window_size=128,0",
    "max_seqlen_q=4096", "max_seqlen_kv=8192", "num_heads=128", "num_gqa_groups=8", "api=TransformerLayer", "input_shape=bsh",
    "qkv_interleaved=true", "fp8=true", "deterministic=true", "is_training=false", "core_attention_bias_type=alibi"};

double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

} // namespace

// The shipped rules load once, before the first input: not per execution, and a rules tree that
// does not load stops the fuzzer at once with its diagnostics.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)shipped();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes bytes(data, size);
  model::Facts facts;
  model::Workload workload;
  workload.name = "fuzz";
  for (int i = 0, n = bytes.next() % 10; i < n && bytes.more(); ++i) (void)facts.apply_override(bytes.pick(k_fact_sets));
  for (int i = 0, n = bytes.next() % 8; i < n && bytes.more(); ++i) {
    std::string set = bytes.pick(k_workload_sets);
    auto eq = set.find('=');
    (void)workload.set_text(set.substr(0, eq), set.substr(eq + 1));
  }
  facts.derive();
  if (!workload.complete()) return 0;

  rules::SearchOptions options;
  options.budget = 20 + bytes.next() % 100;
  options.relink = [](model::Facts& f, std::string_view lib) { probe::relink_from_facts(f, lib); };
  const double start = thread_cpu_seconds();
  model::Explanation e = rules::explain(shipped(), facts, workload);
  rules::verify_explanation(shipped(), facts, e, options);
  auto node = rules::evaluate_node(shipped(), facts);
  rules::verify_node_findings(shipped(), facts, node, options);
  for (const auto& f : e.findings)
    for (const auto& fix : f.fixes)
      if (!fix.command.empty() && !fix.verified && fix.unverified_reason.empty()) std::abort(); // printed without a verdict
  if (thread_cpu_seconds() - start > 1.0) std::abort();
  return 0;
}
