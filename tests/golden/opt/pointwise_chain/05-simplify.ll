# a: on-device (3: declared materialized)
# c: virtual (16: inlined at every read)
# d: local (1: a cell is read up to 2 times > virtualize_max_visits; local: 16 bytes)
# e: on-device (3: declared materialized)
# pointwise_chain
for i0 in [0, 4):
  d[i0] = mul(neg(a[i0]), a[i0])
for i1 in [0, 4):
  e[i1] = add(d[i1], d[i1])
