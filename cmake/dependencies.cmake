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
    # One CUDA runtime for all layer libraries (a static copy per shared library would each keep state).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
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
# cuDNN + its header-only C++ frontend (optional, needs CUDA): cuDNN's fused attention (SDPA) for
# bf16 attention. The frontend is not vendored: launch/install_deps.sh unpacks the include/ folder of
# the PyPI wheel nvidia-cudnn-frontend into /usr/local/cudnn-frontend; CUDNN_FRONTEND_ROOT (CMake or
# environment) points elsewhere, and a `pip install nvidia-cudnn-frontend` into the python3 on PATH
# is found too. cuDNN (cudnn.h, libcudnn) is looked up in CUDNN_ROOT / CUDNN_HOME, the CUDA toolkit
# and the system paths. Both found: TT_HAVE_CUDNN_FRONTEND=ON and the imported target
# tt::cudnn_frontend (headers, libcudnn, NVRTC); otherwise attention uses the flash kernel only.
set(TT_HAVE_CUDNN_FRONTEND OFF)
set(TT_CUDNN_FRONTEND_MIN_VERSION 1.12.0)
if(TT_HAVE_CUDA)
  set(tt_fe_hints ${CUDNN_FRONTEND_ROOT} $ENV{CUDNN_FRONTEND_ROOT} /usr/local/cudnn-frontend)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                    OUTPUT_VARIABLE tt_py_purelib OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND tt_fe_hints ${tt_py_purelib})
  endif()
  find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${tt_fe_hints} PATH_SUFFIXES include)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS $ENV{CUDNN_ROOT} $ENV{CUDNN_HOME} ${CUDAToolkit_INCLUDE_DIRS}
            ${CUDAToolkit_LIBRARY_ROOT} PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY NAMES cudnn
               HINTS $ENV{CUDNN_ROOT} $ENV{CUDNN_HOME} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64)
  set(tt_fe_version "")
  if(CUDNN_FRONTEND_INCLUDE_DIR AND EXISTS ${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h)
    file(STRINGS ${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h tt_fe_lines
         REGEX "#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION")
    foreach(part MAJOR MINOR PATCH)
      string(REGEX REPLACE ".*CUDNN_FRONTEND_${part}_VERSION ([0-9]+).*" "\\1" tt_fe_${part} "${tt_fe_lines}")
    endforeach()
    set(tt_fe_version "${tt_fe_MAJOR}.${tt_fe_MINOR}.${tt_fe_PATCH}")
  endif()
  if(NOT CUDNN_FRONTEND_INCLUDE_DIR OR NOT tt_fe_version)
    message(STATUS "topotrain: cuDNN frontend not found (cudnn_frontend.h; launch/install_deps.sh fetches it, "
                   "or set CUDNN_FRONTEND_ROOT); attention uses the flash kernel only")
  elseif(tt_fe_version VERSION_LESS TT_CUDNN_FRONTEND_MIN_VERSION)
    message(STATUS "topotrain: cuDNN frontend ${tt_fe_version} in ${CUDNN_FRONTEND_INCLUDE_DIR} is older than "
                   "${TT_CUDNN_FRONTEND_MIN_VERSION}; attention uses the flash kernel only")
  elseif(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
    message(STATUS "topotrain: cuDNN not found (cudnn.h / libcudnn; set CUDNN_ROOT); attention uses the flash "
                   "kernel only")
  else()
    if(NOT TARGET tt::cudnn_frontend)
      add_library(tt::cudnn_frontend INTERFACE IMPORTED)
      set_target_properties(tt::cudnn_frontend PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_FRONTEND_INCLUDE_DIR};${CUDNN_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${CUDNN_LIBRARY};CUDA::nvrtc")  # the frontend's runtime-compiled engines
    endif()
    set(TT_HAVE_CUDNN_FRONTEND ON)
    message(STATUS "topotrain: cuDNN frontend ${tt_fe_version} (${CUDNN_FRONTEND_INCLUDE_DIR}), cuDNN "
                   "${CUDNN_LIBRARY}: attention uses cuDNN SDPA for bf16")
  endif()
endif()
message(STATUS "topotrain: CUDA=${TT_HAVE_CUDA} MPI=${TOPOTRAIN_MPI} NCCL=${TT_HAVE_NCCL} cuDNN-SDPA=${TT_HAVE_CUDNN_FRONTEND} sanitize='${TOPOTRAIN_SANITIZE}'")
