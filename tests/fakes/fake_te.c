/* A stand-in for libtransformer_engine.so: nvte_get_fused_attn_backend with the signature of one
 * TE release range (FAKE_TE_ABI_A: v1.10-v2.4, C: v2.8, F: v2.12-v2.18). It returns 1
 * (F16_arbitrary_seqlen) when every argument has the value the test passes, else 0, so a
 * binding that puts an argument in the wrong position is caught. Expected: bf16 (dtype 5 before
 * v2.4, 6 since), layout 9, no bias, causal mask 2, dropout 0, 16 heads, 4 groups, seqlens 512 /
 * 1024, head dims 192 / 128, window (-1, 0), training, vanilla softmax, no max logit, no CUDA
 * graph, not deterministic. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static int common(int q, int kv, int layout, int bias, int mask, float dropout, size_t h, size_t g, size_t sq,
                  size_t skv, size_t dqk, size_t dv, int64_t left, int64_t right, int dtype) {
  return q == dtype && kv == dtype && layout == 9 && bias == 0 && mask == 2 && dropout == 0.0f && h == 16 && g == 4 &&
         sq == 512 && skv == 1024 && dqk == 192 && dv == 128 && left == -1 && right == 0;
}

#if defined(FAKE_TE_ABI_A)
int nvte_get_fused_attn_backend(int q, int kv, int layout, int bias, int mask, float dropout, size_t h, size_t g,
                                size_t sq, size_t skv, size_t dqk, size_t dv, int64_t left, int64_t right) {
  return common(q, kv, layout, bias, mask, dropout, h, g, sq, skv, dqk, dv, left, right, 5) ? 1 : 0;
}
#elif defined(FAKE_TE_ABI_C)
int nvte_get_fused_attn_backend(bool training, int q, int kv, int layout, int bias, int mask, int softmax,
                                float dropout, size_t h, size_t g, size_t sq, size_t skv, size_t dqk, size_t dv,
                                int64_t left, int64_t right) {
  return training && softmax == 0 && common(q, kv, layout, bias, mask, dropout, h, g, sq, skv, dqk, dv, left, right, 6) ? 1 : 0;
}
#else
int nvte_get_fused_attn_backend(bool training, int q, int kv, int layout, int bias, int mask, int softmax,
                                float dropout, size_t h, size_t g, size_t sq, size_t skv, size_t dqk, size_t dv,
                                int64_t left, int64_t right, bool max_logit, bool cuda_graph, bool deterministic) {
  return training && softmax == 0 && !max_logit && !cuda_graph && !deterministic &&
                 common(q, kv, layout, bias, mask, dropout, h, g, sq, skv, dqk, dv, left, right, 6)
             ? 1
             : 0;
}
#endif

#if defined(FAKE_TE_NEEDS_NVRTC)
/* Like the real libtransformer_engine.so, this one uses an NVRTC symbol without a DT_NEEDED
 * entry for libnvrtc: it loads only after something put nvrtcGetCUBINSize in the global scope
 * (TE's Python does, with ctypes RTLD_GLOBAL). */
extern int nvrtcGetCUBINSize(void* program, size_t* size);
int fake_te_uses_nvrtc(void) {
  size_t size = 0;
  return nvrtcGetCUBINSize(0, &size);
}
#endif
