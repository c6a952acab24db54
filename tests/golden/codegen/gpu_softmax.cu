extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k0(float *__restrict__ einmax) {
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int32_t i1 = (int32_t)threadIdx.x;
      einmax[256*i0 + i1] = (-INFINITY);
    }
  }
}

extern "C" __global__ void __launch_bounds__(250) gpu_softmax_k1(
    float *einmax,
    float *__restrict__ logits,
    float *exp_) {
  __shared__ float cannl_red_i2[250];
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int64_t i3 = (int64_t)threadIdx.x;
      const int64_t i1 = (int64_t)threadIdx.x;
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
      __syncthreads();
      for (int64_t i4 = 128; i4 >= 32; i4 >>= 1) {
        if (i1 < i4 && i1 + i4 < 250) cannl_red_i2[i3] = cannl_fmaxf(cannl_red_i2[i3], cannl_red_i2[i3 + i4]);
        __syncthreads();
      }
      if (i1 < 32) {
        float i9 = i1 < 250 ? cannl_red_i2[i3] : 0;
        for (int64_t i4 = 16; i4 > 0; i4 >>= 1) {
          const float i10 = __shfl_down_sync(0xffffffffu, i9, (unsigned int)i4);
          if (i1 < i4 && i1 + i4 < 250) i9 = cannl_fmaxf(i9, i10);
        }
        if (i1 == 0) einmax[i0] = cannl_fmaxf(einmax[i0], i9);
      }
      __syncthreads();
    }
  }
  __syncthreads();
  {
    const int32_t i11 = (int32_t)blockIdx.x;
    {
      const int32_t i12 = (int32_t)threadIdx.x;
      { /* 4 lanes: 16-byte loads and stores where aligned, the arithmetic lane by lane */
        const float4 i14 = *(const float4 *)&logits[((i11)*1000 + 4*i12 + 0)];
        *(float4 *)&exp_[((i11)*1000 + 4*i12 + 0)] = make_float4(expf((i14.x - einmax[i11])), expf((i14.y - einmax[i11])), expf((i14.z - einmax[i11])), expf((i14.w - einmax[i11])));
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k2(
    float *__restrict__ einsum,
    float *__restrict__ exp_) {
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int32_t i1 = (int32_t)threadIdx.x;
      for (int32_t i2 = 0; i2 < 1000; ++i2) {
        einsum[256*i0 + i1] = (einsum[256*i0 + i1] + exp_[((256*i0 + i1)*1000 + i2)]);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(250) gpu_softmax_k3(
    float *__restrict__ div_,
    float *__restrict__ exp_,
    float *__restrict__ einsum) {
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int32_t i1 = (int32_t)threadIdx.x;
      { /* 4 lanes: 16-byte loads and stores where aligned, the arithmetic lane by lane */
        const float4 i3 = *(const float4 *)&exp_[((i0)*1000 + 4*i1 + 0)];
        *(float4 *)&div_[((i0)*1000 + 4*i1 + 0)] = make_float4((i3.x / einsum[i0]), (i3.y / einsum[i0]), (i3.z / einsum[i0]), (i3.w / einsum[i0]));
      }
    }
  }
}

