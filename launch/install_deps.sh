#!/usr/bin/env bash
# Installs the Debian packages topotrain builds and tests with — only those that are missing, so it
# is cheap to run every time. Used by launch/quickstart.sh and tests/run.sh.
# The CUDA toolkit is optional and not installed here: the build uses it when nvcc is found. When it
# is, the header-only cuDNN frontend (cuDNN's fused attention, SDPA) is also fetched with pip, see
# below; cuDNN itself (cudnn.h, libcudnn) comes with the CUDA installation.
# --sanitizers also installs what the sanitizer and fuzz jobs need (tests/sanitize/ci.sh): clang with
# its sanitizer runtimes and libFuzzer, and llvm-symbolizer for the reports' stacks.
# --test-tools also installs the real clients some tests check against (tests/run.sh): Chromium, to
# render `topotrain report`'s page, and TensorBoard's Python package (pip), to read the event files.
# Those tests skip with a message when the tools are missing, so a failure here only warns.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenblas-openmp-dev           # CPU GEMM (OpenMP build, shares the thread pool with our loops)
  libprotobuf-dev protobuf-compiler  # config schema
  libpcre2-dev nlohmann-json3-dev  # GPT-2 tokenizer regex (Unicode + JIT), tokenizer JSON files
  libgtest-dev                     # tests
  libopenmpi-dev openmpi-bin       # multi-process runs
  gnuplot-nox                      # `topotrain plot` (loss curves as PNG)
)
TEST_TOOLS=0
for arg in "$@"; do
  case "$arg" in
    --sanitizers) PACKAGES+=(clang libclang-rt-dev llvm) ;;
    --test-tools) TEST_TOOLS=1 ;;
    *) echo "install_deps.sh: unknown argument '$arg' (--sanitizers, --test-tools)" >&2; exit 2 ;;
  esac
done

NVCC=""
if command -v nvcc >/dev/null; then
  NVCC=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  NVCC=/usr/local/cuda/bin/nvcc
fi
if [[ -n "$NVCC" ]] && ! python3 -m pip --version >/dev/null 2>&1; then
  PACKAGES+=(python3-pip)  # `pip download` of the cuDNN frontend headers (below)
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "[deps] all ${#PACKAGES[@]} packages present"
else
  echo "[deps] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- cuDNN frontend (only with CUDA) -----------------------------------------------------------
# The C++ graph API of cuDNN (header-only) ships in the PyPI wheel nvidia-cudnn-frontend under
# include/. We download the pinned wheel with pip (no install into any Python environment, so no
# PEP 668 / --break-system-packages question) and unpack only its include/ folder into
# $CUDNN_FRONTEND_ROOT (default /usr/local/cudnn-frontend), where cmake/dependencies.cmake looks.
# Skipped when that prefix already holds this version; a failure only costs the SDPA path (the
# build then uses the flash attention kernel), so it warns instead of failing the script.
CUDNN_FRONTEND_VERSION=1.32.0
CUDNN_FRONTEND_ROOT=${CUDNN_FRONTEND_ROOT:-/usr/local/cudnn-frontend}
if [[ -n "$NVCC" ]]; then
  stamp="$CUDNN_FRONTEND_ROOT/VERSION"
  if [[ -f "$CUDNN_FRONTEND_ROOT/include/cudnn_frontend.h" && "$(cat "$stamp" 2>/dev/null)" == "$CUDNN_FRONTEND_VERSION" ]]; then
    echo "[deps] cuDNN frontend $CUDNN_FRONTEND_VERSION present in $CUDNN_FRONTEND_ROOT"
  else
    echo "[deps] fetching cuDNN frontend $CUDNN_FRONTEND_VERSION (pip) into $CUDNN_FRONTEND_ROOT"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
      "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION" &&
      python3 - "$tmp" <<'PY'
import glob, sys, zipfile
tmp = sys.argv[1]
(wheel,) = glob.glob(tmp + "/nvidia_cudnn_frontend-*.whl")
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.startswith("include/")]
    if not any(m == "include/cudnn_frontend.h" for m in members):
        sys.exit("wheel has no include/cudnn_frontend.h")
    z.extractall(tmp + "/prefix", members)
PY
    then
      echo "$CUDNN_FRONTEND_VERSION" >"$tmp/prefix/VERSION"
      $SUDO rm -rf "$CUDNN_FRONTEND_ROOT"
      $SUDO mkdir -p "$(dirname "$CUDNN_FRONTEND_ROOT")"
      $SUDO cp -r "$tmp/prefix" "$CUDNN_FRONTEND_ROOT"
      $SUDO chmod -R a+rX "$CUDNN_FRONTEND_ROOT"
    else
      echo "[deps] warning: could not fetch the cuDNN frontend; attention will use the flash kernel" >&2
    fi
  fi
fi

# ---- test tools (--test-tools) -----------------------------------------------------------------
if [[ $TEST_TOOLS -eq 1 ]]; then
  if ! command -v chromium >/dev/null; then
    echo "[deps] installing chromium (renders topotrain report's page in tests)"
    { $SUDO apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium; } ||
      echo "[deps] warning: chromium not installed; the report rendering test will skip" >&2
  fi
  if ! python3 -c "import tensorboard" 2>/dev/null; then
    echo "[deps] installing tensorboard (pip; reads the event files in tests)"
    python3 -m pip install -q tensorboard ||
      echo "[deps] warning: tensorboard not installed; the event-file reader test will skip" >&2
  fi
fi
