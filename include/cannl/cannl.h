#pragma once
// Everything a user program needs:
//
//   #include <cannl/cannl.h>
//   using namespace cannl;

#include "cannl/nn/datasets.h"
#include "cannl/nn/losses.h"
#include "cannl/nn/optimizers.h"
#include "cannl/nn/training.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"
