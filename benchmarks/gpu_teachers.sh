#!/usr/bin/env bash
# Issue #11: mpnet teachers trained on the borrowed GPU instead of this CPU, where each takes
# 2.5-4.5 hours. Only their scores come back (training/teacher_scores.py), a few MB, where a
# teacher's weights are 451 MB and a call returns 64 MiB.
#
#   bash benchmarks/gpu_teachers.sh parts [PART_MB]   # here: runs/gpu-oof/parts/ (needs runs/oof,
#                                                     #   python benchmarks/oof_folds.py, and for
#                                                     #   main or seed-N the transfer sets:
#                                                     #   rebuild_inputs.py)
# runs/oof can be made before the main teacher is finished: oof_folds.py reads only its dev
# split, which a one-epoch `fast` run on the same files and seed holds out too (session 50:
# `absa train --train TRAIN.. --exclude TESTS.. --preset fast --seed 1 --epochs 1 --out
# runs/split-proxy`, 93 s, then `oof_folds.py --teacher-run runs/split-proxy`: the folds'
# sha256 are those 1.8.0 records, aa51422f and 39673e0a). Fold teachers alone (oof-a oof-b)
# need no transfer set: 4 parts.
#   bash benchmarks/gpu_teachers.sh stage             # there, each call: carry one part
#   bash benchmarks/gpu_teachers.sh run               # there, after the last part (carry
#                                                     #   runs/gpu-oof/parts/SHA256SUMS too)
#   bash benchmarks/gpu_teachers.sh unpack TAR..      # here: the teacher-*.tar $OUT got,
#                                                     #   and cache-main.tar.NN
#
# GPU_TEACHERS names the teachers `run` trains, all at once on the one GPU (default "oof-a oof-b"):
#   oof-a, oof-b  the out-of-fold teachers (oof_teachers.sh's commands): each is trained on its
#                 fold and scores the other -> teacher-oof-a, teacher-oof-b
#   oof-a-sN      the same with training seed N, a draw of that fold teacher -> teacher-oof-a-sN;
#                 a student's teacher_folds names it beside teacher-oof-a for the same fold
#                 file, and that fold's items take the mean of the two (training/distill.py)
#   main          no training: the main teacher this CPU trained (runs/teacher-union-mpnet,
#                 carried in the parts: `parts` with GPU_TEACHERS naming main) scores what
#                 recipe_chain.sh's step 1 asks (the training and transfer aspects, 4 hours
#                 here); its cache entry (training/teacher_cache.py: a shard per 1,000 aspects,
#                 keyed by the teacher's files, so the same teacher here reads it) comes back
#                 as $OUT/cache-main.tar.NN, and `unpack` puts it in runs/teacher-cache; the
#                 probabilities are the GPU's, within float error of this CPU's (GPU_MAIN at
#                 `parts`: another finished run in its place, for a dry run)
#   seed-N        the main teacher's recipe (teacher-union-mpnet.json on the four sets) with
#                 training seed N and the students' dev split (--dev-seed 1), a draw for an
#                 ensemble of teachers (train.teachers_more): it scores every aspect a student
#                 asks its teachers for, the training sets' (the four and the train-only ones)
#                 and the three transfer sets', and the four test sets', for the teacher's
#                 test scores (session 49's draws came back without them; no student asks
#                 for a test aspect) -> teacher-union-mpnet-sN
# The bundle: the packaged mpnet encoder (runs/encoders/mpnet, 210 MB), the fold files, the
# data files and transfer sets, the wheels the device lacks for `absa train` (pydantic and its
# kin) and absa's own wheel without its artifacts. Each teacher's scores go into
# $OUT/teacher-*.tar (teacher_score.py --export) as soon as they are done. Session 43, on an
# H100: oof-a and oof-b at once, 35 s an epoch each; the scoring then ran on the machine's CPU
# (27 s per 1,000 aspects: predict_examples ran a run on the CPU then, on the GPU now) and the
# call's time ran out before the second fold: teacher-oof-b's scores came back, oof-a's did not.
# `unpack` puts them under runs/, where the `-oof` configs and `teachers_more` look.
# A call carries 64 MiB, the checkout's tracked files included (29 MiB, 25 of them the
# artifacts' ONNX files): session 49 moved model/artifacts/ out of the checkout for its calls
# (and back after), then 56 MiB parts passed; a stage call took under a second there, and a
# warm machine is given back after 30 s idle, so the calls go one straight after another.
# The runs record the commit `parts` ran at as their code_version (ABSA_CODE_VERSION).
# After a rebuild (recipe_chain.sh, once its step 0 is done), the one lend that saves this CPU
# the most (9 hours): GPU_TEACHERS="main oof-a oof-b" for `parts` and `run` (about 700 MB:
# 13 parts; session 50's dry run on this CPU with a small stand-in for the main teacher came
# back with its cache entry, which the teacher here then read without scoring anything), then
# `unpack` the returned files and `bash benchmarks/recipe_chain.sh TAG` goes on at the students.
# Which to ask for first, by CPU hours saved per device minute (session 51): a lend is 15
# minutes now, starts and staging included, and one call at most 10. The fold teachers and
# teacher draws are 2.5 and 6.8 CPU hours each (train, score) and train side by side on the
# GPU; the main teacher's cache is 2.3 CPU hours through onnxruntime and costs 8 more parts
# (its 451 MB of weights). So, once step 0 has made the transfer sets:
# `parts` with GPU_TEACHERS="oof-a oof-b seed-2 seed-3" (5 parts, about 19 CPU hours), then
# `run` with GPU_TEACHERS="oof-a oof-b seed-2" in one call and seed-3 in a second (the four
# at once may pass a call's 10 minutes); `main` only in a lend with time left; seed-4 next.
# GPU_DEVICE=cpu GPU_LIMIT=N GPU_EPOCHS=E: a dry run of `run` on this CPU, on N items per
# training and scored file (a seed-N teacher then trains on fold a's first N items).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:?parts, files, stage, run or unpack}
read -ra teachers <<< "${GPU_TEACHERS:-oof-a oof-b}"
MAIN=runs/teacher-union-mpnet
wants() { [[ " ${teachers[*]} " == *" $1 "* ]]; }
for t in "${teachers[@]}"; do  # before anything starts: a bad name later would leave jobs behind
    [[ $t =~ ^(main|oof-[ab](-s[0-9]+)?|seed-[0-9]+)$ ]] ||
        { echo "GPU_TEACHERS: main, oof-a, oof-b, oof-a-sN, oof-b-sN or seed-N, not $t" >&2; exit 2; }
