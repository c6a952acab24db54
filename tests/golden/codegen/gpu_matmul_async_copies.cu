extern "C" __global__ void __launch_bounds__(256) async_matmul_k0(
    float *__restrict__ d,
    float *__restrict__ a,
    float *__restrict__ b) {
  __shared__ __align__(16) float cannl_ta_i0[2176];
  __shared__ __align__(16) float cannl_tb_i0[2176];
  /* matmul tile 96 x 128 x 80: blocks of 64 x 64 cells in 16-step slices staged in shared memory, two stages, the next slice's asynchronous copies (cp.async, 16-byte for a, 16-byte for b) in flight while the block computes the current one, 4 x 4 cells per thread */
  {
    const int32_t cannl_tid = (int32_t)threadIdx.x;
    const int32_t cannl_blk = (int32_t)blockIdx.x;
    const int32_t cannl_row0 = (cannl_blk / 2) * 64;
    const int32_t cannl_col0 = (cannl_blk % 2) * 64;
    const int32_t cannl_tx = cannl_tid % 16;
    const int32_t cannl_ty = cannl_tid / 16;
    int32_t cannl_dr[4], cannl_dc[4];
    int cannl_in_rows[4], cannl_in_cols[4];
    #pragma unroll
    for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
      const int32_t cannl_r = cannl_row0 + cannl_ty + 16 * cannl_m;
      cannl_in_rows[cannl_m] = cannl_r < 96;
      cannl_dr[cannl_m] = cannl_in_rows[cannl_m] ? (cannl_r * 128) : 0;
    }
    #pragma unroll
    for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
      const int32_t cannl_c = cannl_col0 + cannl_tx + 16 * cannl_n;
      cannl_in_cols[cannl_n] = cannl_c < 128;
      cannl_dc[cannl_n] = cannl_in_cols[cannl_n] ? (cannl_c) : 0;
    }
    float cannl_acc[16];
    #pragma unroll
    for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
      #pragma unroll
      for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
        cannl_acc[cannl_m * 4 + cannl_n] = cannl_in_rows[cannl_m] && cannl_in_cols[cannl_n] ? d[((0)*128 + 0) + cannl_dr[cannl_m] + cannl_dc[cannl_n]] : 0;
      }
    }
    for (int32_t cannl_e = cannl_tid; cannl_e < 256; cannl_e += 256) {
      const int32_t cannl_x = (cannl_e % 16) * 4, cannl_kk = cannl_e / 16;
      const int32_t cannl_cell = cannl_row0 + cannl_x, cannl_step = 0 + cannl_kk;
      const int cannl_in = cannl_cell < 96;
      cannl_cp_async16(cannl_ta_i0 + (0 + cannl_kk * 68 + cannl_x), a + (((0)*96 + 0) + (cannl_in ? (cannl_cell) + (cannl_step * 96) : 0)), cannl_in ? 16 : 0);
    }
    for (int32_t cannl_e = cannl_tid; cannl_e < 256; cannl_e += 256) {
      const int32_t cannl_x = (cannl_e % 16) * 4, cannl_kk = cannl_e / 16;
      const int32_t cannl_cell = cannl_col0 + cannl_x, cannl_step = 0 + cannl_kk;
      cannl_cp_async16(cannl_tb_i0 + (0 + cannl_kk * 68 + cannl_x), b + (((0)*128 + 0) + (cannl_cell) + (cannl_step * 128)), 16);
    }
    cannl_cp_async_commit();
    for (int32_t cannl_k0 = 0; cannl_k0 < 80; cannl_k0 += 16) {
      const int cannl_stage = (int)((cannl_k0 / 16) % 2);
      const int32_t cannl_sa = cannl_stage * 1088, cannl_sb = cannl_stage * 1088;
      cannl_cp_async_wait_all();
      __syncthreads();
      if (cannl_k0 + 16 < 80) {
        for (int32_t cannl_e = cannl_tid; cannl_e < 256; cannl_e += 256) {
          const int32_t cannl_x = (cannl_e % 16) * 4, cannl_kk = cannl_e / 16;
          const int32_t cannl_cell = cannl_row0 + cannl_x, cannl_step = cannl_k0 + 16 + cannl_kk;
          const int cannl_in = cannl_cell < 96;
          cannl_cp_async16(cannl_ta_i0 + (1088 - cannl_sa + cannl_kk * 68 + cannl_x), a + (((0)*96 + 0) + (cannl_in ? (cannl_cell) + (cannl_step * 96) : 0)), cannl_in ? 16 : 0);
        }
        for (int32_t cannl_e = cannl_tid; cannl_e < 256; cannl_e += 256) {
          const int32_t cannl_x = (cannl_e % 16) * 4, cannl_kk = cannl_e / 16;
          const int32_t cannl_cell = cannl_col0 + cannl_x, cannl_step = cannl_k0 + 16 + cannl_kk;
          cannl_cp_async16(cannl_tb_i0 + (1088 - cannl_sb + cannl_kk * 68 + cannl_x), b + (((0)*128 + 0) + (cannl_cell) + (cannl_step * 128)), 16);
        }
        cannl_cp_async_commit();
      }
      #pragma unroll
      for (int cannl_kk = 0; cannl_kk < 16; ++cannl_kk) {
        float cannl_ar[4], cannl_br[4];
        #pragma unroll
        for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
          cannl_ar[cannl_m] = cannl_ta_i0[cannl_sa + cannl_kk * 68 + cannl_ty + 16 * cannl_m];
        }
        #pragma unroll
        for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
          cannl_br[cannl_n] = cannl_tb_i0[cannl_sb + cannl_kk * 68 + cannl_tx + 16 * cannl_n];
        }
        #pragma unroll
        for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
          #pragma unroll
          for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
            cannl_acc[cannl_m * 4 + cannl_n] = fmaf(cannl_ar[cannl_m], cannl_br[cannl_n], cannl_acc[cannl_m * 4 + cannl_n]);
          }
        }
      }
    }
    #pragma unroll
    for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
      #pragma unroll
      for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
        if (cannl_in_rows[cannl_m] && cannl_in_cols[cannl_n]) d[((0)*128 + 0) + cannl_dr[cannl_m] + cannl_dc[cannl_n]] = cannl_acc[cannl_m * 4 + cannl_n];
      }
    }
  }
}

