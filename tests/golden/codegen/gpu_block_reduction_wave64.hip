extern "C" __global__ void __launch_bounds__(300) row_sums_k0(float *s, float *__restrict__ x) {
  __shared__ float cannl_red_i2[300];
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int64_t i3 = (int64_t)threadIdx.x;
      const int64_t i1 = (int64_t)threadIdx.x;
      if (i1 < 300) {
        cannl_red_i2[i3] = x[((i0)*300 + i1)];
      }
      __syncthreads();
      for (int64_t i4 = 256; i4 >= 64; i4 >>= 1) {
        if (i1 < i4 && i1 + i4 < 300) cannl_red_i2[i3] = (cannl_red_i2[i3] + cannl_red_i2[i3 + i4]);
        __syncthreads();
      }
      if (i1 < 64) {
        float i5 = i1 < 300 ? cannl_red_i2[i3] : 0;
        for (int64_t i4 = 32; i4 > 0; i4 >>= 1) {
          const float i6 = __shfl_down(i5, (unsigned int)i4);
          if (i1 < i4 && i1 + i4 < 300) i5 = (i5 + i6);
        }
        if (i1 == 0) s[i0] = (s[i0] + i5);
      }
      __syncthreads();
    }
  }
}

