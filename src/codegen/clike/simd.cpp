// Explicit SIMD prelude helpers of the C dialect (see simd.h).
#include "codegen/clike/simd.h"

#include "cannl/support/error.h"

namespace cannl::codegen {

SimdWidth simd_width(int bytes) {
  internal_check(bytes == 16 || bytes == 32 || bytes == 64,
                 "simd: vector width must be 16, 32 or 64 bytes, got " + std::to_string(bytes));
  const int lanes = bytes / 4;
  return {bytes, lanes, "cannl_f32x" + std::to_string(lanes)};
}

GemmBlocking gemm_blocking(const SimdWidth& w) {
  // Accumulators + B vectors + one broadcast must fit the register file: 32 vector registers
  // with AVX-512 (12 x 2 accumulators), 16 with AVX2 and SSE (6 x 2).
  if (w.bytes == 64) return {12, 2, 384, 512, 3072};
  if (w.bytes == 32) return {6, 2, 256, 512, 3072};
  return {6, 2, 256, 512, 3072};
}

std::string gemm_function(const SimdWidth& w) { return "cannl_sgemm_x" + std::to_string(w.lanes); }

namespace {

// The micro-kernel shape for tiles at most one vector wide (a convolution with few output
// channels): one accumulator column, twice the rows, so a 6-column tile wastes 10 of 16 lanes
// rather than 26 of 32.
GemmBlocking narrow_blocking(const SimdWidth& w) {
  GemmBlocking g = gemm_blocking(w);
  g.mr *= g.nv;
  g.nv = 1;
  return g;
}

// The micro-kernel of width `w`; `fused` picks fma updates, else a multiply then an add.
// `rows` below the shape's mr: the kernel for a last row panel of that many rows (same packed
// panel layout), so the common remainders of 12-row panels (4 and 8) skip the padded copy.
std::string ukr_function(const SimdWidth& w, bool fused, bool narrow = false, int rows = 0) {
  return std::string(fused ? "cannl_sgemm_fma_tile_x" : "cannl_sgemm_tile_x") + std::to_string(w.lanes) +
         (narrow ? "_narrow" : "") + (rows > 0 ? "_r" + std::to_string(rows) : "");
}

// Row counts of the edge kernels for the wide shape: the multiples of 4 below mr.
std::vector<int> edge_rows(const GemmBlocking& g) {
  std::vector<int> out;
  for (int r = 4; r < g.mr; r += 4) out.push_back(r);
  return out;
}

// The fused multiply-add intrinsic guarded by the macro that says the target has it.
std::string fma_body(const SimdWidth& w) {
  std::string guard;
  std::string intrinsic;
  if (w.bytes == 64) {
    guard = "defined(__AVX512F__)";
    intrinsic = "_mm512_fmadd_ps(a, b, c)";
  } else if (w.bytes == 32) {
    guard = "defined(__AVX__) && defined(__FMA__)";
    intrinsic = "_mm256_fmadd_ps(a, b, c)";
  } else {
    guard = "defined(__FMA__)";
    intrinsic = "_mm_fmadd_ps(a, b, c)";
  }
  std::string s = "#if " + guard + "\n  return " + intrinsic + ";\n";
  if (w.bytes == 16) s += "#elif defined(__ARM_FEATURE_FMA)\n  return vfmaq_f32(c, a, b);\n";
  s += "#else\n  " + w.type + " r;\n  for (int l = 0; l < " + std::to_string(w.lanes) +
       "; ++l) r[l] = fmaf(a[l], b[l], c[l]);\n  return r;\n#endif\n";
  return s;
}

std::string type_text(const SimdWidth& w) {
  const std::string bytes = std::to_string(w.bytes);
  return "#if defined(__x86_64__) || defined(__i386__)\n#include <immintrin.h>\n#endif\n"
         "#if defined(__ARM_NEON)\n#include <arm_neon.h>\n#endif\n"
         "typedef float " + w.type + " __attribute__((vector_size(" + bytes + ")));\n"
         "/* Unaligned, aliasing view for loads and stores at any float address. */\n"
         "typedef float " + w.type + "u __attribute__((vector_size(" + bytes +
         "), aligned(4), __may_alias__));\n"
         "/* Lane masks of comparisons, and the bits of float lanes. */\n"
         "typedef int32_t cannl_i32x" + std::to_string(w.lanes) + " __attribute__((vector_size(" + bytes + ")));\n";
}

std::string splat_text(const SimdWidth& w) {
  std::string lanes;
  for (int l = 0; l < w.lanes; ++l) lanes += l ? ", x" : "x";
  return "$P " + w.type + " " + w.type + "_splat(float x) { return (" + w.type + "){" + lanes + "}; }\n";
}

std::string fma_text(const SimdWidth& w) {
  const std::string& t = w.type;
  return "/* a * b + c rounded once, on every target. */\n$P " + t + " " + t + "_fma(" + t + " a, " + t +
         " b, " + t + " c) {\n" + fma_body(w) + "}\n";
}

std::string hsum_text(const SimdWidth& w) {
  const std::string& t = w.type;
  return "/* Lanes summed in a fixed pairwise order. */\n$P float " + t + "_sum(" + t + " v) {\n"
         "  float h[" + std::to_string(w.lanes) + "];\n  memcpy(h, &v, sizeof h);\n"
         "  for (int w = " + std::to_string(w.lanes / 2) + "; w > 0; w /= 2)\n"
         "    for (int l = 0; l < w; ++l) h[l] += h[l + w];\n  return h[0];\n}\n";
}

// The mr x (nv * lanes) micro-kernel: C tile loaded into registers, k rank-1 updates from packed
// panels (A broadcast, B row vectors), stored back. Fully unrolled over the tile so every
// accumulator is a named register.
std::string ukr_text(const SimdWidth& w, const GemmBlocking& g, bool fused, bool narrow, int edge = 0) {
  const int rows = edge > 0 ? edge : g.mr;
  const std::string& t = w.type;
  const std::string nr = std::to_string(g.nv * w.lanes);
  auto acc = [](int r, int v) { return "c" + std::to_string(r) + "_" + std::to_string(v); };
  auto at = [&](int r, int v) {
    return "c + " + std::to_string(r) + " * ldc + " + std::to_string(v * w.lanes);
  };
  std::string s = "/* C[" + std::to_string(rows) + " x " + nr + "] += A panel * B panel over kc, C held in registers" +
                  (fused ? " (fused multiply-add)" : " (multiply, then add: two roundings)") +
                  "; B rows ldb apart (a packed panel's width, or a row-major B read in place); zero: C is\n"
                  "   zero, so the registers start at +0 without reading it (the same bits, and no wait on\n"
                  "   lines that are not cached yet). */\n$P void " +
                  ukr_function(w, fused, narrow, edge) + "(int64_t kc, const float *restrict ap, const float *restrict bp, "
                  "int64_t ldb, float *restrict c, int64_t ldc, int zero) {\n";
  std::string zeros, loads;
  for (int r = 0; r < rows; ++r) {
    for (int v = 0; v < g.nv; ++v) {
      s += "  " + t + " " + acc(r, v) + ";\n";
      zeros += "\n    " + acc(r, v) + " = " + t + "_splat(0.0f);";
      loads += "\n    " + acc(r, v) + " = *(const " + t + "u *)(" + at(r, v) + ");";
    }
  }
  s += "  if (zero) {" + zeros + "\n  } else {" + loads + "\n  }\n";
  s += "  for (int64_t q = 0; q < kc; ++q) {\n";
  for (int v = 0; v < g.nv; ++v) {
    s += "    const " + t + " b" + std::to_string(v) + " = *(const " + t + "u *)(bp + q * ldb + " +
         std::to_string(v * w.lanes) + ");\n";
  }
  for (int r = 0; r < rows; ++r) {
    s += "    { const " + t + " a = " + t + "_splat(ap[q * " + std::to_string(g.mr) + " + " + std::to_string(r) + "]);";
    for (int v = 0; v < g.nv; ++v) {
      const std::string b = "b" + std::to_string(v);
      s += " " + acc(r, v) + " = " +
           (fused ? t + "_fma(a, " + b + ", " + acc(r, v) + ");" : acc(r, v) + " + a * " + b + ";");
    }
    s += " }\n";
  }
  s += "  }\n";
  for (int r = 0; r < rows; ++r) {
    for (int v = 0; v < g.nv; ++v) s += "  *(" + t + "u *)(" + at(r, v) + ") = " + acc(r, v) + ";\n";
  }
  return s + "}\n";
}

// The blocked driver (GotoBLAS/BLIS loop order with the roles of A and B swapped so vectors run
// along C's rows): i3 (mc rows) > p (kc) > pack A > j2 (nc columns) > pack B > ir > jr > tile.
// With a team, each thread runs it on its own contiguous block of row panels, packing its own
// panels: no barrier at all, so a descheduled thread on a busy machine delays only itself. Each C
// cell is updated by one thread, in increasing k, so results do not depend on the team.
std::string driver_text(const SimdWidth& w, const GemmBlocking& g) {
  std::string s = R"(/* The common difference of x[0..n), n >= 2, when its entries are evenly spaced; else 0. */
$P int64_t NAME_spacing(const int64_t *x, int64_t n) {
  const int64_t d = x[1] - x[0];
  for (int64_t l = 2; l < n; ++l)
    if (x[l] - x[l - 1] != d) return 0;
  return d;
}

/* Whether x[0..n) counts up by one from x[0]: lanes or steps that run on in memory. */
$P int NAME_consecutive(const int64_t *x, int64_t n) { return n < 2 || NAME_spacing(x, n) == 1; }

/* `panels` whole panels of `width` lanes whose lanes run on from src: dst[p * width * kc + q *
   width ..] = src[step[q] + p * width ..], one source row at a time (each read once, in order,
   rather than once per panel at a stride the prefetchers miss). */
$P void NAME_copy_block(float *dst, const float *src, const int64_t *step, int64_t kc, int64_t panels,
    int64_t width) {
  for (int64_t q = 0; q < kc; ++q)
    for (int64_t p = 0; p < panels; ++p)
      memcpy(dst + p * width * kc + q * width, src + step[q] + p * width, (size_t)width * sizeof(float));
}

/* NAME_copy_block with the widths the driver uses as literals, so the row copies inline rather
   than call the library: an mlp_wide step on one core, A/B interleaved, took 11.7-11.9 ms with,
   12.1-12.6 ms without. Returns 0 (nothing copied) for another width. */
$P int NAME_copy_panels(float *dst, const float *src, const int64_t *step, int64_t kc, int64_t panels,
    int64_t width) {
  switch (width) {
    case @MR: NAME_copy_block(dst, src, step, kc, panels, @MR); return 1;
    case @NR: NAME_copy_block(dst, src, step, kc, panels, @NR); return 1;
    case @NARROW_MR: NAME_copy_block(dst, src, step, kc, panels, @NARROW_MR); return 1;
    case @NARROW_NR: NAME_copy_block(dst, src, step, kc, panels, @NARROW_NR); return 1;
    default: return 0;
  }
}

#if defined(__AVX512F__)
/* dst[x * width + l] = src[lane[l] + x] for x < 16, l < store, where rows l >= live read as zero:
   a 16 x 16 register transpose in four shuffle rounds. A row-major A's panels and a transposed
   B's (the forward of x W^T) take it instead of a scalar gather: an mlp_wide step's forward
   GEMM, 256 x 1024 x 1024 on one core, 3.38 -> 3.11-3.16 ms. */
$P void NAME_transpose16(float *dst, int64_t width, const float *src, const int64_t *lane, int64_t live,
    int64_t store) {
  __m512 r[16], t[16];
  for (int l = 0; l < 16; ++l) r[l] = l < live ? _mm512_loadu_ps(src + lane[l]) : _mm512_setzero_ps();
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
    _mm512_mask_storeu_ps(dst + e * width, keep, _mm512_shuffle_f32x4(t[e], t[8 + e], 0x88));
    _mm512_mask_storeu_ps(dst + (e + 8) * width, keep, _mm512_shuffle_f32x4(t[e], t[8 + e], 0xdd));
  }
}
#endif

/* One zero-padded panel: dst[q * width + l] = src[lane[l] + step[q]] for the `valid` first
   lanes l < width, 0 beyond, over q < kc (A panels: lanes are rows; B panels: columns);
   `steps_run`: NAME_consecutive(step, kc), checked once per block by the caller. */
$P void NAME_pack(float *dst, const float *src, int64_t width, int64_t valid, int64_t kc,
    const int64_t *lane, const int64_t *step, int steps_run) {
  const int64_t live = valid < width ? valid : width;
  const int contiguous = NAME_consecutive(lane, live);
  if (contiguous && live == width && NAME_copy_panels(dst, src + lane[0], step, kc, 1, width)) return;
  if (contiguous) {
    for (int64_t q = 0; q < kc; ++q) {
      memcpy(dst + q * width, src + lane[0] + step[q], (size_t)live * sizeof(float));
      if (live < width) memset(dst + q * width + live, 0, (size_t)(width - live) * sizeof(float));
    }
    return;
  }
  int64_t q = 0;
#if defined(__AVX512F__)
  if (steps_run) /* 16 x 16 blocks transposed in registers */
    for (; q + 16 <= kc; q += 16)
      for (int64_t l = 0; l < width; l += 16)
        NAME_transpose16(dst + q * width + l, width, src + step[0] + q, lane + l, live - l < 0 ? 0 : live - l,
                         width - l < 16 ? width - l : 16);
#endif
  for (; q < kc; ++q) {
    const float *s = src + step[q];
    float *t = dst + q * width;
    for (int64_t l = 0; l < live; ++l) t[l] = s[lane[l]];
    for (int64_t l = live; l < width; ++l) t[l] = 0.0f;
  }
}

/* The panels of a block of `valid` lanes, `width` lanes each (the last zero-padded), one after
   another: the whole ones copied together when the lanes run on (the first layer's weight
   gradient of mlp_wide, 1024 x 256 x 256 on one core: 0.92 -> 0.90 ms, best of interleaved runs),
   else NAME_pack per panel. */
$P void NAME_pack_block(float *dst, const float *src, int64_t width, int64_t valid, int64_t kc,
    const int64_t *lane, const int64_t *step) {
  const int64_t panels = (valid + width - 1) / width, whole = valid / width;
  int64_t p = whole > 1 && NAME_consecutive(lane, valid) &&
                      NAME_copy_panels(dst, src + lane[0], step, kc, whole, width) ? whole : 0;
  const int steps_run = NAME_consecutive(step, kc);
  for (; p < panels; ++p)
    NAME_pack(dst + p * width * kc, src, width, valid - p * width, kc, lane + p * width, step, steps_run);
}

/* The stride between B's rows when the block's columns run on (lanes contiguous) and its steps
   are evenly spaced, so its whole panels can be read in place; else 0 (pack them). */
$P int64_t NAME_rows_stride(const int64_t *lane, int64_t valid, const int64_t *step, int64_t kc) {
  if (!NAME_consecutive(lane, valid)) return 0;
  return kc < 2 ? 1 : NAME_spacing(step, kc);
}

/* The row stride of a full register tile of C at rows r[0..MR) and columns c[0..NR) when its
   columns are contiguous and its rows evenly spaced (the micro-kernel stores it in place), else 0. */
$P int64_t NAME_tile_ldc(const int64_t *r, const int64_t *c, int64_t rows, int64_t cols, int64_t mr, int64_t nr) {
  return rows == mr && cols == nr && NAME_consecutive(c, nr) ? NAME_spacing(r, mr) : 0;
}

@ROWS
/* The offsets of one folded loop group (extents outermost first) in two operands: u[r], v[r]
   for the row-major count r over the group. Returns the count. */
$P int64_t NAME_offsets(int axes, const int64_t *extent, const int64_t *su, const int64_t *sv,
    int64_t *u, int64_t *v) {
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

/* A tile with folded loops on the OpenMP team (threads 0: the default team, 1: serial), by
   row panels: rows (extents, strides in d and a), columns (in d and b), steps (in a and b,
   outermost first: each cell takes its steps in that order). */
$P void NAME_nd(int nr, const int64_t *rext, const int64_t *rd, const int64_t *ra,
    int nc, const int64_t *cext, const int64_t *cd, const int64_t *cb,
    int nk, const int64_t *kext, const int64_t *ka, const int64_t *kb,
    float *d, const float *a, const float *b, int fused, int zero, int threads) {
  const int64_t m = NAME_offsets(nr, rext, rd, ra, NULL, NULL);
  const int64_t n = NAME_offsets(nc, cext, cd, cb, NULL, NULL);
  const int64_t k = NAME_offsets(nk, kext, ka, kb, NULL, NULL);
  if (m <= 0 || n <= 0 || k <= 0) return;
  int64_t *off = (int64_t *)malloc((size_t)(2 * (m + n + k)) * sizeof(int64_t));
  if (off == NULL) abort();
  int64_t *dr = off, *ar = off + m, *dc = off + 2 * m, *bc = dc + n, *ak = bc + n, *bk = ak + k;
  NAME_offsets(nr, rext, rd, ra, dr, ar);
  NAME_offsets(nc, cext, cd, cb, dc, bc);
  NAME_offsets(nk, kext, ka, kb, ak, bk);
  int team = threads;
#ifdef _OPENMP
  if (team <= 0) team = omp_get_max_threads();
#endif
  /* Each thread takes a contiguous block of row panels, or of column panels when there are more
     of those (a weight gradient's few rows): it packs only its own panels. */
  const int narrow = n <= @NARROW_NR;
  const int64_t MR = narrow ? @NARROW_MR : @MR, NR = narrow ? @NARROW_NR : @NR;
  const int64_t row_panels = (m + MR - 1) / MR, col_panels = (n + NR - 1) / NR;
  const int by_cols = col_panels > row_panels;
  const int64_t panels = by_cols ? col_panels : row_panels, width = by_cols ? NR : MR, extent = by_cols ? n : m;
  if (team > panels) team = (int)panels;
  if (m * n * k < 65536) team = 1; /* not worth waking the pool */
  void (*rows)(int64_t, int64_t, int64_t, float *, const int64_t *, const int64_t *, const float *,
               const int64_t *, const int64_t *, const float *, const int64_t *, const int64_t *, int, int) =
      narrow ? NAME_rows_narrow : NAME_rows;
  if (team <= 1) {
    rows(m, n, k, d, dr, dc, a, ar, ak, b, bk, bc, fused, zero);
  } else {
    #pragma omp parallel for schedule(static) num_threads(team)
    for (int t = 0; t < team; ++t) {
      const int64_t lo = panels * t / team * width;
      const int64_t hi = panels * (t + 1) / team * width < extent ? panels * (t + 1) / team * width : extent;
      if (by_cols) rows(m, hi - lo, k, d, dr, dc + lo, a, ar, ak, b, bk, bc + lo, fused, zero);
      else rows(hi - lo, n, k, d, dr + lo, dc, a, ar + lo, ak, b, bk, bc, fused, zero);
    }
  }
  free(off);
}

/* d[i*drs + j*dcs] += a[i*ars + p*acs] * b[p*brs + j*bcs]: the tile without folded loops. */
$P void NAME(int64_t m, int64_t n, int64_t k, float *d, int64_t drs, int64_t dcs,
    const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, int fused,
    int zero, int threads) {
  NAME_nd(1, &m, &drs, &ars, 1, &n, &dcs, &bcs, 1, &k, &acs, &brs, d, a, b, fused, zero, threads);
}
)";
  auto put = [&](const std::string& key, const std::string& value) {
    for (auto at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size())) {
      s.replace(at, key.size(), value);
    }
  };
  // The rows function once per micro-kernel shape.
  auto rows_of = [&](const GemmBlocking& shape, bool narrow) {
    std::string text = R"(/* d[dr[i] + dc[j]] += a[ar[i] + ak[p]] * b[bk[p] + bc[j]] over i < m, j < n, p < k (p increasing
   per cell) over packed panels, one thread. The offsets are the tile's folded loops flattened. */
$P void NAME_rowsSUFFIX(int64_t m, int64_t n, int64_t k, float *d, const int64_t *dr, const int64_t *dc,
    const float *a, const int64_t *ar, const int64_t *ak, const float *b, const int64_t *bk,
    const int64_t *bc, int fused, int zero) {
  enum { MR = @MR, NR = @NR, KC = @KC, NC = @NC, MC = @MC };
  if (m <= 0 || n <= 0 || k <= 0) return;
  const int64_t mcap = ((m < MC ? m : MC) + MR - 1) / MR * MR;
  const int64_t ncap = ((n < NC ? n : NC) + NR - 1) / NR * NR;
  float *ap = (float *)aligned_alloc(64, (size_t)(mcap * KC) * sizeof(float));
  float *bp = (float *)aligned_alloc(64, (size_t)(ncap * KC) * sizeof(float));
  if (ap == NULL || bp == NULL) abort();
  const int64_t ldc_all = m > 1 ? NAME_tile_ldc(dr, dc, m, n, m, n) : 0; /* every full tile's, when C is a plain matrix */
  for (int64_t i3 = 0; i3 < m; i3 += MC) {
    const int64_t mb = m - i3 < MC ? m - i3 : MC;
    const int64_t mpanels = (mb + MR - 1) / MR;
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t kc = k - p0 < KC ? k - p0 : KC;
      const int fresh = zero && p0 == 0; /* C starts at zero: set, not loaded */
      NAME_pack_block(ap, a, MR, mb, kc, ar + i3, ak + p0);
      for (int64_t j2 = 0; j2 < n; j2 += NC) {
        const int64_t nb = n - j2 < NC ? n - j2 : NC;
        const int64_t npanels = (nb + NR - 1) / NR;
        /* One row panel reads each B element once: whole panels B holds as rows are read in
           place rather than copied first (mlp_wide's last weight gradient, 10 x 1024 x 256). */
        const int64_t ldb = mpanels == 1 ? NAME_rows_stride(bc + j2, nb, bk + p0, kc) : 0;
        if (ldb == 0) NAME_pack_block(bp, b, NR, nb, kc, bc + j2, bk + p0);
        else if (nb % NR != 0)
          NAME_pack(bp + (npanels - 1) * NR * kc, b, NR, nb % NR, kc, bc + j2 + (npanels - 1) * NR, bk + p0,
                    NAME_consecutive(bk + p0, kc));
        for (int64_t ip = 0; ip < mpanels; ++ip) {
          const int64_t rows = mb - ip * MR < MR ? mb - ip * MR : MR;
          const int64_t *r = dr + i3 + ip * MR;
          for (int64_t jp = 0; jp < npanels; ++jp) {
            const int64_t cols = nb - jp * NR < NR ? nb - jp * NR : NR;
            const int64_t *c = dc + j2 + jp * NR;
            const int in_place = ldb != 0 && cols == NR;
            const float *bj = in_place ? b + bk[p0] + bc[j2 + jp * NR] : bp + jp * NR * kc;
            const int64_t lb = in_place ? ldb : NR;
            int64_t ldc = rows == MR && cols == NR && ldc_all != 0 ? ldc_all : NAME_tile_ldc(r, c, rows, cols, MR, NR);
            if (ldc != 0) {
              if (fused) FMATILE(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
              else TILE(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
            } else if (EDGE_TILES_OK && cols == NR && (rows == 4 || rows == 8) &&
                       (ldc = NAME_tile_ldc(r, c, rows, cols, rows, NR)) != 0) {
              /* The last row panel, 4 or 8 rows: its own kernel, in place. */
              if (rows == 4) {
                if (fused) FMATILE_r4(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
                else TILE_r4(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
              } else {
                if (fused) FMATILE_r8(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
                else TILE_r8(kc, ap + ip * MR * kc, bj, lb, d + r[0] + c[0], ldc, fresh);
              }
            } else {
              /* Peeled edge (or scattered C): through a zero-padded tile. */
              float tile[MR * NR] __attribute__((aligned(64)));
              memset(tile, 0, sizeof tile);
              const int runs = NAME_consecutive(c, cols); /* the columns contiguous: each row one run */
              for (int64_t x = 0; x < rows && !fresh; ++x) {
                if (runs) memcpy(tile + x * NR, d + r[x] + c[0], (size_t)cols * sizeof(float));
                else for (int64_t y = 0; y < cols; ++y) tile[x * NR + y] = d[r[x] + c[y]];
              }
              if (fused) FMATILE(kc, ap + ip * MR * kc, bj, lb, tile, NR, 0);
              else TILE(kc, ap + ip * MR * kc, bj, lb, tile, NR, 0);
              for (int64_t x = 0; x < rows; ++x) {
                if (runs) memcpy(d + r[x] + c[0], tile + x * NR, (size_t)cols * sizeof(float));
                else for (int64_t y = 0; y < cols; ++y) d[r[x] + c[y]] = tile[x * NR + y];
              }
            }
          }
        }
      }
    }
  }
  free(ap);
  free(bp);
}

)";
    auto set = [&](const std::string& key, const std::string& value) {
      for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) text.replace(at, key.size(), value);
    };
    set("SUFFIX", narrow ? "_narrow" : "");
    // Edge kernels exist for the wide shape with 12-row panels (rows 4 and 8); elsewhere the
    // branch is compiled out and its calls name the main kernel.
    const bool edges = !narrow && edge_rows(shape) == std::vector<int>{4, 8};
    set("EDGE_TILES_OK", edges ? "1" : "0");
    set("FMATILE_r4", ukr_function(w, true, narrow, edges ? 4 : 0));
    set("FMATILE_r8", ukr_function(w, true, narrow, edges ? 8 : 0));
    set("TILE_r4", ukr_function(w, false, narrow, edges ? 4 : 0));
    set("TILE_r8", ukr_function(w, false, narrow, edges ? 8 : 0));
    set("FMATILE", ukr_function(w, true, narrow));
    set("TILE", ukr_function(w, false, narrow));
    set("@MR", std::to_string(shape.mr));
    set("@NR", std::to_string(shape.nv * w.lanes));
    return text;
  };
  put("@ROWS", rows_of(g, false) + "\n" + rows_of(narrow_blocking(w), true));
  put("NAME", gemm_function(w));
  put("@NARROW_MR", std::to_string(narrow_blocking(w).mr));
  put("@NARROW_NR", std::to_string(w.lanes));
  put("@MR", std::to_string(g.mr));
  put("@NR", std::to_string(g.nv * w.lanes));
  put("@KC", std::to_string(g.kc));
  put("@NC", std::to_string(g.nc));
  put("@MC", std::to_string(g.mc));
  return s;
}

}  // namespace

