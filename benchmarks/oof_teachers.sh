#!/usr/bin/env bash
# Issue #11: out-of-fold teachers. The four training sets, as the union teacher trained on
# them, in two halves of whole sentences; an mpnet teacher per half; each half scored by the
# teacher of the other; then students of 1.7.0's recipe with the laptop copies (-lap4) whose
# targets on those sets come from the teacher that never saw the item (config `-oof`).
# One resumable chain: every step skips what is done, a teacher goes on from its checkpoint.
#
#   bash benchmarks/oof_teachers.sh [teachers|students]
#
# Needs the inputs of 1.7.0's card in runs/ (python benchmarks/rebuild_inputs.py) and
# ABSA_TEACHER_CACHE pointing at their cache. Machine time on this 2-core CPU: the two teachers
# at once, one thread each (2 epochs over 10,485 aspects each), scoring the other half about 9 min,
# then two students at once (~45 min, one thread each). A teacher already there is skipped, a
# teacher's scores from a GPU too (benchmarks/gpu_teachers.sh); one left alone gets both threads.
# ABSA_PRECISION=bf16 trains the teachers in bfloat16 autocast (about half the step on a CPU
# with AMX; benchmarks/rebuild_inputs.py --precision bf16 sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
D=../shared/data
. benchmarks/recipe_files.sh
export ABSA_TEACHER_CACHE="${ABSA_TEACHER_CACHE:-runs/teacher-cache}"
what="${1:-all}"

if [ "$what" != students ]; then
    [ -f runs/oof/fold-b.jsonl ] ||
        python benchmarks/oof_folds.py --teacher-run runs/teacher-union-mpnet --out runs/oof \
            --data "${TRAIN[@]}" --exclude "${TESTS[@]}"
    pids=() todo=()
    for f in a b; do  # a teacher whose run.json is there (or its scores: gpu_teachers.sh) is done
        [ -f "runs/teacher-oof-$f/run.json" ] || todo+=("$f")
    done
    threads=$((${#todo[@]} > 1 ? 1 : 2))  # the two at once, one thread each; one alone gets both
    for f in "${todo[@]}"; do
        absa train --train "runs/oof/fold-$f.jsonl" --dev runs/oof/dev.jsonl \
            --config benchmarks/configs/teacher-union-mpnet.json --seed 1 --threads "$threads" \
            --out "runs/teacher-oof-$f" --resume --quiet ${ABSA_PRECISION:+--precision "$ABSA_PRECISION"} > "runs/teacher-oof-$f.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    python benchmarks/teacher_score.py --teacher runs/teacher-oof-b --threads 2 --data runs/oof/fold-a.jsonl --engine onnx
    python benchmarks/teacher_score.py --teacher runs/teacher-oof-a --threads 2 --data runs/oof/fold-b.jsonl --engine onnx
fi
[ "$what" = teachers ] && exit 0
N=union-fast-kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap
C=benchmarks/configs/fast-kd-mpnet-vectors-decay-states-nolap
python benchmarks/distill.py --name "$N-d08-ema-apart-oof-lap4-more" --config "$C-d08-ema-apart-oof.json" \
    --transfer "${TRANSFER[@]}" \
    --train-more --seeds 1 2 --jobs 2 --dev-seed 1 --threads 1
