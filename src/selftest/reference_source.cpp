// The CUDA source of the fp32 reference attention (reference.hpp), compiled at run time with
// NVRTC for the GPU at hand: the common part and one of two matrix-product kernels (tiled for
// large shapes, one element per thread for small ones, where NVRTC's compile time would be most
// of the cost). Every parameter block holds only 8-byte fields, so the host's
// mirror structs (reference.cpp) have the same layout without relying on a shared header.
//
// The key idea: attention as plain fp32 matrix products over a materialised score matrix, a
// chunk of heads and query rows at a time. S = scale Q K^T (masked to -inf), P = softmax(S),
// O = P V; for the backward dP = dO V^T, dS = P (dP - rowsum(dO O)) scale, dQ = dS K,
// dK += dS^T Q, dV += P^T dO (atomic adds: the heads of a GQA group share dK and dV). Inputs in
// bf16/fp16 are exact in fp32, and every sum is in fp32. Tiles that the mask empties entirely are
// skipped, exactly: their P and dS are zero.
#include "selftest/reference.hpp"

namespace selftest {

const char* const k_reference_common = R"CUDA(
typedef unsigned long long u64;
typedef long long i64;

#define BIG (1LL << 40)

struct Operand {
  u64 ptr;          // element 0 (byte address)
  i64 sb, sh, sz;   // offset of batch b, of head h / head_div, of the chunk's z-th head
  i64 rs, cs;       // element (r, c) at r * rs + c * cs
  i64 head_div;     // 1, or the GQA group size for K and V
  i64 kind;         // 0 fp32, 1 bf16, 2 fp16
};

struct GemmParams {
  Operand a, b, c;  // C (fp32, M x N) = alpha A (M x K) B (K x N)
  i64 M, N, K;
  i64 heads, z_first; // the chunk's z-th head is global head g = z_first + z: b = g / heads, h = g % heads
  i64 mode;           // 0 store, 1 atomic add, 2 store, -inf outside the band (scores)
  double alpha;
  i64 band_lo, band_hi; // only k - m in [band_lo, band_hi] can be non-zero in A
  i64 out_lo, out_hi;   // only n - m in [out_lo, out_hi] of C matter
};

__device__ __forceinline__ float bf16_value(unsigned short h) { return __int_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ float fp16_value(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ float load16(const Operand& o, i64 index) {
  unsigned short h = ((const unsigned short*)o.ptr)[index];
  return o.kind == 1 ? bf16_value(h) : fp16_value(h);
}
__device__ __forceinline__ i64 head_offset(const Operand& o, i64 b, i64 h, i64 z) {
  return b * o.sb + (h / o.head_div) * o.sh + z * o.sz;
}

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : (is_max ? -__int_as_float(0x7f800000) : 0.0f);
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  return v;
}

// Rows of scores (-inf where masked) into probabilities, in place. Grid: (rows, heads of the chunk).
extern "C" __global__ void __launch_bounds__(256) nvte_ref_softmax(u64 scores, i64 row_stride, i64 head_stride, i64 cols) {
  float* s = (float*)scores + blockIdx.y * head_stride + blockIdx.x * row_stride;
  float top = -__int_as_float(0x7f800000);
  for (i64 j = threadIdx.x; j < cols; j += blockDim.x) top = fmaxf(top, s[j]);
  top = block_reduce(top, true);
  float sum = 0.0f;
  if (top > -__int_as_float(0x7f800000)) {
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(s[j] - top);
  }
  sum = block_reduce(sum, false);
  for (i64 j = threadIdx.x; j < cols; j += blockDim.x) s[j] = sum > 0.0f ? expf(s[j] - top) / sum : 0.0f;
}

// dsum[g][i] = sum_d dO[b, h, i, d] * O[g][i][d] (O the fp32 reference, [rows][dim]). Grid: (rows, heads).
extern "C" __global__ void __launch_bounds__(128) nvte_ref_rowdot(Operand d_o, u64 o, u64 dsum, i64 rows, i64 dim, i64 heads) {
  const i64 g = blockIdx.y, b = g / heads, h = g % heads, i = blockIdx.x;
  const float* orow = (const float*)o + (g * rows + i) * dim;
  i64 base = head_offset(d_o, b, h, 0) + i * d_o.rs;
  float v = 0.0f;
  for (i64 d = threadIdx.x; d < dim; d += blockDim.x) v += load16(d_o, base + d * d_o.cs) * orow[d];
  v = block_reduce(v, false);
  if (threadIdx.x == 0) ((float*)dsum)[g * rows + i] = v;
}

// dS = P (dP - dsum_i) scale, in place of dP, for a chunk [heads][rows][cols] starting at row r0 of
// global head z_first; zero wherever P is (the mask), whatever dP holds there.
extern "C" __global__ void nvte_ref_dsoftmax(u64 dp, u64 p, u64 dsum, i64 heads_in_chunk, i64 rows, i64 cols,
                                             i64 z_first, i64 r0, i64 seq_q, float scale) {
  const i64 n = heads_in_chunk * rows * cols;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {
    float pe = ((const float*)p)[e];
    i64 z = e / (rows * cols), i = (e / cols) % rows;
    float d = ((const float*)dsum)[(z_first + z) * seq_q + r0 + i];
    ((float*)dp)[e] = pe == 0.0f ? 0.0f : pe * (((float*)dp)[e] - d) * scale;
  }
}

// Reproducible inputs k / 256 for k in [-256, 256): exact in bf16 and fp16.
extern "C" __global__ void nvte_ref_fill(u64 out, i64 n, u64 seed, i64 kind) {
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {
    u64 x = seed + (u64)e * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    int k = (int)(x >> 55) - 256;
    unsigned short bits = 0;
    if (k != 0) {
      unsigned f = __float_as_uint((float)k / 256.0f);
      bits = kind == 1 ? (unsigned short)(f >> 16)
                       : (unsigned short)(((f >> 16) & 0x8000u) | ((((f >> 23) & 0xffu) - 112u) << 10) | ((f >> 13) & 0x3ffu));
    }
    ((unsigned short*)out)[e] = bits;
  }
}

struct Partial {
  double max_diff, max_ref, got, want;
  i64 worst, violations, nonfinite, pad;
};

// A 16-bit tensor [d0][d1][d2][d3] (strided view) against its fp32 reference (contiguous, same
// dims): the largest difference and where, the largest reference value, elements beyond
// atol + rtol |ref|, non-finite values. One Partial per block; the host reduces them.
extern "C" __global__ void __launch_bounds__(256) nvte_ref_compare(u64 got, i64 kind, i64 s0, i64 s1, i64 s2, i64 s3, i64 d0,
                                                                   i64 d1, i64 d2, i64 d3, u64 ref, double atol, double rtol,
                                                                   u64 partials) {
  __shared__ double diffs[256], refs[256];
  __shared__ i64 where[256], counts[256], bad[256];
  const i64 n = d0 * d1 * d2 * d3;
  Operand o;
  o.ptr = got;
  o.kind = kind;
  double max_diff = -1.0, max_ref = 0.0;
  i64 worst = -1, violations = 0, nonfinite = 0;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {
    i64 i3 = e % d3, i2 = (e / d3) % d2, i1 = (e / (d3 * d2)) % d1, i0 = e / (d3 * d2 * d1);
    float g = load16(o, i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3);
    float w = ((const float*)ref)[e];
    double diff = (isfinite(g) && isfinite(w)) ? fabs((double)g - (double)w) : __longlong_as_double(0x7ff0000000000000LL);
    if (!isfinite(g)) ++nonfinite;
    if (diff > atol + rtol * fabs((double)w)) ++violations;
    if (diff > max_diff) {
      max_diff = diff;
      worst = e;
    }
    max_ref = fmax(max_ref, isfinite(w) ? fabs((double)w) : 0.0);
  }
  int t = threadIdx.x;
  diffs[t] = max_diff;
  refs[t] = max_ref;
  where[t] = worst;
  counts[t] = violations;
  bad[t] = nonfinite;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) {
      if (diffs[t + stride] > diffs[t]) {
        diffs[t] = diffs[t + stride];
        where[t] = where[t + stride];
      }
      refs[t] = fmax(refs[t], refs[t + stride]);
      counts[t] += counts[t + stride];
      bad[t] += bad[t + stride];
    }
    __syncthreads();
  }
  if (t == 0) {
    Partial out;
    out.max_diff = diffs[0];
    out.max_ref = refs[0];
    out.worst = where[0];
    out.violations = counts[0];
    out.nonfinite = bad[0];
    out.got = 0.0;
    out.want = 0.0;
    out.pad = 0;
    if (where[0] >= 0) {
      i64 e = where[0];
      i64 i3 = e % d3, i2 = (e / d3) % d2, i1 = (e / (d3 * d2)) % d1, i0 = e / (d3 * d2 * d1);
      out.got = load16(o, i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3);
      out.want = ((const float*)ref)[e];
    }
    ((Partial*)partials)[blockIdx.x] = out;
  }
}
)CUDA";

