#pragma once
// Everything a user program needs:
//
//   #include <cannl/cannl.h>
//   using namespace cannl;

#include "cannl/io/bpe_tokenizer.h"
#include "cannl/io/checkpoint.h"
#include "cannl/io/safetensors.h"
#include "cannl/io/token_batches.h"
#include "cannl/nn/adam.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/data_parallel.h"
#include "cannl/nn/datasets.h"
#include "cannl/nn/functional.h"
#include "cannl/nn/gpt2.h"
#include "cannl/nn/grad_clip.h"
#include "cannl/nn/loss_scaling.h"
#include "cannl/nn/losses.h"
#include "cannl/nn/ops.h"
#include "cannl/nn/optimizers.h"
#include "cannl/nn/schedules.h"
#include "cannl/nn/training.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/precision_policy.h"
#include "cannl/tensor/tensor.h"
