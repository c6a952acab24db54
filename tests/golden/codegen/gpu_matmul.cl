__kernel __attribute__((reqd_work_group_size(128, 2, 1))) void gpu_matmul_k0(
    __global float *restrict matmul,
    __global float *restrict w,
    __global float *restrict x) {
  {
    const int32_t i0 = (int32_t)get_group_id(0);
    {
      const int32_t i1 = (int32_t)get_local_id(1);
      {
        const int32_t i2 = (int32_t)get_local_id(0);
        for (int32_t i3 = 0; i3 < 192; ++i3) {
          matmul[((2*i0 + i1)*128 + i2)] = fmaf(w[((i2)*192 + i3)], x[((2*i0 + i1)*192 + i3)], matmul[((2*i0 + i1)*128 + i2)]);
        }
      }
    }
  }
}

