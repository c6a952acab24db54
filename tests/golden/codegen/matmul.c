static int matmul(float *restrict matmul, float *restrict w, float *restrict x) {
  int cannl_status = CANNL_STATUS_OK;
  /* forward */
  /* matmul starts at zero: the call sets its cells */
  /* matmul tile 256 x 128 x 192 (register-tiled, packed panels) */
  cannl_check(&cannl_status, cannl_sgemm_x16(256, 128, 192, matmul + ((0)*128 + 0), 128, 1, x + ((0)*192 + 0), 192, 1, w + ((0)*192 + 0), 1, 192, 1, 1, 0));
  return cannl_status;
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. Returns
   CANNL_STATUS_OK, or CANNL_STATUS_OUT_OF_MEMORY when scratch memory could not be allocated. */
int cannl_entry_matmul(void **buffers, const int64_t *statics) {
  (void)statics;
  return matmul((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
