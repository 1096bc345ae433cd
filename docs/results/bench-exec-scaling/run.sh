#!/bin/bash
# Scaling of the executor on a many-core machine: the warm pool and Ray at 2, 8 and 16 slots,
# Ray on one node (8 CPUs) and on two nodes (8 + 8). Usage: run.sh [prepare]
# `prepare` (for a machine without network): .devrun/ holds ray-2.60.0's cp312 wheel unpacked and
# re-packed as ray.tar.xz (without ray/jars and the dashboard's source maps, to fit the transfer),
# jsonschema and its three dependencies as wheels, and the stripped release binary as reprolab.xz.
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
REPO=$(pwd)
exec > >(tee $OUT/log) 2>&1
if [ "$1" = prepare ]; then
  SITE=$($PY -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')
  tar xJf .devrun/ray.tar.xz -C "$SITE" || exit 1
  $PY -m pip install -q --no-index --no-deps --no-compile .devrun/*.whl || exit 1
  xz -dc .devrun/reprolab.xz > /tmp/reprolab && chmod +x /tmp/reprolab
  BIN=/tmp/reprolab
fi
BIN=${BIN:-/tmp/reprolab}
RAY="$PY -c 'import sys; from ray.scripts.scripts import main; sys.exit(main())'"
ray() { $PY -c 'import sys; from ray.scripts.scripts import main; sys.argv[0]="ray"; sys.exit(main())' "$@"; }
N1=${N1:-32}; N8=${N8:-64}; N16=${N16:-128}; J8=${J8:-8}; J16=${J16:-16}
nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket" ; uptime
$PY -c 'import ray, torch, sklearn; print("ray", ray.__version__, "torch", torch.__version__)'
export RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled
R="$BIN --python $PY --store /tmp/st.db"
t() { echo "== $*"; date +%T; }
t "local head, 2 slots"
$R bench-exec -n $N1 -j 2 --backend ray --json > $OUT/ray-local-head-2.json; echo rc=$?
cat $OUT/ray-local-head-2.json
t "one node, $J8 CPUs"
ray start --head --port 6379 --node-ip-address 127.0.0.1 --num-cpus $J8 --include-dashboard=false --disable-usage-stats --temp-dir /tmp/rt >/dev/null 2>&1; echo head rc=$?
$R bench-exec -n $N8 -j $J8 --backend ray --ray-address 127.0.0.1:6379 --json > $OUT/ray-1node-$J8.json; echo rc=$?
cat $OUT/ray-1node-$J8.json
t "two nodes, $J8 + $J8 CPUs"
ray start --address 127.0.0.1:6379 --node-ip-address 127.0.0.1 --num-cpus $J8 --disable-usage-stats >/dev/null 2>&1; echo node rc=$?
$R bench-exec -n $N16 -j $J16 --backend ray --ray-address 127.0.0.1:6379 --json > $OUT/ray-2nodes-$J16.json; echo rc=$?
cat $OUT/ray-2nodes-$J16.json
ray stop --force >/dev/null 2>&1
t "warm pool against fresh processes, $J16 workers"
$R bench-exec -n $N8 -j $J16 --json > $OUT/local-$J16.json; echo rc=$?
cat $OUT/local-$J16.json
t done; uptime
