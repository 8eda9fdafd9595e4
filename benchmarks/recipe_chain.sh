#!/usr/bin/env bash
# Issue #11: from a checkout whose runs/ holds the main teacher, its transfer set, copies,
# vectors and word states (python benchmarks/rebuild_inputs.py, session 44), to students of
# 1.8.0's recipe scored as served, in one resumable chain. Every step skips what is done:
#
#   1. the main teacher's probabilities of every training and transfer aspect, into the
#      teacher cache (teacher_score.py: ~8 aspects/s on this 2-core CPU, 65,000 aspects);
#   2. the rest of the card's inputs (rebuild_inputs.py): the out-of-fold teacher a, about
#      2.5 hours on this CPU (or 3 minutes of a lent GPU first: gpu_teachers.sh with
#      GPU_TEACHERS=oof-a, then `unpack`), and the k100k vectors for vocabulary expansion;
#   3. the students (recipe_students.sh), named for the teacher they learn from, since the
#      rebuilt teacher (ae2e7d72) is not 1.8.0's: card-lite (item 1's network) and `fast` (the
#      shipped network on the same inputs) side by side, one seed of each at a time, seeds 1,
#      2 and 3: every pair that finishes is a like-for-like comparison and a `fast` candidate
#      to ship. A seed cut off with the session goes on from its checkpoint;
#   4. item 1's verdict over the seeds (card_vs_fast.py: fp32 and as served).
#
#   bash benchmarks/recipe_chain.sh [TAG [VARIANT]]
#       TAG names the students (default: the teacher's weights, first 4 hex digits); VARIANT
#       picks the configs ending -oof-VARIANT.json instead, students TAG-VARIANT: 4t, the mean
#       of four teachers (the main one and three draws from a lent GPU, session 49):
#   bash benchmarks/recipe_chain.sh ae2e 4t
set -euo pipefail
cd "$(dirname "$0")/.."
# the project's virtualenv when none is active (a chain started from a plain shell, or nohup)
[ -n "${VIRTUAL_ENV:-}" ] || [ ! -f .venv/bin/activate ] || . .venv/bin/activate
export ABSA_TEACHER_CACHE="${ABSA_TEACHER_CACHE:-runs/teacher-cache}"
TEACHER=runs/teacher-union-mpnet
tag=${1:-$(sha256sum "$TEACHER/weights.safetensors" | cut -c1-4)}
D=../shared/data
. benchmarks/recipe_files.sh
variant=${2:+-$2}
CARD=benchmarks/configs/card-lite-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof$variant.json
FAST=benchmarks/configs/fast-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof$variant.json
[ -f "$CARD" ] && [ -f "$FAST" ] || { echo "no configs for variant ${2:-}: $CARD, $FAST" >&2; exit 2; }
tag=$tag$variant

echo "$(date -u +%FT%TZ) 1. the teacher cache"
python benchmarks/teacher_score.py --teacher "$TEACHER" --transfer "${TRANSFER[@]}" \
    --data "${TRAIN[@]}" "${MORE[@]}" --threads 2
echo "$(date -u +%FT%TZ) 2. the rest of the inputs"
python benchmarks/rebuild_inputs.py
echo "$(date -u +%FT%TZ) 3. the students"
for seed in 1 2 3; do  # one thread each (distill.py --threads 1)
    bash benchmarks/recipe_students.sh "$CARD" "card-lite-$tag" "$seed" &
    card=$!
    bash benchmarks/recipe_students.sh "$FAST" "fast-$tag" "$seed"
    wait "$card"
done
echo "$(date -u +%FT%TZ) 4. item 1: the card against fast, mean of the seeds"
python benchmarks/card_vs_fast.py --card "card-lite-$tag" --fast "fast-$tag"
echo "$(date -u +%FT%TZ) done"
