# w: on-device (3: declared materialized)
# x: on-device (3: declared materialized)
# b: on-device (3: declared materialized)
# m: virtual (16: inlined at every read)
# z: virtual (16: inlined at every read)
# h: on-device (3: declared materialized)
# dense_layer
zero_out m
for i0 in [0, 3):
  for i1 in [0, 2):
    for i2 in [0, 4):
      m[i0, i2] = add(m[i0, i2], mul(w[i0, i1], x[i1, i2]))
for i3 in [0, 3):
  for i4 in [0, 4):
    z[i3, i4] = add({scope v0:
        v0 := 0
        for i5 in [0, 2):
          v0 := add(v0, mul(w[i3, i5], x[i5, i4]))
      }, b[i3, i4])
for i6 in [0, 3):
  for i7 in [0, 4):
    h[i6, i7] = relu({scope v1:
        v1 := add({scope v2:
            v2 := 0
            for i8 in [0, 2):
              v2 := add(v2, mul(w[i6, i8], x[i8, i7]))
          }, b[i6, i7])
      })
