#pragma once
// Digests for caches: SHA-256 (FIPS 180-4).
//
//   sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace cannl {

/// The 32-byte SHA-256 digest of `data` (any bytes, including NULs).
///   sha256("abc")[0] == 0xba
std::array<std::uint8_t, 32> sha256(std::string_view data);
/// The digest as 64 lowercase hex digits, e.g. for cache file names.
///   sha256_hex("") == "e3b0c442...b855"
std::string sha256_hex(std::string_view data);

}  // namespace cannl
