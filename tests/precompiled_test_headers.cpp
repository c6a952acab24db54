// The one source of cannl_test_pch, the target that precompiles tests/precompiled_test_headers.h
// for every test executable (cmake/cannl_layers.cmake).
