static int softmax(float *restrict logits, float *restrict exp_, float *restrict div_) {
  int cannl_status = CANNL_STATUS_OK;
  _Alignas(64) float einmax[512];
  memset(einmax, 0, sizeof einmax);
  _Alignas(64) float einsum[512];
  memset(einsum, 0, sizeof einsum);
  float *restrict einmax_partials = (float *)aligned_alloc(64, 131072);
  float *restrict einsum_partials = (float *)aligned_alloc(64, 131072);
  if (einmax_partials == NULL || einsum_partials == NULL) {
    cannl_status = CANNL_STATUS_OUT_OF_MEMORY;
    goto cannl_done;
  }
  memset(einmax_partials, 0, 131072);
  memset(einsum_partials, 0, 131072);
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
        { /* vectorized, 16 lanes */
          int64_t i4 = 0;
          for (; i4 <= 48; i4 += 16) {
            *(cannl_f32x16u *)&einmax_partials[((i1)*64 + i4)] = cannl_f32x16_splat((-INFINITY));
          }
          for (; i4 < 64; ++i4) {
            /* partials */
            einmax_partials[((i1)*64 + i4)] = (-INFINITY);
          }
        }
        for (int64_t i5 = 0; i5 < 15; ++i5) {
          { /* vectorized, 16 lanes */
            int64_t i6 = 0;
            for (; i6 <= 48; i6 += 16) {
              *(cannl_f32x16u *)&einmax_partials[((i1)*64 + i6)] = ({ const cannl_f32x16 cannl_a = *(const cannl_f32x16u *)&einmax_partials[((i1)*64 + i6)], cannl_b = *(const cannl_f32x16u *)&logits[((i1)*1000 + 64*i5 + i6)]; const cannl_i32x16 cannl_ia = (cannl_i32x16)cannl_a, cannl_ib = (cannl_i32x16)cannl_b; const cannl_i32x16 cannl_ga = (cannl_a > cannl_b) | (cannl_b != cannl_b), cannl_gb = (cannl_b > cannl_a) | (cannl_a != cannl_a); (cannl_f32x16)((cannl_ga & cannl_ia) | (~cannl_ga & ((cannl_gb & cannl_ib) | (~cannl_gb & (cannl_ia & cannl_ib))))); });
            }
            for (; i6 < 64; ++i6) {
              /* partials */
              einmax_partials[((i1)*64 + i6)] = cannl_fmaxf(einmax_partials[((i1)*64 + i6)], logits[((i1)*1000 + 64*i5 + i6)]);
            }
          }
        }
        { /* vectorized, 16 lanes */
          int64_t i7 = 0;
          for (; i7 <= 24; i7 += 16) {
            *(cannl_f32x16u *)&einmax_partials[((i1)*64 + i7)] = ({ const cannl_f32x16 cannl_a = *(const cannl_f32x16u *)&einmax_partials[((i1)*64 + i7)], cannl_b = *(const cannl_f32x16u *)&logits[((i1)*1000 + i7 + 960)]; const cannl_i32x16 cannl_ia = (cannl_i32x16)cannl_a, cannl_ib = (cannl_i32x16)cannl_b; const cannl_i32x16 cannl_ga = (cannl_a > cannl_b) | (cannl_b != cannl_b), cannl_gb = (cannl_b > cannl_a) | (cannl_a != cannl_a); (cannl_f32x16)((cannl_ga & cannl_ia) | (~cannl_ga & ((cannl_gb & cannl_ib) | (~cannl_gb & (cannl_ia & cannl_ib))))); });
          }
          for (; i7 < 40; ++i7) {
            /* partials */
            einmax_partials[((i1)*64 + i7)] = cannl_fmaxf(einmax_partials[((i1)*64 + i7)], logits[((i1)*1000 + i7 + 960)]);
          }
        }
        einmax[i1] = cannl_fmaxf(einmax[i1], cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 0)], einmax_partials[((i1)*64 + 1)]), cannl_fmaxf(einmax_partials[((i1)*64 + 2)], einmax_partials[((i1)*64 + 3)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 4)], einmax_partials[((i1)*64 + 5)]), cannl_fmaxf(einmax_partials[((i1)*64 + 6)], einmax_partials[((i1)*64 + 7)]))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 8)], einmax_partials[((i1)*64 + 9)]), cannl_fmaxf(einmax_partials[((i1)*64 + 10)], einmax_partials[((i1)*64 + 11)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 12)], einmax_partials[((i1)*64 + 13)]), cannl_fmaxf(einmax_partials[((i1)*64 + 14)], einmax_partials[((i1)*64 + 15)])))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 16)], einmax_partials[((i1)*64 + 17)]), cannl_fmaxf(einmax_partials[((i1)*64 + 18)], einmax_partials[((i1)*64 + 19)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 20)], einmax_partials[((i1)*64 + 21)]), cannl_fmaxf(einmax_partials[((i1)*64 + 22)], einmax_partials[((i1)*64 + 23)]))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 24)], einmax_partials[((i1)*64 + 25)]), cannl_fmaxf(einmax_partials[((i1)*64 + 26)], einmax_partials[((i1)*64 + 27)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 28)], einmax_partials[((i1)*64 + 29)]), cannl_fmaxf(einmax_partials[((i1)*64 + 30)], einmax_partials[((i1)*64 + 31)]))))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 32)], einmax_partials[((i1)*64 + 33)]), cannl_fmaxf(einmax_partials[((i1)*64 + 34)], einmax_partials[((i1)*64 + 35)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 36)], einmax_partials[((i1)*64 + 37)]), cannl_fmaxf(einmax_partials[((i1)*64 + 38)], einmax_partials[((i1)*64 + 39)]))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 40)], einmax_partials[((i1)*64 + 41)]), cannl_fmaxf(einmax_partials[((i1)*64 + 42)], einmax_partials[((i1)*64 + 43)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 44)], einmax_partials[((i1)*64 + 45)]), cannl_fmaxf(einmax_partials[((i1)*64 + 46)], einmax_partials[((i1)*64 + 47)])))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 48)], einmax_partials[((i1)*64 + 49)]), cannl_fmaxf(einmax_partials[((i1)*64 + 50)], einmax_partials[((i1)*64 + 51)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 52)], einmax_partials[((i1)*64 + 53)]), cannl_fmaxf(einmax_partials[((i1)*64 + 54)], einmax_partials[((i1)*64 + 55)]))), cannl_fmaxf(cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 56)], einmax_partials[((i1)*64 + 57)]), cannl_fmaxf(einmax_partials[((i1)*64 + 58)], einmax_partials[((i1)*64 + 59)])), cannl_fmaxf(cannl_fmaxf(einmax_partials[((i1)*64 + 60)], einmax_partials[((i1)*64 + 61)]), cannl_fmaxf(einmax_partials[((i1)*64 + 62)], einmax_partials[((i1)*64 + 63)])))))));
      }
    }
  }
  {
    const int64_t i10 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i9 = 0; i9 < i10; ++i9) {
      for (int64_t i8 = 512 * i9 / i10; i8 < 512 * (i9 + 1) / i10; ++i8) {
        { /* vectorized, 16 lanes */
          int64_t i11 = 0;
          for (; i11 <= 984; i11 += 16) {
            *(cannl_f32x16u *)&exp_[((i8)*1000 + i11)] = cannl_f32x16_exp((*(const cannl_f32x16u *)&logits[((i8)*1000 + i11)] - cannl_f32x16_splat(einmax[i8])));
          }
          for (; i11 < 1000; ++i11) {
            exp_[((i8)*1000 + i11)] = cannl_expf((logits[((i8)*1000 + i11)] - einmax[i8]));
          }
        }
      }
    }
  }
  memset(einsum, 0, 2048);
  {
    const int64_t i14 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i13 = 0; i13 < i14; ++i13) {
      for (int64_t i12 = 512 * i13 / i14; i12 < 512 * (i13 + 1) / i14; ++i12) {
        { /* vectorized, 16 lanes */
          int64_t i15 = 0;
          for (; i15 <= 48; i15 += 16) {
            *(cannl_f32x16u *)&einsum_partials[((i12)*64 + i15)] = cannl_f32x16_splat(0.0f);
          }
          for (; i15 < 64; ++i15) {
            /* partials */
            einsum_partials[((i12)*64 + i15)] = 0.0f;
          }
        }
        for (int64_t i16 = 0; i16 < 15; ++i16) {
          { /* vectorized, 16 lanes */
            int64_t i17 = 0;
            for (; i17 <= 48; i17 += 16) {
              *(cannl_f32x16u *)&einsum_partials[((i12)*64 + i17)] = (*(const cannl_f32x16u *)&einsum_partials[((i12)*64 + i17)] + *(const cannl_f32x16u *)&exp_[((i12)*1000 + 64*i16 + i17)]);
            }
            for (; i17 < 64; ++i17) {
              /* partials */
              einsum_partials[((i12)*64 + i17)] = (einsum_partials[((i12)*64 + i17)] + exp_[((i12)*1000 + 64*i16 + i17)]);
            }
          }
        }
        { /* vectorized, 16 lanes */
          int64_t i18 = 0;
          for (; i18 <= 24; i18 += 16) {
            *(cannl_f32x16u *)&einsum_partials[((i12)*64 + i18)] = (*(const cannl_f32x16u *)&einsum_partials[((i12)*64 + i18)] + *(const cannl_f32x16u *)&exp_[((i12)*1000 + i18 + 960)]);
          }
          for (; i18 < 40; ++i18) {
            /* partials */
            einsum_partials[((i12)*64 + i18)] = (einsum_partials[((i12)*64 + i18)] + exp_[((i12)*1000 + i18 + 960)]);
          }
        }
        einsum[i12] = (einsum[i12] + ((((((einsum_partials[((i12)*64 + 0)] + einsum_partials[((i12)*64 + 1)]) + (einsum_partials[((i12)*64 + 2)] + einsum_partials[((i12)*64 + 3)])) + ((einsum_partials[((i12)*64 + 4)] + einsum_partials[((i12)*64 + 5)]) + (einsum_partials[((i12)*64 + 6)] + einsum_partials[((i12)*64 + 7)]))) + (((einsum_partials[((i12)*64 + 8)] + einsum_partials[((i12)*64 + 9)]) + (einsum_partials[((i12)*64 + 10)] + einsum_partials[((i12)*64 + 11)])) + ((einsum_partials[((i12)*64 + 12)] + einsum_partials[((i12)*64 + 13)]) + (einsum_partials[((i12)*64 + 14)] + einsum_partials[((i12)*64 + 15)])))) + ((((einsum_partials[((i12)*64 + 16)] + einsum_partials[((i12)*64 + 17)]) + (einsum_partials[((i12)*64 + 18)] + einsum_partials[((i12)*64 + 19)])) + ((einsum_partials[((i12)*64 + 20)] + einsum_partials[((i12)*64 + 21)]) + (einsum_partials[((i12)*64 + 22)] + einsum_partials[((i12)*64 + 23)]))) + (((einsum_partials[((i12)*64 + 24)] + einsum_partials[((i12)*64 + 25)]) + (einsum_partials[((i12)*64 + 26)] + einsum_partials[((i12)*64 + 27)])) + ((einsum_partials[((i12)*64 + 28)] + einsum_partials[((i12)*64 + 29)]) + (einsum_partials[((i12)*64 + 30)] + einsum_partials[((i12)*64 + 31)]))))) + (((((einsum_partials[((i12)*64 + 32)] + einsum_partials[((i12)*64 + 33)]) + (einsum_partials[((i12)*64 + 34)] + einsum_partials[((i12)*64 + 35)])) + ((einsum_partials[((i12)*64 + 36)] + einsum_partials[((i12)*64 + 37)]) + (einsum_partials[((i12)*64 + 38)] + einsum_partials[((i12)*64 + 39)]))) + (((einsum_partials[((i12)*64 + 40)] + einsum_partials[((i12)*64 + 41)]) + (einsum_partials[((i12)*64 + 42)] + einsum_partials[((i12)*64 + 43)])) + ((einsum_partials[((i12)*64 + 44)] + einsum_partials[((i12)*64 + 45)]) + (einsum_partials[((i12)*64 + 46)] + einsum_partials[((i12)*64 + 47)])))) + ((((einsum_partials[((i12)*64 + 48)] + einsum_partials[((i12)*64 + 49)]) + (einsum_partials[((i12)*64 + 50)] + einsum_partials[((i12)*64 + 51)])) + ((einsum_partials[((i12)*64 + 52)] + einsum_partials[((i12)*64 + 53)]) + (einsum_partials[((i12)*64 + 54)] + einsum_partials[((i12)*64 + 55)]))) + (((einsum_partials[((i12)*64 + 56)] + einsum_partials[((i12)*64 + 57)]) + (einsum_partials[((i12)*64 + 58)] + einsum_partials[((i12)*64 + 59)])) + ((einsum_partials[((i12)*64 + 60)] + einsum_partials[((i12)*64 + 61)]) + (einsum_partials[((i12)*64 + 62)] + einsum_partials[((i12)*64 + 63)])))))));
      }
    }
  }
  {
    const int64_t i21 = cannl_grid_chunks(512, 0);
    #pragma omp parallel for schedule(static)
    for (int64_t i20 = 0; i20 < i21; ++i20) {
      for (int64_t i19 = 512 * i20 / i21; i19 < 512 * (i20 + 1) / i21; ++i19) {
        { /* vectorized, 16 lanes */
          int64_t i22 = 0;
          for (; i22 <= 984; i22 += 16) {
            *(cannl_f32x16u *)&div_[((i19)*1000 + i22)] = (*(const cannl_f32x16u *)&exp_[((i19)*1000 + i22)] / cannl_f32x16_splat(einsum[i19]));
          }
          for (; i22 < 1000; ++i22) {
            div_[((i19)*1000 + i22)] = (exp_[((i19)*1000 + i22)] / einsum[i19]);
          }
        }
      }
    }
  }
cannl_done:
  free(einmax_partials);
  free(einsum_partials);
  return cannl_status;
}

/* Entry point for loaders: buffers[k] is the k-th pointer parameter. Returns
   CANNL_STATUS_OK, or CANNL_STATUS_OUT_OF_MEMORY when scratch memory could not be allocated. */
int cannl_entry_softmax(void **buffers, const int64_t *statics) {
  (void)statics;
  return softmax((float *)buffers[0], (float *)buffers[1], (float *)buffers[2]);
}
