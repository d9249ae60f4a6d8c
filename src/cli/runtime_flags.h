// The runtime options every command shares (RuntimeOptions: ISA, activation precision, interleaving,
// decode plans, thread pinning), as global flags of the `lemma` command, each defaulting to its
// LEMMA_* environment variable: the one place the process reads them. Threads and the KV cache
// dtype are per-command flags (--threads, --kv-cache-dtype) that go to the Engine's config.
#pragma once

#include <CLI/CLI.hpp>

#include "lemma/model/runtime_options.h"

namespace lemma::cli {

// Adds --isa, --matmul-precision, --interleave, --decode-plans, --pin-threads, --mla-attention to the root app.
void add_runtime_flags(CLI::App& app);

// The options those flags (or their variables) give, validated: InvalidArgument names the flag or
// variable and the accepted values, Unsupported an ISA this machine cannot run. Call after parsing.
const RuntimeOptions& runtime_options();

}  // namespace lemma::cli
