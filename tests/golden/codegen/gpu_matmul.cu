extern "C" __global__ void __launch_bounds__(256) gpu_matmul_k0(
    float *__restrict__ matmul,
    float *__restrict__ w,
    float *__restrict__ x) {
  __shared__ float cannl_ta_i0[1040];
  __shared__ float cannl_tb_i0[1040];
  /* matmul tile 256 x 128 x 192: blocks of 64 x 64 cells in 16-step slices staged in shared memory, 4 x 4 cells per thread; matmul starts at zero */
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
      cannl_in_rows[cannl_m] = cannl_r < 256;
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
        cannl_acc[cannl_m * 4 + cannl_n] = 0;
      }
    }
    for (int32_t cannl_k0 = 0; cannl_k0 < 192; cannl_k0 += 16) {
      for (int32_t cannl_e = cannl_tid; cannl_e < 1024; cannl_e += 256) {
        const int32_t cannl_kk = cannl_e % 16, cannl_x = cannl_e / 16;
        const int32_t cannl_cell = cannl_row0 + cannl_x, cannl_step = cannl_k0 + cannl_kk;
        cannl_ta_i0[cannl_kk * 65 + cannl_x] = x[((0)*192 + 0) + (cannl_cell * 192) + (cannl_step)];
      }
      for (int32_t cannl_e = cannl_tid; cannl_e < 1024; cannl_e += 256) {
        const int32_t cannl_kk = cannl_e % 16, cannl_x = cannl_e / 16;
        const int32_t cannl_cell = cannl_col0 + cannl_x, cannl_step = cannl_k0 + cannl_kk;
        cannl_tb_i0[cannl_kk * 65 + cannl_x] = w[((0)*192 + 0) + (cannl_cell * 192) + (cannl_step)];
      }
      __syncthreads();
      #pragma unroll
      for (int cannl_kk = 0; cannl_kk < 16; ++cannl_kk) {
        float cannl_ar[4], cannl_br[4];
        #pragma unroll
        for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
          cannl_ar[cannl_m] = cannl_ta_i0[cannl_kk * 65 + cannl_ty + 16 * cannl_m];
        }
        #pragma unroll
        for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
          cannl_br[cannl_n] = cannl_tb_i0[cannl_kk * 65 + cannl_tx + 16 * cannl_n];
        }
        #pragma unroll
        for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
          #pragma unroll
          for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
            cannl_acc[cannl_m * 4 + cannl_n] = fmaf(cannl_ar[cannl_m], cannl_br[cannl_n], cannl_acc[cannl_m * 4 + cannl_n]);
          }
        }
      }
      __syncthreads();
    }
    #pragma unroll
    for (int cannl_m = 0; cannl_m < 4; ++cannl_m) {
      #pragma unroll
      for (int cannl_n = 0; cannl_n < 4; ++cannl_n) {
        if (cannl_in_rows[cannl_m] && cannl_in_cols[cannl_n]) matmul[((0)*128 + 0) + cannl_dr[cannl_m] + cannl_dc[cannl_n]] = cannl_acc[cannl_m * 4 + cannl_n];
      }
    }
  }
}

