#include <cstdlib>
#include <fmt/format.h>
#include <xfer/config.hpp>

#include "fleet_comm.hpp"

namespace xfer::cli {
namespace {

class solo_comm final : public fleet_comm {
 public:
  solo_comm(fleet::identity who, bool files) : who_(std::move(who)), files_(files) {}
  std::string name() const override { return files_ ? "files" : "single"; }
  const fleet::identity& who() const override { return who_; }
  bool coordinated() const override { return !files_; }
  int max_local_size() override { return files_ ? who_.local_size : 1; }
  bool barrier(double) override { return true; }
  std::vector<std::optional<std::string>> gather(const std::string& mine, double) override {
    if (files_) return {};
    return {mine};
  }
  [[noreturn]] void abort_all(int code) override { std::_Exit(code); }
  void finish() override {}

 private:
  fleet::identity who_;
  bool files_;
};

}  // namespace

std::unique_ptr<fleet_comm> make_single_comm(const std::string& node) {
  fleet::identity who;
  who.node = node;
  return std::make_unique<solo_comm>(who, false);
}

std::unique_ptr<fleet_comm> make_files_comm(const fleet::identity& who) { return std::make_unique<solo_comm>(who, true); }

bool mpi_built() { return XFER_HAVE_MPI; }

bool mpi_launched() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx launchers (srun
  // --mpi=pmix, prrte) PMIX_RANK; MPICH's Hydra PMI_SIZE.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

#if !XFER_HAVE_MPI
std::unique_ptr<fleet_comm> make_mpi_comm() { throw std::logic_error("this xferbench was built without MPI"); }
#endif

}  // namespace xfer::cli
