#include <xfer/mem/blocks/block_copier.hpp>
#include <xfer/mem/environment.hpp>
#include <xfer/mem/spin_wait.hpp>
#include <xfer/mem/staged/staging_budget.hpp>
#include <xfer/mem/staged/tuning.hpp>

namespace xfer::mem {

void check_environment() {
  (void)tuning_from_environment({});
  (void)spin_us_from_environment();
  (void)block_way_from_environment();
  (void)staging_budget_options_from_environment();
}

}  // namespace xfer::mem
