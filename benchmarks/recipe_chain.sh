#!/usr/bin/env bash
# Issue #11: from a checkout without runs/ (a new machine starts without it) to students of
# 1.8.0's recipe scored as served, in one resumable chain. Every step skips what is done:
#
#   0. the inputs the students read but the fold teachers (rebuild_inputs.py): the main teacher
#      (2 epochs, about 2 hours each on this 2-core AVX2 CPU, a checkpoint every 30 minutes),
#      its transfer set, vectors, copies and word states, and the k100k vectors, each checked
#      against the record of the students of session 47 (REBUILD_AGAINST); the fold teachers
#      come last, since a lent GPU trains them in minutes (gpu_teachers.sh) and this CPU in 5 hours;
#   1. the main teacher's probabilities of every training and transfer aspect, into the
#      teacher cache (teacher_score.py: ~8 aspects/s through torch on this 2-core CPU, about
#      1.8 times that through onnxruntime, --engine onnx; 74,000 aspects);
#   2. the fold teachers (rebuild_inputs.py: oof_teachers.sh teachers), both at once, about
#      5 hours on this CPU, or 3 minutes of a lent GPU (gpu_teachers.sh with
#      GPU_TEACHERS="oof-a oof-b", then `unpack`), each scoring the fold it never saw;
#   3. the students (recipe_students.sh), named for the teacher they learn from, since the
#      rebuilt teacher (ae2e7d72) is not 1.8.0's: card-lite (item 1's network) and `fast` (the
#      shipped network on the same inputs) side by side, one seed of each at a time, seeds 1,
#      2 and 3: every pair that finishes is a like-for-like comparison and a `fast` candidate
#      to ship (SEEDS picks others). A seed cut off with the session goes on from its checkpoint;
#   4. item 1's verdict over the seeds (card_vs_fast.py: fp32 and as served).
# Between 2 and 3, once, for VARIANT auto only: the main teacher and the two fold teachers as
# an ensemble on the dev split and the test sets (ensemble.py --runs,
# benchmarks/results/ensemble/teachers-main-oof-ab.json, about 40 minutes through torch here):
# whether their mean is a better teacher for the items the folds do not cover (the -3f
# configs, train.teachers_more) than the main one alone, for nothing more than the fold
# teachers' scores. A named VARIANT needs no such check (4t: the draws' own dev scores,
# docs/distillation.md).
#
#   bash benchmarks/recipe_chain.sh [TAG [VARIANT]]
#       TAG names the students (default: the teacher's weights, first 4 hex digits; a TAG
#       whose seed-1 results are here but not their runs, an earlier machine's, is refused:
#       students of a rebuild name themselves anew, e.g. ae2e-r50); VARIANT
#       picks the configs ending -oof-VARIANT.json instead, students TAG-VARIANT: 4t, the mean
#       of four teachers (the main one and three draws from a lent GPU, session 49):
#   bash benchmarks/recipe_chain.sh ae2e 4t
#   bash benchmarks/recipe_chain.sh ae2e-r50 auto
#       auto: 3f when the three teachers' mean leads the main teacher on dev by at least 0.5
#       points of accuracy and of macro-F1 (teacher_lead.py, after the ensemble check), else
#       the plain configs; the choice and the two leads are in the log
#   SEEDS="4 5 6" bash benchmarks/recipe_chain.sh ae2e-r50 auto
#       SEEDS: the students' seeds (default 1 2 3). A series that adds to another one for
#       item 1's verdict takes seeds of its own: the same seeds on much the same inputs are
#       much the same students, not new draws (card_vs_fast.py pools the series)
#   CARD_NET=card-lite-qb-p0 bash benchmarks/recipe_chain.sh ae2e-r50
#       CARD_NET picks the card's network: the configs CARD_NET-kd-...-oof[-VARIANT].json
#       (default card-lite), its students CARD_NET-TAG
set -euo pipefail
cd "$(dirname "$0")/.."
# the project's virtualenv when none is active (a chain started from a plain shell, or nohup)
[ -n "${VIRTUAL_ENV:-}" ] || [ ! -f .venv/bin/activate ] || . .venv/bin/activate
export ABSA_TEACHER_CACHE="${ABSA_TEACHER_CACHE:-runs/teacher-cache}"
TEACHER=runs/teacher-union-mpnet
AGAINST=${REBUILD_AGAINST:-benchmarks/results/served/test-fast-ae2e-oof-s1.json}
D=../shared/data
. benchmarks/recipe_files.sh
CARD_NET=${CARD_NET:-card-lite}
configs() {  # the card's and fast's configs of variant $1 (-3f, ...; '' for the plain ones)
    CARD=benchmarks/configs/$CARD_NET-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof$1.json
    FAST=benchmarks/configs/fast-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof$1.json
    [ -f "$CARD" ] && [ -f "$FAST" ] || { echo "no configs for variant ${1#-}: $CARD, $FAST" >&2; exit 2; }
}
if [ "${2:-}" = auto ]; then  # either may be chosen: both must be there before the first step
    configs -3f
    variant=
