#!/usr/bin/env bash
# Issue #11: the out-of-fold mpnet teachers (benchmarks/oof_teachers.sh) trained on the
# borrowed GPU instead of this CPU, where they take ~5 hours. Only their scores come back
# (training/teacher_scores.py): each fold scored by the teacher of the other, a few MB, where
# the two teachers' weights are 900 MB and a call returns 64 MiB.
#
#   bash benchmarks/gpu_teachers.sh parts [PART_MB]   # here: runs/gpu-oof/parts/ (needs runs/oof,
#                                                     #   python benchmarks/oof_folds.py)
#   bash benchmarks/gpu_teachers.sh stage             # there, each call: carry one part
#   bash benchmarks/gpu_teachers.sh run               # there, after the last part (carry
#                                                     #   runs/gpu-oof/parts/SHA256SUMS too)
#   bash benchmarks/gpu_teachers.sh unpack TAR..      # here: the teacher-oof-*.tar $OUT got
#
# The bundle: the packaged mpnet encoder (runs/encoders/mpnet, 210 MB), the fold files, the
# wheels the device lacks for `absa train` (pydantic and its kin) and absa's own wheel without
# its artifacts. `run` trains runs/teacher-oof-a and -b at once on the GPU (the commands of
# oof_teachers.sh, with --device cuda), scores each fold with the other fold's teacher, and
# exports the scores (teacher_score.py --export), each into $OUT/teacher-oof-X.tar as soon as
# it is done. Session 43, on an H100: both teachers at once, 35 s an epoch each; the scoring
# then ran on the machine's CPU (27 s per 1,000 aspects: predict_examples ran a run on the CPU
# then, on the GPU now) and the call's time ran out before the second fold: teacher-oof-b's
# scores came back, teacher-oof-a's did not.
# `unpack` puts them at runs/teacher-oof-a and -b, where the `-oof` configs look.
# The runs record the commit `parts` ran at as their code_version (ABSA_CODE_VERSION).
# OOF_TEACHERS="a": train and score that teacher alone (default "a b").
# OOF_DEVICE=cpu OOF_LIMIT=N OOF_EPOCHS=E: a dry run of `run` on this CPU, on N items per fold.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:?parts, stage, run or unpack}
P=runs/gpu-oof/parts
WHEELS=(pydantic==2.14.4 pydantic_core==2.50.5 pydantic-settings==2.16.3 python-dotenv==1.2.4
    typing-inspection==0.4.5 annotated-types==0.8.0 typing_extensions==4.16.0)

if [ "$what" = parts ]; then
    mb=${2:-56}
    b=runs/gpu-oof/bundle && rm -rf "$b" "$P" && mkdir -p "$b"/{site,wheels} "$P"
    w=$(mktemp -d)
    pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$b/wheels" "${WHEELS[@]}"
    pip wheel -q --no-deps --no-build-isolation -w "$w" . && rm -rf build ./*.egg-info
    unzip -q "$w"/absa-*.whl -x 'absa/model/artifacts/*' -d "$b/site"
    cp -r runs/encoders/mpnet "$b/mpnet" && cp -r runs/oof "$b/oof"
    # the device runs from the wheel, without .git: the runs record this commit instead
    python3 -c "from absa.training.provenance import code_version; print(code_version())" \
        > "$b/code_version"
    tar -C "$b" -cf - . | split -b "${mb}M" -d - "$P/part-"
    (cd "$P" && sha256sum part-* > SHA256SUMS)
    rm -rf "$w" "$b"
    ls -l "$P"
elif [ "$what" = stage ]; then
    mkdir -p /tmp/gpu-oof-parts && cp "$P"/part-* /tmp/gpu-oof-parts/ && ls -l /tmp/gpu-oof-parts
elif [ "$what" = run ]; then
    device=${OOF_DEVICE:-cuda} limit=${OOF_LIMIT:-0} epochs=${OOF_EPOCHS:-}
    read -ra teachers <<< "${OOF_TEACHERS:-a b}"
    g=/tmp/gpu-oof && rm -rf "$g" && mkdir -p "$g"
    (cd /tmp/gpu-oof-parts && sha256sum -c --quiet "$OLDPWD/$P/SHA256SUMS")
    cat /tmp/gpu-oof-parts/part-* | tar -C "$g" -xf -
    if [ "$device" = cuda ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target "$g/site" "$g"/wheels/*.whl
        export PYTHONPATH=$g/site
    fi
    # a working directory without the checkout's absa/, which would shadow the installed one;
    # the config names the encoder by the relative path runs/encoders/mpnet
    W=$g/work && mkdir -p "$W/runs/encoders" "$W/benchmarks/configs" "$W/scores" "$W/logs"
    mv "$g/mpnet" "$W/runs/encoders/mpnet" && mv "$g/oof" "$W/runs/oof"
    cp benchmarks/configs/teacher-union-mpnet.json "$W/benchmarks/configs/"
    cp benchmarks/teacher_score.py "$W/benchmarks/"
    cd "$W"
    if [ "$limit" -gt 0 ]; then
        for f in fold-a fold-b dev; do head -n "$limit" "runs/oof/$f.jsonl" > x && mv x "runs/oof/$f.jsonl"; done
    fi
    export PYTHONUNBUFFERED=1 ABSA_CODE_VERSION
    ABSA_CODE_VERSION=$(cat "$g/code_version")
    pids=()
    for f in "${teachers[@]}"; do  # the two at once: one GPU holds both
        python3 -m absa.cli train --train "runs/oof/fold-$f.jsonl" --dev runs/oof/dev.jsonl \
            --config benchmarks/configs/teacher-union-mpnet.json --seed 1 --threads 4 \
            --device "$device" ${epochs:+--epochs "$epochs"} --out "runs/teacher-oof-$f" --quiet \
            > "logs/teacher-oof-$f.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || { tail -n 30 logs/*.log; exit 1; }; done
    export ABSA_TEACHER_CACHE=$W/cache
    for f in "${teachers[@]}"; do  # a scores fold b, b scores a; each in $OUT once it is done
        o=$([ $f = a ] && echo b || echo a)
        python3 benchmarks/teacher_score.py --teacher "runs/teacher-oof-$f" --threads 4 \
            --data "runs/oof/fold-$o.jsonl" --export "scores/teacher-oof-$f"
        tar -C scores -cf "${OUT:?}/teacher-oof-$f.tar" "teacher-oof-$f"
    done
    tail -n 3 logs/*.log
    cp logs/*.log "$OUT/"
elif [ "$what" = unpack ]; then
    shift
    [ $# -gt 0 ] || { echo "unpack TAR..: the teacher-oof-*.tar a run returned" >&2; exit 2; }
    for tar in "$@"; do
        name=$(basename "$tar" .tar)
        [ ! -e "runs/$name" ] || { echo "runs/$name is there: move it first" >&2; exit 1; }
        tar -C runs -xf "$tar" && ls -l "runs/$name"
    done
else
    echo "parts, stage, run or unpack, not $what" >&2
    exit 2
fi
