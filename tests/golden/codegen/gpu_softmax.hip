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
    float *__restrict__ logits) {
  __shared__ float cannl_red_i3[250];
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    for (int32_t i1 = 0; i1 < 4; ++i1) {
      {
        const int64_t i4 = (int64_t)threadIdx.x;
        const int64_t i2 = (int64_t)threadIdx.x;
        if (i2 < 250) {
          cannl_red_i3[i4] = logits[((i0)*1000 + 250*i1 + i2)];
        }
        __syncthreads();
        for (int64_t i5 = 128; i5 >= 64; i5 >>= 1) {
          if (i2 < i5 && i2 + i5 < 250) cannl_red_i3[i4] = cannl_fmaxf(cannl_red_i3[i4], cannl_red_i3[i4 + i5]);
          __syncthreads();
        }
        if (i2 < 64) {
          float i6 = i2 < 250 ? cannl_red_i3[i4] : 0;
          for (int64_t i5 = 32; i5 > 0; i5 >>= 1) {
            const float i7 = __shfl_down(i6, (unsigned int)i5);
            if (i2 < i5 && i2 + i5 < 250) i6 = cannl_fmaxf(i6, i7);
          }
          if (i2 == 0) einmax[i0] = cannl_fmaxf(einmax[i0], i6);
        }
        __syncthreads();
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k2(
    float *__restrict__ exp_,
    float *__restrict__ logits,
    float *__restrict__ einmax) {
  {
    const int32_t i0 = (int32_t)blockIdx.y;
    {
      const int32_t i1 = (int32_t)blockIdx.x;
      {
        const int32_t i2 = (int32_t)threadIdx.x;
        if (((int64_t)(((int64_t)(256*((int64_t)i1) + ((int64_t)i2))) < 1000LL)) != 0) {
          exp_[((i0)*1000 + 256*i1 + i2)] = expf((logits[((i0)*1000 + 256*i1 + i2)] - einmax[i0]));
        }
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k3(
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

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k4(
    float *__restrict__ div,
    float *__restrict__ exp_,
    float *__restrict__ einsum) {
  {
    const int32_t i0 = (int32_t)blockIdx.y;
    {
      const int32_t i1 = (int32_t)blockIdx.x;
      {
        const int32_t i2 = (int32_t)threadIdx.x;
        if (((int64_t)(((int64_t)(256*((int64_t)i1) + ((int64_t)i2))) < 1000LL)) != 0) {
          div[((i0)*1000 + 256*i1 + i2)] = (exp_[((i0)*1000 + 256*i1 + i2)] / einsum[i0]);
        }
      }
    }
  }
}

