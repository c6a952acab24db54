static void softmax(float *restrict logits, float *restrict exp_, float *restrict div) {
  _Alignas(64) float einmax[512];
  memset(einmax, 0, sizeof einmax);
  _Alignas(64) float einsum[512];
  memset(einsum, 0, sizeof einsum);
  /* forward */
  { /* vectorized, 16 lanes */
    int64_t i0 = 0;
    for (; i0 <= 496; i0 += 16) {
      *(cannl_f32x16u *)&einmax[i0] = cannl_f32x16_splat((-INFINITY));
    }
    for (; i0 < 512; ++i0) {
      einmax[i0] = (-INFINITY);
    }
  }
  {
    const int64_t i3 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i2 = 0; i2 < i3; ++i2) {
      for (int64_t i1 = 512 * i2 / i3; i1 < 512 * (i2 + 1) / i3; ++i1) {
        for (int64_t i4 = 0; i4 < 1000; ++i4) {
          einmax[i1] = cannl_fmaxf(einmax[i1], logits[((i1)*1000 + i4)]);
        }
      }
    }
  }
  {
    const int64_t i7 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i6 = 0; i6 < i7; ++i6) {
      for (int64_t i5 = 512 * i6 / i7; i5 < 512 * (i6 + 1) / i7; ++i5) {
        for (int64_t i8 = 0; i8 < 1000; ++i8) {
          exp_[((i5)*1000 + i8)] = expf((logits[((i5)*1000 + i8)] - einmax[i5]));
        }
      }
    }
  }
  memset(einsum, 0, 2048);
  {
    const int64_t i11 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i10 = 0; i10 < i11; ++i10) {
      for (int64_t i9 = 512 * i10 / i11; i9 < 512 * (i10 + 1) / i11; ++i9) {
        for (int64_t i12 = 0; i12 < 1000; ++i12) {
          einsum[i9] = (einsum[i9] + exp_[((i9)*1000 + i12)]);
        }
      }
    }
  }
  {
    const int64_t i15 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i14 = 0; i14 < i15; ++i14) {
      for (int64_t i13 = 512 * i14 / i15; i13 < 512 * (i14 + 1) / i15; ++i13) {
        { /* vectorized, 16 lanes */
          int64_t i16 = 0;
          for (; i16 <= 984; i16 += 16) {
            *(cannl_f32x16u *)&div[((i13)*1000 + i16)] = (*(const cannl_f32x16u *)&exp_[((i13)*1000 + i16)] / cannl_f32x16_splat(einsum[i13]));
          }
          for (; i16 < 1000; ++i16) {
            div[((i13)*1000 + i16)] = (exp_[((i13)*1000 + i16)] / einsum[i13]);
          }
        }
      }
    }
  }
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. */
void cannl_entry_softmax(void **buffers, const int64_t *statics) {
  (void)statics;
  softmax((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
