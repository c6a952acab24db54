static void matmul(float *restrict matmul, float *restrict w, float *restrict x) {
  /* forward */
  /* matmul zeroed by the matmul call below */
  /* matmul tile 256 x 128 x 192 (register-tiled, packed panels) */
  cannl_sgemm_x16(256, 128, 192, matmul + ((0)*128 + 0), 128, 1, x + ((0)*192 + 0), 192, 1, w + ((0)*192 + 0), 1, 192, 1, 1, 0);
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. */
void cannl_entry_matmul(void **buffers, const int64_t *statics) {
  (void)statics;
  matmul((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
