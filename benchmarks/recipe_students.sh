#!/usr/bin/env bash
# Issue #11: students of one config on 1.8.0's recipe (the teacher, out-of-fold targets, hint,
# transfer set and laptop copies of the shipped model), a few seeds, then each exported as 1.8.0
# was and scored as served: the dev split by source, the four test sets against the shipped
# artifact's numbers, and calibration. One resumable chain: a seed whose result file is there is
# not trained again (benchmarks/distill.py), an export that is there is not made again.
#
#   bash benchmarks/recipe_students.sh CONFIG SHORT SEED [SEED ...]
#   bash benchmarks/recipe_students.sh \
#       benchmarks/configs/card-lite-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof.json \
#       card-lite 3 4
#
# SHORT names the results: benchmarks/results/distill/union-SHORT-kd-...-oof-lap4-more.sSEED.json,
# runs/ship-SHORT-sSEED (the artifact), benchmarks/results/served/test-SHORT-oof-sSEED.json and
# runs/calibration/ship-SHORT-sSEED. TRANSFER_MORE (paths, space-separated) adds transfer files
# after the recipe's, scored by the teacher beforehand (benchmarks/teacher_score.py), and names
# the run after them: ...-lap4-more-subst-rest3 for runs/transfer-subst-rest3.jsonl. Needs
# the inputs of 1.8.0's card in runs/
# (python benchmarks/rebuild_inputs.py). This 2-core CPU: the seeds two at a time on one thread
# each (175-240 s per epoch on an AVX-512 CPU, ~510 s on an AVX2 one; 12 epochs), then the
# exports two at a time (~6 min each).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '8,11p' "$0" >&2; exit 2; }
C=$1 short=$2
shift 2
N=union-$short-kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-lap4-more
D=../shared/data
. benchmarks/recipe_files.sh
export ABSA_TEACHER_CACHE="${ABSA_TEACHER_CACHE:-runs/teacher-cache}"
read -r -a more <<< "${TRANSFER_MORE:-}"
for f in "${more[@]}"; do
    [ -f "$f" ] || { echo "TRANSFER_MORE: $f: no such file" >&2; exit 2; }
    TRANSFER+=("$f")
    stem=${f##*/}
    stem=${stem%.jsonl}
    N+=-${stem#transfer-}
done

python benchmarks/distill.py --name "$N" --config "$C" --transfer "${TRANSFER[@]}" \
    --train-more --seeds "$@" --jobs 2 --dev-seed 1 --threads 1

served() {  # export one seed as 1.8.0 was, then score it as served
    local seed=$1 out=runs/ship-$short-s$1
    [ -f "$out/metadata.json" ] ||
        python benchmarks/default_model.py --config "$C" --teacher-run runs/teacher-union-mpnet \
            --teacher-config benchmarks/configs/teacher-union-mpnet.json --teacher-threads 1 \
            --student-more --transfer "${TRANSFER[@]}" --run "runs/distill/$N.s$seed" --seed "$seed" \
            --dev-seed 1 --version 1.9.0-rc --quantize int8-embeddings --top-map \
            --expand-vocab runs/vectors/teacher-mpnet-g50-p100-k100k.txt --expand-top-k 65000 \
            --skip-train --out "$out" > "$out.log" 2>&1
    python benchmarks/dev_sources.py "$out" --run "runs/distill/$N.s$seed" --json "$out.dev.json"
    python benchmarks/served.py "$out" --name "test-$short-oof-s$seed" \
        --as-served "int8-embeddings, top-map, expand-vocab k100k top 65000 (as 1.8.0)"
    python benchmarks/calibration.py --artifact "$out" --results "runs/calibration/ship-$short-s$seed"
}

pids=()
for seed in "$@"; do
    served "$seed" &
    pids+=($!)
    if [ ${#pids[@]} -eq 2 ]; then
        for p in "${pids[@]}"; do wait "$p"; done
        pids=()
    fi
done
for p in "${pids[@]}"; do wait "$p"; done
