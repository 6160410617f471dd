#pragma once
// The C++ side of the module's exceptions. Each maps to a documented Python
// type of xferbench._errors (errors.cpp holds the translation), so Python
// code catches xferbench.PoolClosedError whether or not the native module is
// loaded (the classes live in pure Python).
#include <stdexcept>
#include <string>

namespace xfer::python {

// An operation on a pool after close().
struct pool_closed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A CUDA kind, device or copy was asked for and CUDA is not there: not
// compiled in, no driver, no device. what() says which.
struct cuda_unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A DLPack element type as NumPy names it: (2, 64) -> "float64", (1, 8) ->
// "uint8"; one DLPack has no NumPy name for reads "DLPack type code 7, 16 bits".
std::string dtype_name(int code, int bits);

// Called once at import: installs the translator.
void register_errors();

}  // namespace xfer::python
