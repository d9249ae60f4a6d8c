// The one element-wise reduction every backend uses, so that the MPI path, the shared-memory path and
// the in-process threads give the same bits: out[i] = ((src[0][i] op src[1][i]) op src[2][i]) ...,
// always in source (rank) order. Pure function, no allocation.
#pragma once

#include <span>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

// `out` may alias any of `sources` (each block of elements is read from every source before it is
// written). Every source holds at least out.size() floats.
void reduce_in_rank_order(std::span<float> out, std::span<const float* const> sources, ReduceOp op);

}  // namespace lemma::dist
