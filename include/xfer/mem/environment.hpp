#pragma once
// libxfer's environment variables, checked together at a program's front door
// (the CLI before any command runs, the Python Copier and BlockCopier when
// made), so a bad value is bad input (exit 2, one line naming the variable)
// rather than a point that fails later (issue 49).
namespace xfer::mem {

// Parses every XFER_* variable libxfer reads: XFER_STAGED_* (staged/tuning.hpp,
// staging_budget.hpp), XFER_SPIN_US (spin_wait.hpp), XFER_BLOCKS_WAY
// (blocks/block_copier.hpp). Throws std::invalid_argument naming the first bad one.
void check_environment();

}  // namespace xfer::mem