done
P=runs/gpu-oof/parts
D=shared/data  # the bundle's copy of ../shared/data: the files the teachers read
. benchmarks/recipe_files.sh
# the transfer sets travel only for teachers that score them (main, seed-N): fold teachers
# alone can go before the main teacher has made them (runs/oof from a split proxy, session 50).
# After recipe_files.sh, which sets TRANSFER (sessions 50-51 read it before: no bundle carried
# a transfer set, and a seed-N teacher would have trained and then failed to score)
if wants main || [[ " ${teachers[*]} " == *" seed-"* ]]; then
    transfer=("${TRANSFER[@]}")
else
    transfer=()
fi
bundle_files() {  # the data and transfer files the bundle carries, as `run` finds them
    printf '%s\n' "${TRAIN[@]/#/../}" "${MORE[@]/#/../}" "${TESTS[@]/#/../}" "${transfer[@]}"
}
STAGE=${GPU_STAGE:-/tmp/gpu-oof-parts}  # where `stage` puts the parts and `run` reads them
. benchmarks/gpu_bundle.sh

name_of() {  # the run (and scores) directory of a GPU_TEACHERS item
    case $1 in oof-?|oof-?-s*) echo "teacher-$1" ;; seed-*) echo "teacher-union-mpnet-s${1#seed-}" ;; esac
}

