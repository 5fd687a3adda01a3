# The fused-kernel training bench, ours only (when device time is short): both shapes, plain and with selective
# checkpointing, with every kernel on. Compare with HF + PEFT from bench/gpu/train_vs_peft.sh's full run (or an earlier
# run on the same machine, saying so).
step "training bench (ours only): kernels, fused loss, LoRA epilogue; plain and selective checkpointing"
for mode in off selective; do
  "$CLI" bench train --shape tinyllama --batch 8 --seq 1024 --steps 6 --recompute $mode --json 2>&1 | grep '^{'
  "$CLI" bench train --shape mistral7b --batch 4 --seq 1024 --steps 6 --recompute $mode --json 2>&1 | grep '^{'
done
