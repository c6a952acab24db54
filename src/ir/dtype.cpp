#include "cannl/ir/dtype.h"

namespace cannl::ir {

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: case DType::U64: return 8;
    case DType::F32: case DType::I32: case DType::U32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::FP8: case DType::U8: return 1;
    case DType::U4x32: return 16;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F64: return "f64";
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U32: return "u32";
    case DType::U64: return "u64";
    case DType::U8: return "u8";
    case DType::U4x32: return "u4x32";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

bool is_float(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         t == DType::FP8;
}
bool is_signed_int(DType t) { return t == DType::I32 || t == DType::I64; }
bool is_unsigned_int(DType t) {
  return t == DType::U32 || t == DType::U64 || t == DType::U8;
}

DType compute_dtype(DType t) {
  return (t == DType::F16 || t == DType::BF16 || t == DType::FP8) ? DType::F32 : t;
}

namespace {
// Higher rank wins in promotion.
int promotion_rank(DType t) {
  switch (t) {
    case DType::U8: return 0;
    case DType::I32: return 1;
    case DType::U32: return 2;
    case DType::I64: return 3;
    case DType::U64: return 4;
    case DType::FP8: return 5;
    case DType::F16: return 6;
    case DType::BF16: return 7;
    case DType::F32: return 8;
    case DType::F64: return 9;
    case DType::U4x32: return 10;
  }
  return 0;
}
}  // namespace

DType promote(DType a, DType b) { return promotion_rank(a) >= promotion_rank(b) ? a : b; }

}  // namespace cannl::ir
