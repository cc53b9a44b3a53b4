#!/usr/bin/env bash
# Every GPU figure of README's speed section in one run, written as one markdown file.
#
#   bash bench/gpu.sh [--device cuda|cpu] [--out FILE] [--data-root DIR]
#
# On a bare machine with only torch and torchvision: hseval's other dependencies (geoopt, plotly,
# openTSNE, umap-learn, ...) are installed from the wheels in $WHEELS (default bench/wheels, made
# here with `bash bench/gpu.sh --fetch-wheels`), never from the network.
# With --device cpu it runs small sizes (to show that the script works: under 5 minutes on 2 cores).
# PYTHON chooses the interpreter (default python3; here: PYTHON=.venv/bin/python). --data-root: a
# folder with Fashion-MNIST's IDX files (a machine without network cannot download them; copy
# /usr/share/datasets/fashion-mnist into the working tree that travels).
set -euo pipefail
cd "$(dirname "$0")/.."
device=cuda
out=bench/gpu.md
data=()
wheels=${WHEELS:-bench/wheels}
py=${PYTHON:-python3}
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --data-root) data=(--data-root "$2"); shift 2 ;;
    --fetch-wheels)  # for a machine without network: the wheels of hseval's dependencies but torch
      mkdir -p "$wheels"
      deps=$($py - <<'PY'
import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(d for d in deps if not d.startswith(("torch", "torchvision"))))
PY
)
      $py -m pip download -q --only-binary=:all: -d "$wheels" $deps
      echo "wheels in $wheels"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

if ! $py -c "import geoopt, plotly, openTSNE, umap, streamlit, safetensors" 2>/dev/null; then
  [ -d "$wheels" ] || { echo "missing packages and no wheels in $wheels (bash bench/gpu.sh --fetch-wheels)" >&2; exit 2; }
  deps=$($py - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(re.split("[<>=]", d)[0] for d in deps if not d.startswith(("torch", "torchvision"))))
PY
)
  $py -m pip install -q --no-index --find-links "$wheels" $deps
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
hseval() { $py -m hseval "$@"; }

if [ "$device" = cpu ]; then
  sizes=100,1000; repeats=1; steps=2; rounds=1; demo=(--quick); projections=pca; compile=(); nruns=2
else
  sizes=100,1000,20000,100000; repeats=5; steps=20; rounds=5; demo=(); projections=pca,tsne,umap
  compile=(--compile); nruns=8
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "# hseval on $device: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  $py -c "import torch, platform; print('torch', torch.__version__, '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or 'CPU')"
} > "$work/report.md"
section() {  # section TITLE COMMAND...: the command's output and wall time as a markdown block
  local title=$1; shift
  local start=$SECONDS
  echo "== $title" >&2
  { echo; echo "## $title"; echo; echo '```'; } >> "$work/report.md"
  if "$@" >> "$work/report.md" 2>&1; then status=ok; else status="failed (exit $?)"; fi
  { echo '```'; echo; echo "$title: $((SECONDS - start)) s, $status"; } >> "$work/report.md"
}
section "Heads alone, float32" $py bench/heads.py --device "$device" --dtype float32 --sizes "$sizes" --repeats "$repeats"
section "Heads alone, bf16 autocast" $py bench/heads.py --device "$device" --dtype bf16 --sizes "$sizes" --repeats "$repeats"
section "Training step, batch 64" $py bench/train_step.py --device "$device" --batch 64 --steps "$steps" --rounds "$rounds" --skip-engine "${compile[@]}"
section "Training step, batch 256, engine against a bare loop" $py bench/train_step.py --device "$device" --batch 256 --steps "$steps" --rounds "$rounds" "${compile[@]}"
section "hseval demo" hseval demo --device "$device" --out "$work/demo" --quiet "${demo[@]}" "${data[@]}"
section "hseval evaluate: $nruns runs against one run plus the embedding passes" $py bench/evaluate.py --only-runs --runs "$nruns" --projections "$projections" --device "$device" "${data[@]}"
if [ "$device" != cpu ]; then  # on the CPU the demo has just evaluated its runs, and the section above ran evaluate
  section "hseval evaluate of the demo's runs ($projections)" hseval evaluate "$work/demo/runs" --out "$work/eval" --device "$device" --projections "$projections" --quiet "${data[@]}"
fi
mkdir -p "$(dirname "$out")"
cp "$work/report.md" "$out"
echo "wrote $out" >&2
