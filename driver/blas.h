/** \file
 * The BLAS library behind extern calls, chosen by `--config BLAS=NAME` (CompileOptions::config,
 * so part of the cache key). Generated code declares the CBLAS routines itself and leaves them
 * undefined; before a module that calls them is loaded, the library is dlopened with
 * RTLD_GLOBAL, so the cc runtime's dlopen and the clang runtime's LLJIT (which searches the
 * process) both resolve them. Host side only: the core never loads libraries.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kiln {

/** The shared library of BLAS `name`: "openblas" -> "libopenblas.so.0", "none" -> "" (no
 *  library). Throws std::runtime_error naming the known values for any other name. */
std::string blas_library(const std::string& name);

/** "" when `name` is a known BLAS value, else the message blas_library throws. */
std::string blas_name_error(const std::string& name);

/** Makes `symbols` (the library functions a module calls, e.g. "cblas_sgemm") resolvable:
 *  loads the BLAS that config["BLAS"] names (once per process; OpenBLAS keeps its own thread
 *  pool) and checks it defines each symbol. Does nothing when `symbols` is empty. Throws
 *  std::runtime_error when no BLAS is configured, the name is unknown, the library is not
 *  installed, or it lacks a symbol. */
void load_blas(const std::map<std::string, std::string>& config,
               const std::vector<std::string>& symbols);

}  // namespace kiln
