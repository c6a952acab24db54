static int conv2d(float *restrict conv2d, float *restrict img, float *restrict kernel_) {
  int cannl_status = CANNL_STATUS_OK;
  /* forward */
  /* conv2d starts at zero: the call sets its cells */
  /* matmul tile 6272 x 16 x 75 over 3 row, 1 column and 3 step loops (implicit im2col; register-tiled, packed panels) */
  cannl_check(&cannl_status, cannl_sgemm_x16_nd(3, (const int64_t[]){8, 28, 28}, (const int64_t[]){12544, 448, 16}, (const int64_t[]){3072, 96, 3},
      1, (const int64_t[]){16}, (const int64_t[]){1}, (const int64_t[]){75},
      3, (const int64_t[]){3, 5, 5}, (const int64_t[]){1, 3, 96}, (const int64_t[]){1, 3, 15},
      conv2d + ((((0)*28 + 0)*28 + 0)*16 + 0), img + ((((0)*32 + 0)*32 + 0)*3 + 0), kernel_ + ((((0)*5 + 0)*5 + 0)*3 + 0), 1, 1, 0));
  return cannl_status;
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. Returns
   CANNL_STATUS_OK, or CANNL_STATUS_OUT_OF_MEMORY when scratch memory could not be allocated. */
int cannl_entry_conv2d(void **buffers, const int64_t *statics) {
  (void)statics;
  return conv2d((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
