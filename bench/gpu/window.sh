# The window on the GPU machine, sourced by `bench/run_gpu.sh window` after the CUDA build, which took the Qt
# carried in .device-carry/qt6-window.tar.xz (bench/gpu/qt_carry.sh pack): the window and its offscreen suites
# built against the PyTorch wheel's LibTorch, the suites run, and then test_gpu_window on the GPU (the GPU pane
# on the real driver, a Train pane run on cuda, a chat decoded there), whose screenshots come back in $OUT/shots.
step "window: build (forja, forja-screenshots, the window's suites)"
if ! cmake --build build-cuda -j"$(nproc)" --target app/gui/all tests/ui/all >"$OUT/window_build.log" 2>&1; then
  grep -B2 -A8 "error" "$OUT/window_build.log" | head -60
  return 0
fi
echo "compiler warnings: $(grep -c 'warning:' "$OUT/window_build.log")"
grep 'warning:' "$OUT/window_build.log" | grep -v '/usr/include/\|site-packages\|/tmp/qt6-window/' | head -5
ldd build-cuda/app/gui/forja | grep -E "libQt6Core|libtorch_cuda|libicuuc" | sed 's/ (0x.*//'

step "window: the offscreen suites (test_translations needs lupdate, which needs libclang: not carried)"
# WINDOW_SUITES="regex" runs only those.
(cd build-cuda/tests/ui && ctest -j4 -R "${WINDOW_SUITES:-.}" -E "^(test_gpu_window|test_translations)$" --output-on-failure \
   >"$OUT/window_suites.log" 2>&1
 grep -E "Test +#|tests passed|FAILED|Not Run" "$OUT/window_suites.log" | tail -24)

step "window: test_gpu_window on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
mkdir -p "$OUT/shots"
(cd build-cuda/tests/ui && FORJA_SCREENSHOT_DIR="$OUT/shots" ctest -R "^test_gpu_window$" -V \
   >"$OUT/gpu_window.log" 2>&1
 grep -E "PASS|FAIL|SKIP|QINFO|QWARN|Totals|tests passed|Loc:" "$OUT/gpu_window.log" | cut -c1-300 | tail -30)
ls -l "$OUT/shots"
