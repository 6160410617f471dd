#include "errors.hpp"

#include <fmt/format.h>
#include <nanobind/nanobind.h>

#include <xfer/mem/error.hpp>
#include <xfer/mem/registration_cache.hpp>
#include <xfer/mem/staged/device_step.hpp>

namespace nb = nanobind;

namespace xfer::python {
namespace {

void raise(const char* type, const char* message) {
  // Looked up when raised (sys.modules makes that cheap): xferbench._errors
  // is imported by xferbench/__init__.py before the native module.
  nb::object cls = nb::module_::import_("xferbench._errors").attr(type);
  PyErr_SetString(cls.ptr(), message);
}

}  // namespace

std::string dtype_name(int code, int bits) {
  // DLPack's codes (dlpack.h's DLDataTypeCode): 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
  switch (code) {
    case 0: return fmt::format("int{}", bits);
    case 1: return fmt::format("uint{}", bits);
    case 2: return fmt::format("float{}", bits);
    case 4: return fmt::format("bfloat{}", bits);
    case 5: return fmt::format("complex{}", bits);
    case 6: return bits == 8 ? "bool" : fmt::format("bool ({} bits)", bits);
    default: return fmt::format("DLPack type code {}, {} bits", code, bits);
  }
}

void register_errors() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const pool_closed& e) {
      raise("PoolClosedError", e.what());
    } catch (const cuda_unavailable& e) {
      raise("CudaUnavailableError", e.what());
    } catch (const mem::allocation_error& e) {
      raise("AllocationError", e.what());
    } catch (const mem::staged_error& e) {
      // A refused argument is the caller's mistake, whatever layer found it.
      if (e.why() == mem::staged_error::reason::bad_argument)
        PyErr_SetString(PyExc_ValueError, e.what());
      else
        raise("CopyError", e.what());
    } catch (const mem::device_step_error& e) {
      raise("CopyError", e.what());
    } catch (const mem::registration_error& e) {
      raise("RegistrationError", e.what());
    }
  });
}

}  // namespace xfer::python
