// The error classes are header-only; this file anchors the support library.
#include "cannl/support/error.h"
