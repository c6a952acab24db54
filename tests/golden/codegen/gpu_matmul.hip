extern "C" __global__ void __launch_bounds__(256) gpu_matmul_k0(
    float *__restrict__ matmul,
    float *__restrict__ w,
    float *__restrict__ x) {
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int32_t i1 = (int32_t)threadIdx.y;
      {
        const int32_t i2 = (int32_t)threadIdx.x;
        for (int32_t i3 = 0; i3 < 192; ++i3) {
          matmul[((2*i0 + i1)*128 + i2)] = fmaf(w[((i2)*192 + i3)], x[((2*i0 + i1)*192 + i3)], matmul[((2*i0 + i1)*128 + i2)]);
        }
      }
    }
  }
}

