// The process's World for the tests run under mpirun (mpi_test_main.cpp creates it).
#pragma once

#include "lemma/dist/world.h"

namespace lemma::dist::testing {

World& test_world();
// The transport named on the command line (the world's backend).
Transport test_transport();

}  // namespace lemma::dist::testing
