#!/usr/bin/env bash
# Issue #11: the second mpnet teacher (the train-only sets too, seed 2) and the students of
# both teachers, as one resumable chain: every step skips what is done, so the same command
# goes on where the last session stopped (docs/distillation.md, "A second teacher").
#
#   bash benchmarks/second_teacher.sh [MINUTES]
#
# MINUTES (default: none) ends the teacher at its first epoch's end past that time (exit 75,
# its checkpoint kept for the next call). Needs the inputs of 1.7.0's card in runs/
# (python benchmarks/rebuild_inputs.py) and ABSA_TEACHER_CACHE pointing at their cache.
# Machine time on this 2-core CPU: the teacher 3,854 s per epoch x 2 (2 threads), scoring
# about 65,000 aspects, then two students at once (~35 min, one thread each).
set -euo pipefail
cd "$(dirname "$0")/.."
D=../shared/data
. benchmarks/recipe_files.sh
TEACHER=runs/teacher-union-more-mpnet
TRANSFER=("${TRANSFER[@]:0:2}")  # this recipe's: without the laptop copies, which came after it
export ABSA_TEACHER_CACHE="${ABSA_TEACHER_CACHE:-runs/teacher-cache}"

if [ ! -f "$TEACHER/run.json" ]; then
    stop=()
    [ -n "${1:-}" ] && stop=(--stop-after "$1")
    status=0
    absa train --train "${TRAIN[@]}" --exclude "${TESTS[@]}" --config benchmarks/configs/teacher-union-more-mpnet.json \
        --train-more "${MORE[@]}" --dev-from-train --seed 2 --dev-seed 1 --threads 2 --out "$TEACHER" \
        --resume --quiet "${stop[@]}" || status=$?
    if [ "$status" -eq 75 ]; then echo "teacher stopped after an epoch: run this again to go on"; exit 75; fi
    [ "$status" -eq 0 ] || exit "$status"
fi
python -c "from pathlib import Path; from benchmarks import distill; distill.teacher_scores(Path('$TEACHER'))"
python benchmarks/teacher_score.py --teacher "$TEACHER" --threads 2 --data "${TRAIN[@]}" "${MORE[@]}" --transfer "${TRANSFER[@]}"
[ -f benchmarks/results/ensemble/teachers-mpnet-union-and-more.json ] ||
    python benchmarks/ensemble.py --name teachers-mpnet-union-and-more --runs runs/teacher-union-mpnet "$TEACHER" --threads 2
N=union-fast-kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap
C=benchmarks/configs/fast-kd-mpnet-vectors-decay-states-nolap
python benchmarks/distill.py --name "$N-d08-ema-apart-2t-more" --config "$C-d08-ema-apart-2t.json" --transfer "${TRANSFER[@]}" \
    --train-more --seeds 1 2 --jobs 2 --dev-seed 1 --threads 1
