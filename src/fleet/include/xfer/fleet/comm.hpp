#pragma once
// How the ranks of `xferbench fleet` talk: MPI where this build has it and
// an MPI launcher started the process, or nothing at all (one rank alone, or
// one process per rank writing its own file under --out-dir). The protocol
// (fleet/run.hpp) sees only this interface; mpi_comm.cpp is the one file that
// includes mpi.h, built only where CMake found an MPI (config.hpp says so).
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xfer/core/fleet.hpp>

namespace xfer::fleet {

class comm {
 public:
  virtual ~comm() = default;
  virtual std::string name() const = 0;  // "mpi", "files", "single"
  virtual const identity& who() const = 0;
  // Whether the ranks can meet (barriers, gathering); files cannot.
  virtual bool coordinated() const = 0;
  // The largest number of ranks any node has (the alone phase's steps).
  virtual int max_local_size() = 0;
  // Every rank arrives, or false once timeout_s passed (a rank died or hung).
  virtual bool barrier(double timeout_s) = 0;
  // Rank 0: every rank's text by rank (nullopt: nothing came within
  // timeout_s); the others send theirs and get an empty vector.
  virtual std::vector<std::optional<std::string>> gather(const std::string& mine, double timeout_s) = 0;
  // Ends every rank with `code` (MPI_Abort): what rank 0 does when a rank
  // is missing, so a hung one does not keep the job alive.
  [[noreturn]] virtual void abort_all(int code) = 0;
  // A clean end (MPI_Finalize).
  virtual void finish() = 0;
};

// One process, no launcher.
std::unique_ptr<comm> make_single_comm(const std::string& node);
// Launched as several ranks without a way to meet: each writes its own file.
std::unique_ptr<comm> make_files_comm(const identity& who);
// Whether this build has MPI, and whether an MPI launcher started this process.
bool mpi_built();
bool mpi_launched();
// MPI_Init and the identity from MPI (ranks, and the ranks sharing a node).
std::unique_ptr<comm> make_mpi_comm();

// The transport this process has: files with an --out-dir (identity from the
// launcher's variables), MPI under an MPI launcher where this build has it,
// else one rank alone. nullptr: a launcher started several ranks but they
// cannot meet (no MPI in this build, no --out-dir): exit_no_mpi, said on rank 0.
std::unique_ptr<comm> choose_comm(bool files);

}  // namespace xfer::fleet
