extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k0(
    float *__restrict__ einmax,
    float *__restrict__ logits) {
  {
    const int32_t i0 = (int32_t)blockIdx.x;
    {
      const int32_t i1 = (int32_t)threadIdx.x;
      einmax[256*i0 + i1] = (-INFINITY);
    }
  }
  {
    const int32_t i2 = (int32_t)blockIdx.x;
    {
      const int32_t i3 = (int32_t)threadIdx.x;
      for (int32_t i4 = 0; i4 < 1000; ++i4) {
        einmax[256*i2 + i3] = cannl_fmaxf(einmax[256*i2 + i3], logits[((256*i2 + i3)*1000 + i4)]);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k1(
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

extern "C" __global__ void __launch_bounds__(256) gpu_softmax_k3(
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

