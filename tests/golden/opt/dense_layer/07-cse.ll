# w: on-device (3: declared materialized)
# x: on-device (3: declared materialized)
# b: on-device (3: declared materialized)
# m: virtual (16: inlined at every read)
# z: virtual (16: inlined at every read)
# h: on-device (3: declared materialized)
# dense_layer
for i0 in [0, 3):
  for i1 in [0, 4):
    h[i0, i1] = relu(add({scope v0:
        v0 := 0
        for i2 in [0, 2):
          v0 := add(v0, mul(w[i0, i2], x[i2, i1]))
      }, b[i0, i1]))
