#!/usr/bin/env bash
# Two rules about the tree, over every tracked file (the build checks the second only in what it compiles):
#  1. No tracked file names a machine (absolute home or work paths, the team's shared folder) or tells history
#     by issue number: the repository must read the same on any clone.
#  2. The public API is the only door into the engine: app/, ui/ and the window's suites include the engine
#     only through core/include/forja/*.h (besides their own headers), and no LibTorch header at all. app/cli/bench_kernels.cpp is the one
#     exception, named here: it times the CUDA kernels layer itself (kernels/fused's C API), below the engine.
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
status=0

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')
fi
self=tests/tree/check_tree.sh
hygiene=$(for f in "${files[@]}"; do
  [[ "$f" == "$self" || ! -f "$f" ]] && continue
  grep -HnIE '(^|[^.[:alnum:]_])/(work|root|home)/|\.\./shared|[Ii]ssue [0-9]' "$f" || true
done)
if [[ -n "$hygiene" ]]; then
  echo "Machine paths or issue numbers in tracked files (write what the code does and why instead):"
  echo "$hygiene"
  status=1
fi

leaks=""
for f in "${files[@]}"; do
  case "$f" in
    app/cli/bench_kernels.cpp) continue ;;
    app/*.cpp | app/*.h | ui/*.cpp | ui/*.h | tests/ui/*.cpp | tests/ui/*.h) ;;
    *) continue ;;
  esac
  dir=$(dirname "$f")
  while IFS= read -r inc; do
    [[ "$inc" == forja/* || "$inc" == *.moc ]] && continue
    [[ -f "$dir/$inc" ]] && continue
    case "$f" in
      ui/* | tests/ui/* | app/gui/*) [[ -f "ui/$inc" ]] && continue ;;
    esac
    case "$f" in
      tests/ui/*) [[ -f "tests/support/$inc" ]] && continue ;;
    esac
    case "$f" in
      app/cli/*) [[ -f "app/cli/$inc" ]] && continue ;;
    esac
    leaks+="$f: #include \"$inc\""$'\n'
  done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f")
  # LibTorch stays behind the public API too (its headers are on these targets' include path for linking).
  while IFS= read -r inc; do
    leaks+="$f: #include <$inc>"$'\n'
  done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<((torch|ATen|c10)\/[^>]+)>.*/\1/p' "$f")
done
if [[ -n "$leaks" ]]; then
  echo "Engine headers outside the public API (add what is needed to core/include/forja/ instead):"
  printf '%s' "$leaks"
  status=1
fi
[[ $status -eq 0 ]] && echo "tree rules hold: ${#files[@]} files checked"
exit $status
