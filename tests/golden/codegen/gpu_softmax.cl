__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void gpu_softmax_k0(
    __global float *restrict einmax) {
  {
    const int32_t i0 = (int32_t)get_group_id(0);
    {
      const int32_t i1 = (int32_t)get_local_id(0);
      einmax[256*i0 + i1] = (-INFINITY);
    }
  }
}

__kernel __attribute__((reqd_work_group_size(250, 1, 1))) void gpu_softmax_k1(
    __global float *einmax,
    __global float *restrict logits,
    __global float *exp_) {
  __local float cannl_red_i2[250];
  {
    const int32_t i0 = (int32_t)get_group_id(0);
    {
      const int64_t i3 = (int64_t)get_local_id(0);
      const int64_t i1 = (int64_t)get_local_id(0);
      if (i1 < 250) {
        float i5 = 0;
        int i6 = 0;
        for (int32_t i8 = 0; i8 < 4; ++i8) {
          const float i7 = logits[((i0)*1000 + 250*i8 + i1)];
          i5 = i6 ? cannl_fmaxf(i5, i7) : i7;
          i6 = 1;
        }
        cannl_red_i2[i3] = i5;
      }
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
      for (int64_t i4 = 128; i4 > 0; i4 >>= 1) {
        if (i1 < i4 && i1 + i4 < 250) cannl_red_i2[i3] = cannl_fmaxf(cannl_red_i2[i3], cannl_red_i2[i3 + i4]);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
      }
      if (i1 == 0) einmax[i0] = cannl_fmaxf(einmax[i0], cannl_red_i2[i3]);
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  {
    const int32_t i9 = (int32_t)get_group_id(0);
    {
      const int32_t i10 = (int32_t)get_local_id(0);
      { /* 4 lanes: 16-byte loads and stores where aligned, the arithmetic lane by lane */
        const float4 i12 = vload4(0, &logits[((i9)*1000 + 4*i10 + 0)]);
        vstore4((float4)(expf((i12.x - einmax[i9])), expf((i12.y - einmax[i9])), expf((i12.z - einmax[i9])), expf((i12.w - einmax[i9]))), 0, &exp_[((i9)*1000 + 4*i10 + 0)]);
      }
    }
  }
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void gpu_softmax_k2(
    __global float *restrict einsum,
    __global float *restrict exp_) {
  {
    const int32_t i0 = (int32_t)get_group_id(0);
    {
      const int32_t i1 = (int32_t)get_local_id(0);
      for (int32_t i2 = 0; i2 < 1000; ++i2) {
        einsum[256*i0 + i1] = (einsum[256*i0 + i1] + exp_[((256*i0 + i1)*1000 + i2)]);
      }
    }
  }
}

__kernel __attribute__((reqd_work_group_size(250, 1, 1))) void gpu_softmax_k3(
    __global float *restrict div_,
    __global float *restrict exp_,
    __global float *restrict einsum) {
  {
    const int32_t i0 = (int32_t)get_group_id(0);
    {
      const int32_t i1 = (int32_t)get_local_id(0);
      { /* 4 lanes: 16-byte loads and stores where aligned, the arithmetic lane by lane */
        const float4 i3 = vload4(0, &exp_[((i0)*1000 + 4*i1 + 0)]);
        vstore4((float4)((i3.x / einsum[i0]), (i3.y / einsum[i0]), (i3.z / einsum[i0]), (i3.w / einsum[i0])), 0, &div_[((i0)*1000 + 4*i1 + 0)]);
      }
    }
  }
}