const char* const k_reference_gemm_tiled = R"CUDA(
#define BM 128
#define BN 128
#define BK 8
#define PAD 4

// 128 x 128 tiles of C, 8 x 8 per thread, A and B through shared memory, double-buffered. One
// kernel for every product: A is fp32 (P, dS) or 16-bit (Q, dO), which only the loads see;
// B is always a 16-bit input. One instantiation keeps NVRTC's compile short.
extern "C" __global__ void __launch_bounds__(256) nvte_ref_gemm(GemmParams p) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];
  const i64 z = blockIdx.z, g = p.z_first + z, b = g / p.heads, h = g % p.heads;
  const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  float* C = (float*)p.c.ptr + head_offset(p.c, b, h, z);

  if (n0 - (m0 + BM - 1) > p.out_hi || (n0 + BN - 1) - m0 < p.out_lo) {
    if (p.mode == 2) {
      for (int e = tid; e < BM * BN; e += 256) {
        i64 m = m0 + e / BN, n = n0 + e % BN;
        if (m < p.M && n < p.N) C[m * p.c.rs + n * p.c.cs] = -__int_as_float(0x7f800000);
      }
    }
    return;
  }
  i64 kb = 0, ke = p.K;
  if (p.band_lo > -BIG && m0 + p.band_lo > 0) kb = m0 + p.band_lo;
  if (p.band_hi < BIG && m0 + BM + p.band_hi < p.K) ke = m0 + BM + p.band_hi;
  kb = kb / BK * BK;

  const i64 a_off = head_offset(p.a, b, h, z), b_off = head_offset(p.b, b, h, z);
  const bool a_m_fast = p.a.rs == 1, b_n_fast = p.b.cs == 1;
  float ra[4], rb[4];
  auto fetch = [&](i64 k0) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int e = tid + 256 * r;
      int m = a_m_fast ? e % BM : e / BK, k = a_m_fast ? e / BM : e % BK;
      i64 gm = m0 + m, gk = k0 + k;
      float v = 0.0f;
      if (gm < p.M && gk < p.K) {
        i64 index = a_off + gm * p.a.rs + gk * p.a.cs;
        v = p.a.kind == 0 ? ((const float*)p.a.ptr)[index] : load16(p.a, index);
      }
      ra[r] = v;
      int n = b_n_fast ? e % BN : e / BK, kk = b_n_fast ? e / BN : e % BK;
      i64 gn = n0 + n, gkk = k0 + kk;
      rb[r] = gn < p.N && gkk < p.K ? load16(p.b, b_off + gkk * p.b.rs + gn * p.b.cs) : 0.0f;
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int e = tid + 256 * r;
      int m = a_m_fast ? e % BM : e / BK, k = a_m_fast ? e / BM : e % BK;
      As[buf][k][m] = ra[r];
      int n = b_n_fast ? e % BN : e / BK, kk = b_n_fast ? e / BN : e % BK;
      Bs[buf][kk][n] = rb[r];
    }
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  int buf = 0;
  if (kb < ke) {
    fetch(kb);
    stash(0);
    __syncthreads();
  }
  for (i64 k0 = kb; k0 < ke; k0 += BK) {
    bool more = k0 + BK < ke;
    if (more) fetch(k0 + BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float4 a0 = *(const float4*)&As[buf][k][ty * 8], a1 = *(const float4*)&As[buf][k][ty * 8 + 4];
      float4 b0 = *(const float4*)&Bs[buf][k][tx * 8], b1 = *(const float4*)&Bs[buf][k][tx * 8 + 4];
      float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (more) {
      stash(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }

  const float alpha = (float)p.alpha, minus_inf = -__int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    i64 m = m0 + ty * 8 + i;
    if (m >= p.M) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      i64 n = n0 + tx * 8 + j;
      if (n >= p.N) continue;
      float v = alpha * acc[i][j];
      float* out = C + m * p.c.rs + n * p.c.cs;
      if (p.mode == 1) {
        atomicAdd(out, v);
      } else if (p.mode == 2) {
        *out = (n - m < p.out_lo || n - m > p.out_hi) ? minus_inf : v;
      } else {
        *out = v;
      }
    }
  }
}


)CUDA";