else
    variant=${2:+-$2}
fi
configs "$variant"

echo "$(date -u +%FT%TZ) 0. the inputs, but the fold teachers"
python benchmarks/rebuild_inputs.py --against "$AGAINST" --skip runs/teacher-oof-a
echo "$(date -u +%FT%TZ) 1. the teacher cache"
python benchmarks/teacher_score.py --teacher "$TEACHER" --transfer "${TRANSFER[@]}" \
    --data "${TRAIN[@]}" "${MORE[@]}" --threads 2 --engine onnx  # 1.8x torch on this CPU
echo "$(date -u +%FT%TZ) 2. the fold teachers"
python benchmarks/rebuild_inputs.py --against "$AGAINST"
# each fold teacher's scores of the fold it never saw: rebuild_inputs keeps a finished fold
# teacher as done, and a chain cut off while they were scored would leave the rest to the
# students, two at once through torch; scores in the cache are not scored again
bash benchmarks/oof_teachers.sh teachers
if [ "${2:-}" = auto ]; then  # the students of the three teachers' mean, if it leads enough
    [ -f benchmarks/results/ensemble/teachers-main-oof-ab.json ] ||
        python benchmarks/ensemble.py --name teachers-main-oof-ab --threads 2 \
            --runs "$TEACHER" runs/teacher-oof-a runs/teacher-oof-b
    picked=$(python benchmarks/teacher_lead.py benchmarks/results/ensemble/teachers-main-oof-ab.json --variant 3f --min 0.5)
    variant=${picked:+-$picked}
    configs "$variant"
fi
tag=${1:-$(sha256sum "$TEACHER/weights.safetensors" | cut -c1-4)}$variant
if [ "$variant" = -3f ]; then  # the fold teachers' scores of every item, ahead of the students
    for fold in a b; do        # (the students' own scoring would go through torch, at half the pace)
        echo "$(date -u +%FT%TZ) 2. the cache of teacher-oof-$fold (-3f)"
        python benchmarks/teacher_score.py --teacher "runs/teacher-oof-$fold" \
            --transfer "${TRANSFER[@]}" --data "${TRAIN[@]}" "${MORE[@]}" --threads 2 --engine onnx
    done
fi
echo "$(date -u +%FT%TZ) 3. the students ($tag)"
SEEDS=${SEEDS:-1 2 3}
for net in "$CARD_NET" fast; do  # a result whose run is gone (an earlier machine's) would be kept
    n=union-$net-$tag-kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-lap4-more
    for seed in $SEEDS; do
        if [ -f "benchmarks/results/distill/$n.s$seed.json" ] && [ ! -d "runs/distill/$n.s$seed" ]; then
            echo "students $net-$tag were trained on another machine's inputs: name these: TAG" >&2
            exit 2
        fi
    done
done
for seed in $SEEDS; do  # one thread each (distill.py --threads 1)
    bash benchmarks/recipe_students.sh "$CARD" "$CARD_NET-$tag" "$seed" &
    card=$!
    bash benchmarks/recipe_students.sh "$FAST" "fast-$tag" "$seed"
    wait "$card"
done
echo "$(date -u +%FT%TZ) 4. item 1: the card against fast, mean of the seeds"
python benchmarks/card_vs_fast.py --card "$CARD_NET-$tag" --fast "fast-$tag"
echo "$(date -u +%FT%TZ) done"
