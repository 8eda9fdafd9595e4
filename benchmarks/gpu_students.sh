#!/usr/bin/env bash
# Issue #11: the -4t students (recipe_chain.sh TAG 4t) trained on a lent GPU instead of this
# CPU, where recipe_students.sh takes 40-100 minutes a student (12 epochs, two students at once
# on one thread each). Each trains with the very command benchmarks/distill.py would run for it
# (`commands` prints them; a test holds them to distill.py's), and its finished run directory
# comes back; here, recipe_students.sh then finds the run trained and goes on to the export and
# scoring as served.
#
#   bash benchmarks/gpu_students.sh parts [PART_MB]   # here: runs/gpu-students/parts/ (gzip, 3
#                                                     #   parts of 56 MiB; refused while a
#                                                     #   teacher's scores are incomplete)
#   bash benchmarks/gpu_students.sh stage             # there, each call: carry one part
#   bash benchmarks/gpu_students.sh run               # there, in the call carrying the last
#                                                     #   part (and runs/gpu-students/parts/
#                                                     #   SHA256SUMS); again on the warm
#                                                     #   machine: the students go on
#   bash benchmarks/gpu_students.sh fetch [KEY..]     # there, warm: what `run` could not send
#   bash benchmarks/gpu_students.sh unpack FILE..     # here: the KEY.tar.NN pieces, logs.tar
#
# GPU_NETS (default "card-lite fast") and GPU_SEEDS (default "4 5 6"): the students, all at
# once on the one GPU, of the configs
# benchmarks/configs/card-lite-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-4t.json and
# benchmarks/configs/fast-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-4t.json (NET-kd-
# ...-oof-4t.json), named as recipe_students.sh names them for SHORT=NET-GPU_TAG (default
# ae2e-r50-4t, session 56's chain): runs/distill/union-SHORT-kd-...-lap4-more.sSEED. KEY, the
# name of a student's pieces: SHORT-sSEED.
#
# What travels (a gzipped tar: 125 MB, 217 MB unpacked, for the -4t inputs at 074c302): every input of the two configs and
# of the command, under the paths they name (the device's working directory has the layout of
# this checkout's; the data at ../shared/data), and absa with the wheels the device lacks
# (gpu_bundle.sh). Not the teachers: in their place scores directories (training/
# teacher_scores.py: their run records and probabilities, 13 MB for the main teacher where its
# weights are 451 MB). The main teacher's and the fold teachers' are written here from their
# entries in the teacher cache (ABSA_TEACHER_CACHE, default runs/teacher-cache: read, never
# written), the draws (teachers_more) are scores directories already. Then each is checked to
# answer every aspect its students ask it for (the main teacher and the draws: the training,
# train-only and transfer aspects; a fold teacher: its fold file's), by teacher_score.py, which
# reads a scores directory and cannot score: `parts` refuses a teacher whose cache entry is
# incomplete (a fold teacher whose out-of-fold scores the chain is still writing) rather than
# bundle a student that would stop there. (teacher_score.py --export is not used: given the
# teacher run, it would score what the cache lacks on this CPU, hours of an mpnet teacher.) A
# run records the teacher as kind "scores" with the weights' sha256, the checks that read the
# teacher's records (dev_leak, a fold teacher not trained on its fold) read the same records.
#
# What comes back: each student's finished run directory as $OUT/KEY.tar.NN (15 MB pieces),
# copied there as soon as the student finishes, and $OUT/logs.tar. A call returns 8 files and
# 64 MiB at most: `run` sends a student's pieces whole while 7 files and 60 MiB allow (logs.tar
# is the 8th) and keeps the rest on the machine's /tmp for `fetch` in a later call. A call runs
# 10 minutes at most: `run` stops waiting after GPU_WAIT seconds (default 540) and reports who
# still trains; `run` again on the warm machine waits for them, or, were they stopped with the
# call, starts them again from their last epoch's checkpoint (--resume); a finished student is
# never trained again. `unpack` puts each run in runs/distill/ (GPU_UNPACK_TO), refusing one
# that is there; then `bash benchmarks/recipe_students.sh CONFIG SHORT 4 5 6` here trains
# nothing (distill.py skips the training of a run with run.json), exports and scores each seed
# (distill.py's result file, then the as-served export). distill.py itself cannot run there:
# it measures the teacher's test scores from its weights (default_model.teacher_scores).
#
# GPU_DEVICE=cpu GPU_LIMIT=N GPU_EPOCHS=E: a dry run on this CPU. GPU_LIMIT at `parts` bundles
# the fold files' and transfer sets' first N lines, and `run` of that bundle trains each
# student on the two fold files for E epochs (--device cpu; on the GPU, such a bundle is
# refused); GPU_STAGE and GPU_WORK move the staging and work directories, GPU_UNPACK_TO and
# GPU_UNPACK_LOGS where `unpack` writes.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:?parts, files, commands, stage, run, fetch or unpack}
read -ra nets <<< "${GPU_NETS:-card-lite fast}"
read -ra seeds <<< "${GPU_SEEDS:-4 5 6}"
tag=${GPU_TAG:-ae2e-r50-4t}
config_of() { echo "benchmarks/configs/$1-kd-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-4t.json"; }
name_of() {  # recipe_students.sh's N for the student of NET
    echo "union-$1-$tag-kd-transfer6k-subst1-mpnet-vectors-decay-states-nolap-d08-ema-apart-oof-lap4-more"
}
# before anything starts: a bad name found later would leave students training on the device
[[ $tag =~ ^[a-z0-9-]+$ ]] || { echo "GPU_TAG: letters, digits and -, not $tag" >&2; exit 2; }
[ ${#nets[@]} -gt 0 ] && [ ${#seeds[@]} -gt 0 ] || { echo "GPU_NETS, GPU_SEEDS: none" >&2; exit 2; }
for net in "${nets[@]}"; do
    [[ $net =~ ^[a-z0-9-]+$ ]] && [ -f "$(config_of "$net")" ] ||
        { echo "GPU_NETS: networks with an -oof-4t config (card-lite, fast), not $net" >&2; exit 2; }
done
for seed in "${seeds[@]}"; do
    [[ $seed =~ ^[0-9]+$ ]] || { echo "GPU_SEEDS: numbers, not $seed" >&2; exit 2; }
done

D=../shared/data
. benchmarks/recipe_files.sh
. benchmarks/gpu_bundle.sh
# the configs' inputs (a test holds these to the configs)
MAIN=runs/teacher-union-mpnet
FOLD_TEACHERS=(runs/teacher-oof-a runs/teacher-oof-b)
DRAWS=(runs/teacher-union-mpnet-s2 runs/teacher-union-mpnet-s3 runs/teacher-union-mpnet-s4)
FOLDS=(runs/oof/fold-a.jsonl runs/oof/fold-b.jsonl)
STATES=runs/states/teacher-mpnet-d64
VECTORS=runs/vectors/teacher-mpnet-g50-p100.txt
fold_of() { [ "$1" = runs/teacher-oof-a ] && echo runs/oof/fold-b.jsonl || echo runs/oof/fold-a.jsonl; }
P=runs/gpu-students/parts
STAGE=${GPU_STAGE:-/tmp/gpu-students-parts}  # where `stage` puts the parts and `run` reads them
G=${GPU_WORK:-/tmp/gpu-students}  # there: the opened bundle, its work/ and the pieces to send

bundle_files() {  # the files `run` needs, as it finds them from the bundle's work/
    printf '%s\n' "${TRAIN[@]}" "${MORE[@]}" "${TESTS[@]}" "${TRANSFER[@]}" "${FOLDS[@]}" \
        "$STATES"/{states.npy,index.json,pca.npz,record.json} "$VECTORS" "$VECTORS.json"
    for t in "$MAIN" "${FOLD_TEACHERS[@]}" "${DRAWS[@]}"; do
        printf '%s\n' "$t/scores.json" "$t/run.json" "$t/dev.jsonl"
    done
    for net in "${nets[@]}"; do config_of "$net"; done
}

student_cmd() {  # NET SEED [limited]: into cmd, distill.py's `absa train` for the student;
    # limited (a dry run's bundle): on the fold files' first items, without the train-only sets
    local train=(--train "${TRAIN[@]}") more=(--train-more "${MORE[@]}" --dev-from-train)
    [ "${3:-}" != limited ] || { train=(--train "${FOLDS[@]}"); more=(); }
    cmd=(python3 -m absa.cli train "${train[@]}" --exclude "${TESTS[@]}" --config "$(config_of "$1")"
        --transfer "${TRANSFER[@]}" "${more[@]}" --seed "$2" --dev-seed 1 --threads 1 --quiet
        --out "runs/distill/$(name_of "$1").s$2" --resume)
}

logged() {  # LOG WHAT CMD..: CMD with its output in LOG; on failure, WHAT and the log's last line
    local log=$1 about=$2
    shift 2
    "$@" > "$log" 2>&1 || { echo "parts: $about: $(tail -n 1 "$log")" >&2; return 1; }
}

send_ready() {  # into $OUT, the finished students' pieces not sent yet, a student's all in one
    # call, while the call's return allows: 7 files (logs.tar is the 8th) and 60 MiB
    local key pieces size
    for key in $(ls -tr status); do
        [[ $key != *.pid ]] && [ "$(cat "status/$key")" = 0 ] || continue
        ! grep -qx "$key" "$G/sent" || continue
        pieces=("$G/outbox/$key.tar."*)
        size=$(cat "${pieces[@]}" | wc -c)
        [ $((out_files + ${#pieces[@]})) -le 7 ] && [ $((out_bytes + size)) -le $((60 << 20)) ] ||
            continue
        cp "${pieces[@]}" "$OUT/" && echo "$key" >> "$G/sent"
        out_files=$((out_files + ${#pieces[@]})) out_bytes=$((out_bytes + size))
        echo "sent $key: ${#pieces[@]} piece(s), $size bytes"
    done
}

report() {  # each student's state, and the logs into $OUT; status 1 when one failed
    local pid key failed=0
    for pid in status/*.pid; do
        key=$(basename "$pid" .pid)
        if [ ! -f "status/$key" ]; then
            if alive "$key"; then echo "$key: training"; else echo "$key: stopped (run again)"; fi
        elif [ "$(cat "status/$key")" != 0 ]; then
            echo "$key: failed (logs.tar: $key.log)" && failed=1
        elif grep -qx "$key" "$G/sent"; then
            echo "$key: sent"
        else
            echo "$key: to fetch"
        fi
    done
    tail -n 3 logs/*.log 2>/dev/null || true
    tar -C logs -cf "$OUT/logs.tar" .
    return $failed
}

alive() {  # KEY: its student still trains, started by an earlier call on this machine
    local pid
    pid=$(cat "status/$1.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
}

train_one() {  # KEY RUN: train the student (unless its run finished), pack the run into 15 MB
    # pieces to send, then its status: whatever kills the call, a status is a finished job's
    local rc=0
    { [ -f "$2/run.json" ] || "${cmd[@]}"; } > "logs/$1.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        rm -f "$G/outbox/$1.tar."*
        tar -C "$(dirname "$2")" -cf - "$(basename "$2")" | split -b 15M -d - "$G/outbox/$1.tar." ||
            rc=$?
    fi
    echo "$rc" > "status/$1"
}

if [ "$what" = parts ]; then
    mb=${2:-56} limit=${GPU_LIMIT:-0}
    cache=${ABSA_TEACHER_CACHE:-runs/teacher-cache}
    b=runs/gpu-students/bundle && rm -rf "$b" "$P" && mkdir -p "$b/work/runs/oof" "$b/logs"
    empty=$(mktemp -d)  # teacher_score.py wants a cache; a scores directory never writes one
    trap 'rm -rf "$b" "$empty"' EXIT  # a refused bundle leaves nothing half made
    w=$b/work
    for f in "${FOLDS[@]}" "${TRANSFER[@]}"; do
        if [ "$limit" -gt 0 ]; then head -n "$limit" "$f" > "$w/$f"; else cp "$f" "$w/$f"; fi
    done
    if [ "$limit" -gt 0 ]; then
        echo "$limit" > "$b/limit" && asked=("${FOLDS[@]/#/$w/}")
    else
        asked=("${TRAIN[@]}" "${MORE[@]}")
    fi
    # the teachers first, so that an incomplete one is refused before the long part
    for t in "$MAIN" "${FOLD_TEACHERS[@]}" "${DRAWS[@]}"; do
        if [[ " ${DRAWS[*]} " == *" $t "* ]]; then
            cp -r "$t" "$w/$t"
        else
            logged "$b/logs/export-${t##*/}.log" "$t: nothing to export from $cache" \
                python3 -c "import sys; from pathlib import Path
from absa.training.teacher_scores import export_scores
export_scores(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))" "$t" "$cache" "$w/$t"
        fi
        case " ${FOLD_TEACHERS[*]} " in
            *" $t "*) asks=(--data "$w/$(fold_of "$t")") ;;
            *) asks=(--data "${asked[@]}" --transfer "${TRANSFER[@]/#/$w/}") ;;
        esac
        ABSA_TEACHER_CACHE=$empty logged "$b/logs/check-${t##*/}.log" \
            "refused: $t's scores lack aspects its students ask for (is the chain still scoring it? runs/chain.log)" \
            python3 benchmarks/teacher_score.py --teacher "$w/$t" "${asks[@]}"
        echo "$t: $(sed -n 's/.*"aspects": \([0-9]*\).*/\1/p' "$w/$t/scores.json") aspects, all asked for"
    done
    rm -rf "$b/logs"
    for f in "${TRAIN[@]}" "${MORE[@]}" "${TESTS[@]}"; do
        mkdir -p "$w/$(dirname "$f")" && cp "$f" "$w/$f"
    done
    mkdir -p "$w/runs/states" "$w/runs/vectors" "$w/benchmarks/configs"
    cp -r "$STATES" "$w/$STATES" && cp "$VECTORS" "$VECTORS.json" "$w/runs/vectors/"
    for net in "${nets[@]}"; do cp "$(config_of "$net")" "$w/benchmarks/configs/"; done
    bundle_python "$b"
    bundle_parts "$b" "$P" "$mb" gzip
    ls -l "$P" && du -ch "$P"/part-* | tail -n 1
elif [ "$what" = files ]; then
    bundle_files
elif [ "$what" = commands ]; then
    for net in "${nets[@]}"; do
        for seed in "${seeds[@]}"; do student_cmd "$net" "$seed" && echo "${cmd[*]}"; done
    done
elif [ "$what" = stage ]; then
    bundle_stage "$P" "$STAGE"
elif [ "$what" = run ]; then
    device=${GPU_DEVICE:-cuda} epochs=${GPU_EPOCHS:-} wait_s=${GPU_WAIT:-540}
    : "${OUT:?the folder for what comes back (the device tool sets it)}"
    # a warm machine keeps the bundle an earlier call opened: its students go on (new parts,
    # another bundle, open afresh)
    if [ -f "$G/opened" ] && { [ ! -f "$P/SHA256SUMS" ] || cmp -s "$G/opened" "$P/SHA256SUMS"; }; then
        echo "the bundle an earlier call opened in $G"
    else
        rm -rf "$G" && mkdir -p "$G/outbox" "$G/work/logs" "$G/work/status"
        touch "$G/sent"
        bundle_open "$STAGE" "$PWD/$P/SHA256SUMS" "$G" gzip
        if [ "$device" = cuda ]; then
            [ ! -f "$G/limit" ] || { echo "a dry run's bundle (GPU_LIMIT at \`parts\`)" >&2; exit 1; }
            bundle_install "$G"
        fi
        cp "$P/SHA256SUMS" "$G/opened"
    fi
    cd "$G/work"
    for f in $(bundle_files); do  # before any student starts
        [ -f "$f" ] || { echo "not in the bundle: $f" >&2; exit 1; }
    done
    limited=$([ ! -f "$G/limit" ] || echo limited)
    if [ "$device" = cuda ]; then
        export PYTHONPATH=$G/site
        # the command leaves the device to the config (auto): without a GPU it would train
        # six students on the machine's CPU for the whole lend
        python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())" ||
            { echo "torch sees no GPU: the students would train on the CPU" >&2; exit 1; }
        there=()
    else
        there=(--device "$device")
    fi
    export PYTHONUNBUFFERED=1 ABSA_CODE_VERSION ABSA_TEACHER_CACHE=$G/work/cache
    ABSA_CODE_VERSION=$(cat "$G/code_version")
    keys=()
    for net in "${nets[@]}"; do
        for seed in "${seeds[@]}"; do
            key=$net-$tag-s$seed && keys+=("$key")
            [ "$(cat "status/$key" 2>/dev/null)" != 0 ] || continue  # finished in an earlier call
            ! alive "$key" || continue  # an earlier call's, still training: waited for below
            rm -f "status/$key"
            student_cmd "$net" "$seed" "$limited"
            cmd+=("${there[@]}" ${epochs:+--epochs "$epochs"})
            # no output of the call's: a student still training when `run` returns would
            # hold it open
            train_one "$key" "runs/distill/$(name_of "$net").s$seed" > /dev/null 2>&1 < /dev/null &
            echo $! > "status/$key.pid"
        done
    done
    out_files=0 out_bytes=0
    while :; do
        left=()  # before sending: a student finishing in between is sent in the next round
        for key in "${keys[@]}"; do [ -f "status/$key" ] || left+=("$key"); done
        send_ready
        [ ${#left[@]} -gt 0 ] || break
        if [ "$SECONDS" -ge "$wait_s" ]; then
            echo "GPU_WAIT ($wait_s s) is up; still training: ${left[*]} (\`run\` again waits for them)"
            break
        fi
        sleep 5
    done
    report || { echo "a student failed: logs.tar has its log" >&2; exit 1; }
elif [ "$what" = fetch ]; then
    : "${OUT:?the folder for what comes back (the device tool sets it)}"
    [ -d "$G/work/status" ] || { echo "fetch: no run on this machine ($G)" >&2; exit 1; }
    cd "$G/work"
    for key in "${@:2}"; do sed -i "/^$key\$/d" "$G/sent"; done  # named: sent again
    out_files=0 out_bytes=0
    send_ready
    report
elif [ "$what" = unpack ]; then
    shift
    [ $# -gt 0 ] || { echo "unpack FILE..: the KEY.tar.NN pieces and logs.tar a call returned" >&2; exit 2; }
    to=${GPU_UNPACK_TO:-runs/distill}
    mkdir -p "$to"
    for f in "$@"; do
        case $f in
            logs.tar | */logs.tar)
                logs=${GPU_UNPACK_LOGS:-runs/gpu-students/logs}
                mkdir -p "$logs" && tar -C "$logs" -xf "$f" && echo "logs in $logs"
                continue ;;
            *.tar.00) ;;
            *.tar.[0-9][0-9]) continue ;;  # read with its .00
            *) echo "unpack: $f is neither a student's piece (KEY.tar.NN) nor logs.tar" >&2; exit 2 ;;
        esac
        pieces=() && k=0
        while [ -f "${f%.00}.$(printf %02d "$k")" ]; do
            pieces+=("${f%.00}.$(printf %02d "$k")") && k=$((k + 1))
        done
        # tar reads the whole stream: a piece missing at the end is an error here
        name=$(cat "${pieces[@]}" | tar -tf - | sed -n '1s|/.*||p') ||
            { echo "unpack: ${f%.00}: pieces missing or torn" >&2; exit 1; }
        [[ $name =~ ^union-[a-z0-9-]+\.s[0-9]+$ ]] || { echo "unpack: $f holds $name, not a student's run" >&2; exit 1; }
        [ ! -e "$to/$name" ] || { echo "$to/$name is there: move it first" >&2; exit 1; }
        t=$(mktemp -d "$to/.unpack.XXXXXX")
        if ! cat "${pieces[@]}" | tar -C "$t" -xf - || [ ! -f "$t/$name/run.json" ]; then
            rm -rf "$t" && echo "unpack: $f: not a finished run" >&2 && exit 1
        fi
        mv "$t/$name" "$to/$name" && rmdir "$t" && echo "$to/$name"
    done
else
    echo "parts, files, commands, stage, run, fetch or unpack, not $what" >&2
    exit 2
fi
