# Finds every dependency from the system (Debian packages); nothing is vendored or downloaded.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Protobuf REQUIRED)
find_package(GTest REQUIRED)

# OpenBLAS, preferring the OpenMP build so BLAS and our own loops share one thread pool.
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
add_library(tt::blas ALIAS PkgConfig::OPENBLAS)

# GPT-2 pre-tokenization regex with Unicode properties (UCP) and JIT; JSON for tokenizer files.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
add_library(tt::pcre2 ALIAS PkgConfig::PCRE2)
find_package(nlohmann_json 3.10 REQUIRED)

if(TOPOTRAIN_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()

set(TT_HAVE_CUDA OFF)
if(TOPOTRAIN_CUDA STREQUAL "ON" OR TOPOTRAIN_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${TOPOTRAIN_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(TT_HAVE_CUDA ON)
  elseif(TOPOTRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TOPOTRAIN_CUDA=ON but no CUDA compiler was found; install the CUDA toolkit "
                        "or configure with -DTOPOTRAIN_CUDA=OFF")
  endif()
endif()
message(STATUS "topotrain: CUDA=${TT_HAVE_CUDA} MPI=${TOPOTRAIN_MPI} sanitize='${TOPOTRAIN_SANITIZE}'")
