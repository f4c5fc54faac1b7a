// GoogleTest environment that initialises MPI once per test binary (singleton MPI, no mpirun), so
// single-rank Trainers can run on MPI_COMM_SELF inside ordinary gtest binaries.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>

namespace mplan::test {

class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
  }
  void TearDown() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

inline const bool kMpiEnvRegistered = (::testing::AddGlobalTestEnvironment(new MpiEnvironment), true);

}  // namespace mplan::test