if [ "$what" = parts ]; then
    mb=${2:-56}
    b=runs/gpu-oof/bundle && rm -rf "$b" "$P" && mkdir -p "$b"
    bundle_python "$b"
    if [ "${teachers[*]}" != main ]; then  # only teachers to train need the encoder, folds
        cp -r runs/encoders/mpnet "$b/mpnet" && cp -r runs/oof "$b/oof"
    fi
    if wants main; then  # a finished run keeps no checkpoint: its files are the cache's key
        [ -f "${GPU_MAIN:-$MAIN}/run.json" ] || { echo "main: ${GPU_MAIN:-$MAIN} is not finished" >&2; exit 1; }
        cp -r "${GPU_MAIN:-$MAIN}" "$b/main"
    fi
    mkdir -p "$b/transfer" && for f in "${transfer[@]}"; do cp "$f" "$b/transfer/"; done
    for f in "${TRAIN[@]}" "${MORE[@]}" "${TESTS[@]}"; do
        mkdir -p "$b/$(dirname "$f")" && cp "../$f" "$b/$f"
    done
    bundle_parts "$b" "$P" "$mb"
    rm -rf "$b"
    ls -l "$P"
elif [ "$what" = files ]; then
    bundle_files
elif [ "$what" = stage ]; then
    bundle_stage "$P" "$STAGE"
