/* cannl's packed, register-tiled f32 matmul: the kernel library that generated C calls for a
   TileMma (see src/codegen/c/simd.h for the contract and src/codegen/c/sgemm_kernels.cpp for
   how it is configured).

   The cc backend compiles this file once per vector width, blocking and compiler flags into its
   compile cache, prefixed by the configuration macros below; generated routines declare the two
   exported functions and link this library. Everything else here is static.

     CANNL_VECTOR_BYTES  16, 32 or 64: f32 lanes per vector register (4, 8, 16)
     CANNL_MR, CANNL_NV  the register tile: MR rows x NV vectors of C, across the whole k loop
     CANNL_KC, CANNL_NC, CANNL_MC  cache blocks: k steps per packed panel, B columns, A rows
     CANNL_NARROW_MR     the tile's rows when C is at most one vector wide (NV 1, MR * NV rows)
     CANNL_EDGE_KERNELS  1: kernels for a last row panel of 4 or 8 rows (needs MR 9 to 12)

   Exported, with L the lane count:
     int cannl_sgemm_xL(m, n, k, d, drs, dcs, a, ars, acs, b, brs, bcs, fused, zero, threads)
     int cannl_sgemm_xL_nd(nr, rext, rd, ra, nc, cext, cd, cb, nk, kext, ka, kb, d, a, b,
                           fused, zero, threads)
   Both return 0, or nonzero when a packing buffer could not be allocated (d is then partly
   updated). Each cell of d takes its k updates in increasing order, each one fma (fused) or a
   rounded multiply then a rounded add, exactly like the scalar nest: the result does not depend
   on the blocking, the vector width or the team. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#if !defined(CANNL_VECTOR_BYTES) || !defined(CANNL_MR) || !defined(CANNL_NV) || !defined(CANNL_KC) || \
    !defined(CANNL_NC) || !defined(CANNL_MC) || !defined(CANNL_NARROW_MR) || !defined(CANNL_EDGE_KERNELS)
#error "cannl_sgemm.c: define CANNL_VECTOR_BYTES, CANNL_MR, CANNL_NV, CANNL_KC, CANNL_NC, CANNL_MC, CANNL_NARROW_MR and CANNL_EDGE_KERNELS"
#endif

/* The lane count as a literal: it names the exported functions and sizes the splat. */
#if CANNL_VECTOR_BYTES == 16
#define CANNL_LANES 4
#elif CANNL_VECTOR_BYTES == 32
#define CANNL_LANES 8
#elif CANNL_VECTOR_BYTES == 64
#define CANNL_LANES 16
#else
#error "cannl_sgemm.c: CANNL_VECTOR_BYTES must be 16, 32 or 64"
#endif

#if CANNL_NARROW_MR != CANNL_MR * CANNL_NV
#error "cannl_sgemm.c: the narrow tile has one vector column and MR * NV rows"
#endif
#if CANNL_EDGE_KERNELS && (CANNL_MR <= 8 || CANNL_MR > 12)
#error "cannl_sgemm.c: the 4- and 8-row edge kernels are remainders of 9- to 12-row panels"
#endif

#define CANNL_CAT_(a, b) a##b
#define CANNL_CAT(a, b) CANNL_CAT_(a, b)
#define CANNL_SGEMM CANNL_CAT(cannl_sgemm_x, CANNL_LANES)
#define CANNL_SGEMM_ND CANNL_CAT(CANNL_SGEMM, _nd)
#define CANNL_EXPORT __attribute__((visibility("default")))

/* The wide tile is MR x NR, the narrow one NARROW_MR x NARROW_NR: the same number of cells. */
enum {
  MR = CANNL_MR,
  NR = CANNL_NV * CANNL_LANES,
  NARROW_MR = CANNL_NARROW_MR,
  NARROW_NR = CANNL_LANES,
  KC = CANNL_KC,
  NC = CANNL_NC,
  MC = CANNL_MC,
  TILE_CELLS = CANNL_MR * CANNL_NV * CANNL_LANES
};

/* ---- Vectors: GCC/Clang vector extensions; 64-byte vectors are emulated where the target has
   no such registers, so every width builds everywhere. ---- */

typedef float cannl_v __attribute__((vector_size(CANNL_VECTOR_BYTES)));
/* Unaligned, aliasing view for loads and stores at any float address. */
typedef float cannl_vu __attribute__((vector_size(CANNL_VECTOR_BYTES), aligned(4), __may_alias__));

