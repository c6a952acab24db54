#pragma once
// CANNL_TEST_UNDER_ASAN: defined when the tests run under AddressSanitizer, which aborts on an
// impossible allocation instead of returning null. GCC defines __SANITIZE_ADDRESS__; Clang (the
// sanitized build's compiler) answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define CANNL_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CANNL_TEST_UNDER_ASAN 1
#endif
#endif