const char* const k_reference_gemm_simple = R"CUDA(
// One element of C per thread, 16 x 16 per block, straight from global memory (the caches): a few
// lines for NVRTC to compile, for shapes whose reference is small enough not to need the tiles.
extern "C" __global__ void __launch_bounds__(256) nvte_ref_gemm(GemmParams p) {
  const i64 z = blockIdx.z, g = p.z_first + z, b = g / p.heads, h = g % p.heads;
  const i64 m = (i64)blockIdx.y * 16 + threadIdx.x / 16, n = (i64)blockIdx.x * 16 + threadIdx.x % 16;
  if (m >= p.M || n >= p.N) return;
  float* out = (float*)p.c.ptr + head_offset(p.c, b, h, z) + m * p.c.rs + n * p.c.cs;
  if (n - m < p.out_lo || n - m > p.out_hi) {
    if (p.mode == 2) *out = -__int_as_float(0x7f800000);
    return;
  }
  i64 kb = 0, ke = p.K;
  if (p.band_lo > -BIG && m + p.band_lo > 0) kb = m + p.band_lo;
  if (p.band_hi < BIG && m + 1 + p.band_hi < p.K) ke = m + 1 + p.band_hi;
  const i64 a_row = head_offset(p.a, b, h, z) + m * p.a.rs, b_col = head_offset(p.b, b, h, z) + n * p.b.cs;
  float acc = 0.0f;
  for (i64 k = kb; k < ke; ++k) {
    float a = p.a.kind == 0 ? ((const float*)p.a.ptr)[a_row + k * p.a.cs] : load16(p.a, a_row + k * p.a.cs);
    acc = fmaf(a, load16(p.b, b_col + k * p.b.rs), acc);
  }
  float v = (float)p.alpha * acc;
  if (p.mode == 1) atomicAdd(out, v);
  else *out = v;
}
)CUDA";

} // namespace selftest
