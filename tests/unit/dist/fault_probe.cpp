// A program for `mpirun`: world rank 1 misbehaves in the middle of a run of all-reduces (killed by
// SIGKILL inside one, stuck, or calling with another size) and every rank that notices reports whether it got a
// DistError naming the culprit within the timeout. tests/unit/dist/run_fault_probe.sh counts the
// verdicts. Usage: dist_fault_probe kill|stall|mismatch mpi|shm TIMEOUT_MS
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lemma/dist/world.h"

namespace {
int verdict(int rank, bool pass, long long ms, const std::string& what) {
  std::printf("%s rank %d after %lld ms: %s\n", pass ? "PASS" : "FAIL", rank, ms, what.c_str());
  std::fflush(stdout);
  // Stay a moment: a rank that times out a little later must find this one alive, or it would
  // rightly list it among the exited too.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // No MPI_Finalize: it would wait for the lost rank. mpirun runs with --enable-recovery, so the
  // other ranks' exits do not kill this one before it reports.
  _exit(pass ? 0 : 1);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace lemma::dist;
  if (argc != 4) {
    std::fprintf(stderr, "usage: dist_fault_probe kill|stall|mismatch mpi|shm TIMEOUT_MS\n");
    return 2;
  }
  const std::string mode = argv[1], transport = argv[2];
  const auto timeout = std::chrono::milliseconds(std::atoll(argv[3]));
  WorldOptions options;
  options.launched_by_mpirun = true;
  options.group.transport = transport == "shm" ? Transport::kShm : Transport::kMpi;
  options.group.timeout = timeout;
  World world(options);
  Communicator& comm = world.comm();
  const int me = comm.rank();
  // kill: rank 1 dies by SIGKILL from a thread while all ranks loop over 256 KiB all-reduces, so it
  // is lost in the middle of one; stall and mismatch: rank 1 misbehaves at step 3.
  std::vector<float> data(mode == "kill" ? 65536 : 1000);
  auto start = std::chrono::steady_clock::now();
  try {
    for (int step = 0; step < 1000000; ++step) {
      // After a first all-reduce every rank is past the World's set-up (whose MPI calls have no
      // deadline); then rank 1 dies 300 ms into the loop, inside whichever all-reduce it is in.
      if (me == 1 && step == 1 && mode == "kill") {
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          raise(SIGKILL);
        }).detach();
      }
      if (me == 1 && step == 3 && mode == "stall") {
        std::this_thread::sleep_for(timeout * 3);
        _exit(0);
      }
      data.assign(me == 1 && step == 3 && mode == "mismatch" ? data.size() + 1 : data.size(), 1.0f);
      start = std::chrono::steady_clock::now();
      comm.all_reduce(data);
    }
  } catch (const DistError& e) {
    const long long ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    // The culprit names someone else (its peers disagree with it); everyone else names rank 1: as
    // exited when it was killed (a survivor may also hear nothing from another survivor still
    // waiting on it, and must not blame that one), as silent when stuck.
    const std::string expected = mode == "kill"    ? "rank 1 (pid "
                                 : mode == "stall" ? "no answer from rank 1 within"
                                 : me == 1         ? "sizes disagree"
                                                   : "rank 1 ";
    const bool names_culprit = message.find(expected) != std::string::npos &&
                               (mode != "kill" || message.find(") exited; no answer") != std::string::npos) &&
                               (mode != "kill" || message.find("), rank") == std::string::npos);
    const bool in_time = ms <= timeout.count() + 3000;
    return verdict(me, names_culprit && in_time, ms, message);
  }
  return verdict(me, false, 0, "no DistError");
}
