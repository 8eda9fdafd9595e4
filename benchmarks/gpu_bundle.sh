# The lent GPU's side of a bundle, shared by gpu_teachers.sh and gpu_students.sh (sourced from
# the project root). A call to that machine carries 64 MiB, the checkout's tracked files
# included, so a bundle (a directory) goes as parts of PART_MB each with their SHA256SUMS, one
# part staged per call, and is opened there by the call that carries the last one. The device
# has torch and numpy but not pydantic and its kin, nor absa: those travel as wheels, absa's
# own without model/artifacts (25 MiB of ONNX files no training reads).
# shellcheck shell=bash
WHEELS=(pydantic==2.14.4 pydantic_core==2.50.5 pydantic-settings==2.16.3 python-dotenv==1.2.4
    typing-inspection==0.4.5 annotated-types==0.8.0 typing_extensions==4.16.0)

bundle_python() {  # BUNDLE: wheels/ (the device's Python 3.12), site/ (absa) and code_version
    local b=$1 w
    mkdir -p "$b"/{site,wheels}
    w=$(mktemp -d)
    pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$b/wheels" "${WHEELS[@]}"
    pip wheel -q --no-deps --no-build-isolation -w "$w" . && rm -rf build ./*.egg-info
    unzip -q "$w"/absa-*.whl -x 'absa/model/artifacts/*' -d "$b/site"
    rm -rf "$w"
    # the device runs from the wheel, without .git: its runs record this commit instead
    python3 -c "from absa.training.provenance import code_version; print(code_version())" \
        > "$b/code_version"
}

bundle_parts() {  # BUNDLE PARTS MB [gzip]: the bundle as parts of MB each, and their SHA256SUMS
    local b=$1 p=$2 mb=$3 zip=${4:-}
    mkdir -p "$p"
    if [ "$zip" = gzip ]; then tar -C "$b" -cf - . | gzip -1; else tar -C "$b" -cf - .; fi |
        split -b "${mb}M" -d - "$p/part-"
    (cd "$p" && sha256sum part-* > SHA256SUMS)
}

bundle_stage() {  # PARTS STAGE: there, each call: the parts this call carried, kept in STAGE
    mkdir -p "$2" && cp "$1"/part-* "$2/" && ls -l "$2"
}

bundle_open() {  # STAGE SUMS DEST [gzip]: the staged parts, checked against SUMS (an absolute
    # path), opened into DEST; a part missing or torn stops here, before anything starts
    local stage=$1 sums=$2 dest=$3 zip=${4:-}
    [ -f "$sums" ] || { echo "no $sums: carry it in the call that runs" >&2; return 1; }
    (cd "$stage" && sha256sum -c --quiet "$sums")
    if [ "$zip" = gzip ]; then cat "$stage"/part-* | gzip -dc; else cat "$stage"/part-*; fi |
        tar -C "$dest" -xf -
}

bundle_install() {  # DEST: the opened bundle's wheels into DEST/site, where PYTHONPATH looks
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$1/site" "$1"/wheels/*.whl
}
