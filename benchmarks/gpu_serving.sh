#!/usr/bin/env bash
# GPU serving (issue #14 item 4): the service on onnxruntime-gpu and the CUDA provider, on the
# borrowed device machine, which reaches no package registry and takes at most 64 MiB a call.
# What it needs travels as parts, one per call, on a machine kept warm between the calls.
#
#   bash benchmarks/gpu_serving.sh parts ACCURATE_ARTIFACT [PART_MB]   # here: runs/gpu/parts/
#                                                                       #   (56 MiB: with the 26 MB of
#                                                                       #   tracked artifacts left out of
#                                                                       #   the tree that travels, below)
#   bash benchmarks/gpu_serving.sh stage                                # there, each call: carry
#                                                                       #   one runs/gpu/parts/part-NN
#   bash benchmarks/gpu_serving.sh run                                  # there, after the last part
#                                                                       #   (carry runs/gpu/parts/SHA256SUMS)
#
# The bundle: onnxruntime-gpu 1.31.1 for Python 3.12 (the device's python; the Dockerfile's
# pin), its 284 MB CUDA provider library xz-compressed apart (186 MB, against 255 MB for the
# whole wheel), the serve extra's wheels the device lacks, absa itself (its wheel, without
# the artifacts), wrk (Debian's, with luajit), the shipped model and an `accurate` export, and
# the Rest14 test file (the aspects sent). `run` installs it under /tmp/gpu, finds the CUDA
# and cuDNN libraries of the device's own torch (nvidia-* wheels), then runs
# benchmarks/gpu_check.py (node placement, CUDA against CPU answers) and benchmarks/latency.py
# for each model on cuda and, as the baseline on the same machine, on 2 CPU threads, then on
# cuda with 4 server workers. The results land in $OUT (benchmarks/results/gpu/ here).
#
# A call takes 64 MiB with the working tree, whose tracked model artifacts are 26 MB: for the
# calls they were left out (`echo /model/artifacts/ > .git/info/exclude; git rm -r -q --cached
# model/artifacts`, undone after with `git reset -q -- model/artifacts`), so each call took a
# 56 MiB part, six in all, each call within the machine's 30 s warm window of the last.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:?parts, stage or run}
ORT=onnxruntime-gpu==1.31.1
SERVE=(fastapi==0.165.0 starlette==1.10.0 pydantic==2.14.4 pydantic_core==2.50.5
    pydantic-settings==2.16.3 python-dotenv==1.2.4 typing-inspection==0.4.5
    annotated-types==0.8.0 annotated-doc==0.0.7 uvicorn==0.54.0 httptools==0.9.0
    fastapi-offline==1.7.7 typing_extensions==4.16.0 opentelemetry-api==1.45.2)
DATA=../shared/data/semeval14/Restaurants_Test_Gold.xml.seg

if [ "$what" = parts ]; then
    accurate=${2:?the accurate artifact to measure}
    mb=${3:-56}
    b=runs/gpu/bundle && rm -rf "$b" runs/gpu/parts runs/gpu/send && mkdir -p "$b"/{site,wheels,wrk,models,data} runs/gpu/{parts,send}
    w=$(mktemp -d)
    pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$w" "$ORT" "${SERVE[@]}"
    unzip -q "$w"/onnxruntime_gpu-*.whl -d "$b/site"
    so=$b/site/onnxruntime/capi/libonnxruntime_providers_cuda.so
    xzed=runs/gpu/cuda-${ORT#*==}.so.xz  # 5 minutes of xz on 2 cores: made once
    [ -s "$xzed" ] || { xz -9 -T2 -c "$so" > "$xzed.part" && mv "$xzed.part" "$xzed"; }
    rm "$so" "$b"/site/onnxruntime/capi/*tensorrt*
    mv "$w"/*.whl "$b/wheels/" && rm "$b"/wheels/onnxruntime_gpu-*.whl
    pip wheel -q --no-deps --no-build-isolation -w "$w" . && rm -rf build ./*.egg-info
    unzip -q "$w"/absa-*.whl -x 'absa/model/artifacts/*' -d "$b/site"
    (cd "$b/wrk" && apt-get download -q wrk libluajit-5.1-2)
    cp -r model/artifacts/default "$b/models/default" && cp -r "$accurate" "$b/models/accurate"
    cp "$DATA" "$b/data/rest14-test.xml.seg"
    tar -C "$b" -cf - . | xz -6 -T2 > runs/gpu/send/rest.tar.xz && cp "$xzed" runs/gpu/send/cuda.so.xz
    tar -C runs/gpu/send -cf - . | split -b "${mb}M" -d - runs/gpu/parts/part-
    rm -rf "$w" "$b" runs/gpu/send
    (cd runs/gpu/parts && sha256sum part-* > SHA256SUMS)  # carried with the last part
    ls -l runs/gpu/parts
elif [ "$what" = stage ]; then
    mkdir -p /tmp/gpu-parts && cp runs/gpu/parts/part-* /tmp/gpu-parts/ && ls -l /tmp/gpu-parts
elif [ "$what" = run ]; then
    g=/tmp/gpu && rm -rf "$g" && mkdir -p "$g"
    (cd /tmp/gpu-parts && sha256sum -c --quiet "$OLDPWD/runs/gpu/parts/SHA256SUMS")
    cat /tmp/gpu-parts/part-* | tar -C "$g" -xf -
    python3 - "$g" <<'PY'  # python's lzma: the machine need not have xz
import lzma, shutil, sys, tarfile
g = sys.argv[1]
tarfile.open(f"{g}/rest.tar.xz", "r:xz").extractall(g, filter="fully_trusted")
with lzma.open(f"{g}/cuda.so.xz") as src, open(f"{g}/site/onnxruntime/capi/libonnxruntime_providers_cuda.so", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$g/site" "$g"/wheels/*.whl
    for f in "$g"/wrk/*.deb; do dpkg -x "$f" "$g/wrk/root"; done
    libs=$(python3 -c "import glob, os, nvidia; print(':'.join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + '/**/lib*.so*', recursive=True)})))" || true)
    export PYTHONPATH=$g/site LD_LIBRARY_PATH=$libs:$g/wrk/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    export PATH=$g/wrk/root/usr/bin:$PATH PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import onnxruntime as o; print(o.__version__, o.get_available_providers())"
    # the scripts run from a copy: the checkout's own absa/ would shadow the installed package
    mkdir -p "$g/bench/benchmarks" && cp benchmarks/latency.py benchmarks/gpu_check.py "$g/bench/benchmarks/"
    cd "$g/bench"
    python3 benchmarks/gpu_check.py --artifact "$g"/models/default "$g"/models/accurate \
        --data "$g/data/rest14-test.xml.seg" --out "$OUT/gpu-check.json" || echo "gpu_check failed"
    lat=(python3 benchmarks/latency.py --data "$g/data/rest14-test.xml.seg" --threads 2
        --server-threads 2 --seconds 5)
    for m in default accurate; do
        for d in cuda cpu; do
            "${lat[@]}" --artifact "$g/models/$m" --name "$m-$d" --device "$d" || echo "$m $d failed"
        done
        "${lat[@]}" --artifact "$g/models/$m" --name "$m-cuda-4workers" --device cuda --workers 4 \
            --concurrency 8 64 256 || echo "$m cuda 4 workers failed"
    done
    cp benchmarks/results/latency/*.json "$OUT/"  # into benchmarks/results/gpu/ here
else
    echo "parts, stage or run, not $what" >&2
    exit 2
fi
