static void conv2d(float *restrict conv2d, float *restrict img, float *restrict kernel_) {
  /* forward */
  /* conv2d zeroed by the matmul call below */
  /* matmul tile 6272 x 16 x 75 over 3 row, 1 column and 3 step loops (implicit im2col; register-tiled, packed panels) */
  cannl_sgemm_x16_nd(3, (const int64_t[]){8, 28, 28}, (const int64_t[]){12544, 448, 16}, (const int64_t[]){3072, 96, 3},
      1, (const int64_t[]){16}, (const int64_t[]){1}, (const int64_t[]){75},
      3, (const int64_t[]){3, 5, 5}, (const int64_t[]){1, 3, 96}, (const int64_t[]){1, 3, 15},
      conv2d + ((((0)*28 + 0)*28 + 0)*16 + 0), img + ((((0)*32 + 0)*32 + 0)*3 + 0), kernel_ + ((((0)*5 + 0)*5 + 0)*3 + 0), 1, 1, 0);
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. */
void cannl_entry_conv2d(void **buffers, const int64_t *statics) {
  (void)statics;
  conv2d((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
