#include <cstdlib>
#include <fmt/format.h>
#include <xfer/config.hpp>

#include <unistd.h>
#include <xfer/fleet/comm.hpp>

namespace xfer::fleet {
namespace {

class solo_comm final : public comm {
 public:
  solo_comm(identity who, bool files) : who_(std::move(who)), files_(files) {}
  std::string name() const override { return files_ ? "files" : "single"; }
  const identity& who() const override { return who_; }
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
  identity who_;
  bool files_;
};

}  // namespace

std::unique_ptr<comm> make_single_comm(const std::string& node) {
  identity who;
  who.node = node;
  return std::make_unique<solo_comm>(who, false);
}

std::unique_ptr<comm> make_files_comm(const identity& who) { return std::make_unique<solo_comm>(who, true); }

bool mpi_built() { return XFER_HAVE_MPI; }

bool mpi_launched() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx launchers (srun
  // --mpi=pmix, prrte) PMIX_RANK; MPICH's Hydra PMI_SIZE.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<comm> choose_comm(bool files) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string node = host;
  const auto env_id = identity_from_env([](const char* n) { return std::getenv(n); }, node);
  if (files) return make_files_comm(env_id.value_or(identity{0, 1, 0, 1, node}));
  if (mpi_built() && mpi_launched()) return make_mpi_comm();
  if (env_id && env_id->size > 1) {
    if (env_id->rank == 0)
      fmt::print(stderr,
                 "xferbench: error: started as {} ranks by a launcher, but this xferbench was built without MPI: give "
                 "--out-dir DIR (one file per rank, merged by `xferbench-report fleet DIR`), or rebuild with MPI "
                 "(Debian: libopenmpi-dev)\n",
                 env_id->size);
    return nullptr;
  }
  return make_single_comm(node);
}

#if !XFER_HAVE_MPI
std::unique_ptr<comm> make_mpi_comm() { throw std::logic_error("this xferbench was built without MPI"); }
#endif

}  // namespace xfer::fleet