elif [ "$what" = run ]; then
    device=${GPU_DEVICE:-cuda} limit=${GPU_LIMIT:-0} epochs=${GPU_EPOCHS:-}
    : "${OUT:?the folder for the scores (the device tool sets it)}"
    g=${GPU_WORK:-/tmp/gpu-oof} && rm -rf "$g" && mkdir -p "$g"
    bundle_open "$STAGE" "$PWD/$P/SHA256SUMS" "$g"
    if [ "$device" = cuda ]; then
        bundle_install "$g"
        export PYTHONPATH=$g/site
    fi
    # a working directory without the checkout's absa/, which would shadow the installed one;
    # the config names the encoder by the relative path runs/encoders/mpnet, the commands the
    # data by ../shared/data as here
    W=$g/work && mkdir -p "$W/runs/encoders" "$W/benchmarks/configs" "$W/scores" "$W/logs"
    [ ! -d "$g/mpnet" ] || { mv "$g/mpnet" "$W/runs/encoders/mpnet" && mv "$g/oof" "$W/runs/oof"; }
    [ ! -d "$g/main" ] || mv "$g/main" "$W/$MAIN"
    for f in "$g"/transfer/*; do [ ! -f "$f" ] || mv "$f" "$W/runs/"; done
    cp benchmarks/configs/teacher-union-mpnet.json "$W/benchmarks/configs/"
    cp benchmarks/teacher_score.py "$W/benchmarks/"
    cd "$W"
    for f in $(bundle_files); do  # before any teacher starts
        [ -f "$f" ] || { echo "not in the bundle: $f" >&2; exit 1; }
    done
    if [ "$limit" -gt 0 ]; then
        for f in runs/oof/fold-a.jsonl runs/oof/fold-b.jsonl runs/oof/dev.jsonl "${TRANSFER[@]}"; do
            [ ! -f "$f" ] || { head -n "$limit" "$f" > x && mv x "$f"; }
        done
    fi
    export PYTHONUNBUFFERED=1 ABSA_CODE_VERSION
    ABSA_CODE_VERSION=$(cat "$g/code_version")
    export ABSA_TEACHER_CACHE=$W/cache
    # each teacher trains and then scores at once, all side by side on the one GPU: a fold
    # teacher's scores come back while the draws still train, and a call cut off at its limit
    # returns every teacher finished by then
    pids=()
    for t in "${teachers[@]}"; do
        case $t in
            oof-[ab] | oof-[ab]-s*) s=${t#oof-?}; s=${s#-s}
                args=(--train "runs/oof/fold-${t:4:1}.jsonl" --dev runs/oof/dev.jsonl --seed "${s:-1}")
                other=$([ "${t:4:1}" = a ] && echo b || echo a)
                what_=(--data "runs/oof/fold-$other.jsonl") ;;
            seed-*) if [ "$limit" -gt 0 ]; then data=(runs/oof/fold-a.jsonl); else data=("${TRAIN[@]/#/../}"); fi
                args=(--train "${data[@]}" --exclude "${TESTS[@]/#/../}" --seed "${t#seed-}" --dev-seed 1)
                if [ "$limit" -gt 0 ]; then what_=(--data runs/oof/fold-b.jsonl); else
                    what_=(--data "${TRAIN[@]/#/../}" "${MORE[@]/#/../}" "${TESTS[@]/#/../}"); fi
                what_+=(--transfer "${TRANSFER[@]}") ;;
            main) [ -f "$MAIN/run.json" ] || { echo "main is not in the bundle" >&2; exit 1; }
                # no training: the cache entry itself, which the teacher here finds its scores in
                key=$(python3 -c "import sys; from pathlib import Path
from absa.training.teacher_cache import teacher_key; print(teacher_key(Path(sys.argv[1])))" "$MAIN")
                data=()  # a dry run: the transfer sets' first N aspects only
                [ "$limit" -gt 0 ] || data=(--data "${TRAIN[@]/#/../}" "${MORE[@]/#/../}")
                (python3 benchmarks/teacher_score.py --teacher "$MAIN" --threads 4 "${data[@]}" \
                    --transfer "${TRANSFER[@]}" > logs/score-main.log 2>&1 &&
                    tar -C "$ABSA_TEACHER_CACHE" -cf - "$key" | split -b 15M -d - "${OUT:?}/cache-main.tar.") &
                pids+=($!)
                continue ;;
        esac
        n=$(name_of "$t")
        (python3 -m absa.cli train "${args[@]}" --config benchmarks/configs/teacher-union-mpnet.json \
            --threads 4 --device "$device" ${epochs:+--epochs "$epochs"} --out "runs/$n" \
            --quiet > "logs/$n.log" 2>&1 &&
            python3 benchmarks/teacher_score.py --teacher "runs/$n" --threads 4 "${what_[@]}" \
                --export "scores/$n" > "logs/score-$n.log" 2>&1 &&
            tar -C scores -cf "${OUT:?}/$n.tar" "$n") &
        pids+=($!)
    done
    failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    tail -n 3 logs/*.log
    tar -C logs -cf "$OUT/logs.tar" .  # one file: a call returns 8 at most
    [ "$failed" = 0 ] || { echo "a teacher failed: logs.tar has its log" >&2; exit 1; }
elif [ "$what" = unpack ]; then
    shift
    [ $# -gt 0 ] || { echo "unpack TAR..: the teacher-*.tar a run returned" >&2; exit 2; }
    for tar in "$@"; do
        case $tar in *cache-main.tar.00)  # the main teacher's cache entry, in 15 MB pieces
            mkdir -p "${ABSA_TEACHER_CACHE:-runs/teacher-cache}"
            cat "${tar%00}"[0-9][0-9] | tar -C "${ABSA_TEACHER_CACHE:-runs/teacher-cache}" --skip-old-files -xvf -
            continue ;;
        *cache-main.tar.[0-9][0-9]) continue ;;
        esac
        name=$(basename "$tar" .tar)
        [ ! -e "runs/$name" ] || { echo "runs/$name is there: move it first" >&2; exit 1; }
        tar -C runs -xf "$tar" && ls -l "runs/$name"
    done
else
    echo "parts, files, stage, run or unpack, not $what" >&2
    exit 2
fi
