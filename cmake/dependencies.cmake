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
# NCCL (optional, needs CUDA): the GPU communicator backend. Looked up in NCCL_ROOT / NCCL_HOME, then
# in the CUDA toolkit (CUDA 13 images ship nccl.h in include/ and libnccl.so in lib/ or lib64/), then in
# the system paths (Debian's libnccl-dev). Found: TT_HAVE_NCCL=ON and the imported target tt::nccl.
set(TT_HAVE_NCCL OFF)
if(TT_HAVE_CUDA AND TOPOTRAIN_NCCL)
  find_path(NCCL_INCLUDE_DIR nccl.h
            HINTS $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
            PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY NAMES nccl
               HINTS $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    if(NOT TARGET tt::nccl)
      add_library(tt::nccl UNKNOWN IMPORTED)
      set_target_properties(tt::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    endif()
    set(TT_HAVE_NCCL ON)
  else()
    message(STATUS "topotrain: NCCL not found (nccl.h / libnccl); the nccl backend is not built")
  endif()
endif()
message(STATUS "topotrain: CUDA=${TT_HAVE_CUDA} MPI=${TOPOTRAIN_MPI} NCCL=${TT_HAVE_NCCL} sanitize='${TOPOTRAIN_SANITIZE}'")