void append_simd_helpers(std::vector<PreludeHelper>& out, const SimdWidth& w) {
  const std::string& t = w.type;
  const GemmBlocking g = gemm_blocking(w);
  out.push_back({t, type_text(w), {}});
  out.push_back({t + "u", "", {t}});
  out.push_back({"cannl_i32x" + std::to_string(w.lanes), "", {t}});
  out.push_back({t + "_splat", splat_text(w), {t}});
  out.push_back({t + "_fma", fma_text(w), {t}});
  out.push_back({t + "_sum", hsum_text(w), {t}});
  std::vector<std::string> kernels;
  for (const bool narrow : {false, true}) {
    for (const bool fused : {false, true}) {
      out.push_back({ukr_function(w, fused, narrow), ukr_text(w, narrow ? narrow_blocking(w) : g, fused, narrow),
                     {t + "_splat", t + "_fma", t + "u"}});
      kernels.push_back(ukr_function(w, fused, narrow));
    }
  }
  if (edge_rows(g) == std::vector<int>{4, 8}) {
    for (const int rows : edge_rows(g)) {
      for (const bool fused : {false, true}) {
        out.push_back({ukr_function(w, fused, false, rows), ukr_text(w, g, fused, false, rows),
                       {t + "_splat", t + "_fma", t + "u"}});
        kernels.push_back(ukr_function(w, fused, false, rows));
      }
    }
  }
  kernels.push_back("cannl_omp");
  out.push_back({gemm_function(w) + "_nd", "", {gemm_function(w)}});  // defined with the driver
  out.push_back({gemm_function(w), driver_text(w, g), kernels});
}

void append_parallel_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_omp", "#ifdef _OPENMP\n#include <omp.h>\n#endif\n", {}});
  out.push_back({"cannl_grid_chunks",
                 "/* Chunks of a Grid loop: `requested`, or 4 per pool thread; at most one per iteration. */\n"
                 "$P int64_t cannl_grid_chunks(int64_t extent, int64_t requested) {\n"
                 "  int64_t chunks = requested;\n"
                 "#ifdef _OPENMP\n  if (chunks <= 0) chunks = 4 * (int64_t)omp_get_max_threads();\n#endif\n"
                 "  if (chunks <= 0) chunks = 1;\n"
                 "  return chunks < extent ? chunks : extent;\n}\n",
                 {"cannl_omp"}});
}

}  // namespace cannl::codegen
