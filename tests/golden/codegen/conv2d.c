static void conv2d(float *restrict conv2d, float *restrict img, float *restrict kernel_) {
  /* forward */
  memset(conv2d, 0, 401408);
  {
    const int64_t i2 = cannl_grid_chunks(8, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i1 = 0; i1 < i2; ++i1) {
      for (int64_t i0 = 8 * i1 / i2; i0 < 8 * (i1 + 1) / i2; ++i0) {
        for (int64_t i3 = 0; i3 < 28; ++i3) {
          for (int64_t i4 = 0; i4 < 28; ++i4) {
            for (int64_t i5 = 0; i5 < 16; ++i5) {
              for (int64_t i6 = 0; i6 < 3; ++i6) {
                for (int64_t i7 = 0; i7 < 5; ++i7) {
                  for (int64_t i8 = 0; i8 < 5; ++i8) {
                    conv2d[((((i0)*28 + i3)*28 + i4)*16 + i5)] = fmaf(img[((((i0)*32 + i3 + i7)*32 + i4 + i8)*3 + i6)], kernel_[((((i5)*5 + i7)*5 + i8)*3 + i6)], conv2d[((((i0)*28 + i3)*28 + i4)*16 + i5)]);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. */
void cannl_entry_conv2d(void **buffers, const int64_t *statics) {
  (void)statics;
  conv2d((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