static inline cannl_v cannl_splat(float x) {
#if CANNL_LANES == 4
  return (cannl_v){x, x, x, x};
#elif CANNL_LANES == 8
  return (cannl_v){x, x, x, x, x, x, x, x};
#else
  return (cannl_v){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#endif
}

/* a * b + c rounded once, on every target: the intrinsic where the target has it, else fmaf per
   lane. */
static inline cannl_v cannl_fma(cannl_v a, cannl_v b, cannl_v c) {
#if CANNL_VECTOR_BYTES == 64 && defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif CANNL_VECTOR_BYTES == 32 && defined(__AVX__) && defined(__FMA__)
  return _mm256_fmadd_ps(a, b, c);
#elif CANNL_VECTOR_BYTES == 16 && defined(__FMA__)
  return _mm_fmadd_ps(a, b, c);
#elif CANNL_VECTOR_BYTES == 16 && defined(__ARM_FEATURE_FMA)
  return vfmaq_f32(c, a, b);
#else
  cannl_v r;
  for (int l = 0; l < CANNL_LANES; ++l) r[l] = fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

/* ---- The micro-kernels. Every accumulator is a named variable (c<row>_<vector>), written out by
   preprocessor repetition, so that it lives in a register across the whole k loop. ---- */

#define CANNL_REP_1(F, x) F(0, x)
#define CANNL_REP_2(F, x) CANNL_REP_1(F, x) F(1, x)
#define CANNL_REP_3(F, x) CANNL_REP_2(F, x) F(2, x)
#define CANNL_REP_4(F, x) CANNL_REP_3(F, x) F(3, x)
#define CANNL_REP_5(F, x) CANNL_REP_4(F, x) F(4, x)
#define CANNL_REP_6(F, x) CANNL_REP_5(F, x) F(5, x)
#define CANNL_REP_7(F, x) CANNL_REP_6(F, x) F(6, x)
#define CANNL_REP_8(F, x) CANNL_REP_7(F, x) F(7, x)
#define CANNL_REP_9(F, x) CANNL_REP_8(F, x) F(8, x)
#define CANNL_REP_10(F, x) CANNL_REP_9(F, x) F(9, x)
#define CANNL_REP_11(F, x) CANNL_REP_10(F, x) F(10, x)
#define CANNL_REP_12(F, x) CANNL_REP_11(F, x) F(11, x)
#define CANNL_REP_13(F, x) CANNL_REP_12(F, x) F(12, x)
#define CANNL_REP_14(F, x) CANNL_REP_13(F, x) F(13, x)
#define CANNL_REP_15(F, x) CANNL_REP_14(F, x) F(14, x)
#define CANNL_REP_16(F, x) CANNL_REP_15(F, x) F(15, x)
#define CANNL_REP_17(F, x) CANNL_REP_16(F, x) F(16, x)
#define CANNL_REP_18(F, x) CANNL_REP_17(F, x) F(17, x)
#define CANNL_REP_19(F, x) CANNL_REP_18(F, x) F(18, x)
#define CANNL_REP_20(F, x) CANNL_REP_19(F, x) F(19, x)
#define CANNL_REP_21(F, x) CANNL_REP_20(F, x) F(20, x)
#define CANNL_REP_22(F, x) CANNL_REP_21(F, x) F(21, x)
#define CANNL_REP_23(F, x) CANNL_REP_22(F, x) F(22, x)
#define CANNL_REP_24(F, x) CANNL_REP_23(F, x) F(23, x)
#define CANNL_REP_25(F, x) CANNL_REP_24(F, x) F(24, x)
#define CANNL_REP_26(F, x) CANNL_REP_25(F, x) F(25, x)
#define CANNL_REP_27(F, x) CANNL_REP_26(F, x) F(26, x)
#define CANNL_REP_28(F, x) CANNL_REP_27(F, x) F(27, x)
#define CANNL_REP_29(F, x) CANNL_REP_28(F, x) F(28, x)
#define CANNL_REP_30(F, x) CANNL_REP_29(F, x) F(29, x)
#define CANNL_REP_31(F, x) CANNL_REP_30(F, x) F(30, x)
#define CANNL_REP_32(F, x) CANNL_REP_31(F, x) F(31, x)
/* F(r, x) for r = 0 .. rows-1 (rows a literal up to 32). */
#define CANNL_ROWS(rows, F, x) CANNL_CAT(CANNL_REP_, rows)(F, x)

/* G(x, v) for v = 0 .. nv-1: a second family, since a macro does not expand inside itself. */
#define CANNL_VEC_1(G, x) G(x, 0)
#define CANNL_VEC_2(G, x) CANNL_VEC_1(G, x) G(x, 1)
#define CANNL_VEC_3(G, x) CANNL_VEC_2(G, x) G(x, 2)
#define CANNL_VEC_4(G, x) CANNL_VEC_3(G, x) G(x, 3)
#define CANNL_VCAT_(a, b) a##b
#define CANNL_VCAT(a, b) CANNL_VCAT_(a, b)
#define CANNL_VECTORS(nv, G, x) CANNL_VCAT(CANNL_VEC_, nv)(G, x)

#define CANNL_ACC(r, v) c##r##_##v
#define CANNL_DECLARE(r, v) cannl_v CANNL_ACC(r, v);
#define CANNL_ZERO(r, v) CANNL_ACC(r, v) = cannl_splat(0.0f);
#define CANNL_LOAD(r, v) CANNL_ACC(r, v) = *(const cannl_vu *)(c + r * ldc + v * CANNL_LANES);
#define CANNL_STORE(r, v) *(cannl_vu *)(c + r * ldc + v * CANNL_LANES) = CANNL_ACC(r, v);
#define CANNL_LOAD_B(q, v) const cannl_v b##v = *(const cannl_vu *)(bp + q * ldb + v * CANNL_LANES);
#define CANNL_FMA(r, v) CANNL_ACC(r, v) = cannl_fma(a, b##v, CANNL_ACC(r, v));
#define CANNL_MUL_ADD(r, v) CANNL_ACC(r, v) = CANNL_ACC(r, v) + a * b##v;

#define CANNL_ROW_DECLARE(r, nv) CANNL_VECTORS(nv, CANNL_DECLARE, r)
#define CANNL_ROW_ZERO(r, nv) CANNL_VECTORS(nv, CANNL_ZERO, r)
#define CANNL_ROW_LOAD(r, nv) CANNL_VECTORS(nv, CANNL_LOAD, r)
#define CANNL_ROW_STORE(r, nv) CANNL_VECTORS(nv, CANNL_STORE, r)
/* One rank-1 update of a row: A's element broadcast, times each B vector. */
#define CANNL_ROW_FMA(r, nv) { const cannl_v a = cannl_splat(ap[q * PANEL + r]); CANNL_VECTORS(nv, CANNL_FMA, r) }
#define CANNL_ROW_MUL_ADD(r, nv) { const cannl_v a = cannl_splat(ap[q * PANEL + r]); CANNL_VECTORS(nv, CANNL_MUL_ADD, r) }

/* C[rows x nv vectors] += A panel * B panel over kc, C held in registers; ROW_UPDATE is
   CANNL_ROW_FMA (fused multiply-add) or CANNL_ROW_MUL_ADD (multiply, then add: two roundings).
   A panels hold `panel` rows per step (rows below it: a last panel's kernel, same layout); B
   rows are ldb apart (a packed panel's width, or a row-major B read in place). zero: C is zero,
   so the registers start at +0 without reading it (the same bits, and no wait on lines that are
   not cached yet). */
#define CANNL_DEFINE_TILE(name, rows, nv, panel, ROW_UPDATE)                                          \
  static inline void name(int64_t kc, const float *restrict ap, const float *restrict bp, int64_t ldb, \
                          float *restrict c, int64_t ldc, int zero) {                                 \
    enum { PANEL = panel };                                                                            \
    CANNL_ROWS(rows, CANNL_ROW_DECLARE, nv)                                                            \
    if (zero) {                                                                                        \
      CANNL_ROWS(rows, CANNL_ROW_ZERO, nv)                                                             \
    } else {                                                                                           \
      CANNL_ROWS(rows, CANNL_ROW_LOAD, nv)                                                             \
    }                                                                                                  \
    for (int64_t q = 0; q < kc; ++q) {                                                                 \
      CANNL_VECTORS(nv, CANNL_LOAD_B, q)                                                               \
      CANNL_ROWS(rows, ROW_UPDATE, nv)                                                                 \
    }                                                                                                  \
    CANNL_ROWS(rows, CANNL_ROW_STORE, nv)                                                              \
  }

CANNL_DEFINE_TILE(tile_mul_add, CANNL_MR, CANNL_NV, CANNL_MR, CANNL_ROW_MUL_ADD)
CANNL_DEFINE_TILE(tile_fma, CANNL_MR, CANNL_NV, CANNL_MR, CANNL_ROW_FMA)
CANNL_DEFINE_TILE(tile_mul_add_narrow, CANNL_NARROW_MR, 1, CANNL_NARROW_MR, CANNL_ROW_MUL_ADD)
CANNL_DEFINE_TILE(tile_fma_narrow, CANNL_NARROW_MR, 1, CANNL_NARROW_MR, CANNL_ROW_FMA)
#if CANNL_EDGE_KERNELS
CANNL_DEFINE_TILE(tile_mul_add_r4, 4, CANNL_NV, CANNL_MR, CANNL_ROW_MUL_ADD)
CANNL_DEFINE_TILE(tile_fma_r4, 4, CANNL_NV, CANNL_MR, CANNL_ROW_FMA)
CANNL_DEFINE_TILE(tile_mul_add_r8, 8, CANNL_NV, CANNL_MR, CANNL_ROW_MUL_ADD)
CANNL_DEFINE_TILE(tile_fma_r8, 8, CANNL_NV, CANNL_MR, CANNL_ROW_FMA)
#endif

/* ---- Packing. ---- */

/* The common difference of x[0..n), n >= 2, when its entries are evenly spaced; else 0. */
static inline int64_t spacing(const int64_t *x, int64_t n) {
  const int64_t d = x[1] - x[0];
  for (int64_t l = 2; l < n; ++l)
    if (x[l] - x[l - 1] != d) return 0;
  return d;
}

/* Whether x[0..n) counts up by one from x[0]: lanes or steps that run on in memory. */
static inline int consecutive(const int64_t *x, int64_t n) { return n < 2 || spacing(x, n) == 1; }

/* `panels` whole panels of `width` lanes whose lanes run on from src: dst[p * width * kc + q *
   width ..] = src[step[q] + p * width ..], one source row at a time (each read once, in order,
   rather than once per panel at a stride the prefetchers miss). */
static inline void copy_block(float *dst, const float *src, const int64_t *step, int64_t kc, int64_t panels,
                              int64_t width) {
  for (int64_t q = 0; q < kc; ++q)
    for (int64_t p = 0; p < panels; ++p)
      memcpy(dst + p * width * kc + q * width, src + step[q] + p * width, (size_t)width * sizeof(float));
}

/* copy_block with the widths the driver uses as literals, so the row copies inline rather than
   call the library. Returns 0 (nothing copied) for another width. */
static inline int copy_panels(float *dst, const float *src, const int64_t *step, int64_t kc, int64_t panels,
                              int64_t width) {
  switch (width) {
    case MR: copy_block(dst, src, step, kc, panels, MR); return 1;
    case NR: copy_block(dst, src, step, kc, panels, NR); return 1;
    case NARROW_MR: copy_block(dst, src, step, kc, panels, NARROW_MR); return 1;
    case NARROW_NR: copy_block(dst, src, step, kc, panels, NARROW_NR); return 1;
    default: return 0;
  }
}

#if defined(__AVX512F__)
/* dst[x * width + l] = src[lane[l] + x] for x < steps (at most 16), l < store, where rows l >=
   live read as zero: a 16 x 16 register transpose in four shuffle rounds, the loads masked to
   `steps` floats (nothing past them is read). Panels whose steps run on for a while (a row-major
   A, a transposed B, an im2col's channels within one window tap) take it instead of a scalar
   gather. */
static inline void transpose16(float *dst, int64_t width, const float *src, const int64_t *lane, int64_t live,
                               int64_t store, int64_t steps) {
  const __mmask16 in_run = (__mmask16)((1u << steps) - 1u);
  __m512 r[16], t[16];
  for (int l = 0; l < 16; ++l) r[l] = l < live ? _mm512_maskz_loadu_ps(in_run, src + lane[l]) : _mm512_setzero_ps();
  for (int l = 0; l < 16; l += 2) { /* pairs of rows interleaved */
    t[l] = _mm512_unpacklo_ps(r[l], r[l + 1]);
    t[l + 1] = _mm512_unpackhi_ps(r[l], r[l + 1]);
  }
  for (int g = 0; g < 16; g += 4) { /* r[g + e]: column 4q + e of rows g..g+3 in 128-bit lane q */
    const __m512d t0 = _mm512_castps_pd(t[g]), t1 = _mm512_castps_pd(t[g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[g + 2]), t3 = _mm512_castps_pd(t[g + 3]);
    r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int h = 0; h < 16; h += 8) { /* 128-bit lanes regrouped across rows h..h+7 */
    for (int e = 0; e < 4; ++e) {
      t[h + e] = _mm512_shuffle_f32x4(r[h + e], r[h + 4 + e], 0x88);
      t[h + 4 + e] = _mm512_shuffle_f32x4(r[h + e], r[h + 4 + e], 0xdd);
    }
  }
  const __mmask16 keep = (__mmask16)((1u << store) - 1u);
  for (int e = 0; e < 8; ++e) { /* column e and e + 8, all 16 rows */
    if (e < steps) _mm512_mask_storeu_ps(dst + e * width, keep, _mm512_shuffle_f32x4(t[e], t[8 + e], 0x88));
    if (e + 8 < steps) _mm512_mask_storeu_ps(dst + (e + 8) * width, keep, _mm512_shuffle_f32x4(t[e], t[8 + e], 0xdd));
  }
}
#endif

/* dst[0..n) = src[0..n) for a short run: masked vector moves where the target has them (no
   read past the run). */
static inline void copy_run(float *dst, const float *src, int64_t n) {
#if defined(__AVX512F__)
  for (; n >= 16; n -= 16, src += 16, dst += 16) _mm512_storeu_ps(dst, _mm512_loadu_ps(src));
  if (n > 0) {
    const __mmask16 live = (__mmask16)((1u << n) - 1u);
    _mm512_mask_storeu_ps(dst, live, _mm512_maskz_loadu_ps(live, src));
  }
#else
  for (int64_t x = 0; x < n; ++x) dst[x] = src[x];
#endif
}

/* How many entries of x[0..n), at most `cap`, count up by one from x[0]. */
static inline int64_t run_length(const int64_t *x, int64_t n, int64_t cap) {
  int64_t r = 1;
  while (r < n && r < cap && x[r] == x[0] + r) ++r;
  return r;
}

/* Lanes of a panel split into runs that count up by one (an im2col's window taps: the channels
   of one tap, then a jump): each run copied per step instead of a gather per lane. */
enum { MAX_LANE_RUNS = 64 };
typedef struct {
  int64_t count, first[MAX_LANE_RUNS], length[MAX_LANE_RUNS];
} lane_runs;

/* The runs of lane[0..live); 0 runs when there are more than MAX_LANE_RUNS or they are too short
   (fewer than 4 lanes on average) for copies to beat the gather. */
static inline void find_lane_runs(lane_runs *runs, const int64_t *lane, int64_t live) {
  runs->count = 0;
  for (int64_t l = 0; l < live;) {
    if (runs->count == MAX_LANE_RUNS) { runs->count = 0; return; }
    const int64_t n = run_length(lane + l, live - l, live);
    runs->first[runs->count] = l;
    runs->length[runs->count++] = n;
    l += n;
  }
  if (runs->count * 4 > live) runs->count = 0;
}

/* One zero-padded panel: dst[q * width + l] = src[lane[l] + step[q]] for the `valid` first
   lanes l < width, 0 beyond, over q < kc (A panels: lanes are rows; B panels: columns). */
static inline void pack(float *dst, const float *src, int64_t width, int64_t valid, int64_t kc,
                        const int64_t *lane, const int64_t *step) {
  const int64_t live = valid < width ? valid : width;
  const int contiguous = consecutive(lane, live);
  if (contiguous && live == width && copy_panels(dst, src + lane[0], step, kc, 1, width)) return;
  if (contiguous) {
    for (int64_t q = 0; q < kc; ++q) {
      memcpy(dst + q * width, src + lane[0] + step[q], (size_t)live * sizeof(float));
      if (live < width) memset(dst + q * width + live, 0, (size_t)(width - live) * sizeof(float));
    }
    return;
  }
  lane_runs runs;
  find_lane_runs(&runs, lane, live);
  if (runs.count > 0) {
    for (int64_t q = 0; q < kc; ++q) {
      const float *s = src + step[q];
      float *t = dst + q * width;
      for (int64_t g = 0; g < runs.count; ++g) copy_run(t + runs.first[g], s + lane[runs.first[g]], runs.length[g]);
      for (int64_t l = live; l < width; ++l) t[l] = 0.0f;
    }
    return;
  }
  for (int64_t q = 0; q < kc;) {
#if defined(__AVX512F__)
    const int64_t steps = run_length(step + q, kc - q, 16);
    if (steps >= 4) { /* up to 16 steps x 16 lanes transposed in registers */
      for (int64_t l = 0; l < width; l += 16)
        transpose16(dst + q * width + l, width, src + step[q], lane + l, live - l < 0 ? 0 : live - l,
                    width - l < 16 ? width - l : 16, steps);
      q += steps;
      continue;
    }
#endif
    const float *s = src + step[q];
    float *t = dst + q * width;
    for (int64_t l = 0; l < live; ++l) t[l] = s[lane[l]];
    for (int64_t l = live; l < width; ++l) t[l] = 0.0f;
    ++q;
  }
}

/* The panels of a block of `valid` lanes, `width` lanes each (the last zero-padded), one after
   another: the whole ones copied together when the lanes run on, else pack per panel. */
static inline void pack_block(float *dst, const float *src, int64_t width, int64_t valid, int64_t kc,
                              const int64_t *lane, const int64_t *step) {
  const int64_t panels = (valid + width - 1) / width, whole = valid / width;
  int64_t p = whole > 1 && consecutive(lane, valid) && copy_panels(dst, src + lane[0], step, kc, whole, width)
                  ? whole
                  : 0;
  for (; p < panels; ++p) pack(dst + p * width * kc, src, width, valid - p * width, kc, lane + p * width, step);
}

/* The stride between B's rows when the block's columns run on (lanes contiguous) and its steps
   are evenly spaced, so its whole panels can be read in place; else 0 (pack them). */
static inline int64_t rows_stride(const int64_t *lane, int64_t valid, const int64_t *step, int64_t kc) {
  if (!consecutive(lane, valid)) return 0;
  return kc < 2 ? 1 : spacing(step, kc);
}

/* The row stride of a full register tile of C at rows r[0..mr) and columns c[0..nr) when its
   columns are contiguous and its rows evenly spaced (the micro-kernel stores it in place), else 0. */
static inline int64_t tile_ldc(const int64_t *r, const int64_t *c, int64_t rows, int64_t cols, int64_t mr,
                               int64_t nr) {
  return rows == mr && cols == nr && consecutive(c, nr) ? spacing(r, mr) : 0;
}

/* ---- The blocked driver (GotoBLAS/BLIS loop order with the roles of A and B swapped so vectors
   run along C's rows): i3 (MC rows) > p (KC) > pack A > j2 (NC columns) > pack B > ir > jr > tile. ---- */

/* One register tile of the shape (narrow or wide, `rows` 4 or 8: the edge kernels). */
static inline __attribute__((always_inline)) void tile(int narrow, int rows, int fused, int64_t kc,
                                                       const float *ap, const float *bp, int64_t ldb, float *c,
                                                       int64_t ldc, int zero) {
  if (narrow) {
    if (fused) tile_fma_narrow(kc, ap, bp, ldb, c, ldc, zero);
    else tile_mul_add_narrow(kc, ap, bp, ldb, c, ldc, zero);
#if CANNL_EDGE_KERNELS
  } else if (rows == 4) {
    if (fused) tile_fma_r4(kc, ap, bp, ldb, c, ldc, zero);
    else tile_mul_add_r4(kc, ap, bp, ldb, c, ldc, zero);
  } else if (rows == 8) {
    if (fused) tile_fma_r8(kc, ap, bp, ldb, c, ldc, zero);
    else tile_mul_add_r8(kc, ap, bp, ldb, c, ldc, zero);
#endif
  } else {
    (void)rows;
    if (fused) tile_fma(kc, ap, bp, ldb, c, ldc, zero);
    else tile_mul_add(kc, ap, bp, ldb, c, ldc, zero);
  }
}

/* d[dr[i] + dc[j]] += a[ar[i] + ak[p]] * b[bk[p] + bc[j]] over i < m, j < n, p < k (p increasing
   per cell) over packed panels, one thread, with the wide or the narrow tile (a constant where
   it is inlined, so each shape gets its own copy). The offsets are the tile's folded loops
   flattened. Returns nonzero when the packing buffers could not be allocated. */
static inline __attribute__((always_inline)) int rows_of_shape(
    int narrow, int64_t m, int64_t n, int64_t k, float *d, const int64_t *dr, const int64_t *dc, const float *a,
    const int64_t *ar, const int64_t *ak, const float *b, const int64_t *bk, const int64_t *bc, int fused,
    int zero) {
  const int64_t mr = narrow ? NARROW_MR : MR, nr = narrow ? NARROW_NR : NR;
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const int64_t mcap = ((m < MC ? m : MC) + mr - 1) / mr * mr;
  const int64_t ncap = ((n < NC ? n : NC) + nr - 1) / nr * nr;
  float *ap = (float *)aligned_alloc(64, (size_t)(mcap * KC) * sizeof(float));
  float *bp = (float *)aligned_alloc(64, (size_t)(ncap * KC) * sizeof(float));
  if (ap == NULL || bp == NULL) {
    free(ap);
    free(bp);
    return 1;
  }
  const int64_t ldc_all = m > 1 ? tile_ldc(dr, dc, m, n, m, n) : 0; /* every full tile's, when C is a plain matrix */
  for (int64_t i3 = 0; i3 < m; i3 += MC) {
    const int64_t mb = m - i3 < MC ? m - i3 : MC;
    const int64_t mpanels = (mb + mr - 1) / mr;
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t kc = k - p0 < KC ? k - p0 : KC;
      const int fresh = zero && p0 == 0; /* C starts at zero: set, not loaded */
      /* With all the columns in one block each row panel serves its tiles right after it is
         packed: packed then, it is still in the first-level cache (a convolution's im2col rows).
         Rows that run on in memory are still packed together, a source row at a time. */
      const int just_in_time = n <= NC && !consecutive(ar + i3, mb);
      if (!just_in_time) pack_block(ap, a, mr, mb, kc, ar + i3, ak + p0);
      for (int64_t j2 = 0; j2 < n; j2 += NC) {
        const int64_t nb = n - j2 < NC ? n - j2 : NC;
        const int64_t npanels = (nb + nr - 1) / nr;
        /* One row panel reads each B element once: whole panels B holds as rows are read in
           place rather than copied first (a weight gradient with few rows). */
        const int64_t ldb = mpanels == 1 ? rows_stride(bc + j2, nb, bk + p0, kc) : 0;
        if (ldb == 0) pack_block(bp, b, nr, nb, kc, bc + j2, bk + p0);
        else if (nb % nr != 0)
          pack(bp + (npanels - 1) * nr * kc, b, nr, nb % nr, kc, bc + j2 + (npanels - 1) * nr, bk + p0);
        for (int64_t ip = 0; ip < mpanels; ++ip) {
          const int64_t rows = mb - ip * mr < mr ? mb - ip * mr : mr;
          const int64_t *r = dr + i3 + ip * mr;
          const float *ai = ap + ip * mr * kc;
          if (just_in_time) pack(ap + ip * mr * kc, a, mr, mb - ip * mr, kc, ar + i3 + ip * mr, ak + p0);
          for (int64_t jp = 0; jp < npanels; ++jp) {
            const int64_t cols = nb - jp * nr < nr ? nb - jp * nr : nr;
            const int64_t *c = dc + j2 + jp * nr;
            const int in_place = ldb != 0 && cols == nr;
            const float *bj = in_place ? b + bk[p0] + bc[j2 + jp * nr] : bp + jp * nr * kc;
            const int64_t lb = in_place ? ldb : nr;
            int64_t ldc = rows == mr && cols == nr && ldc_all != 0 ? ldc_all : tile_ldc(r, c, rows, cols, mr, nr);
            if (ldc != 0) {
              tile(narrow, 0, fused, kc, ai, bj, lb, d + r[0] + c[0], ldc, fresh);
            } else if (CANNL_EDGE_KERNELS && !narrow && cols == nr && (rows == 4 || rows == 8) &&
                       (ldc = tile_ldc(r, c, rows, cols, rows, nr)) != 0) {
              /* The last row panel, 4 or 8 rows: its own kernel, in place. */
              tile(narrow, (int)rows, fused, kc, ai, bj, lb, d + r[0] + c[0], ldc, fresh);
            } else {
              /* Peeled edge (or scattered C): through a zero-padded tile. */
              float t[TILE_CELLS] __attribute__((aligned(64)));
              memset(t, 0, sizeof t);
              const int runs = consecutive(c, cols); /* the columns contiguous: each row one run */
              for (int64_t x = 0; x < rows && !fresh; ++x) {
                if (runs) memcpy(t + x * nr, d + r[x] + c[0], (size_t)cols * sizeof(float));
                else for (int64_t y = 0; y < cols; ++y) t[x * nr + y] = d[r[x] + c[y]];
              }
              tile(narrow, 0, fused, kc, ai, bj, lb, t, nr, 0);
              for (int64_t x = 0; x < rows; ++x) {
                if (runs) memcpy(d + r[x] + c[0], t + x * nr, (size_t)cols * sizeof(float));
                else for (int64_t y = 0; y < cols; ++y) d[r[x] + c[y]] = t[x * nr + y];
              }
            }
          }
        }
      }
    }
  }
  free(ap);
  free(bp);
  return 0;
}

typedef int (*rows_fn)(int64_t, int64_t, int64_t, float *, const int64_t *, const int64_t *, const float *,
                       const int64_t *, const int64_t *, const float *, const int64_t *, const int64_t *, int, int);

static int rows_wide(int64_t m, int64_t n, int64_t k, float *d, const int64_t *dr, const int64_t *dc,
                     const float *a, const int64_t *ar, const int64_t *ak, const float *b, const int64_t *bk,
                     const int64_t *bc, int fused, int zero) {
  return rows_of_shape(0, m, n, k, d, dr, dc, a, ar, ak, b, bk, bc, fused, zero);
}

static int rows_narrow(int64_t m, int64_t n, int64_t k, float *d, const int64_t *dr, const int64_t *dc,
                       const float *a, const int64_t *ar, const int64_t *ak, const float *b, const int64_t *bk,
                       const int64_t *bc, int fused, int zero) {
  return rows_of_shape(1, m, n, k, d, dr, dc, a, ar, ak, b, bk, bc, fused, zero);
}

/* The offsets of one folded loop group (extents outermost first) in two operands: u[r], v[r]
   for the row-major count r over the group. Returns the count. */
static inline int64_t offsets(int axes, const int64_t *extent, const int64_t *su, const int64_t *sv, int64_t *u,
                              int64_t *v) {
  int64_t count = 1;
  for (int x = 0; x < axes; ++x) count *= extent[x];
  if (u == NULL) return count;
  for (int64_t r = 0; r < count; ++r) {
    int64_t rest = r, ou = 0, ov = 0;
    for (int x = axes - 1; x >= 0; --x) {
      const int64_t at = rest % extent[x];
      rest /= extent[x];
      ou += at * su[x];
      ov += at * sv[x];
    }
    u[r] = ou;
    v[r] = ov;
  }
  return count;
}

/* ---- The exported functions. ---- */

/* A tile with folded loops on the OpenMP team (threads 0: the default team, 1: serial): rows
   (extents, strides in d and a), columns (in d and b), steps (in a and b, outermost first: each
   cell takes its steps in that order). Each thread runs the driver on its own contiguous block
   of row panels (or column panels), packing its own panels: no barrier, so a descheduled thread
   on a busy machine delays only itself; each cell is updated by one thread, in increasing k. */
CANNL_EXPORT int CANNL_SGEMM_ND(int nr, const int64_t *rext, const int64_t *rd, const int64_t *ra, int nc,
                                const int64_t *cext, const int64_t *cd, const int64_t *cb, int nk,
                                const int64_t *kext, const int64_t *ka, const int64_t *kb, float *d,
                                const float *a, const float *b, int fused, int zero, int threads) {
  const int64_t m = offsets(nr, rext, rd, ra, NULL, NULL);
  const int64_t n = offsets(nc, cext, cd, cb, NULL, NULL);
  const int64_t k = offsets(nk, kext, ka, kb, NULL, NULL);
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  int64_t *off = (int64_t *)malloc((size_t)(2 * (m + n + k)) * sizeof(int64_t));
  if (off == NULL) return 1;
  int64_t *dr = off, *ar = off + m, *dc = off + 2 * m, *bc = dc + n, *ak = bc + n, *bk = ak + k;
  offsets(nr, rext, rd, ra, dr, ar);
  offsets(nc, cext, cd, cb, dc, bc);
  offsets(nk, kext, ka, kb, ak, bk);
  int team = threads;
#ifdef _OPENMP
  if (team <= 0) team = omp_get_max_threads();
#endif
  /* Each thread takes a contiguous block of row panels, or of column panels when there are more
     of those (a weight gradient's few rows): it packs only its own panels. */
  const int narrow = n <= NARROW_NR;
  const int64_t mr = narrow ? NARROW_MR : MR, ncols = narrow ? NARROW_NR : NR;
  const int64_t row_panels = (m + mr - 1) / mr, col_panels = (n + ncols - 1) / ncols;
  const int by_cols = col_panels > row_panels;
  const int64_t panels = by_cols ? col_panels : row_panels, width = by_cols ? ncols : mr, extent = by_cols ? n : m;
  if (team > panels) team = (int)panels;
  if (m * n * k < 65536) team = 1; /* not worth waking the pool */
  const rows_fn rows = narrow ? rows_narrow : rows_wide;
  int failed = 0;
  if (team <= 1) {
    failed = rows(m, n, k, d, dr, dc, a, ar, ak, b, bk, bc, fused, zero);
  } else {
    #pragma omp parallel for schedule(static) num_threads(team) reduction(| : failed)
    for (int t = 0; t < team; ++t) {
      const int64_t lo = panels * t / team * width;
      const int64_t hi = panels * (t + 1) / team * width < extent ? panels * (t + 1) / team * width : extent;
      if (by_cols) failed |= rows(m, hi - lo, k, d, dr, dc + lo, a, ar, ak, b, bk, bc + lo, fused, zero);
      else failed |= rows(hi - lo, n, k, d, dr + lo, dc, a, ar + lo, ak, b, bk, bc, fused, zero);
    }
  }
  free(off);
  return failed;
}

/* d[i*drs + j*dcs] += a[i*ars + p*acs] * b[p*brs + j*bcs]: the tile without folded loops. */
CANNL_EXPORT int CANNL_SGEMM(int64_t m, int64_t n, int64_t k, float *d, int64_t drs, int64_t dcs, const float *a,
                             int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, int fused,
                             int zero, int threads) {
  return CANNL_SGEMM_ND(1, &m, &drs, &ars, 1, &n, &dcs, &bcs, 1, &k, &acs, &brs, d, a, b, fused, zero, threads);
}
